// Package yamlx decodes YAML strictly and reports problems as
// "FILE:LINE: FIELD: problem", the error format of every driftprobe input.
package yamlx

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Error is one located input problem.
type Error struct {
	File  string
	Line  int
	Field string // dotted path, e.g. targets[1].provider
	Msg   string
	// Resumable is set on a problem the decoder went on past, the rest of
	// the document read as written: an unknown field (its value not
	// read), a duplicate key (the mapping holding it not read), a value
	// of the wrong type (not read), a number refused for a leading zero
	// or its range, a value a custom UnmarshalYAML refused with a
	// *yaml.TypeError (not read: a duration that does not parse). A
	// caller may then read the document's other values and report their
	// problems too (internal/problems).
	Resumable bool
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
	reUnknown = regexp.MustCompile(`^line (\d+): field (.*) not found in type (.+)$`)
	reType    = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
	reDup     = regexp.MustCompile(`^line (\d+): mapping key ("(?:[^"\\]|\\.)*") already defined at line (\d+)`)
	reAtLine  = regexp.MustCompile(`^line (\d+): (.*)$`)
	reLine    = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// Decode strictly decodes data into v (unknown fields and wrong types are
// errors, and so are the scalars yaml.v3 would convert silently: a decimal
// number for an integer field, anything but true or false for a boolean
// one, a number written with a leading zero, which YAML 1.1 reads as
// octal; see checkScalars) and returns the document's root node for
// locating later validation errors. A problem with a key or value that a
// merge key (`<<: *d`) or an alias brings in is named by the path it is
// read at (see convert); what yaml.v3 would report without a line (a bad
// merge key value, a list used as a key, a tag its value does not fit) is
// found first, in what the decoder reads (see checkStructure): the value
// of an unknown field is not read, and the field is reported as unknown.
// What yaml.v3 reports about aliases without a line, or at the line a
// flow collection opens (an undefined alias, an alias inside the value it
// names, a "billion laughs" it refuses to expand), is located at the
// alias, with its field (see unknownAnchor and aliasProblem).
//
// A custom UnmarshalYAML that wants its problem located and collected with
// the others returns a *yaml.TypeError whose messages read
// "line N: problem"; the field is found from the line. The decoder goes
// on past it, as past its own type problems: it is Resumable. Any other
// error stops the decoder.
func Decode(file string, data []byte, v any) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(file, data, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return &root, List{{File: file, Line: 1, Msg: "empty document"}}
	}
	// A bare "---" (with comments at most) is as empty as an empty file
	// (its null value sits on a line past the file's end), unless a
	// document follows it: that one is the problem.
	if len(root.Content) == 1 && emptyScalar(root.Content[0]) {
		if err := laterDocument(file, data, yaml.NewDecoder(bytes.NewReader(data))); err != nil {
			return &root, err
		}
		return &root, List{{File: file, Line: 1, Msg: "empty document"}}
	}
	// Scalars the decoder would convert silently (2.5 into an integer,
	// yes into a boolean, 010 into 8) are refused, with the decoder's own
	// problems.
	scalars, reported := checkScalars(file, &root, reflect.TypeOf(v))
	// What the decoder would report without a line, or crash on, is
	// reported before it runs.
	if l := checkStructure(file, &root, reflect.TypeOf(v)); len(l) > 0 {
		if slices.ContainsFunc(l, func(e *Error) bool { return !e.Resumable }) {
			return &root, mergeProblems(scalars, l)
		}
		// Only null keys, which the decoder skips: its problems are
		// reported with them.
		scalars = append(scalars, l...)
		sort.SliceStable(scalars, func(i, j int) bool { return scalars[i].Line < scalars[j].Line })
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return &root, mergeProblems(scalars, convert(file, &root, reflect.TypeOf(v), err, reported))
	}
	if len(scalars) > 0 {
		return &root, scalars
	}
	if err := laterDocument(file, data, dec); err != nil {
		return &root, err
	}
	return &root, nil
}

