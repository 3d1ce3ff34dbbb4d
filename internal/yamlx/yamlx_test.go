package yamlx

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const doc = `database: x.db
schedule: "@every 1h"
targets:
  - name: a
    provider: sim
    sim:
      policies:
        - from_run: 1
          thresholds:
            violence: 0.5
        - from_run: 3
          thresholds: {hate: 0.1, violence: 0.2}
  - {name: b, provider: openai, options: {project: p}}
  - name: c
    tags:
      - x
      - y
    empty:
github:
  repo: owner/name
`

func parse(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

func TestPathAt(t *testing.T) {
	root := parse(t, doc)
	tests := []struct {
		line int
		want string
	}{
		{1, "database"},
		{2, "schedule"},
		{3, "targets"},
		{4, "targets[0].name"},
		{5, "targets[0].provider"},
		{6, "targets[0].sim"},
		{7, "targets[0].sim.policies"},
		{8, "targets[0].sim.policies[0].from_run"},
		{9, "targets[0].sim.policies[0].thresholds"},
		{10, "targets[0].sim.policies[0].thresholds.violence"},
		{11, "targets[0].sim.policies[1].from_run"},
		// On a flow line, the last key of the line wins.
		{12, "targets[0].sim.policies[1].thresholds.violence"},
		{13, "targets[1].options.project"},
		{14, "targets[2].name"},
		{15, "targets[2].tags"},
		{16, "targets[2].tags[0]"},
		{17, "targets[2].tags[1]"},
		{18, "targets[2].empty"},
		{19, "github"},
		{20, "github.repo"},
		{21, ""},
		{0, ""},
		{999, ""},
	}
	for _, tt := range tests {
		if got := PathAt(root, tt.line); got != tt.want {
			t.Errorf("PathAt(%d) = %q, want %q", tt.line, got, tt.want)
		}
	}
	if got := PathAt(nil, 1); got != "" {
		t.Errorf("PathAt(nil) = %q", got)
	}
}

func TestLineAndFind(t *testing.T) {
	root := parse(t, doc)
	tests := []struct {
		path  string
		line  int
		value string // Find(path).Value for scalars; "-" when Find is nil; "" for collections
	}{
		{"", 1, ""},
		{"database", 1, "x.db"},
		{"schedule", 2, "@every 1h"},
		{"targets", 3, ""},
		{"targets[0]", 4, ""},
		{"targets[0].name", 4, "a"},
		{"targets[0].provider", 5, "sim"},
		{"targets[0].sim.policies[1]", 11, ""},
		{"targets[0].sim.policies[1].from_run", 11, "3"},
		{"targets[0].sim.policies[0].thresholds.violence", 10, "0.5"},
		{"targets[0].sim.policies[1].thresholds.hate", 12, "0.1"},
		{"targets[1]", 13, ""},
		{"targets[1].options.project", 13, "p"},
		{"targets[2].tags[1]", 17, "y"},
		{"targets[2].empty", 18, ""},
		{"github.repo", 20, "owner/name"},
		// Missing paths: the closest existing ancestor's line, no node.
		{"targets[2].base_url", 14, "-"},
		{"targets[1].sim.noise", 13, "-"},
		{"targets[7].name", 3, "-"},
		{"targets[0].sim.policies[5].from_run", 7, "-"},
		{"github.repo.owner", 20, "-"},
		{"database[0]", 1, "-"},
		{"nope", 1, "-"},
		{"nope.deeper[2]", 1, "-"},
	}
	for _, tt := range tests {
		if got := Line(root, tt.path); got != tt.line {
			t.Errorf("Line(%q) = %d, want %d", tt.path, got, tt.line)
		}
		n := Find(root, tt.path)
		switch {
		case tt.value == "-":
			if n != nil {
				t.Errorf("Find(%q) = %+v, want nil", tt.path, n)
			}
		case n == nil:
			t.Errorf("Find(%q) = nil", tt.path)
		case n.Kind == yaml.ScalarNode && n.Value != tt.value:
			t.Errorf("Find(%q).Value = %q, want %q", tt.path, n.Value, tt.value)
		}
	}
	if Line(nil, "x") != 0 || Find(nil, "x") != nil {
		t.Error("nil root")
	}
	// An empty document has no nodes.
	var empty yaml.Node
	if Find(&empty, "targets") != nil {
		t.Error("Find in an empty document")
	}
	// The document node's child works as a root too.
	if got := Line(root.Content[0], "github.repo"); got != 20 {
		t.Errorf("Line from the mapping node = %d", got)
	}
}

// PathAt and Line agree: the path found at a key's line leads back to it.
func TestPathAtLineRoundTrip(t *testing.T) {
	root := parse(t, doc)
	for line := 1; line <= 20; line++ {
		p := PathAt(root, line)
		if p == "" {
			continue
		}
		if got := Line(root, p); got != line {
			t.Errorf("Line(PathAt(%d) = %q) = %d", line, p, got)
		}
	}
}

func TestSplitPath(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"", "[]"},
		{"a", "[a]"},
		{"a.b", "[a b]"},
		{"targets[1].name", "[targets 1 name]"},
		{"a[0][2].b", "[a 0 2 b]"},
		{"[3]", "[3]"},
		{"a..b", "[a b]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(splitPath(tt.in)); got != tt.want {
			t.Errorf("splitPath(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

type target struct {
	Name    string            `yaml:"name"`
	Count   int               `yaml:"count"`
	Ratio   float64           `yaml:"ratio"`
	On      bool              `yaml:"on"`
	Tags    []string          `yaml:"tags"`
	Options map[string]string `yaml:"options"`
	Inner   struct {
		Depth int `yaml:"depth"`
	} `yaml:"inner"`
}

type config struct {
	Database string    `yaml:"database"`
	Targets  []*target `yaml:"targets"`
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // full error lines, in order
	}{
		{"unknown top", "database: x\nbogus: 1\n", []string{"f.yaml:2: bogus: unknown field"}},
		{"unknown nested", "targets:\n  - name: a\n  - name: b\n    bogus: 1\n", []string{"f.yaml:4: targets[1].bogus: unknown field"}},
		{"unknown deep", "targets:\n  - name: a\n    inner:\n      depth: 1\n      width: 2\n", []string{"f.yaml:5: targets[0].inner.width: unknown field"}},
		{"unknown with mapping value on its line", "targets:\n  - {name: a, bogus: {x: 1}}\n", []string{"f.yaml:2: targets[0].bogus: unknown field"}},
		{"unknown in flow", "targets:\n  - {name: a, bogus: 1, count: 2}\n", []string{"f.yaml:2: targets[0].bogus: unknown field"}},
		{"string for int", "targets:\n  - count: many\n", []string{`f.yaml:2: targets[0].count: wrong type: string "many" where an integer expected`}},
		{"long string shortened", "targets:\n  - count: a-very-long-value\n", []string{`f.yaml:2: targets[0].count: wrong type: string "a-very-..." where an integer expected`}},
		{"flow: the right field", "targets:\n  - {name: a, count: x, ratio: 1}\n", []string{`f.yaml:2: targets[0].count: wrong type: string "x" where an integer expected`}},
		{"string for float", "targets:\n  - ratio: high\n", []string{`f.yaml:2: targets[0].ratio: wrong type: string "high" where a number expected`}},
		{"string for bool", "targets:\n  - on: maybe\n", []string{`f.yaml:2: targets[0].on: wrong type: string "maybe" where a boolean expected (write true or false)`}},
		{"list for mapping", "targets:\n  - options:\n      - a\n", []string{"f.yaml:2: targets[0].options: wrong type: list where a mapping expected"}},
		{"mapping for list", "targets:\n  name: a\n", []string{"f.yaml:1: targets: wrong type: mapping where a list expected"}},
		{"mapping for string", "database:\n  a: b\n", []string{"f.yaml:1: database: wrong type: mapping where a string expected"}},
		{"mapping in a string list", "targets:\n  - tags: [a, {b: c}]\n", []string{"f.yaml:2: targets[0].tags[1]: wrong type: mapping where a string expected"}},
		{"mapping in a flow list, sibling mapping", "targets:\n  - {tags: [a, {b: c}], options: {x: y}}\n", []string{"f.yaml:2: targets[0].tags[1]: wrong type: mapping where a string expected"}},
		{"list for document", "- a\n- b\n", []string{"f.yaml:1: wrong type: list where a mapping expected"}},
		{"duplicate key", "database: a\ntargets: []\ndatabase: b\n", []string{"f.yaml:3: database: duplicate key (first at line 1)"}},
		{"duplicate nested key", "targets:\n  - name: a\n    count: 1\n    name: b\n", []string{"f.yaml:4: targets[0].name: duplicate key (first at line 2)"}},
		{"several, in order", "database: [x]\ntargets:\n  - count: x\n    nope: 1\n", []string{
			"f.yaml:1: database: wrong type: list where a string expected",
			`f.yaml:3: targets[0].count: wrong type: string "x" where an integer expected`,
			"f.yaml:4: targets[0].nope: unknown field",
		}},
		{"empty", "", []string{"f.yaml:1: empty document"}},
		{"blank", "\n  \n", []string{"f.yaml:1: empty document"}},
		{"comments only", "# nothing\n# here\n", []string{"f.yaml:1: empty document"}},
		// A bare document marker is as empty, not a document whose value
		// sits on a line past the file's end; a document after it is the
		// problem.
		{"bare marker", "# nothing\n---\n", []string{"f.yaml:1: empty document"}},
		{"bare markers", "---\n---\n", []string{"f.yaml:1: empty document"}},
		{"document after a bare marker", "---\n---\ndatabase: x\n", []string{"f.yaml:2: a second YAML document starts here: a file holds one document, and nothing from here on would be read"}},
		{"tab", "database: x\ntargets:\n  - name: a\n\tcount: 1\n", []string{"f.yaml:4: invalid YAML: found a tab character that violates indentation (indent with spaces, not tabs)"}},
		{"tab at top", "database: x\n\ttargets: []\n", []string{"f.yaml:2: invalid YAML: found a tab character that violates indentation (indent with spaces, not tabs)"}},
		{"unclosed brace", "database: x\ntargets:\n  - {name: a\n  - name: b\n", []string{"f.yaml:3: invalid YAML: did not find expected ',' or '}'"}},
		{"unclosed bracket last line", "database: x\ntargets: [a, b\n", []string{"f.yaml:2: invalid YAML: did not find expected ',' or ']'"}},
		{"extra bracket", "database: x\ntargets: [1, 2]]\n", []string{"f.yaml:2: invalid YAML: did not find expected key"}},
		{"unclosed quote", "database: \"x\ntargets: []\n", []string{"f.yaml:1: invalid YAML: found unexpected end of stream"}},
		{"bad indentation", "database: x\ntargets:\n  - name: a\n count: 1\n", []string{"f.yaml:4: invalid YAML: did not find expected key"}},
		{"mapping value in scalar", "database: x\ntargets: a: b\n", []string{"f.yaml:2: invalid YAML: mapping values are not allowed in this context"}},
		{"unknown anchor", "database: x\ntargets: *nope\n", []string{"f.yaml:2: targets: invalid YAML: unknown anchor 'nope' referenced (an alias *nope names a value anchored &nope earlier in the file)"}},
		{"no trailing newline", "database: x\ntargets: [a", []string{"f.yaml:2: invalid YAML: did not find expected ',' or ']'"}},
		{"second document", "database: x\n---\ndatabase: y\n", []string{"f.yaml:2: a second YAML document starts here: a file holds one document, and nothing from here on would be read"}},
		{"third document after an empty second", "database: x\n---\n---\ntargets: []\n", []string{"f.yaml:3: a second YAML document starts here: a file holds one document, and nothing from here on would be read"}},
		{"broken second document", "database: x\n---\ntargets: [\n", []string{"f.yaml:4: invalid YAML: did not find expected node content"}},
		// Keys supplied by a merge key are the mapping's own: named by
		// its path, at the line they are written on.
		{"unknown in a merge", "targets:\n  - name: a\n    <<: {bogus: 1}\n", []string{"f.yaml:3: targets[0].bogus: unknown field"}},
		{"wrong type in a merge", "targets:\n  - name: a\n    <<:\n      - {count: x}\n", []string{`f.yaml:4: targets[0].count: wrong type: string "x" where an integer expected`}},
		{"second document after a start marker", "---\ndatabase: x\n---\ntargets: []\n", []string{"f.yaml:3: a second YAML document starts here: a file holds one document, and nothing from here on would be read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c config
			_, err := Decode("f.yaml", []byte(tt.src), &c)
			if err == nil {
				t.Fatal("no error")
			}
			var l List
			if !errors.As(err, &l) {
				t.Fatalf("%T is not a List: %v", err, err)
			}
			if !IsInputError(err) {
				t.Error("not an input error")
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(tt.want, "\n"))
			}
		})
	}
}

// A bare "---" closing the file, or opening it, is one document.
func TestDecodeDocumentMarkers(t *testing.T) {
	for _, src := range []string{"---\ndatabase: x\n", "database: x\n---\n", "---\ndatabase: x\n---\n", "database: x\n...\n"} {
		var c config
		if _, err := Decode("f.yaml", []byte(src), &c); err != nil || c.Database != "x" {
			t.Errorf("%q: %v %+v", src, err, c)
		}
	}
}

func TestDecodeOK(t *testing.T) {
	var c config
	root, err := Decode("f.yaml", []byte("database: x\ntargets:\n  - {name: a, count: 2, tags: [t]}\n"), &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Database != "x" || len(c.Targets) != 1 || c.Targets[0].Count != 2 || c.Targets[0].Tags[0] != "t" {
		t.Errorf("decoded %+v", c)
	}
	if Line(root, "targets[0].count") != 3 {
		t.Error("root does not locate fields")
	}
}

// A custom unmarshaler reporting "line N: problem" in a *yaml.TypeError is
// located and collected with the other problems.
type strictPositive int

func (p *strictPositive) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "0" {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: must be positive", n.Line)}}
	}
	var v int
	if err := n.Decode(&v); err != nil {
		return err
	}
	*p = strictPositive(v)
	return nil
}

// A custom unmarshaler returning an *Error aborts decoding, but the error
// still gets the file and field.
type located string

func (l *located) UnmarshalYAML(n *yaml.Node) error {
	return &Error{Line: n.Line, Msg: "not allowed"}
}

func TestDecodeCustomUnmarshalers(t *testing.T) {
	var v struct {
		A strictPositive `yaml:"a"`
		B struct {
			C strictPositive `yaml:"c"`
		} `yaml:"b"`
		D int `yaml:"d"`
	}
	_, err := Decode("f.yaml", []byte("a: 0\nb:\n  c: 0\nd: x\n"), &v)
	want := "f.yaml:1: a: must be positive\nf.yaml:3: b.c: must be positive\nf.yaml:4: d: wrong type: string \"x\" where an integer expected"
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
	// The decoder collects a *yaml.TypeError's problems and goes on: each
	// is resumable, the rest of the document read.
	var l List
	if !errors.As(err, &l) {
		t.Fatalf("%T is no List", err)
	}
	for _, e := range l {
		if !e.Resumable {
			t.Errorf("%v: not resumable", e)
		}
	}

	var w struct {
		X struct {
			Y located `yaml:"y"`
		} `yaml:"x"`
	}
	_, err = Decode("g.yaml", []byte("x:\n  y: z\n"), &w)
	if err == nil || err.Error() != "g.yaml:2: x.y: not allowed" {
		t.Errorf("got %v", err)
	}
	// An *Error stops the decoder: nothing after it was read.
	if errors.As(err, &l) && len(l) > 0 && l[0].Resumable {
		t.Errorf("%v: resumable", l[0])
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "f.yaml", Line: 3, Field: "targets[1].name", Msg: "required"}, "f.yaml:3: targets[1].name: required"},
		{Error{File: "f.yaml", Line: 3, Msg: "invalid YAML: x"}, "f.yaml:3: invalid YAML: x"},
		{Error{File: "f.yaml", Field: "a", Msg: "m"}, "f.yaml: a: m"},
		{Error{File: "f.yaml", Msg: "m"}, "f.yaml: m"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
	if (List{}).Err() != nil || List(nil).Err() != nil {
		t.Error("empty List.Err() != nil")
	}
	if IsInputError(errors.New("x")) || IsInputError(nil) {
		t.Error("IsInputError on a plain error")
	}
	if !IsInputError(fmt.Errorf("wrapped: %w", &Error{Msg: "m"})) || !IsInputError(fmt.Errorf("wrapped: %w", List{{Msg: "m"}})) {
		t.Error("IsInputError on wrapped input errors")
	}
}

func TestCollector(t *testing.T) {
	root := parse(t, doc)
	c := &Collector{File: "f.yaml", Root: root}
	if c.Err() != nil {
		t.Fatal("empty collector has an error")
	}
	c.Add("github.repo", "%q: want owner/name", "x")
	c.Add("targets[1].name", "duplicate %s", "b")
	c.Add("targets[2].base_url", "required")
	c.Add("schedule", "bad")
	err := c.Err()
	want := []string{
		"f.yaml:2: schedule: bad",
		"f.yaml:13: targets[1].name: duplicate b",
		"f.yaml:14: targets[2].base_url: required",
		`f.yaml:20: github.repo: "x": want owner/name`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("got:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	// Err does not reorder the collector's own list.
	if c.List[0].Field != "github.repo" {
		t.Error("Err reordered c.List")
	}
	// Without a document (a built-in config), problems have no line.
	b := &Collector{File: "(built-in)"}
	b.Add("confirm_runs", "bad")
	if got := b.Err().Error(); got != "(built-in): confirm_runs: bad" {
		t.Errorf("built-in: %q", got)
	}
}

// scalars has a field of every kind the scalar check looks at.
type scalars struct {
	Count  int              `yaml:"count"`
	Small  int8             `yaml:"small"`
	Big    int64            `yaml:"big"`
	Ptr    *int64           `yaml:"ptr"`
	Unsig  uint32           `yaml:"unsig"`
	Ratio  float64          `yaml:"ratio"`
	On     bool             `yaml:"on"`
	Opt    *bool            `yaml:"opt"`
	Name   string           `yaml:"name"`
	Ints   []int            `yaml:"ints"`
	Counts map[string]int   `yaml:"counts"`
	Flags  map[string]bool  `yaml:"flags"`
	Wait   time.Duration    `yaml:"wait"`
	Custom strictPositive   `yaml:"custom"`
	Any    any              `yaml:"any"`
	Inner  *scalars         `yaml:"inner"`
	List   []scalars        `yaml:"list"`
	Free   map[string]any   `yaml:"free"`
	Embed  `yaml:",inline"` //nolint
}

type Embed struct {
	Lifted int `yaml:"lifted"`
}

// yaml.v3 truncates a decimal number into an integer field (2.5 reads as
// 2) and reads YAML 1.1's yes/no/on/off/y/n, even quoted, into a boolean
// one: Decode refuses both, wherever the field is, and only those.
func TestDecodeScalars(t *testing.T) {
	const int2 = "where an integer expected (write 2, without a decimal point or exponent)"
	const frac = "where an integer expected (write a whole number, without a decimal point or exponent)"
	const yes = "where a boolean expected (write true or false: YAML 1.1's yes/no, on/off and y/n are not booleans here)"
	tests := []struct {
		name string
		src  string
		want []string // "" for none
	}{
		{"fraction", "count: 2.5\n", []string{`f.yaml:1: count: wrong type: decimal number "2.5" ` + frac}},
		{"almost two", "count: 1.9999\n", []string{`f.yaml:1: count: wrong type: decimal number "1.9999" ` + frac}},
		{"two point oh", "count: 2.0\n", []string{`f.yaml:1: count: wrong type: decimal number "2.0" ` + int2}},
		{"exponent", "big: 1e3\n", []string{`f.yaml:1: big: wrong type: decimal number "1e3" where an integer expected (write 1000, without a decimal point or exponent)`}},
		{"minus infinity", "count: -.inf\n", []string{`f.yaml:1: count: wrong type: decimal number "-.inf" ` + frac}},
		{"int8", "small: 2.5\n", []string{`f.yaml:1: small: wrong type: decimal number "2.5" ` + frac}},
		{"pointer", "ptr: 2.0\n", []string{`f.yaml:1: ptr: wrong type: decimal number "2.0" ` + int2}},
		{"unsigned", "unsig: 2.5\n", []string{`f.yaml:1: unsig: wrong type: decimal number "2.5" ` + frac}},
		{"explicit tag", "count: !!float 2\n", []string{`f.yaml:1: count: wrong type: decimal number "2" ` + int2}},
		{"list item", "ints: [1, 2.5]\n", []string{`f.yaml:1: ints[1]: wrong type: decimal number "2.5" ` + frac}},
		{"block list item", "ints:\n  - 1\n  - 2.5\n", []string{`f.yaml:3: ints[1]: wrong type: decimal number "2.5" ` + frac}},
		{"map value", "counts:\n  a: 1\n  b: 2.5\n", []string{`f.yaml:3: counts.b: wrong type: decimal number "2.5" ` + frac}},
		{"nested", "inner:\n  inner:\n    count: 2.5\n", []string{`f.yaml:3: inner.inner.count: wrong type: decimal number "2.5" ` + frac}},
		{"in a list of structs, flow", "list:\n  - {name: a, count: 2.5}\n", []string{`f.yaml:2: list[0].count: wrong type: decimal number "2.5" ` + frac}},
		{"inline", "lifted: 2.5\n", []string{`f.yaml:1: lifted: wrong type: decimal number "2.5" ` + frac}},
		{"alias", "inner: &a\n  count: 2.5\nlist: [*a, *a]\n", []string{`f.yaml:2: inner.count: wrong type: decimal number "2.5" ` + frac}},
		{"merge", "inner: &a {count: 2.5}\nlist:\n  - <<: *a\n    name: x\n", []string{`f.yaml:1: inner.count: wrong type: decimal number "2.5" ` + frac}},
		{"merge list", "inner: &a {ratio: 1}\nlist:\n  - <<: [*a, {count: 2.5}]\n", []string{`f.yaml:3: list[0].count: wrong type: decimal number "2.5" ` + frac}},
		{"yes", "on: yes\n", []string{`f.yaml:1: on: wrong type: string "yes" ` + yes}},
		{"quoted yes", "on: 'yes'\n", []string{`f.yaml:1: on: wrong type: string "yes" ` + yes}},
		{"Off", "on: Off\n", []string{`f.yaml:1: on: wrong type: string "Off" ` + yes}},
		{"y", "opt: y\n", []string{`f.yaml:1: opt: wrong type: string "y" ` + yes}},
		{"map of booleans", "flags: {a: true, b: n}\n", []string{`f.yaml:1: flags.b: wrong type: string "n" ` + yes}},
		{"quoted true", "on: \"true\"\n", []string{`f.yaml:1: on: wrong type: string "true" where a boolean expected (write true or false, without quotes)`}},
		{"one", "on: 1\n", []string{`f.yaml:1: on: wrong type: int "1" where a boolean expected (write true or false)`}},
		// Several problems: the check's and the decoder's, in file order,
		// one per field.
		{"with the decoder's", "bogus: 1\ncount: 2.5\non: maybe\nname: [x]\n", []string{
			"f.yaml:1: bogus: unknown field",
			`f.yaml:2: count: wrong type: decimal number "2.5" ` + frac,
			`f.yaml:3: on: wrong type: string "maybe" where a boolean expected (write true or false)`,
			"f.yaml:4: name: wrong type: list where a string expected",
		}},
		// Accepted: integers, YAML 1.2 booleans in any case yaml.v3's core
		// schema reads, nulls, decimals where they belong, and fields that
		// decode themselves.
		{"ok", "count: 0x10\nsmall: -3\nbig: 1_000\nptr: 2\nunsig: 7\nratio: 2\non: True\nopt: FALSE\nname: 2.5\nints: [1, 2]\n" +
			"counts: {a: 1}\nflags: {a: false}\nwait: 5s\ncustom: 3\nany: 2.5\nfree: {x: yes}\ninner: {on: false, count: ~}\nlist: [{count: }]\nlifted: 4\n", nil},
		{"nulls", "count: ~\non: null\nopt:\nptr: ~\nints: [~]\n", nil},
		// A leading zero: yaml.v3 reads 010 as YAML 1.1 octal (8), YAML
		// 1.2 reads 10; refused in every number field rather than guessed.
		{"leading zero", "count: 010\n", []string{`f.yaml:1: count: "010" has a leading zero: YAML 1.1 reads it as octal 8, YAML 1.2 as 10 (write 10, or 0o10 for octal)`}},
		{"negative leading zero", "big: -010\n", []string{`f.yaml:1: big: "-010" has a leading zero: YAML 1.1 reads it as octal -8, YAML 1.2 as -10 (write -10, or -0o10 for octal)`}},
		{"leading zero, underscore", "ptr: 0_10\n", []string{`f.yaml:1: ptr: "0_10" has a leading zero: YAML 1.1 reads it as octal 8, YAML 1.2 as 10 (write 10, or 0o10 for octal)`}},
		{"leading zero, not octal", "count: 09\n", []string{`f.yaml:1: count: "09" has a leading zero, which YAML 1.1 reads as octal (write 9)`}},
		{"leading zero, octal digit", "count: 07\n", []string{`f.yaml:1: count: "07" has a leading zero, which YAML 1.1 reads as octal (write 7)`}},
		{"zeros", "unsig: 00\n", []string{`f.yaml:1: unsig: "00" has a leading zero (write 0)`}},
		{"leading zero, decimal field", "ratio: 010\n", []string{`f.yaml:1: ratio: "010" has a leading zero: YAML 1.1 reads it as octal 8, YAML 1.2 as 10 (write 10, or 0o10 for octal)`}},
		{"leading zero, list item", "ints: [1, 010]\n", []string{`f.yaml:1: ints[1]: "010" has a leading zero: YAML 1.1 reads it as octal 8, YAML 1.2 as 10 (write 10, or 0o10 for octal)`}},
		{"leading zero, tagged", "count: !!int 010\n", []string{`f.yaml:1: count: "010" has a leading zero: YAML 1.1 reads it as octal 8, YAML 1.2 as 10 (write 10, or 0o10 for octal)`}},
		{"zero and prefixes", "count: 0\nsmall: -0\nbig: 0o10\nptr: 0x10\nunsig: 0b10\nratio: 0.5\nname: 010\nints: [+0o7]\n", nil},
		// An integer too large for its field is out of range, not a
		// decimal number (yaml.v3 reads one past 64 bits as one).
		{"huge", "count: 99999999999999999999999\n", []string{`f.yaml:1: count: integer "99999999999999999999999" out of range (at most 9223372036854775807)`}},
		{"huge negative", "big: -99999999999999999999\n", []string{`f.yaml:1: big: integer "-99999999999999999999" out of range (at least -9223372036854775808)`}},
		{"huge hex", "count: 0xFFFFFFFFFFFFFFFFFFFF\n", []string{`f.yaml:1: count: integer "0xFFFFFFFFFFFFFFFFFFFF" out of range (at most 9223372036854775807)`}},
		{"past int64", "count: 9223372036854775808\n", []string{`f.yaml:1: count: integer "9223372036854775808" out of range (at most 9223372036854775807)`}},
		{"int8", "small: 300\n", []string{`f.yaml:1: small: integer "300" out of range (at most 127)`}},
		{"negative unsigned", "unsig: -1\n", []string{`f.yaml:1: unsig: integer "-1" out of range (at least 0)`}},
		{"huge, merged", "inner: &a {count: 99999999999999999999}\nlist: [{<<: *a}]\n", []string{`f.yaml:1: inner.count: integer "99999999999999999999" out of range (at most 9223372036854775807)`}},
		{"in range", "big: 9223372036854775807\nsmall: -128\nunsig: 4294967295\nratio: 99999999999999999999999\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v scalars
			_, err := Decode("f.yaml", []byte(tt.src), &v)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; decoded %+v", v)
			}
			if !IsInputError(err) {
				t.Errorf("%T is not an input error", err)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// A field given as null is not given: the same as an omitted one.
func TestGiven(t *testing.T) {
	root := parse(t, "a: 1\nb: ~\nc:\nd: null\ne: [~]\nf: ''\n")
	for path, want := range map[string]bool{"a": true, "b": false, "c": false, "d": false, "e": true, "e[0]": false, "f": true, "g": false} {
		if got := Given(root, path); got != want {
			t.Errorf("Given(%q) = %v, want %v", path, got, want)
		}
	}
}

// Find, Line and Given see keys supplied by merge keys (`<<`) with YAML's
// merge semantics, as the decoder applies them: a key written in the
// mapping wins over a merged one, and of a list of merged mappings the
// earlier wins; merged mappings may be aliases and merge others in turn.
// Line gives the line of the key that supplies the value.
func TestFindMerge(t *testing.T) {
	const src = `base: &base
  count: 1
  name: base
other: &other
  count: 2
  ratio: 0.5
  <<: {depth: 3}
a:
  name: a
  <<: *base
b:
  <<: [*other, *base]
c:
  count: 9
  <<: [*base, {ratio: ~}]
d:
  <<:
    - <<: {name: deep}
      count: 4
e:
  <<: {count: 0}
list:
  - <<: *base
aliased: *other
`
	root := parse(t, src)
	tests := []struct {
		path  string
		line  int
		value string // "-" when Find is nil
	}{
		{"a.name", 9, "a"},    // written in place: wins
		{"a.count", 2, "1"},   // merged from base
		{"b.count", 5, "2"},   // other comes first
		{"b.name", 3, "base"}, // only base has it
		{"b.depth", 7, "3"},   // other merges it in turn
		{"b.ratio", 6, "0.5"},
		{"c.count", 14, "9"},   // in place
		{"c.ratio", 15, "~"},   // a merged null
		{"d.count", 19, "4"},   // a merged mapping's own key
		{"d.name", 18, "deep"}, // its merge
		{"e.count", 21, "0"},   // an explicit 0, merged
		{"list[0].name", 3, "base"},
		{"aliased.depth", 7, "3"}, // through an alias, then a merge
		{"aliased.count", 5, "2"},
		{"a.ratio", 8, "-"}, // missing: the mapping's line
		{"b.<<", 11, "-"},   // a merge key is no field
		{"b.nope.deeper", 11, "-"},
	}
	for _, tt := range tests {
		if got := Line(root, tt.path); got != tt.line {
			t.Errorf("Line(%q) = %d, want %d", tt.path, got, tt.line)
		}
		n := Find(root, tt.path)
		switch {
		case tt.value == "-":
			if n != nil {
				t.Errorf("Find(%q) = %+v, want nil", tt.path, n)
			}
		case n == nil:
			t.Errorf("Find(%q) = nil", tt.path)
		case n.Value != tt.value:
			t.Errorf("Find(%q).Value = %q, want %q", tt.path, n.Value, tt.value)
		}
	}
	for path, want := range map[string]bool{"a.count": true, "c.ratio": false, "e.count": true, "b.depth": true, "a.depth": false} {
		if got := Given(root, path); got != want {
			t.Errorf("Given(%q) = %v, want %v", path, got, want)
		}
	}
	// A merged mapping's keys are named by the mapping's path.
	for line, want := range map[int]string{18: "d.name", 19: "d.count", 21: "e.count", 7: "other.depth"} {
		if got := PathAt(root, line); got != want {
			t.Errorf("PathAt(%d) = %q, want %q", line, got, want)
		}
	}
	// Mappings merging each other through a chain of aliases are each
	// searched once.
	var b strings.Builder
	b.WriteString("m0: &m0 {x: 0}\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "m%d: &m%d {<<: [*m%d, *m%d, *m%d]}\n", i, i, i-1, i-1, i-1)
	}
	deep := parse(t, b.String())
	if Find(deep, "m30.missing") != nil || Find(deep, "m30.x") == nil {
		t.Error("chain of merges")
	}
}

// A key or value an alias or a merge key brings in is reported at the
// path it is read at, on the line it is written on, saying where it came
// from; once per place, and a problem of the anchored mapping itself
// (a duplicate key) once.
func TestDecodeMerged(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"unknown, merged", "list:\n  - &a {name: a, bogus: 1}\n  - {<<: *a, name: b}\n", []string{
			"f.yaml:2: list[0].bogus: unknown field",
			"f.yaml:2: list[1].bogus: unknown field (merged by <<: *a at line 3)",
		}},
		{"merged into another type", "list:\n  - &a {name: a, count: 1}\n  - {name: b, inner: {<<: *a, nope: 2}, counts: {<<: *a}}\n", []string{
			`f.yaml:2: list[1].counts.name: wrong type: string "a" where an integer expected (merged by <<: *a at line 3)`,
			"f.yaml:3: list[1].inner.nope: unknown field",
		}},
		{"through an alias", "inner: &i {bogus: 1}\nlist: [{inner: *i}]\n", []string{
			"f.yaml:1: inner.bogus: unknown field",
			"f.yaml:1: list[0].inner.bogus: unknown field (through *i at line 2)",
		}},
		{"shadowed", "list:\n  - &a {name: a, count: x}\n  - {<<: *a, count: 2}\n", []string{
			`f.yaml:2: list[0].count: wrong type: string "x" where an integer expected`,
		}},
		{"list of merges", "a: &a {name: a}\nb: &b {name: b, bogus: 1}\nlist: [{<<: [*a, *b]}]\n", []string{
			"f.yaml:1: a: unknown field",
			"f.yaml:2: b: unknown field",
			"f.yaml:2: list[0].bogus: unknown field (merged by <<: *b at line 3)",
		}},
		{"nested merge", "inner: &i {bogus: 1}\nouter: &o {inner: {<<: *i}}\nlist: [{<<: *o}]\n", []string{
			"f.yaml:1: inner.bogus: unknown field",
			"f.yaml:1: list[0].inner.bogus: unknown field (merged by <<: *o at line 3)",
			"f.yaml:2: outer: unknown field",
		}},
		{"duplicate key, merged twice", "inner: &i {count: 1, count: 2}\nlist: [{<<: *i}, {<<: *i}]\n", []string{
			`f.yaml:1: inner.count: duplicate key (first at line 1)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v scalars
			_, err := Decode("f.yaml", []byte(tt.src), &v)
			if err == nil {
				t.Fatalf("no error; decoded %+v", v)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// What yaml.v3 reports without a line or a field (a merge key's value
// that is not a mapping, a tag its value does not fit) or crashes on (a
// list as a key beside a merge key) is reported as FILE:LINE: FIELD.
func TestDecodeStructure(t *testing.T) {
	const takes = "a merge key takes a mapping, an alias of one (<<: *name) or a list of them (<<: [*a, *b]), not "
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"string", "list:\n  - {name: a}\n  - {<<: \"str\", name: b}\n", []string{`f.yaml:3: list[1].<<: ` + takes + `string "str"`}},
		{"empty", "inner:\n  <<:\n  count: 1\n", []string{`f.yaml:2: inner.<<: ` + takes + `an empty value`}},
		{"alias of a list", "ints: &l [1]\ninner: {<<: *l}\n", []string{`f.yaml:2: inner.<<: ` + takes + `an alias (*l) of a list (write the list in place: <<: [*a, *b])`}},
		{"list holding a number", "inner:\n  <<:\n    - {count: 1}\n    - 3\n", []string{`f.yaml:4: inner.<<: ` + takes + `a list holding integer "3"`}},
		{"top level", "<<: 1\n", []string{`f.yaml:1: <<: ` + takes + `integer "1"`}},
		{"list as a key", "list:\n  - {name: a, [x]: b}\n", []string{"f.yaml:2: list[0]: a list used as a key (a key is a name)"}},
		{"list as a key, merge", "inner: &i {count: 1}\nlist:\n  - {[x]: b, <<: *i}\n", []string{"f.yaml:3: list[0]: a list used as a key (a key is a name)"}},
		{"mapping as a key", "counts:\n  ? {a: 1}\n  : 2\n", []string{"f.yaml:2: counts: a mapping used as a key (a key is a name)"}},
		{"tag", "count: !!int abc\n", []string{`f.yaml:1: count: !!int "abc": the value is not a !!int (remove the tag, or fix the value)`}},
		// With the scalar check's problems, in file order.
		{"with scalars", "count: 2.5\ninner: {<<: x}\n", []string{
			`f.yaml:1: count: wrong type: decimal number "2.5" where an integer expected (write a whole number, without a decimal point or exponent)`,
			`f.yaml:2: inner.<<: ` + takes + `string "x"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v scalars
			_, err := Decode("f.yaml", []byte(tt.src), &v)
			if err == nil {
				t.Fatalf("no error; decoded %+v", v)
			}
			var l List
			if !errors.As(err, &l) {
				t.Fatalf("%T is not a List", err)
			}
			for _, e := range l {
				if e.Line == 0 {
					t.Errorf("no line: %v", e)
				}
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// laughsDoc returns a "billion laughs" under any: each list holds ten
// aliases of the one before it, and the last is read at key any.
func laughsDoc(levels int) string {
	var b strings.Builder
	b.WriteString("free:\n  l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	fmt.Fprintf(&b, "any: *l%d\n", levels-1)
	return b.String()
}

// What yaml.v3 reports about anchors and aliases without a line (an alias
// inside the value it names, a document of nested aliases it refuses to
// expand) or at the wrong line (an undefined alias inside a flow
// collection written over several lines) is reported at the alias's line
// with its field.
func TestDecodeAliases(t *testing.T) {
	const takes = "a merge key takes a mapping, an alias of one (<<: *name) or a list of them (<<: [*a, *b]), not "
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"undefined", "name: x\nints: [1, *nope]\n", []string{
			"f.yaml:2: ints[1]: invalid YAML: unknown anchor 'nope' referenced (an alias *nope names a value anchored &nope earlier in the file)"}},
		{"undefined, flow over lines", "name: x\ncounts: {a: 1,\n  b: 2,\n  c: *nope}\n", []string{
			"f.yaml:4: counts.c: invalid YAML: unknown anchor 'nope' referenced (an alias *nope names a value anchored &nope earlier in the file)"}},
		{"undefined, after a comment and a string naming it", "# *nope is not here\nname: \"*nope\"\ncounts: {a: 1,\n  c: *nope}\n", []string{
			"f.yaml:4: counts.c: invalid YAML: unknown anchor 'nope' referenced (an alias *nope names a value anchored &nope earlier in the file)"}},
		{"undefined merge", "inner:\n  <<: *nope\n", []string{
			"f.yaml:2: inner.<<: invalid YAML: unknown anchor 'nope' referenced (an alias *nope names a value anchored &nope earlier in the file)"}},
		{"anchored after its alias", "count: *n\nsmall: &n 1\n", []string{
			"f.yaml:1: count: invalid YAML: unknown anchor 'n' referenced (an alias *n names a value anchored &n earlier in the file)"}},
		{"undefined in a second document", "name: x\n---\ncount: *nope\n", []string{
			"f.yaml:3: invalid YAML: unknown anchor 'nope' referenced (an alias *nope names a value anchored &nope earlier in the file)"}},
		{"contains itself, list", "name: x\nany: &a [1, *a]\n", []string{
			"f.yaml:2: any[1]: *a is written inside the value it names (&a at line 2): a value cannot contain itself"}},
		{"contains itself, merge", "inner: &i\n  count: 1\n  <<: *i\n", []string{
			"f.yaml:3: inner.<<: *i is written inside the value it names (&i at line 1): a value cannot contain itself"}},
		{"contains itself, nested", "free:\n  a: &a\n    b:\n      - c: *a\n", []string{
			"f.yaml:4: free.a.b[0].c: *a is written inside the value it names (&a at line 2): a value cannot contain itself"}},
		{"billion laughs", laughsDoc(9), []string{
			"f.yaml:11: any: excessive aliasing: *l8 stands for 1111111111 YAML nodes once its aliases are expanded, more than the YAML decoder expands (a \"billion laughs\" document); write the values out, or alias less"}},
		// Already located: pinned.
		{"alias of a list for a mapping", "ints: &l [1]\ninner: *l\n", []string{"f.yaml:2: inner: wrong type: list where a mapping expected"}},
		{"merge of an alias of a scalar", "name: &n x\ninner: {<<: *n}\n", []string{`f.yaml:2: inner.<<: ` + takes + `an alias (*n) of string "x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v scalars
			_, err := Decode("f.yaml", []byte(tt.src), &v)
			if err == nil {
				t.Fatalf("no error; decoded %+v", v)
			}
			var l List
			if !errors.As(err, &l) {
				t.Fatalf("%T is not a List", err)
			}
			for _, e := range l {
				if e.Line == 0 {
					t.Errorf("no line: %v", e)
				}
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
