package problems

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/yamlx"
	"gopkg.in/yaml.v3"
)

type item struct {
	Name  string   `yaml:"name"`
	Count int      `yaml:"count"`
	Tags  []string `yaml:"tags"`
}

type doc struct {
	Title string `yaml:"title"`
	Items []item `yaml:"items"`
	Wait  wait   `yaml:"wait"`
}

// wait decodes itself, reporting its problem as a custom unmarshaler
// does to have it located and collected with the others.
type wait string

func (w *wait) UnmarshalYAML(n *yaml.Node) error {
	if !strings.HasSuffix(n.Value, "s") {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q: not a duration", n.Line, n.Value)}}
	}
	*w = wait(n.Value)
	return nil
}

// The decoder's problems after which it read the rest of the document are
// readable; a syntax error, an empty document, a malformed merge key or
// tag, or a second document are not, and are reported alone.
func TestReadable(t *testing.T) {
	if l, ok := Readable(nil); !ok || l != nil {
		t.Errorf("Readable(nil) = %v, %v", l, ok)
	}
	for _, tt := range []struct {
		src string
		ok  bool
	}{
		{"title: x\nbogus: 1\n", true},
		{"title: x\ntitle: y\n", true},
		{"title: [x]\n", true},
		{"items:\n  - {name: a, count: 2.5}\n", true},
		{"items:\n  - {name: a, count: 010}\n", true},
		{"items:\n  - {name: a, count: 99999999999999999999}\n", true},
		{"wait: soon\ntitle: x\n", true},
		{"title: [x\n", false},
		{"", false},
		{"items:\n  - <<: 3\n    name: a\n", false},
		{"title: !!int abc\n", false},
		{"title: x\n---\ntitle: y\n", false},
	} {
		_, err := yamlx.Decode("f.yaml", []byte(tt.src), &doc{})
		if err == nil {
			t.Fatalf("%q: no problem", tt.src)
		}
		l, ok := Readable(err)
		if ok != tt.ok || ok && len(l) == 0 {
			t.Errorf("%q (%v): Readable = %v, %v; want ok %v", tt.src, err, l, ok, tt.ok)
		}
	}
	// Readable's list is a copy: appending to it leaves err as it was.
	_, err := yamlx.Decode("f.yaml", []byte("title: x\nbogus: 1\n"), &doc{})
	l, _ := Readable(err)
	_ = append(l, &yamlx.Error{Msg: "more"})
	if err.Error() != "f.yaml:2: bogus: unknown field" {
		t.Errorf("err changed: %v", err)
	}
}

// Combine lists both in file order (by column on one line) and leaves
// out validation's problems about what the decoder did not read: a value
// of the wrong type, whatever is inside it, every key of a mapping
// holding a duplicate key, and a field related to one of those.
func TestCombine(t *testing.T) {
	src := `title: [x]
items:
  - {name: a, bogus: 1, count: x}
  - name: b
    name: c
    tags: [t]
  - name: ""
    tags: 1
`
	var d doc
	root, err := yamlx.Decode("f.yaml", []byte(src), &d)
	decoded, ok := Readable(err)
	if !ok {
		t.Fatalf("not readable: %v", err)
	}
	col := &yamlx.Collector{File: "f.yaml", Root: root}
	col.Add("title", "required")            // title was not read: left out
	col.Add("items[0].count", "must be 1")  // count was not read: left out
	col.Add("items[0].name", "too short")   // kept, before bogus on its line
	col.Add("items[1].name", "required")    // items[1] was not read: left out
	col.Add("items[1].tags[0]", "unknown")  // inside it: left out
	col.Add("items[2].name", "required")    // kept
	col.Add("items[2].label", "needs tags") // related to tags, not read: left out
	related := func(f string) string {
		if s, ok := strings.CutSuffix(f, ".label"); ok {
			return s + ".tags"
		}
		return f
	}
	got := Combine(root, decoded, col.List, related).Error()
	want := strings.Join([]string{
		"f.yaml:1: title: wrong type: list where a string expected",
		"f.yaml:3: items[0].name: too short",
		"f.yaml:3: items[0].bogus: unknown field",
		`f.yaml:3: items[0].count: wrong type: string "x" where an integer expected`,
		"f.yaml:5: items[1].name: duplicate key (first at line 4)",
		"f.yaml:7: items[2].name: required",
		`f.yaml:8: items[2].tags: wrong type: int "1" where a list expected`,
	}, "\n")
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// A duplicate top-level key: nothing was read.
	root, err = yamlx.Decode("f.yaml", []byte("title: a\ntitle: b\n"), &d)
	decoded, _ = Readable(err)
	col = &yamlx.Collector{File: "f.yaml", Root: root}
	col.Add("items", "required")
	if got := Combine(root, decoded, col.List, nil); len(got) != 1 {
		t.Errorf("duplicate top-level key: %v", got)
	}
}