// laterDocument reads the documents dec holds after the first (dec has
// decoded it, or is about to: then it is read and skipped): a second
// document ("---") would be ignored silently, so the first one that holds
// anything is refused, and any that does not parse.
func laterDocument(file string, data []byte, dec *yaml.Decoder) error {
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return syntaxError(file, data, err)
		}
		if next.Kind != 0 && len(next.Content) > 0 && !emptyScalar(next.Content[0]) {
			line := next.Line
			if line == 0 {
				line = next.Content[0].Line
			}
			return List{{File: file, Line: line, Msg: "a second YAML document starts here: a file holds one document, and nothing from here on would be read"}}
		}
	}
}

// mergeProblems adds the decoder's problems (err) to the scalar ones, in
// file order, one per field: the scalar check's message, which says what
// to write, wins over the decoder's for the same field ("maybe" for a
// boolean).
func mergeProblems(scalars List, err error) error {
	if len(scalars) == 0 {
		return err
	}
	var l List
	if !errors.As(err, &l) {
		return err
	}
	type at struct {
		field string
		line  int
	}
	said := make(map[at]bool, len(scalars))
	for _, s := range scalars {
		said[at{s.Field, s.Line}] = true
	}
	out := append(List(nil), scalars...)
	for _, e := range l {
		if !said[at{e.Field, e.Line}] {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// syntaxError locates a YAML syntax error. yaml.v3 reports the line where
// the enclosing construct started, sometimes counted from 0 (an unclosed
// bracket three lines up, or the line before a tab), so the line is found
// instead as the first line after the longest prefix of the document that
// still parses: the line where the document stops being valid YAML.
func syntaxError(file string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if g := reLine.FindStringSubmatch(err.Error()); g != nil {
		msg = g[2]
	}
	if strings.Contains(msg, "tab character") {
		msg += " (indent with spaces, not tabs)"
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	line := 0
	for k := len(lines) - 1; k >= 0; k-- {
		var n yaml.Node
		if yaml.Unmarshal(bytes.Join(lines[:k], nil), &n) == nil {
			line = k + 1
			break
		}
	}
	if line > len(lines) || line == 0 {
		line = len(lines)
	}
	if e := unknownAnchor(file, data, msg, line); e != nil {
		return List{e}
	}
	return List{{File: file, Line: line, Msg: "invalid YAML: " + msg}}
}

// convert locates the decoder's problems (err) in the document root,
// decoded into t. A problem the decoder reports on a key or value a merge
// key (`<<: *d`) or an alias brings in is named by the path it is read at
// (targets[1].bogus, not the anchor's targets[0].bogus), found by
// replaying the decoder's walk (see decodeOrder), at the line the key or
// value is written on, and says where it was brought in. The same problem
// reported twice (a duplicate key in a mapping merged twice) is listed
// once. A value checkScalars has reported for the type it is read into
// (reported) is not reported again.
func convert(file string, root *yaml.Node, t reflect.Type, err error, reported map[scalarRead]bool) error {
	l, _ := locate(file, root, t, err, reported)
	return l
}

// locate is convert, also returning how many occurrences the messages
// were matched against (see occurrenceIndex), which tests bound.
func locate(file string, root *yaml.Node, t reflect.Type, err error, reported map[scalarRead]bool) (error, int) {
	var ye *Error
	if errors.As(err, &ye) {
		e := *ye
		if e.File == "" {
			e.File = file
		}
		if e.Field == "" && e.Line > 0 {
			e.Field = PathAt(root, e.Line)
		}
		return List{&e}, 0
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var ix *occurrenceIndex
		// next returns the first occurrence with key k not yet taken:
		// the decoder reports a key or value once per place it is
		// decoded at, in the order of the replay.
		next := func(k occurrenceKey) *occurrence {
			if ix == nil {
				ix = newOccurrenceIndex(decodeOrder(root, t))
			}
			return ix.take(k)
		}
		steps := func() int {
			if ix == nil {
				return 0
			}
			return ix.steps
		}
		var l List
		for _, m := range te.Errors {
			if g := reUnknown.FindStringSubmatch(m); g != nil {
				n, _ := strconv.Atoi(g[1])
				o := next(occurrenceKey{unknown: true, line: n, name: g[2], typ: g[3]})
				if o != nil {
					l = append(l, &Error{File: file, Line: n, Field: o.path, Msg: "unknown field" + o.note(), Resumable: true})
				} else {
					l = append(l, &Error{File: file, Line: n, Field: keyPath(root, n, g[2]), Msg: "unknown field", Resumable: true})
				}
				continue
			}
			if g := reDup.FindStringSubmatch(m); g != nil {
				n, _ := strconv.Atoi(g[1])
				key, uerr := strconv.Unquote(g[2])
				if uerr != nil {
					key = strings.Trim(g[2], `"`)
				}
				l = append(l, &Error{File: file, Line: n, Field: keyPath(root, n, key), Msg: "duplicate key (first at line " + g[3] + ")", Resumable: true})
				continue
			}
			if g := reType.FindStringSubmatch(m); g != nil {
				n, _ := strconv.Atoi(g[1])
				what := tagName(g[2])
				if g[2] != "seq" && g[2] != "map" {
					what += fmt.Sprintf(" %q", g[3])
				}
				msg := fmt.Sprintf("wrong type: %s where %s expected", what, goType(g[4]))
				o := next(occurrenceKey{line: n, name: shownInMessage(g[2], g[3]), typ: g[4]})
				if o != nil && reported[scalarRead{o.value, o.into}] {
					continue // checkScalars has said what to write, where it is first read
				}
				if o != nil {
					l = append(l, &Error{File: file, Line: o.line, Field: o.path, Msg: msg + o.note(), Resumable: true})
					continue
				}
				path, line := valuePath(root, n, g[2], g[3])
				l = append(l, &Error{File: file, Line: line, Field: path, Msg: msg, Resumable: true})
				continue
			}
			if g := reAtLine.FindStringSubmatch(m); g != nil {
				// A custom UnmarshalYAML's problem (yaml.v3 collects a
				// *yaml.TypeError's messages with its own and goes on):
				// the value is not read, the rest of the document is.
				n, _ := strconv.Atoi(g[1])
				l = append(l, &Error{File: file, Line: n, Field: PathAt(root, n), Msg: g[2], Resumable: true})
				continue
			}
			l = append(l, &Error{File: file, Msg: m})
		}
		return dedupe(l), steps()
	}
	msg := err.Error()
	if e := aliasProblem(file, root, t, strings.TrimPrefix(msg, "yaml: ")); e != nil {
		return List{e}, 0
	}
	if g := reLine.FindStringSubmatch(msg); g != nil {
		n, _ := strconv.Atoi(g[1])
		return List{{File: file, Line: n, Msg: "invalid YAML: " + g[2]}}, 0
	}
	return List{{File: file, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}}, 0
}

// dedupe returns l without its repeated problems, in file order.
func dedupe(l List) List {
	var out List
	seen := map[Error]bool{}
	for _, e := range l {
		if !seen[*e] {
			seen[*e] = true
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// entry is one key/value (key nil for sequence items and the document) of a
// document, with its dotted path. With merges, a merge key is an entry
// too (path targets[1].<<), for the problems about the key itself.
type entry struct {
	path  string
	key   *yaml.Node
	value *yaml.Node
}

func entries(root *yaml.Node, merges bool) []entry {
	var out []entry
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				out = append(out, entry{path: path, value: c})
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if IsMerge(k) {
					if merges {
						out = append(out, entry{path: join(path, k.Value), key: k, value: v})
					}
					// A merged mapping's keys are the mapping's own.
					for _, m := range InlineMerged(v) {
						walk(m, path)
					}
					continue
				}
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				out = append(out, entry{path: p, key: k, value: v})
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				out = append(out, entry{path: p, value: c})
				walk(c, p)
			}
		}
	}
	if root != nil {
		walk(root, "")
	}
	return out
}

// keyPath returns the path of the mapping key named key on line (the last
// one, for a key given twice; list[1].<< for a merge key), falling back to
// the path at the line.
func keyPath(root *yaml.Node, line int, key string) string {
	found := ""
	for _, e := range entries(root, true) {
		if e.key != nil && e.key.Line == line && e.key.Value == key {
			found = e.path
		}
	}
	if found != "" {
		return found
	}
	parent := PathAt(root, line)
	if i := strings.LastIndex(parent, "."); i >= 0 {
		return parent[:i+1] + key
	}
	return key
}

// valuePath finds the value on line that yaml.v3 could not decode (tag as
// in "!!str", value as quoted in its message, possibly shortened to 7
// characters and "...") and returns its path and the line to report: its
// key's line for a mapping value, so a list given where a mapping belongs
// is reported at the key rather than at its first item. Of several
// candidates on one line (flow style), the first innermost one wins: a
// mapping inside a flow list is more likely the culprit than the list's
// enclosing item.
func valuePath(root *yaml.Node, line int, tag, value string) (string, int) {
	var cands []entry
	for _, e := range entries(root, false) {
		v := e.value
		if v.Line != line {
			continue
		}
		if !sameValue(v, tag, value) {
			continue
		}
		cands = append(cands, e)
	}
next:
	for i, e := range cands {
		for _, d := range cands[i+1:] {
			if strings.HasPrefix(d.path, e.path+".") || strings.HasPrefix(d.path, e.path+"[") || e.path == "" {
				continue next
			}
		}
		if e.key != nil {
			return e.path, e.key.Line
		}
		return e.path, line
	}
	return PathAt(root, line), line
}

// sameValue reports whether n is the value a decoder message names: tag
// as in "!!str" ("seq" and "map" name any list or mapping), value as
// quoted there, possibly shortened to 7 characters and "...".
func sameValue(n *yaml.Node, tag, value string) bool {
	switch tag {
	case "seq":
		return n.Kind == yaml.SequenceNode
	case "map":
		return n.Kind == yaml.MappingNode
	}
	return n.Kind == yaml.ScalarNode && (n.Value == value || strings.HasSuffix(value, "...") && strings.HasPrefix(n.Value, strings.TrimSuffix(value, "...")))
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
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "a boolean"
	case t == "string":
		return "a string"
	case strings.HasSuffix(t, "Duration"):
		return "a duration (e.g. 30s, 5m)"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map"):
		return "a mapping"
	}
	return "a mapping"
}

// PathAt returns the dotted path (targets[1].name) of the key or item on
// the given line, or "" when none is found. The keys of a mapping merged
// in place (`<<: {max_tokens: 0}`) are named by the merging mapping's
// path.
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
				if IsMerge(k) {
					// A merged mapping's keys are the mapping's own.
					for _, m := range InlineMerged(v) {
						walk(m, path)
					}
					continue
				}
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
// "targets[1].name" (the key's line for mapping entries, the merged key's
// for one a merge key `<<` supplies), or the closest existing ancestor's
// line when the path does not exist.
func Line(root *yaml.Node, path string) int {
	line, _ := lookup(root, path)
	return line
}

// Find returns the value node at a dotted path such as "targets[1].name",
// or nil when the path does not exist in the document. Aliases are
// followed, and a key a merge key (`<<`) supplies is found as the decoder
// reads it: a key written in the mapping wins over a merged one.
func Find(root *yaml.Node, path string) *yaml.Node {
	_, n := lookup(root, path)
	return n
}

// lookup walks path from root, following aliases and merge keys (`<<`,
// see member). It returns the line to report for path (the key's line for
// a mapping entry, that of the merged mapping's key for one supplied by a
// merge; the closest existing ancestor's when the path does not exist) and
// the value node at path, aliases followed (nil when it does not exist).
func lookup(root *yaml.Node, path string) (int, *yaml.Node) {
	if root == nil {
		return 0, nil
	}
	n := root
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return n.Line, nil
		}
		n = n.Content[0]
	}
	line := n.Line
	n = resolve(n)
	for _, part := range splitPath(path) {
		if idx, ok := part.(int); ok {
			if n.Kind != yaml.SequenceNode || idx < 0 || idx >= len(n.Content) {
				return line, nil
			}
			n = n.Content[idx]
			line = n.Line
			n = resolve(n)
			continue
		}
		k, v := member(n, part.(string))
		if k == nil {
			return line, nil
		}
		line = k.Line
		n = resolve(v)
	}
	return line, n
}

// resolve follows n's aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// member returns the key and value nodes of key in the mapping m (nil
// when m is no mapping or has no such key), with YAML's merge semantics,
// as the decoder applies them: a key written in the mapping wins over one
// its merge key (`<<`) supplies; the merge key's value is a mapping or a
// list of mappings (each possibly an alias, and possibly merging others in
// turn), and of a list the earlier mappings win over the later ones.
func member(m *yaml.Node, key string) (k, v *yaml.Node) {
	seen := map[*yaml.Node]bool{} // mappings searched already: each once
	var find func(m *yaml.Node) (k, v *yaml.Node)
	find = func(m *yaml.Node) (*yaml.Node, *yaml.Node) {
		m = resolve(m)
		if m.Kind != yaml.MappingNode || seen[m] {
			return nil, nil
		}
		seen[m] = true
		var merges []*yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			switch k := m.Content[i]; {
			case IsMerge(k):
				merges = append(merges, m.Content[i+1])
			case k.Value == key:
				return k, m.Content[i+1]
			}
		}
		for _, mv := range merges {
			for _, src := range merged(mv) {
				if k, v := find(src); k != nil {
					return k, v
				}
			}
		}
		return nil, nil
	}
	return find(m)
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

// Err returns the accumulated errors in file order, or nil.
func (c *Collector) Err() error {
	l := append(List(nil), c.List...)
	sort.SliceStable(l, func(i, j int) bool { return l[i].Line < l[j].Line })
	return l.Err()
}

// Given reports whether the document gives a value at a dotted path: the
// path exists (written in place or supplied by a merge key) and its value
// is not null. A field written `~`, `null` or
// with nothing after its colon is not given: it is the same as leaving
// the field out.
func Given(root *yaml.Node, path string) bool {
	n := Find(root, path)
	return n != nil && !IsNull(n)
}

// IsNull reports whether n (through any alias) is an empty value: `~`,
// `null`, or nothing at all, as in a list item written `- `.
func IsNull(n *yaml.Node) bool {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// emptyScalar reports whether n is the empty value a bare "---" at the
// end of a file makes.
func emptyScalar(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "" && n.ShortTag() == "!!null"
}

// scalarRead is a scalar node read into a type (pointers followed).
type scalarRead struct {
	n *yaml.Node
	t reflect.Type
}

// Scalars yaml.v3 would convert silently, which a strict input refuses.
var (
	unmarshalerType     = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType        = reflect.TypeFor[time.Duration]()
)

// checkScalars walks the document's nodes alongside the type they decode
// into and reports the scalars yaml.v3 would accept by converting them,
// silently: a decimal number for an integer field (2.5, and even 2.0 or
// 1e3, is truncated to an integer rather than refused) and, for a boolean
// field, YAML 1.1's yes/no/on/off/y/n, quoted or not (`disabled: 'yes'`
// would disable). An integer field takes only an integer (2, 0x10), a
// boolean field only an unquoted true or false (True, FALSE…). A number
// field (integer or not) refuses a leading zero (010, which yaml.v3 reads
// as octal 8; 0, 0.5 and the prefixed 0o10 and 0x10 are fine; see
// leadingZero), and an integer too large for its field is said to be out
// of range rather than a decimal number (see intRange). A scalar is
// checked where it is first read: one an alias or a merge key brings in
// again is not reported twice. Null
// values are left alone (they decode as the zero value, as an omitted
// field), and so are types decoding themselves (an UnmarshalYAML or
// UnmarshalText) and time.Duration, which yaml.v3 refuses numbers for.
// Mismatched kinds (a list for an integer) are left to the decoder, and
// so is a scalar whose explicit tag its value does not fit (`!!float
// abc`, see tagProblem), which checkStructure reports. It returns the
// problems and the set of scalars they are about, each with the type it
// is read into.
func checkScalars(file string, root *yaml.Node, t reflect.Type) (List, map[scalarRead]bool) {
	if root == nil || t == nil {
		return nil, nil
	}
	var l List
	bad := map[scalarRead]bool{} // the scalars reported, with the type read into
	add := func(n *yaml.Node, t reflect.Type, line int, path, msg string) {
		// A wrong type, a leading zero or a number out of range: the
		// value is not read, the rest of the document is.
		l = append(l, &Error{File: file, Line: line, Field: path, Msg: msg, Resumable: true})
		bad[scalarRead{n, t}] = true
	}
	type visit struct {
		n *yaml.Node
		t reflect.Type
	}
	seen := map[visit]bool{}
	var walk func(n *yaml.Node, t reflect.Type, path string, line int)
	walk = func(n *yaml.Node, t reflect.Type, path string, line int) {
		for n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return
			}
			n = n.Alias
		}
		if n.Kind == yaml.DocumentNode {
			for _, c := range n.Content {
				walk(c, t, path, c.Line)
			}
			return
		}
		for t.Kind() == reflect.Pointer {
			if t.Implements(unmarshalerType) || t.Implements(textUnmarshalerType) {
				return
			}
			t = t.Elem()
		}
		if t == durationType || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return
		}
		if tagProblem(n) != "" {
			return // checkStructure says the tag does not fit: it is no number
		}
		// A mapping or list is checked once per type, at its first path:
		// one reached again through an alias is reported where its
		// anchor is, and a document of nested aliases is not expanded.
		if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
			if seen[visit{n, t}] {
				return
			}
			seen[visit{n, t}] = true
		}
		switch t.Kind() {
		case reflect.Struct:
			if n.Kind != yaml.MappingNode {
				return
			}
			fields := yamlFields(t)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if IsMerge(k) {
					// The merged mappings fill this one.
					for _, m := range merged(v) {
						walk(m, t, path, k.Line)
					}
					continue
				}
				if f, ok := fields[k.Value]; ok {
					walk(v, f, join(path, k.Value), k.Line)
				}
			}
		case reflect.Map:
			if n.Kind != yaml.MappingNode {
				return
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if IsMerge(k) {
					for _, m := range merged(v) {
						walk(m, t, path, k.Line)
					}
					continue
				}
				walk(v, t.Elem(), join(path, k.Value), k.Line)
			}
		case reflect.Slice, reflect.Array:
			if n.Kind != yaml.SequenceNode {
				return
			}
			for i, c := range n.Content {
				walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), c.Line)
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			if n.Kind != yaml.ScalarNode {
				break
			}
			if msg := leadingZero(n); msg != "" {
				add(n, t, line, path, msg)
			} else if msg := intRange(n, t); msg != "" {
				add(n, t, line, path, msg)
			} else if n.ShortTag() == "!!float" {
				add(n, t, line, path, "wrong type: "+floatProblem(n.Value))
			}
		case reflect.Float32, reflect.Float64:
			if msg := leadingZero(n); n.Kind == yaml.ScalarNode && msg != "" {
				add(n, t, line, path, msg)
			}
		case reflect.Bool:
			if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!bool" && n.ShortTag() != "!!null" {
				add(n, t, line, path, "wrong type: "+boolProblem(n))
			}
		}
	}
	walk(root, t, "", root.Line)
	return l, bad
}

