package attribution

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/yamlx"
)

var testTargets = []string{"sim-a", "sim-b"}

func TestReadJSONLValid(t *testing.T) {
	f := filepath.Join("testdata", "jsonl", "valid.jsonl")
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	// A BOM is accepted.
	p, err := ReadJSONL(f, strings.NewReader("\xef\xbb\xbf"+string(data)), testTargets)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Series) != 3 {
		t.Fatalf("series: %+v", p.Series)
	}
	// Sorted by target, then category ("" first).
	a, sh, b := p.Series[0], p.Series[1], p.Series[2]
	if a.Target != "sim-a" || sh.Target != "sim-a" || sh.Category != "violence" || a.Category != "self_harm" || b.Target != "sim-b" || b.Category != "" {
		t.Fatalf("segments: %+v %+v %+v", a.Segment, sh.Segment, b.Segment)
	}
	v := sh
	if len(v.Points) != 5 || !v.HasTotals() || v.Step != time.Hour {
		t.Fatalf("violence: %+v", v)
	}
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for i, pt := range v.Points {
		if !pt.Time.Equal(t0.Add(time.Duration(i)*time.Hour)) || pt.Time.Location() != time.UTC {
			t.Errorf("point %d at %v: points must be in time order, in UTC", i, pt.Time)
		}
	}
	if v.Points[3].Blocked != 31 || v.Points[3].Total != 1000 {
		t.Errorf("point 3: %+v", v.Points[3])
	}
	if b.HasTotals() || len(b.Points) != 2 || b.Points[1].Blocked != 120.5 || b.Blocked() != 220.5 {
		t.Errorf("sim-b: %+v", b)
	}
}

