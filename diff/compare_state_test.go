package diff_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// A target whose detection state does not decode (a damaged probe_states
// row: detection leaves that target out, db check names it) is still
// compared: its observations are intact, and only which probes the state
// marks nondeterministic is unknown. The comparison goes on with the open
// nondeterminism events' probes set apart, says so (a warning, and
// detection_state_damaged on the side), and counts and gates the rest —
// the gate errs towards failing. It was a runtime error (exit 3) naming
// neither the target nor the row.
func TestCompareGoesOnPastDamagedDetectionState(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: cur, provider: sim, model: sim-large}
  - {name: noisy, provider: sim, model: sim-large, sim: {noise: 0.5, noise_band: 0.3}}
`)
	e.Runs(6)
	ctx := context.Background()
	before, err := diff.CompareWith(ctx, e.Store, "cur", "noisy", diff.CompareOptions{MaxNotCompared: -1})
	if err != nil {
		t.Fatal(err)
	}
	if before.ToSide.DetectionStateDamaged || before.FromSide.DetectionStateDamaged {
		t.Fatal("detection_state_damaged set on intact states")
	}
	tr, err := e.Store.TargetByName(ctx, "noisy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.SQL().ExecContext(ctx, `UPDATE probe_states SET states = x'00010203' WHERE target_id = ?`, tr.ID); err != nil {
		t.Fatal(err)
	}
	c, err := diff.CompareWith(ctx, e.Store, "cur", "noisy", diff.CompareOptions{MaxNotCompared: -1})
	if err != nil {
		t.Fatalf("compare with noisy's detection state damaged: %v", err)
	}
	if !c.ToSide.DetectionStateDamaged || c.FromSide.DetectionStateDamaged {
		t.Errorf("detection_state_damaged: from %v, to %v; want false, true", c.FromSide.DetectionStateDamaged, c.ToSide.DetectionStateDamaged)
	}
	warned := false
	for _, w := range c.Warnings {
		if strings.Contains(w, "noisy's detection state does not decode") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning about noisy's detection state: %q", c.Warnings)
	}
	// What is flagged now is what the open nondeterminism events hold.
	events := map[string]bool{}
	evs, err := diff.ListEvents(ctx, e.Store, diff.Filter{Target: "noisy"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind != diff.KindNondeterminism || ev.Status != "open" {
			continue
		}
		for _, p := range ev.Probes {
			if p.Target == "noisy" && !p.Reverted {
				events[p.ProbeID] = true
			}
		}
	}
	for _, ps := range [][]diff.ProbeDiff{c.NewBlocks, c.NewAllows, c.Recategorized} {
		for _, p := range ps {
			if got := len(p.NondeterministicOn) > 0; got != events[p.ProbeID] {
				t.Errorf("%s: flagged nondeterministic %v, in an open nondeterminism event of noisy %v", p.ProbeID, got, events[p.ProbeID])
			}
		}
	}
	// Nothing the state set apart is let through: the counts gated can
	// only grow.
	if c.Compared != before.Compared || c.Total != before.Total {
		t.Errorf("compared %d of %d, want %d of %d as before", c.Compared, c.Total, before.Compared, before.Total)
	}
	if c.OverBlocking < before.OverBlocking || c.UnderBlocking < before.UnderBlocking ||
		c.OverBlocking+c.OverBlockingNondeterministic != before.OverBlocking+before.OverBlockingNondeterministic {
		t.Errorf("over/under-blocking %d(+%d)/%d(+%d), before %d(+%d)/%d(+%d)", c.OverBlocking, c.OverBlockingNondeterministic, c.UnderBlocking, c.UnderBlockingNondeterministic,
			before.OverBlocking, before.OverBlockingNondeterministic, before.UnderBlocking, before.UnderBlockingNondeterministic)
	}
}

// A comparison refused for too few verdicts says what the sides answered
// instead (a suspended account, a mistyped model's 404s): "only 0 of 62
// probes have a verdict on both" alone left the operator to query the
// database for why.
func TestCompareNotComparableSaysWhy(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: cur, provider: sim, model: sim-large}
  - {name: cand, provider: sim, model: sim-xl, sim: {abuse_from_run: 1}}
`)
	e.Runs(1)
	_, err := diff.CompareWith(context.Background(), e.Store, "cur", "cand", diff.CompareOptions{})
	if !errors.Is(err, diff.ErrNotComparable) || !strings.HasSuffix(err.Error(), "only 0 of 62 probes have a verdict on both cur (run 1) and cand (run 1); without a verdict: cand 62 abuse_block") {
		t.Errorf("got %v", err)
	}
}