var (
	// reLeadingZero matches a decimal integer written with a leading
	// zero (underscores removed), which yaml.v3 reads as YAML 1.1 octal.
	reLeadingZero = regexp.MustCompile(`^[-+]?0[0-9]+$`)
	// reIntLiteral matches an integer as yaml.v3 reads one (underscores
	// removed), whatever its size.
	reIntLiteral = regexp.MustCompile(`^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|[0-9]+)$`)
)

// leadingZero describes a number written with a leading zero (010, -010,
// 0_10, 09, 00; not 0, 0.5, 0x10 or 0o10), or returns "". yaml.v3 reads
// 010 as YAML 1.1 octal, 8, where YAML 1.2 reads 10: rather than guess
// which was meant (seed and max_tokens are request bytes), it is refused
// for every number field, with the two spellings that say it.
func leadingZero(n *yaml.Node) string {
	if tag := n.ShortTag(); n.Kind != yaml.ScalarNode || tag != "!!int" && tag != "!!float" {
		return ""
	}
	v := strings.ReplaceAll(n.Value, "_", "")
	if !reLeadingZero.MatchString(v) {
		return ""
	}
	sign := ""
	if v[0] == '-' || v[0] == '+' {
		if v[0] == '-' {
			sign = "-"
		}
		v = v[1:]
	}
	digits := strings.TrimLeft(v, "0")
	switch oct, err := strconv.ParseUint(digits, 8, 64); {
	case digits == "":
		return fmt.Sprintf("%s has a leading zero (write 0)", quoteShort(n.Value))
	case err == nil && strconv.FormatUint(oct, 10) != digits: // 010, not 07
		return fmt.Sprintf("%s has a leading zero: YAML 1.1 reads it as octal %s%d, YAML 1.2 as %s%s (write %s%s, or %s0o%s for octal)",
			quoteShort(n.Value), sign, oct, sign, digits, sign, digits, sign, digits)
	}
	return fmt.Sprintf("%s has a leading zero, which YAML 1.1 reads as octal (write %s%s)", quoteShort(n.Value), sign, digits)
}

