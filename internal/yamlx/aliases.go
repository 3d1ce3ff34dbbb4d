package yamlx

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// The problems yaml.v3 reports about anchors (&name) and aliases (*name)
// without a line: the parser's undefined alias (located by syntaxError
// from the longest prefix that parses: where a flow collection written
// over several lines opens, not at the alias), and the decoder's alias
// inside the value it names and its refusal to expand a document of
// nested aliases (a "billion laughs"), which carry no line at all. Each is
// located here at the alias that causes it, with the field it is read at.
var (
	reUnknownAnchor = regexp.MustCompile(`^unknown anchor '([A-Za-z0-9_-]*)' referenced$`)
	reContainsSelf  = regexp.MustCompile(`^anchor '([A-Za-z0-9_-]*)' value contains itself$`)
)

// excessiveAliasing is the decoder's message for a document whose aliases
// expand past its limit (yaml.v3's decoder.unmarshal).
const excessiveAliasing = "document contains excessive aliasing"

// maxExpansion caps the node counts expansion computes: past it, a count
// says "at least".
const maxExpansion = 1 << 50

// unknownAnchor locates the parser's "unknown anchor 'name' referenced"
// (msg, without the "yaml: " prefix) in data: at the first alias *name
// written in the file outside comments and quoted strings (the parser
// stops at the first alias whose anchor it has not seen, and an earlier
// one would have stopped it), looked for from line from on (the line the
// longest parsing prefix points at: the alias is at or after it), else
// anywhere, else at line from. The field is the one the alias is read at,
// found in the document with that alias read as null; none when the
// document still does not parse, or the alias is in a later document. It
// returns nil when msg is not that problem.
func unknownAnchor(file string, data []byte, msg string, from int) *Error {
	g := reUnknownAnchor.FindStringSubmatch(msg)
	if g == nil {
		return nil
	}
	name := g[1]
	e := &Error{File: file, Line: from, Msg: fmt.Sprintf("invalid YAML: %s (an alias *%s names a value anchored &%s earlier in the file)", msg, name, name)}
	offs := aliasTokens(data, name)
	at := -1
	for _, o := range offs {
		if lineOf(data, o) >= from {
			at = o
			break
		}
	}
	if at < 0 && len(offs) > 0 {
		at = offs[0]
	}
	if at < 0 {
		return e
	}
	e.Line = lineOf(data, at)
	// The document with that alias read as null (same columns and lines)
	// locates its field.
	patched := bytes.Clone(data)
	patched[at] = '~'
	for i := at + 1; i < at+1+len(name); i++ {
		patched[i] = ' '
	}
	var root yaml.Node
	if yaml.Unmarshal(patched, &root) == nil {
		e.Field = PathAt(&root, e.Line)
		col := at - bytes.LastIndexByte(data[:at], '\n') // 1-based
		for _, en := range entries(&root, true) {
			if en.value.Line == e.Line && en.value.Column == col {
				e.Field = en.path // a merge key's value too (inner.<<)
				break
			}
		}
	}
	return e
}

// lineOf returns the 1-based line of the byte offset off in data.
func lineOf(data []byte, off int) int {
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// aliasTokens returns the offsets of the aliases *name written in data,
// as yaml.v3's scanner reads an alias: a '*' that starts a token (at the
// start of a line, or after a blank or a flow indicator [ { ,), then the
// name, then a blank, the end, or one of ? : , ] } % @ `. A '*' inside a
// quoted string or a comment on its line is passed over (a quoted
// string spanning lines is not followed: this is the last resort, for
// the parser's one problem that carries no line of its own).
func aliasTokens(data []byte, name string) []int {
	var out []int
	tok := "*" + name
	start := 0
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		var quote byte
		for i := 0; i < len(line); i++ {
			c := line[i]
			switch {
			case quote != 0:
				if c == '\\' && quote == '"' {
					i++
				} else if c == quote {
					quote = 0
				}
				continue
			case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
				i = len(line) // a comment, to the end of the line
				continue
			case (c == '"' || c == '\'') && (i == 0 || bytes.IndexByte([]byte(" \t[{,:-?"), line[i-1]) >= 0):
				quote = c
				continue
			case c != '*' || i > 0 && bytes.IndexByte([]byte(" \t[{,"), line[i-1]) < 0:
				continue
			}
			if !bytes.HasPrefix(line[i:], []byte(tok)) {
				continue
			}
			if j := i + len(tok); j == len(line) || bytes.IndexByte([]byte(" \t\r\n?:,]}%@`"), line[j]) >= 0 {
				out = append(out, start+i)
			}
		}
		start += len(line)
	}
	return out
}

