package corpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftprobe/driftprobe/internal/problems"
	"github.com/driftprobe/driftprobe/internal/yamlx"
)

// categories is the vocabulary as the tag messages list it.
var categories = "hate, harassment, self_harm, sexual, sexual_minors, violence, illicit, weapons, privacy, jailbreak, other"

// Every problem of a corpus.yaml is reported at once, one per line in file
// order: an unknown field, a value the decoder cannot read, an empty entry
// or a duplicate key hides none of the others (a user fixing one would
// otherwise rerun to meet the next). A value the decoder could not read
// is reported once, not again as missing or empty, and the probes after
// an unreadable one keep their own indices.
func TestLoadReportsEveryProblem(t *testing.T) {
	for _, tt := range []struct {
		dir  string
		want []string // after "FILE:"
	}{
		{"bad-every-problem", []string{
			`10: probes[0].bogus: unknown field`,
			`11: probes[1].id: duplicate id "p-one" (first at probes[0])`,
			`13: probes[1].tags[1]: unknown category "gore" (want one of ` + categories + `)`,
			`19: probes[2].expect: "maybe": want allow, block or either`,
			`25: probes[3].role: "nonsense": want benign_control, borderline or positive_control`,
			`26: probes[4].id: "has space": use letters, digits, '.', '_' or '-' (at most 128)`,
		}},
		// The empty entry is named as written, and the message after it
		// keeps its index (the decoder drops the empty one); the unknown
		// role of the last message is its one problem (not also "the
		// last message must be from the user").
		{"bad-null-message", []string{
			`6: probes[0].messages[0]: empty entry: a message needs role and content`,
			`7: probes[0].messages[1].role: "robot": want system, user or assistant`,
		}},
		{"bad-unreadable-values", []string{
			`3: name: wrong type: list where a string expected`,
			`6: probes[0]: wrong type: string "just a ..." where a mapping expected`,
			`8: probes[1].prompt: wrong type: list where a string expected`,
			`9: probes[1].tags: wrong type: string "violence" where a list expected`,
			`14: probes[2].messages[0].name: unknown field`,
			`15: probes[2].messages[1]: empty entry: a message needs role and content`,
			`16: probes[2].messages[2].role: "robot": want system, user or assistant`,
			`18: probes[2].tags[1]: empty entry: want one of ` + categories,
			`18: probes[2].tags[2]: unknown category "gore" (want one of ` + categories + `)`,
			`19: probes[2].expect: "maybe": want allow, block or either`,
			`23: probes[3].id: duplicate key (first at line 21)`,
			`26: probes[4].id: duplicate id "p-two" (first at probes[1])`,
			`30: probes[4].role: "wrong": want benign_control, borderline or positive_control`,
		}},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", tt.dir)
			file := filepath.Join(dir, FileName)
			c, err := Load(dir)
			if c != nil || err == nil {
				t.Fatalf("Load(%s) = %v, %v: want the corpus refused", dir, c, err)
			}
			var l yamlx.List
			if !errors.As(err, &l) || !yamlx.IsInputError(err) {
				t.Fatalf("%T is not a list of input problems: %v", err, err)
			}
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = file + ":" + w
			}
			if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got %d problems:\n%s\nwant %d:\n%s", len(got), err, len(want), strings.Join(want, "\n"))
			}
			if len(l) != len(want) {
				t.Errorf("%d problems in the list, want %d", len(l), len(want))
			}
		})
	}
}

// A file with hundreds of problems lists the first problems.Max, in file
// order, and counts the rest from the line they start on.
func TestLoadProblemsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: many\nversion: \"1\"\nprobes:\n")
	const n = problems.Max + 37
	for i := range n {
		fmt.Fprintf(&b, "  - {id: p%d, prompt: \"Hello %d\", tags: [], expect: maybe, role: benign_control}\n", i, i)
	}
	_, err := LoadFS(fstest.MapFS{FileName: {Data: []byte(b.String())}}, "d")
	var l yamlx.List
	if !errors.As(err, &l) || !yamlx.IsInputError(err) {
		t.Fatalf("got %v, want a list of input problems", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != problems.Max+1 || len(l) != problems.Max+1 {
		t.Fatalf("%d lines (%d problems), want %d listed and one counting the rest:\n%s", len(lines), len(l), problems.Max, err)
	}
	for i, line := range lines[:problems.Max] {
		if want := fmt.Sprintf(`d/corpus.yaml:%d: probes[%d].expect: "maybe": want allow, block or either`, 4+i, i); line != want {
			t.Fatalf("line %d: %q, want %q", i, line, want)
		}
	}
	if got, want := lines[problems.Max], fmt.Sprintf("d/corpus.yaml: and 37 more problems, from line %d on", 4+problems.Max); got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

// A lock's unknown field hides none of its damaged hashes.
func TestLockReportsEveryProblem(t *testing.T) {
	dir := copyCorpus(t, "testdata/good/corpus.yaml")
	file := filepath.Join(dir, LockName)
	lock := "name: good\nversions:\n  \"1\": nothex\n  \"2\": " + strings.Repeat("a", 64) + "\nsigned_by: me\n"
	if err := os.WriteFile(file, []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = CheckLock(c, true)
	want := file + ":3: versions.1: not a content hash (64 lowercase hex digits): the lock file is damaged; restore it from version control\n" +
		file + ":5: signed_by: unknown field"
	if err == nil || err.Error() != want || !yamlx.IsInputError(err) {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

// The decoder reads nothing of a probe holding a duplicate key, so nothing
// checked what it holds: a message there that yaml.v3 panics on (a list
// used as a key beside a merge key) is never read into a crash while the
// other probes' problems are looked for.
func TestLoadDuplicateKeyProbeNeverPanics(t *testing.T) {
	src := "name: x\nversion: \"1\"\nprobes:\n  - id: a\n    id: b\n    messages:\n      - {<<: {role: user}, [x]: y, content: hi}\n    expect: allow\n    role: benign_control\n  - {id: c, prompt: hi, expect: maybe, role: borderline}\n"
	_, err := LoadFS(fstest.MapFS{FileName: {Data: []byte(src)}}, "d")
	want := "d/corpus.yaml:5: probes[0].id: duplicate key (first at line 4)\n" +
		`d/corpus.yaml:10: probes[1].expect: "maybe": want allow, block or either`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}