// intRange describes an integer too large (or small) for the integer
// type t, which the decoder reads as a decimal number or a string and
// refuses as one, or returns "".
func intRange(n *yaml.Node, t reflect.Type) string {
	v := strings.ReplaceAll(n.Value, "_", "")
	if !reIntLiteral.MatchString(v) {
		return ""
	}
	neg := strings.HasPrefix(v, "-")
	unsigned := t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr
	switch n.ShortTag() {
	case "!!int":
		z := reflect.Zero(t)
		if i, err := strconv.ParseInt(v, 0, 64); err == nil {
			if unsigned && i >= 0 && !z.OverflowUint(uint64(i)) || !unsigned && !z.OverflowInt(i) {
				return ""
			}
		} else if u, err := strconv.ParseUint(v, 0, 64); err == nil && unsigned && !z.OverflowUint(u) {
			return ""
		}
	case "!!float", "!!str":
		// A plain integer too large for 64 bits reads as one of these;
		// a quoted or tagged one is what it says.
		if n.Style != 0 {
			return ""
		}
	default:
		return ""
	}
	bound := ""
	switch {
	case unsigned && neg:
		bound = "at least 0"
	case unsigned:
		bound = fmt.Sprintf("at most %d", uint64(1)<<t.Bits()-1)
	case neg:
		bound = fmt.Sprintf("at least %d", int64(-1)<<(t.Bits()-1))
	default:
		bound = fmt.Sprintf("at most %d", uint64(1)<<(t.Bits()-1)-1)
	}
	return fmt.Sprintf("integer %s out of range (%s)", quoteShort(n.Value), bound)
}

