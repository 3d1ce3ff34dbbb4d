package yamlx

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// occurrence is one mapping entry or list item as yaml.v3 decodes it into
// a Go type. A mapping an alias or a merge key (`<<: *d`) brings in is
// decoded again wherever it is brought in, so its entries occur once per
// place, each with the path it is read at (targets[1].bogus for a key of
// the mapping anchored at targets[0] merged into targets[1]).
type occurrence struct {
	path  string
	line  int          // the line it is written on: its key's, or the list item's (an alias's own line for `- *a`)
	key   *yaml.Node   // the key; nil for a list item
	value *yaml.Node   // the value, aliases followed
	into  reflect.Type // the type the value decodes into, pointers followed; nil for an unknown field
	in    reflect.Type // the struct, map or list type holding the entry
	via   *yaml.Node   // the outermost alias that brought it to path; nil when written there
	merge bool         // via is (an item of) a merge key's value
}

// note says where an occurrence brought in by an alias or a merge key
// comes from, for a problem reported at the line its key is written on:
// " (merged by <<: *d at line 3)"; "" for one written in place.
func (o *occurrence) note() string {
	switch {
	case o.via == nil:
		return ""
	case o.merge:
		return fmt.Sprintf(" (merged by <<: *%s at line %d)", o.via.Value, o.via.Line)
	}
	return fmt.Sprintf(" (through *%s at line %d)", o.via.Value, o.via.Line)
}

// maxReplay bounds the nodes decodeOrder visits. It replays a decode that
// yaml.v3 completed, within its own limit on alias expansion; past this
// many, the rest of the problems are located as the lines say.
const maxReplay = 1 << 20

// obsoleteUnmarshaler is yaml.v3's older custom decoding interface.
type obsoleteUnmarshaler interface {
	UnmarshalYAML(unmarshal func(any) error) error
}

var obsoleteUnmarshalerType = reflect.TypeFor[obsoleteUnmarshaler]()

// decodeOrder replays yaml.v3's decoding of root into t (see
// yaml.v3's decoder.unmarshal, mappingStruct, mapping and merge) and
// returns every mapping entry and list item in the order it is decoded:
// a mapping's own keys, then those of its merge key's mappings (the
// earlier ones first; a key already given is skipped, as the decoder
// skips it), nested values before the next key. A mapping with a
// duplicate key is not decoded (nor replayed); neither are null values,
// values of types that decode themselves, or those of interface types.
// The decoder reports its problems in this order, once per occurrence.
func decodeOrder(root *yaml.Node, t reflect.Type) []occurrence {
	if root == nil || t == nil {
		return nil
	}
	type origin struct {
		via   *yaml.Node
		merge bool
	}
	var out []occurrence
	budget := maxReplay
	type structInfo struct {
		fields map[string]reflect.Type
		inline reflect.Type
	}
	structs := map[reflect.Type]structInfo{} // a struct's fields, found once
	follow := func(n *yaml.Node, o origin, merge bool) (*yaml.Node, origin) {
		if n.Kind == yaml.AliasNode {
			if o.via == nil {
				o = origin{n, merge}
			}
			n = resolve(n)
		}
		return n, o
	}
	deref := func(t reflect.Type) reflect.Type {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		return t
	}
	record := func(path string, k, v *yaml.Node, into, in reflect.Type, o origin) {
		line := v.Line
		if k != nil {
			line = k.Line
		}
		out = append(out, occurrence{path: path, line: line, key: k, value: resolve(v), into: into, in: in, via: o.via, merge: o.merge})
	}
	var decode func(n *yaml.Node, t reflect.Type, path string, o origin)
	var fill func(m *yaml.Node, t reflect.Type, path string, o origin, shadow map[string]bool)
	decode = func(n *yaml.Node, t reflect.Type, path string, o origin) {
		if budget <= 0 {
			return
		}
		budget--
		n, o = follow(n, o, false)
		if n.Kind == yaml.DocumentNode {
			for _, c := range n.Content {
				decode(c, t, path, o)
			}
			return
		}
		if n.ShortTag() == "!!null" {
			return
		}
		for {
			pt := reflect.PointerTo(t)
			if pt.Implements(unmarshalerType) || pt.Implements(obsoleteUnmarshalerType) {
				return
			}
			if t.Kind() != reflect.Pointer {
				break
			}
			t = t.Elem()
		}
		switch n.Kind {
		case yaml.MappingNode:
			if t.Kind() == reflect.Struct || t.Kind() == reflect.Map {
				fill(n, t, path, o, nil)
			}
		case yaml.SequenceNode:
			if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
				for i, c := range n.Content {
					p := fmt.Sprintf("%s[%d]", path, i)
					record(p, nil, c, deref(t.Elem()), t, o)
					decode(c, t.Elem(), p, o)
				}
			}
		}
	}
	fill = func(m *yaml.Node, t reflect.Type, path string, o origin, shadow map[string]bool) {
		if budget <= 0 || duplicateKeys(m) {
			return
		}
		budget--
		var fields map[string]reflect.Type
		var inline reflect.Type
		if t.Kind() == reflect.Struct {
			s, ok := structs[t]
			if !ok {
				s = structInfo{yamlFields(t), inlineMap(t)}
				structs[t] = s
			}
			fields, inline = s.fields, s.inline
		}
		var mergeNode *yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if IsMerge(k) {
				mergeNode = v // the last one, as the decoder takes it
				continue
			}
			rk := resolve(k)
			if rk.Kind != yaml.ScalarNode {
				continue
			}
			name := rk.Value
			if shadow != nil {
				if shadow[name] {
					continue
				}
				shadow[name] = true
			}
			p := join(path, name)
			if t.Kind() == reflect.Map {
				record(p, k, v, deref(t.Elem()), t, o)
				decode(v, t.Elem(), p, o)
				continue
			}
			switch f, ok := fields[name]; {
			case ok:
				record(p, k, v, deref(f), t, o)
				decode(v, f, p, o)
			case inline != nil:
				record(p, k, v, deref(inline), t, o)
				decode(v, inline, p, o)
			default:
				record(p, k, v, nil, t, o)
			}
		}
		if mergeNode == nil {
			return
		}
		if shadow == nil {
			// The keys written in the mapping win over merged ones.
			shadow = map[string]bool{}
			for i := 0; i < len(m.Content); i += 2 {
				if k := resolve(m.Content[i]); k.Kind == yaml.ScalarNode && k.ShortTag() == "!!str" {
					shadow[k.Value] = true
				}
			}
		}
		items := []*yaml.Node{mergeNode}
		if mergeNode.Kind == yaml.SequenceNode {
			items = mergeNode.Content
		}
		for _, it := range items {
			if src, o := follow(it, o, true); src.Kind == yaml.MappingNode {
				fill(src, t, path, o, shadow)
			}
		}
	}
	decode(root, t, "", origin{})
	return out
}

