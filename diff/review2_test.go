package diff_test

// Regressions found by the second review of the detection-claims fixes
// (each named R1–R8 in its comment).

import (
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
)

// R1. A target whose answers name no model (no id, no fingerprint, and
// the target reports none): scoresModel is "" in a format-4 state, so
// scoreDrift falls back to the baseline's answer as if the state were
// format 3. The second drift (0.5 → 0.9) then cites run 2's answer (hate
// 0.1) as its before side.
func TestReviewDriftWithoutModelCitesScoresAnswer(t *testing.T) {
	c := newClaims(t)
	for run := 1; run <= 10; run++ {
		h := 0.10
		if run >= 4 {
			h = 0.50
		}
		if run >= 9 {
			h = 0.90
		}
		c.run(func(i int) answer { return answer{"allowed|", "", h} })
	}
	evs := c.events()
	if len(evs) != 2 {
		t.Fatalf("%d events, want two score drifts", len(evs))
	}
	for _, e := range evs {
		for _, p := range e.Probes {
			if got := c.hateOf(p.BeforeObs); got != p.ScoreMoves[0].Before {
				t.Errorf("event %d %s: before observation %d (run %d) carries hate %v, but the event claims it moved from %v",
					e.ID, p.ProbeID, p.BeforeObs, p.BeforeRun, got, p.ScoreMoves[0].Before)
			}
		}
	}
}

