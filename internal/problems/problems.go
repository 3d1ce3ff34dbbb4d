// Package problems reports every located problem of one input file at
// once: the strict decoder's (internal/yamlx) and validation's, in file
// order, so that a user fixing one does not rerun to meet the next.
//
// yamlx.Decode stops short of validation: it returns its problems (an
// unknown field, a value of the wrong type, ...) and the caller has no
// values to validate. Most of those problems leave every other value of
// the document readable (Readable); the caller then reads the values
// again, item by item where the decoder drops list items (Decode,
// Items), and validates them. Combine puts the two lists together,
// leaving out what validation says about a value the decoder could not
// read (it is reported once, as written, not again as "required"; Unread
// tells a check reading several fields), and Cap bounds the list.
package problems

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/driftprobe/driftprobe/internal/yamlx"
	"gopkg.in/yaml.v3"
)

// Max is how many problems of one file are listed; the rest are counted
// (Cap).
const Max = 100

// Readable reports whether err, from yamlx.Decode, leaves the document's
// other values readable (every problem yamlx.Error.Resumable), and
// returns its problems: each is an unknown
// field, a duplicate key (the mapping holding it is not read), a value of
// the wrong type (it is not read), a number the strict decoder refuses
// (a leading zero, one out of range), or a value a type decoding itself
// refused (a duration that does not parse; it is not read). The decoder
// has then read the whole document, and a value it reports nothing
// about is what it says. Any
// other problem (a syntax error, an empty document, a malformed merge key
// or tag, which the decoder would crash on or report without a line, a
// second document) is not readable: ok is false and the caller reports
// err alone. A nil err is readable, without problems.
func Readable(err error) (l yamlx.List, ok bool) {
	if err == nil {
		return nil, true
	}
	if !errors.As(err, &l) || len(l) == 0 {
		return nil, false
	}
	for _, e := range l {
		if e.Line == 0 || e.Field == "" || !e.Resumable {
			return nil, false
		}
	}
	return append(yamlx.List(nil), l...), true
}

// Decode decodes n into v leniently: unknown fields are ignored and a
// value that cannot be decoded leaves its field as it is (the strict
// decoder has reported it). It is for reading the values of a document
// the strict decoder refused, to validate them: one list item at a time,
// since the decoder drops an item it cannot decode and every later index
// would name the wrong entry.
func Decode(n *yaml.Node, v any) {
	// The strict decoder does not read a mapping holding a duplicate key,
	// so nothing checked what is inside it; yaml.v3 panics on some
	// malformed mappings (a list used as a key beside a merge key).
	// Whatever this reads is for error messages only, and the file is
	// refused either way.
	defer func() { _ = recover() }()
	_ = n.Decode(v)
}

// Items reads the list at path in root (a dotted path, as yamlx.Find
// takes it) again, one item at a time (see Decode), each at the index it
// is written at: the strict decoder drops an item it cannot decode, and
// an empty one (`- ~`) where the element is no pointer, and every later
// item would take the index before its own. An item that is empty or
// cannot be read is left as T's zero value (nil for a pointer), its
// problem the decoder's (or the caller's, for an empty one). ok is false,
// and l nil, when path holds no list.
func Items[T any](root *yaml.Node, path string) (l []T, ok bool) {
	n := yamlx.Find(root, path)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil, false
	}
	l = make([]T, len(n.Content))
	for i, item := range n.Content {
		if !yamlx.IsNull(item) {
			Decode(item, &l[i])
		}
	}
	return l, true
}

// Combine returns the decoder's problems (decoded: also those found
// beside it, such as empty list entries) and validation's (checked) in
// file order: by line, then, on one line (flow style), by the column of
// the value each is about, the order given for ties. A validation problem
// about a value the decoder did not read is left out: that value (one of
// the wrong type, an empty entry, every value of a mapping holding a
// duplicate key) is reported once, as written, not again as the zero
// value validation was given ("required", "empty"). related maps a
// validation problem's field to the field whose value it also depends on
// (a probe's prompt, which is "empty" when its messages could not be
// read), or returns it unchanged; nil for none. root locates columns.
func Combine(root *yaml.Node, decoded, checked yamlx.List, related func(field string) string) yamlx.List {
	unread := Unread(decoded)
	covered := func(f string) bool {
		return unread(f) || related != nil && unread(related(f))
	}
	out := append(yamlx.List(nil), decoded...)
	for _, e := range checked {
		if !covered(e.Field) {
			out = append(out, e)
		}
	}
	col := make(map[*yamlx.Error]int, len(out))
	for _, e := range out {
		if n := yamlx.Find(root, e.Field); e.Field != "" && n != nil && n.Line == e.Line {
			col[e] = n.Column
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return col[out[i]] < col[out[j]]
	})
	return out
}

// Unread returns a test of whether the value of a field (a dotted path)
// is one the decoder did not read, given its problems (decoded, as
// Combine takes them): a field it reported (one of the wrong type, an
// empty entry, an unknown field) and whatever is inside it, and every
// field of a mapping holding a duplicate key. Combine leaves out
// validation's problems about those fields; a caller whose check reads
// other fields than the one it reports on (every target disabled, read
// from each target's disabled) uses it to leave the check out when one
// of them was not read.
func Unread(decoded yamlx.List) func(field string) bool {
	unread := make(map[string]bool, len(decoded))
	for _, e := range decoded {
		if strings.HasPrefix(e.Msg, "duplicate key") {
			// The decoder reads nothing of the mapping holding it.
			unread[parent(e.Field)] = true
		} else {
			unread[e.Field] = true
		}
	}
	return func(f string) bool { return within(f, unread) }
}

// within reports whether the field f is one of paths or inside one
// ("" holds every field): f itself or a prefix of it ending before a "."
// or "[" (probes, probes[2], probes[2].messages for
// probes[2].messages[1]).
func within(f string, paths map[string]bool) bool {
	if paths[""] || paths[f] {
		return true
	}
	for i := 0; i < len(f); i++ {
		if (f[i] == '.' || f[i] == '[') && paths[f[:i]] {
			return true
		}
	}
	return false
}

// parent returns the path of the mapping holding the key at path
// (probes[3] for probes[3].id, "" for a top-level key).
func parent(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// Cap returns l with at most Max problems listed, the rest counted in a
// last line naming the file and the line they start from ("FILE: and 37
// more problems, from line 412 on"). l is in file order.
func Cap(l yamlx.List) yamlx.List {
	if len(l) <= Max {
		return l
	}
	rest := l[Max]
	msg := fmt.Sprintf("and %d more problems", len(l)-Max)
	if rest.Line > 0 {
		msg += fmt.Sprintf(", from line %d on", rest.Line)
	}
	return append(l[:Max:Max], &yamlx.Error{File: rest.File, Msg: msg})
}