// duplicateKeys reports whether the mapping m has a key twice, which the
// decoder reports instead of decoding m.
func duplicateKeys(m *yaml.Node) bool {
	for i := 0; i < len(m.Content); i += 2 {
		for j := i + 2; j < len(m.Content); j += 2 {
			if m.Content[i].Kind == m.Content[j].Kind && m.Content[i].Value == m.Content[j].Value {
				return true
			}
		}
	}
	return false
}

// inlineMap returns the element type of the map a struct's ",inline" map
// field collects unknown keys into, or nil when it has none.
func inlineMap(t reflect.Type) reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		_, flags, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Type.Kind() == reflect.Map && strings.Contains(","+flags+",", ",inline,") {
			return f.Type.Elem()
		}
	}
	return nil
}

// occurrenceIndex finds the occurrence a decoder message is about, in
// time linear in the occurrences and messages: the occurrences are
// bucketed by what a message gives of them (see occurrenceKey), each
// bucket in replay order, and a message takes the first occurrence of its
// bucket not taken yet, as the decoder reports a key or value once per
// place it is decoded at, in the order of the replay.
type occurrenceIndex struct {
	occ     []occurrence
	buckets map[occurrenceKey]*occurrenceQueue
	steps   int // occurrences handed out or examined, for tests
}

// occurrenceKey is what a decoder message gives of an occurrence: for an
// unknown field ("line N: field K not found in type T"), the key's line
// and name and the type holding it; for a value it cannot decode ("line
// N: cannot unmarshal !!tag `value` into T"), the value's line and the
// type, and the value as the message shows it (see shownValue).
type occurrenceKey struct {
	unknown bool
	line    int
	name    string
	typ     string
}

type occurrenceQueue struct {
	idx  []int
	next int
}

func newOccurrenceIndex(occ []occurrence) *occurrenceIndex {
	ix := &occurrenceIndex{occ: occ, buckets: map[occurrenceKey]*occurrenceQueue{}}
	for i := range occ {
		o := &occ[i]
		var k occurrenceKey
		switch {
		case o.into == nil && o.key != nil:
			k = occurrenceKey{unknown: true, line: o.key.Line, name: o.key.Value, typ: o.in.String()}
		case o.into != nil:
			k = occurrenceKey{line: o.value.Line, name: shownValue(o.value), typ: o.into.String()}
		default:
			continue
		}
		q := ix.buckets[k]
		if q == nil {
			q = &occurrenceQueue{}
			ix.buckets[k] = q
		}
		q.idx = append(q.idx, i)
	}
	return ix
}

