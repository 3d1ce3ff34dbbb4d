package diff_test

// Regressions found by the fourth review of the detection-claims fixes: a
// drift's models are those of the answers it cites, also when the
// fingerprint jitters or the model is upgraded again and again.

import (
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
)

func TestReview4DriftModelsAreTheCitedAnswers(t *testing.T) {
	// Fingerprint alternating every run while the score creeps 0.10 a run.
	c := newClaims(t)
	for run := 1; run <= 10; run++ {
		h := 0.10
		if run > 2 {
			h = 0.10 + 0.10*float64(run-2)
		}
		model := []string{"m|fp1", "m|fp2"}[run%2]
		c.run(func(i int) answer { return answer{"allowed|", model, h} })
	}
	evs := c.events()
	if len(evs) == 0 {
		t.Fatal("a score creeping 0.10 → 0.90 under a jittering fingerprint drifted unseen")
	}
	for _, e := range evs {
		c.citedModels(e)
	}
	// Upgrades m1 … m5, each moving the score within the tolerance.
	c = newClaims(t)
	for run := 1; run <= 10; run++ {
		k := (run - 1) / 2
		model := []string{"m1|a", "m2|b", "m3|c", "m4|d", "m5|e"}[k]
		h := 0.10 + 0.14*float64(k)
		c.run(func(i int) answer { return answer{"allowed|", model, h} })
	}
	evs = c.events()
	if len(evs) == 0 {
		t.Fatal("scores 0.10 → 0.66 over four upgrades drifted unseen")
	}
	for _, e := range evs {
		c.citedModels(e)
	}
}

// A flip on new request bytes within the window of an event holding its
// probe on the old bytes is a change of its own: the old row stays (with
// its claims and retention pins), the new bytes' flip opens another event.
func TestReview4FlipOnNewBytesIsItsOwnEvent(t *testing.T) {
	c := newClaims(t)
	x, y := strings.Repeat("a", 64), strings.Repeat("b", 64)
	p0 := []struct{ sha, v string }{
		{x, "allowed|"}, {x, "allowed|"}, {x, "blocked_output|violence"}, {x, "blocked_output|violence"},
		{y, "blocked_input|hate"}, {y, "blocked_input|hate"}, {y, "allowed|"}, {y, "allowed|"},
	}
	for r, s := range p0 {
		c.runSha(s.sha, func(i int) answer {
			switch {
			case i == 0:
				return answer{s.v, "m|fp", -1}
			case i == 1 && r >= 4:
				return answer{"blocked_output|harassment", "m|fp", -1}
			}
			return answer{"allowed|", "m|fp", -1}
		})
	}
	evs := c.events()
	if len(evs) != 2 {
		t.Fatalf("%d events %+v: want p0's flip on x (with p1 joining) and p0's flip on y apart", len(evs), evs)
	}
	for _, e := range evs {
		var cats []string
		for _, p := range e.Probes {
			if p.FirstRun < e.FirstRun {
				t.Errorf("event %d first run %d after its row %s's %d", e.ID, e.FirstRun, p.ProbeID, p.FirstRun)
			}
			cats = append(cats, p.After.Categories...)
		}
		for _, nc := range e.NewCategories {
			if !slices.Contains(cats, nc) {
				t.Errorf("event %d claims %s newly firing; no row of it fires %s", e.ID, nc, nc)
			}
		}
	}
	if p := evs[0].Probes[0]; p.ProbeID != "p0" || p.RequestSHA256 != x || p.After.Key() != "blocked_output|violence" {
		t.Errorf("event 1's p0 row: %+v, want the flip on x", p)
	}
	if p := evs[1].Probes[0]; p.ProbeID != "p0" || p.RequestSHA256 != y || p.After.Key() != "allowed|" {
		t.Errorf("event 2's p0 row: %+v, want the flip on y", p)
	}
	pins, err := diff.LoadPins(t.Context(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pins.Observations, evs[0].Probes[0].AfterObs) {
		t.Errorf("p0's flip on x (observation %d) is no longer pinned", evs[0].Probes[0].AfterObs)
	}
}
