package diff_test

// Regressions found by the third review of the detection-claims fixes
// (creeping drift under model changes, drift joins naming every model
// change, rows of one byte version).

import (
	"fmt"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
)

// Q1. Scores creep up 0.10 per run (each step within the 0.15 tolerance)
// on a target whose answers alternate between two fingerprints of one
// model (system_fingerprint varying per request). Every run is "a model
// change under which the scores held", so the baseline follows the
// scores and the 0.10 → 0.90 drift is never reported. The same creep on
// one fingerprint is reported (control).
func TestReview3CreepingDriftUnderAlternatingFingerprints(t *testing.T) {
	for _, alternate := range []bool{false, true} {
		c := newClaims(t)
		for run := 1; run <= 10; run++ {
			h := 0.10
			if run > 2 {
				h = 0.10 + 0.10*float64(run-2) // 0.20, 0.30, ... 0.90
			}
			model := "m|fp1"
			if alternate && run%2 == 0 {
				model = "m|fp2"
			}
			c.run(func(i int) answer {
				if i == 0 {
					return answer{"allowed|", model, h}
				}
				return answer{"allowed|", model, -1}
			})
		}
		n := 0
		for _, e := range c.events() {
			if e.Kind == diff.KindScoreDrift {
				n++
			}
		}
		if n == 0 {
			t.Errorf("alternating fingerprints %v: p0's hate score went 0.10 → 0.90 on one model and no score_drift was reported", alternate)
		}
	}
}

// Q2. A score_drift event already naming a model change (p0's scores moved
// with m1 → m2) takes p1's drift that came with a second model change
// (m2 → m3): neither the event's models nor its update say so (driftModels
// only fires while the event names one model), though p1's row cites an m2
// answer before and an m3 answer after.
func TestReview3DriftJoiningWithSecondModelChangeNamesIt(t *testing.T) {
	c := newClaims(t)
	for run := 1; run <= 7; run++ {
		c.run(func(i int) answer {
			model := "m1|fp1"
			switch {
			case run >= 6:
				model = "m3|fp3"
			case run >= 4:
				model = "m2|fp2"
			}
			h := 0.10
			if (i == 0 && run >= 4) || (i == 1 && run >= 6) {
				h = 0.50
			}
			return answer{"allowed|", model, h}
		})
	}
	evs := c.events()
	if len(evs) != 1 || len(evs[0].Probes) != 2 {
		t.Fatalf("events %+v: want one score_drift of p0 and p1", evs)
	}
	e := evs[0]
	t.Logf("event %d %s %s → %s", e.ID, e.Kind, e.ModelBefore, e.ModelAfter)
	said := strings.Contains(e.ModelBefore+e.ModelAfter, "m3")
	for _, u := range e.Updates {
		t.Logf("  run %d %s: %s", u.RunID, u.Change, u.Detail)
		said = said || strings.Contains(u.Detail, "m3|fp3")
	}
	if !said {
		t.Errorf("p1's scores moved with m2 → m3; the event names %s → %s and no update mentions m3", e.ModelBefore, e.ModelAfter)
	}
}

// Q4. Repeated model upgrades, each moving the scores 0.14 (within the
// 0.15 tolerance): 0.10 on m1 → 0.66 on m5, never reported.
func TestReview3CreepAcrossUpgrades(t *testing.T) {
	c := newClaims(t)
	for run := 1; run <= 10; run++ {
		step := (run - 1) / 2 // 0..4
		model := []string{"m1|a", "m2|b", "m3|c", "m4|d", "m5|e"}[step]
		h := 0.10 + 0.14*float64(step)
		c.run(func(i int) answer { return answer{"allowed|", model, h} })
	}
	if len(c.events()) == 0 {
		t.Errorf("scores 0.10 (m1) → 0.66 (m5) over four upgrades: no score_drift")
	}
}

// Q5. An input block names no model (no model ran): its input-filter
// scores creep 0.10 → 0.90 while the target's model (from p1, p2)
// alternates fingerprints; the substituted model "changes" every run and
// the creep is never reported.
func TestReview3InputBlockScoresCreepUnderSubstitutedModel(t *testing.T) {
	c := newClaims(t)
	for run := 1; run <= 10; run++ {
		h := 0.10
		if run > 2 {
			h = 0.10 + 0.10*float64(run-2)
		}
		model := []string{"m|fp1", "m|fp2"}[run%2]
		c.run(func(i int) answer {
			if i == 0 {
				return answer{"blocked_input|hate", "", h}
			}
			return answer{"allowed|", model, -1}
		})
	}
	if len(c.events()) == 0 {
		t.Errorf("p0's input-filter hate score 0.10 → 0.90: no score_drift (the target's fingerprint alternated; no model ran for p0)")
	}
}

