package diff_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes"
)

// Review of b1613ac / 26b105b (re-reading stored answers).

func addOther(r probes.Result) probes.Result {
	if r.Class.IsBlock() {
		r.Categories = probes.SortedUnique(append(r.Categories, probes.CatOther))
	}
	return r
}

func scaleScores(r probes.Result) probes.Result {
	sigs := make([]probes.Signal, len(r.Signals))
	for i, s := range r.Signals {
		if s.HasScore {
			s.Score = s.Score*1.5 + 0.2
		}
		sigs[i] = s
	}
	r.Signals = sigs
	return r
}

func verifyEvidence(t *testing.T, e *testenv.Env, ev *diff.Event) {
	t.Helper()
	rec, err := evidence.Build(context.Background(), e.Store, ev.ID, time.Now())
	if err != nil {
		t.Fatalf("evidence of event %d: %v", ev.ID, err)
	}
	if !rec.AllVerified {
		p := rec.Problems()
		if len(p) > 3 {
			p = p[:3]
		}
		t.Errorf("event %d (%s %s) was confirmed after the upgrade on a re-read baseline, but its evidence does not verify (%d problem(s)); first: %s",
			ev.ID, ev.Kind, ev.Direction, len(rec.Problems()), strings.Join(p, " | "))
	}
	if err := evidence.Verify(rec); err != nil {
		t.Errorf("evidence.Verify of event %d: %v", ev.ID, err)
	}
}

// A re-read baseline (st.baseline rewritten, st.baselineObs kept) is the
// before side of the next real flip: the event claims the re-read verdict
// while its before_obs stores the old reading, so `evidence` of a genuine
// provider change made after an upgrade never verifies
// (claimProblems: "recorded verdict X, but the event claims before Y").
func TestReviewRereadPolicyEvidenceVerifies(t *testing.T) {
	e := testenv.New(t, oneSim(`{from_run: 8, thresholds: {violence: 0.95}}`))
	e.Runs(3)
	upgrade(t, e, addOther)
	e.Runs(4) // runs 4–7: re-read, no events
	if evs := events(t, e); len(evs) != 0 {
		t.Fatalf("the upgrade opened %d event(s)", len(evs))
	}
	e.Runs(2) // runs 8–9: the provider loosens violence: blocked → allowed
	evs := ofKind(events(t, e), diff.KindPolicy)
	if len(evs) != 1 {
		t.Fatalf("%d policy events, want the real loosening", len(evs))
	}
	for _, p := range evs[0].Probes {
		if !slices.Contains(p.Before.Categories, probes.CatOther) {
			t.Fatalf("%s: before %v: the scenario needs a re-read before side", p.ProbeID, p.Before)
		}
	}
	verifyEvidence(t, e, evs[0])
}

// The same for score drift: st.baselineScores is replaced by the re-read
// scores while st.scoresObs still cites the answer whose stored signals
// carry the old reading; a real drift after the upgrade claims moves
// from scores its before observation does not carry (scoreProblems).
func TestReviewRereadScoreDriftEvidenceVerifies(t *testing.T) {
	e := testenv.New(t, oneSim(`{from_run: 8, score_shift: {privacy: -0.2}}`))
	e.Runs(3)
	upgrade(t, e, scaleScores)
	e.Runs(4) // runs 4–7
	if evs := events(t, e); len(evs) != 0 {
		t.Fatalf("the upgrade opened %d event(s)", len(evs))
	}
	e.Runs(2) // runs 8–9: a real score drift
	evs := ofKind(events(t, e), diff.KindScoreDrift)
	if len(evs) != 1 {
		t.Fatalf("%d score_drift events, want the real one", len(evs))
	}
	verifyEvidence(t, e, evs[0])
}

// Categories learned: a category the upgraded classifier newly reads in
// baselines is never learned (reread does not call learnCategories), so
// the first real event whose after side carries it pages it as a new
// category ("new categories: other") although every re-read baseline of
// the target has held it for runs: the new-category page the re-read was
// meant to prevent, only delayed to the next real change.
func TestReviewRereadNoNewCategoryPage(t *testing.T) {
	e := testenv.New(t, oneSim(`{from_run: 8, thresholds: {violence: 0.3}}`))
	e.Runs(3)
	upgrade(t, e, addOther)
	e.Runs(4) // runs 4–7: baselines re-read to carry "other"
	if evs := events(t, e); len(evs) != 0 {
		t.Fatalf("the upgrade opened %d event(s)", len(evs))
	}
	e.Runs(2) // runs 8–9: the provider tightens violence
	evs := ofKind(events(t, e), diff.KindPolicy)
	if len(evs) != 1 {
		t.Fatalf("%d policy events", len(evs))
	}
	if slices.Contains(evs[0].NewCategories, probes.CatOther) {
		t.Errorf("event %d pages %q as a new category (new_categories %v), but re-read baselines have carried it since run 4",
			evs[0].ID, probes.CatOther, evs[0].NewCategories)
	}
}

func statesOf(t *testing.T, e *testenv.Env) map[string]diff.State {
	t.Helper()
	sts, err := diff.States(context.Background(), e.Store.SQL(), e.Target("a").ID)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]diff.State{}
	for _, s := range sts {
		m[s.ProbeID] = s
	}
	return m
}

// st.lastVerdict is not re-read: the first run after an upgrade counts a
// verdict change (st.changes++) on every probe whose answer now reads
// differently, although the provider answered the same. changes is the
// flip_rate events cite and `states` shows.
func TestReviewRereadUpgradeCountsNoChange(t *testing.T) {
	e := testenv.New(t, "confirm_runs: 2\ntargets:\n  - {name: a, provider: sim, model: m}\n")
	e.Runs(3)
	upgrade(t, e, addOther)
	e.Runs(2)
	var changed []string
	for id, s := range statesOf(t, e) {
		if s.Changes != 0 {
			changed = append(changed, id)
		}
	}
	if len(changed) != 0 {
		slices.Sort(changed)
		t.Errorf("%d probe(s) count a verdict change (flip_rate) for the same answers read anew, e.g. %s", len(changed), changed[0])
	}
}

// st.driftScores (a pending score drift) is not re-read, unlike a
// pending candidate (TestClassifierUpgradeKeepsCandidates): a real drift
// the provider made just before the upgrade, seen once under each
// classifier, restarts (maxScoreDelta(old reading, new reading) > tol)
// and is confirmed a run late, with the wrong first_run.
func TestReviewRereadKeepsPendingScoreDrift(t *testing.T) {
	e := testenv.New(t, oneSim(`{from_run: 3, score_shift: {privacy: -0.2}}`))
	e.Runs(3) // run 3: the privacy probes' scores drift (pending)
	upgrade(t, e, scaleScores)
	e.Runs(2) // runs 4–5
	evs := ofKind(events(t, e), diff.KindScoreDrift)
	if len(evs) != 1 || evs[0].FirstRun != 3 || evs[0].ConfirmedRun != 4 {
		for _, ev := range evs {
			t.Logf("event %d %s first %d confirmed %d: %v", ev.ID, ev.Kind, ev.FirstRun, ev.ConfirmedRun, probeIDs(ev))
		}
		t.Fatalf("%d score_drift events, want the one drift first seen in run 3 confirmed in run 4", len(evs))
	}
}
