// Package yamlx decodes YAML strictly and reports problems as
// "FILE:LINE: FIELD: problem", the error format of every driftprobe input.
package yamlx

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is one located input problem.
type Error struct {
	File  string
	Line  int
	Field string // dotted path, e.g. targets[1].provider
	Msg   string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Field + ": " + e.Msg
}

// List is a non-empty list of located problems, in file order.
type List []*Error

func (l List) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Err returns l as an error, or nil when it is empty.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// IsInputError reports whether err is (or wraps) a located input problem.
func IsInputError(err error) bool {
	var e *Error
	var l List
	return errors.As(err, &e) || errors.As(err, &l)
}

var (
	reUnknown = regexp.MustCompile(`line (\d+): field (\S+) not found in type`)
	reType    = regexp.MustCompile(`line (\d+): cannot unmarshal !!(\w+) ` + "`" + `?(.*?)` + "`?" + ` into (\S+)`)
	reLine    = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	reDup     = regexp.MustCompile(`line (\d+): mapping key "([^"]+)" already defined`)
)

// Decode strictly decodes data into v (unknown fields and wrong types are
// errors) and returns the document's root node for locating later
// validation errors.
func Decode(file string, data []byte, v any) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, convert(file, nil, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &root, List{{File: file, Line: 1, Msg: "empty document"}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return &root, convert(file, &root, err)
	}
	return &root, nil
}

func convert(file string, root *yaml.Node, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var l List
		for _, m := range te.Errors {
			if g := reUnknown.FindStringSubmatch(m); g != nil {
				n, _ := strconv.Atoi(g[1])
				parent := PathAt(root, n)
				if i := strings.LastIndex(parent, "."); i >= 0 {
					parent = parent[:i+1]
				} else {
					parent = ""
				}
				l = append(l, &Error{File: file, Line: n, Field: parent + g[2], Msg: "unknown field"})
				continue
			}
			if g := reDup.FindStringSubmatch(m); g != nil {
				n, _ := strconv.Atoi(g[1])
				l = append(l, &Error{File: file, Line: n, Field: g[2], Msg: "duplicate key"})
				continue
			}
			if g := reType.FindStringSubmatch(m); g != nil {
				n, _ := strconv.Atoi(g[1])
				l = append(l, &Error{File: file, Line: n, Field: PathAt(root, n), Msg: fmt.Sprintf("wrong type: %s %q where %s expected", tagName(g[2]), g[3], goType(g[4]))})
				continue
			}
			l = append(l, &Error{File: file, Msg: m})
		}
		return l
	}
	msg := err.Error()
	if g := reLine.FindStringSubmatch(msg); g != nil {
		n, _ := strconv.Atoi(g[1])
		return List{{File: file, Line: n, Msg: "invalid YAML: " + g[2]}}
	}
	return List{{File: file, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}}
}

func tagName(t string) string {
	switch t {
	case "str":
		return "string"
	case "seq":
		return "list"
	case "map":
		return "mapping"
	}
	return t
}

func goType(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "a boolean"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map"):
		return "a mapping"
	}
	return "a mapping"
}

// PathAt returns the dotted path (targets[1].name) of the key or item on
// the given line, or "" when none is found.
func PathAt(root *yaml.Node, line int) string {
	if root == nil {
		return ""
	}
	var best string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if k.Line == line || v.Line == line {
					best = p
				}
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if c.Line == line && c.Kind == yaml.ScalarNode {
					best = p
				}
				walk(c, p)
			}
		}
	}
	walk(root, "")
	return best
}

// Line returns the line of the node at a dotted path such as
// "targets[1].name" (the key's line for mapping entries), or the closest
// existing ancestor's line when the path does not exist.
func Line(root *yaml.Node, path string) int {
	if root == nil {
		return 0
	}
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, part := range splitPath(path) {
		if idx, ok := part.(int); ok {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
			continue
		}
		key := part.(string)
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line = n.Content[i].Line
				n = n.Content[i+1]
				found = true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}

func splitPath(p string) []any {
	var out []any
	for _, seg := range strings.Split(p, ".") {
		if seg == "" {
			continue
		}
		for {
			i := strings.IndexByte(seg, '[')
			if i < 0 {
				out = append(out, seg)
				break
			}
			if i > 0 {
				out = append(out, seg[:i])
			}
			j := strings.IndexByte(seg, ']')
			if j < i {
				out = append(out, seg)
				break
			}
			n, _ := strconv.Atoi(seg[i+1 : j])
			out = append(out, n)
			seg = seg[j+1:]
			if seg == "" {
				break
			}
		}
	}
	return out
}

// Collector accumulates validation errors located by path.
type Collector struct {
	File string
	Root *yaml.Node
	List List
}

// Add records a problem at the dotted path.
func (c *Collector) Add(path, format string, args ...any) {
	c.List = append(c.List, &Error{File: c.File, Line: Line(c.Root, path), Field: path, Msg: fmt.Sprintf(format, args...)})
}

// Err returns the accumulated errors, or nil.
func (c *Collector) Err() error { return c.List.Err() }