// Cap lists Max problems and counts the rest from the line they start on.
func TestCap(t *testing.T) {
	var l yamlx.List
	for i := range Max {
		l = append(l, &yamlx.Error{File: "f.yaml", Line: i + 1, Field: "x", Msg: "bad"})
	}
	if got := Cap(l); len(got) != Max {
		t.Errorf("Max problems: %d listed", len(got))
	}
	l = append(l, &yamlx.Error{File: "f.yaml", Line: Max + 1, Field: "x", Msg: "bad"}, &yamlx.Error{File: "f.yaml", Line: Max + 2, Field: "x", Msg: "bad"})
	got := Cap(l)
	if len(got) != Max+1 || got[Max].Error() != fmt.Sprintf("f.yaml: and 2 more problems, from line %d on", Max+1) {
		t.Errorf("Max+2 problems: %d listed, last %v", len(got), got[len(got)-1])
	}
	if !yamlx.IsInputError(got) || len(l) != Max+2 {
		t.Errorf("Cap changed its input or is no input error")
	}
}

// Items reads a list again item by item, each at the index it is written
// at: an item the decoder could not read, or an empty one, is the zero
// value (nil for pointers), and the items after it keep their indices.
func TestItems(t *testing.T) {
	src := "items:\n  - {name: a, tags: [x]}\n  - just a string\n  - ~\n  - {name: d, count: x, bogus: 1, tags: [[t], u]}\ntitle: t\n"
	var d doc
	root, err := yamlx.Decode("f.yaml", []byte(src), &d)
	if _, ok := Readable(err); !ok || len(d.Items) == 4 {
		t.Fatalf("want a readable problem and dropped items: %v, %d items", err, len(d.Items))
	}
	got, ok := Items[item](root, "items")
	want := []item{{Name: "a", Tags: []string{"x"}}, {}, {}, {Name: "d", Tags: []string{"u"}}}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Items = %v, %v; want %v", got, ok, want)
	}
	ptrs, ok := Items[*item](root, "items")
	if !ok || len(ptrs) != 4 || ptrs[0] == nil || ptrs[0].Name != "a" || ptrs[2] != nil || ptrs[3] == nil || ptrs[3].Name != "d" {
		t.Errorf("Items of pointers = %v, %v", ptrs, ok)
	}
	// The inner list too: [t] is no string, u keeps index 1.
	tags, ok := Items[string](root, "items[3].tags")
	if !ok || len(tags) != 2 || tags[0] != "" || tags[1] != "u" {
		t.Errorf("Items of strings = %q, %v", tags, ok)
	}
	for _, path := range []string{"title", "nothing", "items[9]"} {
		if l, ok := Items[string](root, path); ok || l != nil {
			t.Errorf("%s: Items = %v, %v; want no list", path, l, ok)
		}
	}
}

// Unread says what Combine leaves validation's problems out for: a field
// the decoder reported and what is inside it, every field of a mapping
// holding a duplicate key; nothing for no problems.
func TestUnread(t *testing.T) {
	src := "title: [x]\nitems:\n  - {name: a, count: x}\n  - name: b\n    name: c\n"
	var d doc
	_, err := yamlx.Decode("f.yaml", []byte(src), &d)
	decoded, ok := Readable(err)
	if !ok {
		t.Fatalf("not readable: %v", err)
	}
	unread := Unread(decoded)
	for f, want := range map[string]bool{
		"title": true, "title.x": true, "titles": false,
		"items[0].count": true, "items[0].name": false, "items[0]": false, "items": false,
		"items[1]": true, "items[1].name": true, "items[1].tags[0]": true, "items[10].name": false,
	} {
		if got := unread(f); got != want {
			t.Errorf("unread(%q) = %v, want %v", f, got, want)
		}
	}
	if Unread(nil)("title") {
		t.Error("no problems: a field unread")
	}
}