// aliasProblem locates the decoder's problems about aliases (msg, without
// the "yaml: " prefix) in the part of root it reads into t: an alias
// inside the value it names, and a document whose aliases expand past
// the decoder's limit. It returns nil for any other message.
func aliasProblem(file string, root *yaml.Node, t reflect.Type, msg string) *Error {
	if g := reContainsSelf.FindStringSubmatch(msg); g != nil {
		return containsItself(file, root, t, g[1])
	}
	if msg == excessiveAliasing {
		return tooMuchAliasing(file, root, t)
	}
	return nil
}

// containsItself locates "anchor 'name' value contains itself": an alias
// *name written inside the value anchored &name, which the decoder would
// expand without end. Of several, the first the decoder reads; when none
// is read (not expected), the first written.
func containsItself(file string, root *yaml.Node, t reflect.Type, name string) *Error {
	parent := parents(root)
	inside := func(a *yaml.Node) bool {
		if a.Value != name || a.Alias == nil {
			return false
		}
		for p := parent[a]; p != nil; p = parent[p] {
			if p == a.Alias {
				return true
			}
		}
		return false
	}
	var found *yaml.Node
	path := ""
	readAliases(root, t, func(a *yaml.Node, p string) bool {
		if inside(a) {
			found, path = a, p
			return false
		}
		return true
	})
	if found == nil {
		for n := range parent {
			if n.Kind == yaml.AliasNode && inside(n) && (found == nil || n.Line < found.Line || n.Line == found.Line && n.Column < found.Column) {
				found = n
			}
		}
		if found == nil {
			return &Error{File: file, Line: anchorLine(root, name), Msg: "anchor '" + name + "' value contains itself"}
		}
		path = PathAt(root, found.Line)
	}
	return &Error{File: file, Line: found.Line, Field: path,
		Msg: fmt.Sprintf("*%s is written inside the value it names (&%s at line %d): a value cannot contain itself", name, name, found.Alias.Line)}
}

// tooMuchAliasing locates "document contains excessive aliasing": the
// decoder counts the nodes it decodes through aliases and stops when they
// are too large a share of the document (a "billion laughs": aliases of
// lists of aliases of lists…). It is reported at the alias the decoder
// reads that stands for the most nodes once expanded (the first of
// those), which is where the expansion is, with that count.
func tooMuchAliasing(file string, root *yaml.Node, t reflect.Type) *Error {
	memo := map[*yaml.Node]int64{}
	var best *yaml.Node
	var bestSize int64 = -1
	path := ""
	readAliases(root, t, func(a *yaml.Node, p string) bool {
		if s := expansion(a, memo); s > bestSize {
			best, bestSize, path = a, s, p
		}
		return true
	})
	if best == nil {
		return &Error{File: file, Line: 1, Msg: "excessive aliasing: the YAML decoder refuses to expand this document's aliases (a \"billion laughs\" document); write the values out, or alias less"}
	}
	size := strconv.FormatInt(bestSize, 10)
	if bestSize >= maxExpansion {
		size = "more than " + size
	}
	return &Error{File: file, Line: best.Line, Field: path,
		Msg: fmt.Sprintf("excessive aliasing: *%s stands for %s YAML nodes once its aliases are expanded, more than the YAML decoder expands (a \"billion laughs\" document); write the values out, or alias less", best.Value, size)}
}

// expansion returns the number of nodes n stands for with every alias
// replaced by the value it names (an alias is not counted itself), at
// most maxExpansion; an alias met again inside its own value counts 0.
func expansion(n *yaml.Node, memo map[*yaml.Node]int64) int64 {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 0
		}
		return expansion(n.Alias, memo)
	}
	if s, ok := memo[n]; ok {
		return s
	}
	memo[n] = 0 // in progress: a value containing itself adds nothing
	var s int64 = 1
	if n.Kind == yaml.DocumentNode {
		s = 0
	}
	for _, c := range n.Content {
		s = min(s+expansion(c, memo), maxExpansion)
	}
	memo[n] = s
	return s
}

