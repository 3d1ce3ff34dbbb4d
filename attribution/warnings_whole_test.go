package attribution

import (
	"strings"
	"testing"
	"time"
)

// A warning is printed whole on stderr: the late-counter warning and the
// no-series warning for a long query run past 300 runes, and their advice
// is at the end.
func TestWarningsPrintedWhole(t *testing.T) {
	late := "prometheus: target sim-a, category violence: no sample for the intervals between 2026-11-30T01:00:00Z (the range's start) and 2026-11-30T14:00:00Z: they are missing, not counted as 0 blocked " +
		"(a labelled counter has no series until its first increment; with a total query, steps with requests count as 0)"
	p := &Prometheus{Start: promT0, End: promT0.Add(time.Hour)}
	none := p.noSeries("query", "sum by (target, category) (increase(llm_blocked_total{job=\"gateway\", env=\"prod\", region=~\"eu-.*|us-.*\"}[1h])) + "+strings.Repeat("x", 150))
	r := &Report{Warnings: []string{late, none, "bad \x1b[31m"}}
	var b strings.Builder
	r.WriteWarnings(&b)
	out := b.String()
	for _, want := range []string{"steps with requests count as 0)\n", "check the metric and label names, and --since)\n", `bad \x1b[31m`} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "…\n") || strings.ContainsAny(out, "\x1b") {
		t.Fatalf("a warning was cut or left raw:\n%s", out)
	}
}
