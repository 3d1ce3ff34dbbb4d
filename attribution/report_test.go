package attribution

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"violence":               "violence",
		"a\x1b[31mred\x1b[0m":    `a\x1b[31mred\x1b[0m`,
		"line\nbreak\r\t":        `line\nbreak\r\t`,
		"bell\a nul\x00 del\x7f": `bell\a nul\x00 del\x7f`,
		"bidi\u202eevil":         `bidi\u202eevil`,
		"zwj\u200djoin":          `zwj\u200djoin`,
		"ls\u2028ps\u2029":       `ls\u2028ps\u2029`,
		"c1\u0085next":           `c1\u0085next`,
		"bad\xffutf8":            `bad\xffutf8`,
		`back\slash`:             `back\\slash`,
		"émoji ✓ 日本":             "émoji ✓ 日本",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	// Safe escapes what is dangerous once, and leaves text Clean made
	// (backslash escapes) as it is.
	for in, want := range map[string]string{
		Clean("a\x1b[31mred"):    `a\x1b[31mred`,
		"raw\x1b[31m and \u202e": `raw\x1b[31m and \u202e`,
		"raw \x1b and \u202e ok": `raw \x1b and \u202e ok`,
		`back\slash`:             `back\slash`,
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Clean(strings.Repeat("x", 1000)); len([]rune(got)) != 301 || !strings.HasSuffix(got, "…") {
		t.Errorf("long text: %d runes", len([]rune(got)))
	}
}

func testReport() *Report {
	z := 6.04
	return &Report{
		Series: 3,
		Changes: []ChangeReport{
			{Target: "sim-a", Category: "violence", ChangeAt: promT0.Add(3 * time.Hour), BeforeRate: 0.01, AfterRate: 0.03, RateUnit: "share", Direction: Up, Z: &z,
				Attribution: Provider, Reason: "event 1 (policy_change, tightened) …", Events: []int64{1, 4}, RunsBefore: 3, RunsAfter: 7, Tolerance: "2h"},
			{Target: "sim-b", Category: "", ChangeAt: promT0.Add(5 * time.Hour), BeforeRate: 100, AfterRate: 40.25, RateUnit: "blocked_per_interval", Direction: Down,
				Attribution: Traffic, Reason: "held\x1b[2J still", Events: []int64{}, RunsBefore: 5, RunsAfter: 5, Tolerance: "2h"},
		},
		Uncovered: []UncoveredReport{{Target: "sim-a", Category: "sexual_minors", Blocked: 20}},
		Skipped:   []SkippedSeries{{Query: "blocked", Labels: map[string]string{"target": "evil\x1b]0;title\a", "category": `q"uote`}, Reason: "target \"evil\x1b]0;title\a\" is not in the config"}},
		Warnings:  []string{"prometheus warning: \x1b[31mred"},
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	r := testReport()
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"attribute · 3 series · 2 change(s): 1 provider, 1 traffic, 0 inconclusive",
		"TARGET CATEGORY CHANGE_AT BEFORE AFTER DIR Z ATTRIBUTION EVENTS RUNS_BEFORE/AFTER",
		"sim-a violence 2026-11-20T03:00:00Z 1.00% 3.00% up 6.0 PROVIDER 1,4 3/7",
		"sim-b (all) 2026-11-20T05:00:00Z 100.0/int 40.2/int down - TRAFFIC - 5/5",
		`sim-b/(all) TRAFFIC: held\x1b[2J still`,
		"uncovered categories (production blocks them, no corpus probe is tagged with them): TARGET CATEGORY BLOCKED sim-a sexual_minors 20",
		`skipped series: 1 blocked {category="q\"uote", target="evil\x1b]0;title\a"}: target "evil\x1b]0;title\a" is not in the config`,
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\a") {
		t.Fatalf("raw control characters in the table:\n%q", out)
	}
	b.Reset()
	r.WriteWarnings(&b)
	if w := b.String(); strings.ContainsAny(w, "\x1b\a") || !strings.Contains(w, `driftprobe: warning: prometheus warning: \x1b[31mred`) ||
		!strings.Contains(w, "driftprobe: warning: skipped blocked series {category=") {
		t.Fatalf("warnings:\n%q", w)
	}
}

// The JSON contract: field names, "" for all categories, z only with
// totals, lists never null.
func TestReportJSONSchema(t *testing.T) {
	r := Attribute(&Production{Series: []*Series{step("sim-a", "violence", 10, 30)}}, history(), Options{})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"series", "changes", "uncovered_categories", "skipped_series", "warnings"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, b)
		}
	}
	c := m["changes"].([]any)[0].(map[string]any)
	for _, k := range []string{"target", "category", "change_at", "change_from", "before_rate", "after_rate", "rate_unit", "direction", "z", "attribution", "reason", "events", "runs_before", "runs_after", "tolerance"} {
		if _, ok := c[k]; !ok {
			t.Errorf("change lacks %q: %v", k, c)
		}
	}
	if c["change_at"] != "2026-11-20T06:00:00Z" || c["change_from"] != c["change_at"] || c["events"] == nil {
		t.Errorf("%v", c)
	}
	empty, _ := json.Marshal(Attribute(&Production{}, &History{}, Options{}))
	if string(empty) != `{"series":0,"changes":[],"uncovered_categories":[],"skipped_series":[],"warnings":["the database has no runs: nothing can be attributed to the provider or to traffic (run driftprobe on a schedule first)"]}` {
		t.Errorf("%s", empty)
	}
}

// A reason is printed whole in the table, however long, with its control
// characters escaped.
func TestWriteTableLongReason(t *testing.T) {
	r := testReport()
	long := strings.Repeat("a long reason ", 40) + "\x1b[2J the end"
	r.Changes[0].Reason = long
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), strings.Repeat("a long reason ", 40)+`\x1b[2J the end`) || strings.Contains(b.String(), "\x1b") {
		t.Fatalf("table:\n%s", b.String())
	}
}