// take returns the first occurrence of bucket k not taken yet, or nil.
func (ix *occurrenceIndex) take(k occurrenceKey) *occurrence {
	q := ix.buckets[k]
	if q == nil || q.next >= len(q.idx) {
		return nil
	}
	ix.steps++
	o := &ix.occ[q.idx[q.next]]
	q.next++
	return o
}

// shownValue is how a decoder message shows the value n: "seq" or "map"
// for a list or mapping, the scalar's value after "=" otherwise, past 10
// bytes shortened to 7 and "...", as yaml.v3's decoder.terror does.
func shownValue(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "seq"
	case yaml.MappingNode:
		return "map"
	}
	v := n.Value
	if len(v) > 10 {
		v = v[:7] + "..."
	}
	return "=" + v
}

// shownInMessage is shownValue for the value a decoder message names:
// tag as in "!!str", value as quoted there.
func shownInMessage(tag, value string) string {
	switch tag {
	case "seq", "map":
		return tag
	}
	return "=" + value
}

var (
	anyType  = reflect.TypeFor[any]()
	nodeType = reflect.TypeFor[yaml.Node]()
)

// checkStructure reports what yaml.v3 would refuse without a line or a
// field, or crash on, in the part of root it decodes into t: a merge key
// (`<<`) whose value is not a mapping, an alias of one or a list of them
// ("map merge requires map or sequence of maps"), a list or mapping used
// as a mapping key (beside a merge key, the decoder panics), and a scalar
// whose explicit tag its value does not fit (`!!int abc`, `!!binary` that
// is not base64). What the decoder does not read is left alone, as it
// is: the value of an unknown field (reported as unknown), a mapping
// with a duplicate key (reported as such), a value of the wrong kind (a
// mapping for an integer). A value a type decoding itself (an
// UnmarshalYAML) is given is checked whole, as the type may decode any
// of it; so is a merged mapping, even the values of its keys that the
// merging mapping overrides (which the decoder skips): malformed YAML
// written in the file is refused. Each problem is reported once, at the
// path it is first read at. A null or empty key (`~: x`), which the
// decoder drops with its value without a word, is reported too, as a
// Resumable problem: the decoder may still run.
func checkStructure(file string, root *yaml.Node, t reflect.Type) List {
	if root == nil {
		return nil
	}
	if t == nil {
		t = anyType
	}
	var l List
	done := map[*yaml.Node]bool{} // the nodes checked for their own problem
	add := func(line int, path, msg string) {
		l = append(l, &Error{File: file, Line: line, Field: path, Msg: msg})
	}
	type visit struct {
		n *yaml.Node
		t reflect.Type
	}
	seen := map[visit]bool{}
	var walk func(n *yaml.Node, t reflect.Type, path string, line int)
	walk = func(n *yaml.Node, t reflect.Type, path string, line int) {
		if n = resolve(n); n.Kind == yaml.AliasNode {
			return
		}
		if n.Kind == yaml.DocumentNode {
			for _, c := range n.Content {
				walk(c, t, path, c.Line)
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
		case yaml.ScalarNode:
			if !done[n] {
				done[n] = true
				if msg := tagProblem(n); msg != "" {
					add(line, path, msg)
				}
			}
		case yaml.SequenceNode:
			et := anyType
			switch t.Kind() {
			case reflect.Slice, reflect.Array:
				et = t.Elem()
			case reflect.Interface:
			default:
				return // not decoded: the decoder reports the list
			}
			for i, c := range n.Content {
				walk(c, et, fmt.Sprintf("%s[%d]", path, i), c.Line)
			}
		case yaml.MappingNode:
			kind := t.Kind()
			if kind != reflect.Struct && kind != reflect.Map && kind != reflect.Interface || duplicateKeys(n) {
				return // not decoded: the decoder reports the mapping or its duplicate key
			}
			var fields map[string]reflect.Type
			var inline reflect.Type
			if kind == reflect.Struct {
				fields, inline = yamlFields(t), inlineMap(t)
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if IsMerge(k) {
					if bad := badMerge(v); bad != nil {
						if !done[k] {
							done[k] = true
							line := k.Line
							if v.Kind == yaml.SequenceNode {
								line = bad.Line
							}
							add(line, join(path, "<<"),
								"a merge key takes a mapping, an alias of one (<<: *name) or a list of them (<<: [*a, *b]), not "+describeMerge(v, bad))
						}
						continue
					}
					for _, m := range merged(v) {
						walk(m, t, path, k.Line)
					}
					continue
				}
				rk := resolve(k)
				if rk.Kind == yaml.SequenceNode || rk.Kind == yaml.MappingNode {
					if !done[k] {
						done[k] = true
						what := "list"
						if rk.Kind == yaml.MappingNode {
							what = "mapping"
						}
						add(k.Line, path, "a "+what+" used as a key (a key is a name)")
					}
					continue
				}
				if rk.Kind != yaml.ScalarNode {
					continue
				}
				if msg := tagProblem(rk); msg != "" {
					if !done[rk] {
						done[rk] = true
						add(k.Line, path, msg)
					}
					continue
				}
				// yaml.v3 drops a null key and its value without a word,
				// in a struct as in a map: the line would be ignored.
				// The decoder goes on past it (Decode runs it when nothing
				// else here stops it), so the file's other problems are
				// reported with it.
				if IsNull(rk) && kind != reflect.Interface {
					if !done[k] {
						done[k] = true
						key, msg := rk.Value, "a null key names nothing: its value would be ignored (write the name meant, or quote the key if it is the name: \""+rk.Value+"\")"
						if key == "" {
							key, msg = `""`, "an empty key names nothing: its value would be ignored (write the name meant)"
						}
						l = append(l, &Error{File: file, Line: k.Line, Field: join(path, key), Msg: msg, Resumable: true})
					}
					continue
				}
				p := join(path, rk.Value)
				switch kind {
				case reflect.Struct:
					if f, ok := fields[rk.Value]; ok {
						walk(v, f, p, k.Line)
					} else if inline != nil {
						walk(v, inline, p, k.Line)
					} // else an unknown field, whose value is not decoded
				case reflect.Map:
					walk(v, t.Elem(), p, k.Line)
				default:
					walk(v, anyType, p, k.Line)
				}
			}
		}
	}
	walk(root, t, "", root.Line)
	return l
}

// badMerge returns the node that makes v, a merge key's value, one the
// decoder refuses: v itself, the alias naming something other than a
// mapping, or the list item that is neither a mapping nor an alias of
// one; nil when v is good.
func badMerge(v *yaml.Node) *yaml.Node {
	switch v.Kind {
	case yaml.MappingNode:
		return nil
	case yaml.AliasNode:
		if v.Alias != nil && v.Alias.Kind != yaml.MappingNode {
			return v
		}
		return nil
	case yaml.SequenceNode:
		for _, it := range v.Content {
			if it.Kind == yaml.AliasNode && (it.Alias == nil || it.Alias.Kind == yaml.MappingNode) || it.Kind == yaml.MappingNode {
				continue
			}
			return it
		}
		return nil
	}
	return v
}

// describeMerge names the bad part (bad) of a merge key's value v.
func describeMerge(v, bad *yaml.Node) string {
	what := describeNode(bad)
	if v.Kind == yaml.SequenceNode {
		return "a list holding " + what
	}
	if bad.Kind == yaml.AliasNode && bad.Alias != nil && bad.Alias.Kind == yaml.SequenceNode {
		what += " (write the list in place: <<: [*a, *b])"
	}
	return what
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias != nil {
			return "an alias (*" + n.Value + ") of " + describeNode(n.Alias)
		}
		return "an alias (*" + n.Value + ")"
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	what := strings.TrimPrefix(n.ShortTag(), "!!")
	switch what {
	case "null":
		return "an empty value"
	case "int":
		what = "integer"
	case "float":
		what = "number"
	case "bool":
		what = "boolean"
	default:
		what = tagName(what)
	}
	return what + " " + quoteShort(n.Value)
}

// tagProblem reports a scalar whose explicit tag its value does not fit
// (`!!int abc`, a `!!binary` value that is not base64), which the decoder
// refuses without a line.
func tagProblem(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode || n.Style&yaml.TaggedStyle == 0 {
		return ""
	}
	switch n.ShortTag() {
	case "!!int", "!!float", "!!bool", "!!null", "!!timestamp":
	case "!!binary":
		if _, err := base64.StdEncoding.DecodeString(n.Value); err != nil {
			return fmt.Sprintf("!!binary %s: the value is not base64 (remove the tag, or fix the value)", quoteShort(n.Value))
		}
		return ""
	default:
		return ""
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return fmt.Sprintf("%s %s: the value is not a %s (remove the tag, or fix the value)", n.ShortTag(), quoteShort(n.Value), n.ShortTag())
	}
	return ""
}

// decodedAs is the type the decoder reads n into when its field is of type
// t: pointers followed, and any type with its own unmarshaler read as
// anything (a null value is decoded as a scalar whatever the type).
func decodedAs(n *yaml.Node, t reflect.Type) reflect.Type {
	for {
		pt := reflect.PointerTo(t)
		if n.ShortTag() != "!!null" && (pt.Implements(unmarshalerType) || pt.Implements(obsoleteUnmarshalerType)) {
			return anyType
		}
		if t.Kind() != reflect.Pointer {
			return t
		}
		t = t.Elem()
	}
}