// IsMerge reports whether k is a merge key ("<<").
func IsMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

// merged returns the mappings a merge key's value names: one mapping (or
// an alias of one), or a list of them.
func merged(v *yaml.Node) []*yaml.Node {
	n := v
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.SequenceNode {
		return n.Content
	}
	return []*yaml.Node{v}
}

// InlineMerged returns the mappings a merge key's value v writes in place:
// v itself, or the items of a list written there, but no alias, whose
// mapping is written (and walked) where its anchor is.
func InlineMerged(v *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		out = append(out, v)
	case yaml.SequenceNode:
		for _, m := range v.Content {
			if m.Kind == yaml.MappingNode {
				out = append(out, m)
			}
		}
	}
	return out
}

// floatProblem describes a decimal number given for an integer field.
func floatProblem(v string) string {
	hint := "write a whole number, without a decimal point or exponent"
	if f, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1e15 {
		hint = fmt.Sprintf("write %d, without a decimal point or exponent", int64(f))
	}
	return fmt.Sprintf("decimal number %s where an integer expected (%s)", quoteShort(v), hint)
}

// boolProblem describes a value other than true or false given for a
// boolean field.
func boolProblem(n *yaml.Node) string {
	what := tagName(strings.TrimPrefix(n.ShortTag(), "!!"))
	hint := "write true or false"
	switch strings.ToLower(n.Value) {
	case "true", "false":
		hint = "write true or false, without quotes"
	case "y", "yes", "n", "no", "on", "off":
		hint = "write true or false: YAML 1.1's yes/no, on/off and y/n are not booleans here"
	}
	return fmt.Sprintf("%s %s where a boolean expected (%s)", what, quoteShort(n.Value), hint)
}

// quoteShort quotes v, shortened past 40 characters.
func quoteShort(v string) string {
	if r := []rune(v); len(r) > 40 {
		v = string(r[:37]) + "..."
	}
	return strconv.Quote(v)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps the keys a struct decodes to their fields' types, as
// yaml.v3 names them: the yaml tag's name, else the lower-cased field
// name, with ",inline" structs' fields lifted.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.PkgPath != "" && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" && !strings.Contains(string(f.Tag), ":") {
			tag = string(f.Tag)
		}
		if tag == "-" {
			continue
		}
		name, flags, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(flags, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(unmarshalerType) {
				maps.Copy(out, yamlFields(ft))
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}