// Every problem is FILE:LINE: field: problem, on the line it is on.
func TestReadJSONLErrors(t *testing.T) {
	const ok = `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":1}`
	cases := []struct {
		name, in, want string
	}{
		{"unknown field", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":1,"extra":1}`, "p.jsonl:1: extra: unknown field (want time, target, category, blocked, total)"},
		{"unknown field, hostile name", "{\"time\":\"2026-11-20T00:00:00Z\",\"target\":\"sim-a\",\"blocked\":1,\"x\\u001b[31m\":1}", `p.jsonl:1: "x\x1b[31m": unknown field`},
		{"duplicate field", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":1,"blocked":2}`, "p.jsonl:1: blocked: duplicate field"},
		{"blocked is a string", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":"12"}`, "p.jsonl:1: blocked: want a number, got a string"},
		{"total is a boolean", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":1,"total":true}`, "p.jsonl:1: total: want a number, got a boolean"},
		{"time is a number", `{"time":1763596800,"target":"sim-a","blocked":1}`, "p.jsonl:1: time: want a string, got a number"},
		{"target is an object", `{"time":"2026-11-20T00:00:00Z","target":{},"blocked":1}`, "p.jsonl:1: target: want a string, got an object"},
		{"category is an array", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","category":["hate"],"blocked":1}`, "p.jsonl:1: category: want a string, got an array"},
		{"missing time", `{"target":"sim-a","blocked":1}`, "p.jsonl:1: time: required"},
		{"missing target", `{"time":"2026-11-20T00:00:00Z","blocked":1}`, "p.jsonl:1: target: required"},
		{"missing blocked", `{"time":"2026-11-20T00:00:00Z","target":"sim-a"}`, "p.jsonl:1: blocked: required"},
		{"null blocked", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":null}`, "p.jsonl:1: blocked: must not be null"},
		{"null time", `{"time":null,"target":"sim-a","blocked":1}`, "p.jsonl:1: time: must not be null"},
		{"negative blocked", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":-1}`, "p.jsonl:1: blocked: -1: must not be negative"},
		{"negative total", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":0,"total":-5}`, "p.jsonl:1: total: -5: must not be negative"},
		{"huge number", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":1e999}`, "p.jsonl:1: blocked: 1e999: number out of range"},
		{"blocked over total", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":12,"total":10}`, "p.jsonl:1: blocked: 12 exceeds total 10"},
		{"unknown target", `{"time":"2026-11-20T00:00:00Z","target":"prod-x","blocked":1}`, `p.jsonl:1: target: "prod-x" is not a target in the config (configured: sim-a, sim-b)`},
		{"empty target", `{"time":"2026-11-20T00:00:00Z","target":"","blocked":1}`, "p.jsonl:1: target: empty"},
		{"hostile target", "{\"time\":\"2026-11-20T00:00:00Z\",\"target\":\"a\\u0007\\n\",\"blocked\":1}", `p.jsonl:1: target: "a\a\n" is not a target`},
		{"unknown category", `{"time":"2026-11-20T00:00:00Z","target":"sim-a","category":"gore","blocked":1}`, `p.jsonl:1: category: unknown category "gore" (want one of hate, harassment,`},
		{"bad time", `{"time":"yesterday","target":"sim-a","blocked":1}`, `p.jsonl:1: time: "yesterday": not an RFC 3339 time`},
		{"time without zone", `{"time":"2026-11-20T00:00:00","target":"sim-a","blocked":1}`, `p.jsonl:1: time: "2026-11-20T00:00:00": not an RFC 3339 time`},
		{"not an object", `[1,2,3]`, "p.jsonl:1: want a JSON object per line, got an array"},
		{"not JSON", `time=2026 blocked=1`, "p.jsonl:1: invalid JSON: invalid character"},
		{"truncated", `{"time":"2026-11-20T00:00:00Z","target":"sim-a",`, "p.jsonl:1: invalid JSON"},
		{"two objects on a line", ok + ok, "p.jsonl:1: trailing data after the JSON object"},
		{"line numbers count blanks and comments", "# header\n\n" + ok + "\n  # indented comment\n" + `{"time":"2026-11-20T01:00:00Z","target":"sim-a","blocked":"x"}`, "p.jsonl:5: blocked: want a number"},
		{"second point for a series and time", ok + "\n" + strings.Replace(ok, `"blocked":1`, `"blocked":2`, 1), "p.jsonl:2: time: a second point for target sim-a, category \"\" (all) at 2026-11-20T00:00:00Z (the other is on line 1)"},
		{"totals on some lines only", ok + "\n" + `{"time":"2026-11-20T01:00:00Z","target":"sim-a","blocked":1,"total":9}`, "p.jsonl:2: total: present here but absent on line 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadJSONL("p.jsonl", strings.NewReader(c.in), testTargets)
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if !strings.HasPrefix(err.Error(), c.want) && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error\n  %s\nwant it to contain\n  %s", err, c.want)
			}
			if !IsInput(err) || !yamlx.IsInputError(err) {
				t.Fatalf("%v: not an input error", err)
			}
		})
	}
}

// Each testdata file names its own problem at its own line.
func TestReadJSONLErrorFiles(t *testing.T) {
	cases := map[string]string{
		"bad-blocked-over-total.jsonl": ":3: blocked: 12 exceeds total 10",
		"bad-unknown-category.jsonl":   `:1: category: unknown category "gore"`,
		"bad-unknown-field-crlf.jsonl": ":2: extra: unknown field",
	}
	for file, want := range cases {
		path := filepath.Join("testdata", "jsonl", file)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadJSONL(path, f, testTargets)
		f.Close()
		if err == nil || !strings.HasPrefix(err.Error(), path+want) {
			t.Errorf("%s: %v, want %s%s", file, err, path, want)
		}
	}
}

// Several problems on several lines are all reported, in line order, up to
// a bound.
func TestReadJSONLCollectsProblems(t *testing.T) {
	in := `{"time":"x","target":"sim-a","blocked":-1}` + "\n" + `{"target":"nope","blocked":1}` + "\n"
	_, err := ReadJSONL("p.jsonl", strings.NewReader(in), testTargets)
	l, ok := err.(yamlx.List)
	if !ok || len(l) != 4 {
		t.Fatalf("%v", err)
	}
	want := []string{"p.jsonl:1: time:", "p.jsonl:1: blocked:", "p.jsonl:2: time: required", "p.jsonl:2: target:"}
	for i, w := range want {
		if !strings.HasPrefix(l[i].Error(), w) {
			t.Errorf("problem %d: %s, want %s…", i, l[i], w)
		}
	}
	var many strings.Builder
	for i := 0; i < 100; i++ {
		many.WriteString(`{"time":"2026-11-20T00:00:00Z","target":"nope","blocked":1}` + "\n")
	}
	_, err = ReadJSONL("p.jsonl", strings.NewReader(many.String()), testTargets)
	if l, ok := err.(yamlx.List); !ok || len(l) != maxErrors+1 || !strings.Contains(l[maxErrors].Error(), "too many problems") {
		t.Fatalf("%v", err)
	}
}

func TestReadJSONLLongLine(t *testing.T) {
	in := `{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":1}` + "\n" + `{"target":"` + strings.Repeat("a", maxLine) + `"}`
	_, err := ReadJSONL("p.jsonl", strings.NewReader(in), testTargets)
	if err == nil || !strings.HasPrefix(err.Error(), "p.jsonl:2: line longer than") {
		t.Fatalf("%v", err)
	}
}

func TestNormalizeCategory(t *testing.T) {
	for in, want := range map[string]string{"violence": "violence", " VIOLENCE ": "violence", "Self-Harm": "self_harm", "selfharm": "self_harm",
		"self harm": "self_harm", "sexual-minors": "sexual_minors", "": "", "  ": ""} {
		if got, err := NormalizeCategory(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"gore", "viol", "violence!", "HARM_CATEGORY_HATE_SPEECH"} {
		if _, err := NormalizeCategory(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"time":"2026-11-20T00:00:00Z","target":"sim-a","category":"violence","blocked":12,"total":1000}`))
	f.Add([]byte("# c\n\n{\"time\":\"2026-11-20T00:00:00Z\",\"target\":\"sim-b\",\"blocked\":1e3}\n"))
	f.Add([]byte(`{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":1}{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadJSONL("f.jsonl", strings.NewReader(string(data)), testTargets)
		if err != nil {
			if !IsInput(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		for _, s := range p.Series {
			if s.Target != "sim-a" && s.Target != "sim-b" {
				t.Fatalf("target %q", s.Target)
			}
			for i, pt := range s.Points {
				if pt.Blocked < 0 || pt.Blocked > MaxCount || pt.Total > MaxCount || (pt.HasTotal && pt.Blocked > pt.Total) || pt.HasTotal != s.HasTotals() || (i > 0 && !pt.Time.After(s.Points[i-1].Time)) {
					t.Fatalf("point %d of %+v: %+v", i, s.Segment, pt)
				}
			}
		}
	})
}

// The cap holds for the checks made after reading too (a second point for
// the same series and time, totals on some lines only): at most maxErrors
// problems, in line order, then the "too many problems" line.
func TestReadJSONLPostLoopChecksRespectTheCap(t *testing.T) {
	const line = `{"time":"2026-11-20T00:00:00Z","target":"sim-a","category":"violence","blocked":1}` + "\n"
	var dup, tot strings.Builder
	for i := 0; i < 200; i++ {
		dup.WriteString(line)
	}
	// 2 targets × 12 categories, each with a total on its first line only.
	for _, tgt := range testTargets {
		for _, c := range append([]string{""}, "hate", "harassment", "self_harm", "sexual", "sexual_minors", "violence", "illicit", "weapons", "privacy", "jailbreak", "other") {
			fmt.Fprintf(&tot, `{"time":"2026-11-20T00:00:00Z","target":%q,"category":%q,"blocked":1,"total":5}`+"\n", tgt, c)
			fmt.Fprintf(&tot, `{"time":"2026-11-20T01:00:00Z","target":%q,"category":%q,"blocked":1}`+"\n", tgt, c)
		}
	}
	for name, in := range map[string]string{"duplicates": dup.String(), "totals": tot.String()} {
		_, err := ReadJSONL("p.jsonl", strings.NewReader(in), testTargets)
		l, ok := err.(yamlx.List)
		if !ok || len(l) != maxErrors+1 || !strings.Contains(l[maxErrors].Error(), "too many problems") {
			t.Fatalf("%s: %d problem(s):\n%v", name, len(l), err)
		}
		for i := 1; i < maxErrors; i++ {
			if l[i].Line < l[i-1].Line {
				t.Fatalf("%s: not in line order: %v", name, err)
			}
		}
		if name == "duplicates" && (!strings.HasPrefix(l[0].Error(), "p.jsonl:2: time: a second point") || l[maxErrors].Line != 21) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// Counts are bounded, so no sum over a series can overflow to ±Inf.
func TestReadJSONLHugeCounts(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":1.7e308}`, "p.jsonl:1: blocked: 1.7e308: too large (at most 1e15)"},
		{`{"time":"2026-11-20T00:00:00Z","target":"sim-a","blocked":1,"total":2e15}`, "p.jsonl:1: total: 2e15: too large (at most 1e15)"},
	} {
		_, err := ReadJSONL("p.jsonl", strings.NewReader(c.in), testTargets)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !IsInput(err) {
			t.Errorf("%s: %v, want %s", c.in, err, c.want)
		}
	}
	// The largest accepted counts give finite rates, z and sums.
	var b strings.Builder
	for i := 0; i < 12; i++ {
		v := MaxCount
		if i >= 6 {
			v = MaxCount / 4
		}
		fmt.Fprintf(&b, `{"time":%q,"target":"sim-a","blocked":%g,"total":1e15}`+"\n", promT0.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), v)
		fmt.Fprintf(&b, `{"time":%q,"target":"sim-b","category":"other","blocked":%g}`+"\n", promT0.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), v)
	}
	p, err := ReadJSONL("p.jsonl", strings.NewReader(b.String()), testTargets)
	if err != nil {
		t.Fatal(err)
	}
	r := Attribute(p, history(), Options{})
	if len(r.Changes) != 2 || len(r.Uncovered) != 1 {
		t.Fatalf("%+v", r)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
}

// RFC 3339 (section 5.6) allows a lower-case "t" and "z".
func TestReadJSONLLowerCaseTime(t *testing.T) {
	in := `{"time":"2026-11-20t10:00:00z","target":"sim-a","blocked":1}
{"time":"2026-11-20t11:30:00.5+01:00","target":"sim-a","blocked":2}
{"time":"2026-11-20T11:00:00Z","target":"sim-a","blocked":3}
`
	p, err := ReadJSONL("p.jsonl", strings.NewReader(in), testTargets)
	if err != nil {
		t.Fatal(err)
	}
	pts := p.Series[0].Points
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	if len(pts) != 3 || !pts[0].Time.Equal(t0) || !pts[1].Time.Equal(t0.Add(30*time.Minute+500*time.Millisecond)) || !pts[2].Time.Equal(t0.Add(time.Hour)) {
		t.Fatalf("points %+v", pts)
	}
	// Still strict: the original text is quoted in the error.
	_, err = ReadJSONL("p.jsonl", strings.NewReader(`{"time":"2026-11-20x10:00:00z","target":"sim-a","blocked":1}`), testTargets)
	if err == nil || !strings.Contains(err.Error(), `p.jsonl:1: time: "2026-11-20x10:00:00z": not an RFC 3339 time`) {
		t.Fatalf("%v", err)
	}
}

// Input that cannot be read is the user's input (exit 2), said once:
// not "read /tmp: read /tmp: is a directory".
func TestReadJSONLUnreadable(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = ReadJSONL(dir, f, []string{"sim-a"})
	if err == nil || !IsInput(err) || !strings.HasPrefix(err.Error(), dir+": reading: ") || strings.Count(err.Error(), dir) != 1 || strings.Contains(err.Error(), "read "+dir) {
		t.Fatalf("err %v (input %v)", err, IsInput(err))
	}
}

// A file without data is a production with no series and a warning, as a
// Prometheus query matching nothing is: no error.
func TestReadJSONLNoData(t *testing.T) {
	for _, in := range []string{"", "# only a comment\n\n", "\xef\xbb\xbf\n  \t\n"} {
		p, err := ReadJSONL("p.jsonl", strings.NewReader(in), testTargets)
		if err != nil || len(p.Series) != 0 || len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], "p.jsonl: no production data") {
			t.Errorf("%q: %+v %v", in, p, err)
		}
	}
}