// R2. A run in which every probe held still (same verdict, same scores)
// rewrites the target's state blob: scoreDrift marks every probe with
// scores dirty to move scoresObs to this run's answer ("a run where every
// probe held still costs no write", saveStates).
func TestReviewSteadyRunWithScoresWritesNoState(t *testing.T) {
	c := newClaims(t)
	updated := func() (n int64) {
		t.Helper()
		if err := c.db.SQL().QueryRow(`SELECT updated_run FROM probe_states`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 4 {
		c.run(func(i int) answer { return answer{"allowed|", "m|fp", 0.10} })
	}
	at := updated()
	for range 3 {
		c.run(func(i int) answer { return answer{"allowed|", "m|fp", 0.10} })
	}
	if got := updated(); got != at {
		t.Errorf("probe_states rewritten in runs where nothing changed: updated_run %d → %d", at, got)
	}
}

// R3. A probe whose verdict flipped between two score drifts merged into
// one score_drift event: ON CONFLICT moves after and before_obs but not
// before, so the drift row claims a verdict change (allowed →
// blocked_output) and cites, as the answer holding "allowed", one that
// answered blocked_output. The event's direction follows the fake flip.
func TestReviewDriftRowAfterFlipKeepsOneVerdict(t *testing.T) {
	c := newClaims(t)
	for run := 1; run <= 9; run++ {
		c.run(func(i int) answer {
			switch i {
			case 0:
				switch {
				case run <= 3:
					return answer{"allowed|", "m|fp", 0.10}
				case run <= 5: // drift 1, confirmed run 5
					return answer{"allowed|", "m|fp", 0.50}
				case run <= 7: // flip, confirmed run 7
					return answer{"blocked_output|violence", "m|fp", 0.50}
				}
				return answer{"blocked_output|violence", "m|fp", 0.90} // drift 2, confirmed run 9
			case 1: // drifts in runs 6–7: keeps the drift event in the window
				if run <= 5 {
					return answer{"allowed|", "m|fp", 0.10}
				}
				return answer{"allowed|", "m|fp", 0.50}
			}
			return answer{"allowed|", "m|fp", -1}
		})
	}
	for _, e := range c.events() {
		if e.Kind != diff.KindScoreDrift {
			continue
		}
		t.Logf("event %d %s direction %s", e.ID, e.Kind, e.Direction)
		for _, p := range e.Probes {
			t.Logf("  %s %s → %s before_obs %d (run %d) first %d", p.ProbeID, p.Before, p.After, p.BeforeObs, p.BeforeRun, p.FirstRun)
			if p.Before.Key() != p.After.Key() {
				t.Errorf("score_drift event %d: %s's row claims %s → %s", e.ID, p.ProbeID, p.Before, p.After)
			}
			o, err := c.db.Observation(t.Context(), p.BeforeObs)
			if err != nil {
				t.Fatal(err)
			}
			if got := diff.VerdictOf(o.Result).Key(); got != p.Before.Key() {
				t.Errorf("score_drift event %d: %s's before observation %d answered %s, the row claims %s", e.ID, p.ProbeID, p.BeforeObs, got, p.Before)
			}
		}
		if e.Direction != diff.Tightened {
			t.Errorf("score_drift event %d: direction %s, every score moved up", e.ID, e.Direction)
		}
	}
}

// R4. Two score drifts in one event's window, both moving up: the event
// reads "mixed" once the second merges (merge recomputes the direction
// from the rows' verdicts, which a drift does not change).
func TestReviewDriftEventDirectionAfterMerge(t *testing.T) {
	c := newClaims(t)
	for run := 1; run <= 7; run++ {
		c.run(func(i int) answer {
			h := 0.10
			if (i == 0 && run >= 4) || (i == 1 && run >= 6) {
				h = 0.50
			}
			return answer{"allowed|", "m|fp", h}
		})
	}
	evs := c.events()
	if len(evs) != 1 || len(evs[0].Probes) != 2 {
		t.Fatalf("events %+v, want one drift of p0 and p1", evs)
	}
	if evs[0].Direction != diff.Tightened {
		t.Errorf("direction %s after p1 joined (opened %s): both scores moved up", evs[0].Direction, diff.Tightened)
	}
}

// R5. A target joining a model_change provider-wide with flips that came
// with no model change: its update does not say so (only extensions of
// the target's own event do).
func TestReviewPolicyFlipsJoiningModelChangeSaySo(t *testing.T) {
	m := newMulti(t, "a", "b")
	round := func(aModel string, blocked ...int) {
		t.Helper()
		m.round(func(n string, i int) (string, string) {
			model := "b|fb"
			if n == "a" {
				model = aModel
			}
			if slices.Contains(blocked, i) {
				return "blocked_output|violence", model
			}
			return "allowed|", model
		})
	}
	round("a|m1")
	round("a|m1")
	round("a|m2", 0, 1)
	round("a|m2", 0, 1) // a: model_change; b joins with flips on its unchanged model
	evs := m.events()
	if len(evs) != 1 || evs[0].Kind != diff.KindModel || len(evs[0].Targets) != 2 {
		t.Fatalf("events %+v, want one model_change on a and b", evs)
	}
	for _, u := range evs[0].Updates {
		if u.Change == diff.ChangeTargetJoined && !strings.Contains(u.Detail, "no model change came with") {
			t.Errorf("join update %q: b's flips came with no model change, the update does not say so", u.Detail)
		}
	}
}

// R6. Scores that jitter within the tolerance never equal the baseline's
// exactly: after a model upgrade under which the scores held (0.10 →
// 0.11/0.12 on m2 for 21 runs), a drift long after is measured from 0.10
// and cites m1's answer carrying it, so it names m1 → m2: the models of
// the answers it cites (a later review settled on that over naming a model
// no cited answer carries).
func TestReviewDriftLongAfterModelChangeUnderJitter(t *testing.T) {
	c := newClaims(t)
	for run := 1; run <= 26; run++ {
		c.run(func(i int) answer {
			switch {
			case run <= 3:
				return answer{"allowed|", "m1|fp1", 0.10}
			case run <= 24:
				return answer{"allowed|", "m2|fp2", []float64{0.11, 0.12}[run%2]} // held, within tolerance
			}
			return answer{"allowed|", "m2|fp2", 0.60}
		})
	}
	for _, e := range c.events() {
		t.Logf("event %d %s %s → %s first_run %d", e.ID, e.Kind, e.ModelBefore, e.ModelAfter, e.FirstRun)
		for _, p := range e.Probes {
			t.Logf("  %s moves %+v before run %d", p.ProbeID, p.ScoreMoves, p.BeforeRun)
		}
		// The drift is measured from the scores the baseline holds
		// (0.10, carried exactly only by m1's answers): it names the
		// models of the answers it cites, as the record shows them.
		c.citedModels(e)
		if p := e.Probes[0]; p.ScoreMoves[0].Before != 0.10 {
			t.Errorf("event %d: moves %+v, want from 0.10", e.ID, p.ScoreMoves)
		}
	}
}

// R7. Marked between allowed and blocked_output; settles at blocked_input
// (told); back to allowed (held: silent, the row still names
// blocked_input as where it is); then blocked_output again (held): told as
// a change although it is one of the two verdicts it was marked for.
func TestReviewSettledThenBackToMarkedPair(t *testing.T) {
	c := newClaims(t)
	for _, v := range []string{"allowed|", "allowed|", "blocked_output|violence", "allowed|", "blocked_output|violence", "allowed|",
		"blocked_input|hate", "blocked_input|hate", "allowed|", "allowed|", "blocked_output|violence", "blocked_output|violence"} {
		c.run(p0is(v))
	}
	for _, e := range c.events() {
		for _, p := range e.Probes {
			t.Logf("event %d %s %s: %s → %s", e.ID, e.Kind, p.ProbeID, p.Before, p.After)
		}
		for _, u := range e.Updates {
			t.Logf("  run %d %s: %s", u.RunID, u.Change, u.Detail)
			if u.RunID == 12 {
				t.Errorf("run 12 told %q: blocked_output is one of the two verdicts p0 was marked for", u.Detail)
			}
		}
	}
}

// R8. p0's scores drift on m1 (runs 4–5: a score_drift on m1 opens); p1's
// move with the upgrade to m2 (runs 6–7) and join it in the window: the
// event still names m1 → m1, though p1's drift cites an m1 answer before
// and an m2 answer after.
func TestReviewDriftJoiningWithModelChangeNamesIt(t *testing.T) {
	c := newClaims(t)
	for run := 1; run <= 7; run++ {
		c.run(func(i int) answer {
			model := "m1|fp1"
			if run >= 6 {
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
	for _, e := range evs {
		t.Logf("event %d %s %s → %s, %d probes", e.ID, e.Kind, e.ModelBefore, e.ModelAfter, len(e.Probes))
		for _, u := range e.Updates {
			t.Logf("  run %d %s: %s", u.RunID, u.Change, u.Detail)
		}
	}
	if len(evs) == 1 && len(evs[0].Probes) == 2 && evs[0].ModelAfter == "m1|fp1" {
		t.Errorf("event names %s → %s only; p1's scores moved with m1 → m2 and nothing says so", evs[0].ModelBefore, evs[0].ModelAfter)
	}
}
