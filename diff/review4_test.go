package diff_test

// Regressions found by the fourth review of the detection-claims fixes: a
// drift's models are those of the answers it cites, also when the
// fingerprint jitters or the model is upgraded again and again.

import (
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
// probe on the old bytes joins the event and replaces the probe's row: a
// row describes one byte version (its before and after, its cited answers,
// its bytes), and the update says the row moved to the new bytes. (A
// fifth pass opened an event of its own instead; review showed the new
// event then took the window from the old one, leaving a probe in two open
// events.)
func TestReview4FlipOnNewBytesReplacesTheRow(t *testing.T) {
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
	if len(evs) != 1 {
		t.Fatalf("%d events %+v: want one", len(evs), evs)
	}
	e := evs[0]
	var row *diff.EventProbe
	for i := range e.Probes {
		if e.Probes[i].ProbeID == "p0" {
			row = &e.Probes[i]
		}
	}
	if row == nil || row.RequestSHA256 != y || row.Before.Key() != "blocked_input|hate" || row.After.Key() != "allowed|" {
		t.Fatalf("p0's row %+v: want its flip on y (blocked_input[hate] → allowed)", row)
	}
	for _, id := range []int64{row.BeforeObs, row.AfterObs} {
		o, err := c.db.Observation(t.Context(), id)
		if err != nil || o.RequestSHA256 != y {
			t.Errorf("p0's row cites observation %d sent with other bytes (%v)", id, err)
		}
	}
	if u := e.Updates[len(e.Updates)-1]; !strings.Contains(u.Detail, "again on new request bytes") {
		t.Errorf("last update %+v: want it to say p0's row moved to new bytes", u)
	}
}