// parents maps every node of root, as written (aliases not followed), to
// the node holding it.
func parents(root *yaml.Node) map[*yaml.Node]*yaml.Node {
	out := map[*yaml.Node]*yaml.Node{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		for _, c := range n.Content {
			out[c] = n
			walk(c)
		}
	}
	if root != nil {
		out[root] = nil
		walk(root)
	}
	return out
}

// anchorLine returns the line of the first node anchored &name, or 1.
func anchorLine(root *yaml.Node, name string) int {
	line := 0
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if line > 0 {
			return
		}
		if n.Anchor == name && n.Kind != yaml.AliasNode {
			line = n.Line
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	if root != nil {
		walk(root)
	}
	return max(line, 1)
}

// readAliases calls fn with each alias in the part of root the decoder
// reads into t (as checkStructure walks it: not the value of an unknown
// field, nor a mapping with a duplicate key; all of a value a type
// decoding itself is given), in the order it reads them, once each, with
// the path it is first read at: a merge key's alias (`<<: *d`, `<<: [*a,
// *b]`) is named by the merge key (inner.<<). Aliases are followed, each
// value read once per type, so a document of nested aliases is walked in
// time linear in its size. It stops when fn returns false.
func readAliases(root *yaml.Node, t reflect.Type, fn func(a *yaml.Node, path string) bool) {
	if root == nil {
		return
	}
	if t == nil {
		t = anyType
	}
	called := map[*yaml.Node]bool{}
	stopped := false
	call := func(a *yaml.Node, path string) {
		if !stopped && !called[a] {
			called[a] = true
			stopped = !fn(a, path)
		}
	}
	type visit struct {
		n *yaml.Node
		t reflect.Type
	}
	seen := map[visit]bool{}
	var walk func(n *yaml.Node, t reflect.Type, path string)
	walk = func(n *yaml.Node, t reflect.Type, path string) {
		if stopped {
			return
		}
		if n.Kind == yaml.AliasNode {
			call(n, path)
			if n = resolve(n); n.Kind == yaml.AliasNode {
				return
			}
		}
		if n.Kind == yaml.DocumentNode {
			for _, c := range n.Content {
				walk(c, t, path)
			}
			return
		}
		if t == nodeType {
			return // kept as a node, not decoded
		}
		t = decodedAs(n, t)
		if seen[visit{n, t}] {
			return
		}
		seen[visit{n, t}] = true
		switch n.Kind {
		case yaml.SequenceNode:
			et := anyType
			switch t.Kind() {
			case reflect.Slice, reflect.Array:
				et = t.Elem()
			case reflect.Interface:
			default:
				return
			}
			for i, c := range n.Content {
				walk(c, et, fmt.Sprintf("%s[%d]", path, i))
			}
		case yaml.MappingNode:
			kind := t.Kind()
			if kind != reflect.Struct && kind != reflect.Map && kind != reflect.Interface || duplicateKeys(n) {
				return
			}
			var fields map[string]reflect.Type
			var inline reflect.Type
			if kind == reflect.Struct {
				fields, inline = yamlFields(t), inlineMap(t)
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if IsMerge(k) {
					at := join(path, "<<")
					items := []*yaml.Node{v}
					if v.Kind == yaml.SequenceNode {
						items = v.Content
					}
					for _, it := range items {
						if it.Kind == yaml.AliasNode {
							call(it, at)
						}
						walk(resolve(it), t, path)
					}
					continue
				}
				if k.Kind == yaml.AliasNode {
					call(k, path)
				}
				rk := resolve(k)
				if rk.Kind != yaml.ScalarNode {
					continue
				}
				p := join(path, rk.Value)
				switch kind {
				case reflect.Struct:
					if f, ok := fields[rk.Value]; ok {
						walk(v, f, p)
					} else if inline != nil {
						walk(v, inline, p)
					}
				case reflect.Map:
					walk(v, t.Elem(), p)
				default:
					walk(v, anyType, p)
				}
			}
		}
	}
	walk(root, t, "")
}