// runSha is claims.run with p0's request bytes chosen per run.
func (c *claims) runSha(sha0 string, as func(i int) answer) {
	c.t.Helper()
	ctx := c.t.Context()
	id, err := c.db.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1", CorpusHash: "h"})
	if err != nil {
		c.t.Fatal(err)
	}
	var os []*storage.Observation
	for i := range 3 {
		a := as(i)
		v := diff.ParseKey(a.verdict)
		sha := strings.Repeat(fmt.Sprint(i+1), 64)
		if i == 0 {
			sha = sha0
		}
		o := &storage.Observation{ProbeID: fmt.Sprintf("p%d", i), RequestSHA256: sha, Attempts: 1, ObservedAt: time.Unix(0, 0),
			Result: probes.Result{Class: v.Class, Categories: v.Categories}}
		o.ProbeSHA256 = o.RequestSHA256
		o.Result.ModelID, o.Result.ModelFP, _ = strings.Cut(a.model, "|")
		o.RunID, o.TargetID = id, c.tid
		os = append(os, o)
	}
	if err := c.db.InsertObservations(ctx, os); err != nil {
		c.t.Fatal(err)
	}
	if err := c.db.FinishRun(ctx, id, storage.RunComplete, []storage.RunTarget{{TargetID: c.tid, Status: storage.TargetComplete}}); err != nil {
		c.t.Fatal(err)
	}
	if _, err := diff.Apply(ctx, c.db, diff.Input{RunID: id, CorpusVersion: "1", CorpusHash: "h",
		Targets: []diff.TargetRun{{ID: c.tid, Name: "a", Provider: "sim", Status: storage.TargetComplete, Observations: os}},
		Params:  diff.Params{ConfirmRuns: 2, NondeterministicFlips: 2, WindowRuns: 3, ScoreTolerance: 0.15, Enqueue: func(string) bool { return true }}}); err != nil {
		c.t.Fatalf("run %d: %v", id, err)
	}
}

// Q6. p0 is marked nondeterministic on bytes X (allowed ↔ blocked_output,
// run 6); a corpus edit gives it bytes Y, on which it is marked again
// (blocked_input ↔ allowed, run 9) inside the nondeterminism event's
// window. The merge keeps the row's before side and request_sha256 (X)
// and takes the after side from Y: the row claims a pair p0 never moved
// between on either bytes, and cites an answer on other bytes.
func TestReview3RemarkOnNewBytesKeepsOnePair(t *testing.T) {
	c := newClaims(t)
	x, y := strings.Repeat("a", 64), strings.Repeat("b", 64)
	seq := []struct{ sha, v string }{
		{x, "allowed|"}, {x, "allowed|"}, {x, "blocked_output|violence"}, {x, "allowed|"}, {x, "blocked_output|violence"}, {x, "allowed|"},
		{y, "blocked_input|hate"}, {y, "allowed|"}, {y, "blocked_input|hate"},
	}
	for _, s := range seq {
		c.runSha(s.sha, func(i int) answer {
			if i == 0 {
				return answer{s.v, "m|fp", -1}
			}
			return answer{"allowed|", "m|fp", -1}
		})
	}
	for _, e := range c.events() {
		for _, p := range e.Probes {
			t.Logf("event %d %s %s: %s → %s sha %s… before_obs %d after_obs %d", e.ID, e.Kind, p.ProbeID, p.Before, p.After, p.RequestSHA256[:4], p.BeforeObs, p.AfterObs)
			if p.Before.Key() == p.After.Key() {
				t.Errorf("event %d: %s's row claims it moves between %s and itself", e.ID, p.ProbeID, p.Before)
			}
			for _, id := range []int64{p.BeforeObs, p.AfterObs} {
				o, err := c.db.Observation(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				if o.RequestSHA256 != p.RequestSHA256 {
					t.Errorf("event %d: %s's row (bytes %s…) cites observation %d sent with bytes %s…", e.ID, p.ProbeID, p.RequestSHA256[:4], id, o.RequestSHA256[:4])
				}
			}
		}
		for _, u := range e.Updates {
			t.Logf("  run %d %s: %s", u.RunID, u.Change, u.Detail)
		}
	}
}

// Q6b. Consequence of Q6 for news(): on Y p0 was marked between
// blocked_input and allowed; it then settles back and forth between
// exactly those two, and a move to blocked_input is told as a change
// "that held" (the row pair is allowed ↔ allowed).
func TestReview3RemarkThenSettleWithinPairIsSilent(t *testing.T) {
	c := newClaims(t)
	x, y := strings.Repeat("a", 64), strings.Repeat("b", 64)
	seq := []struct{ sha, v string }{
		{x, "allowed|"}, {x, "allowed|"}, {x, "blocked_output|violence"}, {x, "allowed|"}, {x, "blocked_output|violence"}, {x, "allowed|"},
		// Marked on Y at run 10: back to the verdict it left twice (a
		// new verdict replacing a candidate is a change, not a revert).
		{y, "blocked_input|hate"}, {y, "allowed|"}, {y, "blocked_input|hate"}, {y, "allowed|"},
		{y, "blocked_input|hate"}, {y, "blocked_input|hate"}, // baseline blocked_input
		{y, "allowed|"}, {y, "allowed|"}, // settled at allowed
		{y, "blocked_input|hate"}, {y, "blocked_input|hate"}, // settled back at blocked_input (runs 15-16)
	}
	for _, s := range seq {
		c.runSha(s.sha, func(i int) answer {
			if i == 0 {
				return answer{s.v, "m|fp", -1}
			}
			return answer{"allowed|", "m|fp", -1}
		})
	}
	for _, e := range c.events() {
		for _, u := range e.Updates {
			t.Logf("event %d run %d %s: %s", e.ID, u.RunID, u.Change, u.Detail)
			if u.RunID > 10 {
				t.Errorf("run %d told %q: p0 was marked on these bytes between blocked_input and allowed", u.RunID, u.Detail)
			}
		}
	}
}
