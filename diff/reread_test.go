package diff_test

import (
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// upgraded is the sim's prober with another classifier: what a driftprobe
// upgrade that reads some answers differently looks like to detection
// (Origin and the rest stay the sim's, so nothing else changes).
type upgraded struct {
	*sim.Prober
	read func(probes.Result) probes.Result
}

func (u upgraded) Classify(req *probes.Request, resp *probes.Response) probes.Result {
	return u.read(u.Prober.Classify(req, resp))
}

// upgrade swaps target a's classifier for one that reads answers through
// read.
func upgrade(t *testing.T, e *testenv.Env, read func(probes.Result) probes.Result) {
	t.Helper()
	tg := e.Target("a")
	p, ok := tg.Prober.(*sim.Prober)
	if !ok {
		t.Fatalf("target a's prober is %T", tg.Prober)
	}
	tg.Prober = upgraded{Prober: p, read: read}
}

// A driftprobe upgrade whose classifier reads the same answers
// differently (a category newly mapped, scores read otherwise) is no
// provider change: detection re-reads the stored baseline answers with
// the current classifier before comparing, so no event opens, the
// probes are counted as re-read, and a real policy change after the
// upgrade is still confirmed.
func TestClassifierUpgradeIsNoFlip(t *testing.T) {
	cfg := oneSim(`{from_run: 8, thresholds: {violence: 0.3}}`)
	t.Run("categories", func(t *testing.T) {
		e := testenv.New(t, cfg)
		e.Runs(3)
		// Every block now also names "other", as when a provider's
		// documented category gets mapped.
		upgrade(t, e, addOther)
		res := e.Run() // run 4
		if got := rereadOf(res.Detection, "a"); got == 0 || res.JSON().Targets[0].Reread != got {
			t.Errorf("run 4 re-read %d probe(s), run JSON says %d: %+v", got, res.JSON().Targets[0].Reread, res.Detection.Stats)
		}
		e.Runs(3) // runs 5–7
		if evs := events(t, e); len(evs) != 0 {
			t.Fatalf("the upgrade opened %d event(s), first %s %s: %v", len(evs), evs[0].Kind, evs[0].Direction, probeIDs(evs[0]))
		}
		e.Runs(2) // runs 8–9: the provider tightens violence
		evs := ofKind(events(t, e), diff.KindPolicy)
		if len(evs) != 1 || evs[0].Direction != "tightened" || evs[0].ConfirmedRun != 9 {
			t.Fatalf("a real change after the upgrade: %d policy events %+v", len(evs), evs)
		}
		verifyEvidence(t, e, evs[0])
	})
	t.Run("scores", func(t *testing.T) {
		e := testenv.New(t, cfg)
		e.Runs(3)
		// Scores read half again as high: past any tolerance.
		upgrade(t, e, scaleScores)
		res := e.Run()
		if got := rereadOf(res.Detection, "a"); got == 0 {
			t.Errorf("run 4 re-read no probe's scores: %+v", res.Detection.Stats)
		}
		e.Runs(3)
		if evs := events(t, e); len(evs) != 0 {
			t.Fatalf("the upgrade opened %d event(s), first %s: %v", len(evs), evs[0].Kind, probeIDs(evs[0]))
		}
	})
}

// A change the provider made just before the upgrade, seen once under
// the old classifier (a candidate) and once under the new one, is one
// change confirmed on schedule: the candidate is re-read too, so the two
// readings of the same answers are not taken for a probe going back and
// forth (nondeterminism).
func TestClassifierUpgradeKeepsCandidates(t *testing.T) {
	e := testenv.New(t, oneSim(`{from_run: 3, thresholds: {violence: 0.3}}`))
	e.Runs(3) // run 3: the violence probes are candidates
	upgrade(t, e, addOther)
	e.Runs(2) // runs 4–5
	evs := events(t, e)
	if len(evs) != 1 || evs[0].Kind != diff.KindPolicy || evs[0].ConfirmedRun != 4 {
		for _, ev := range evs {
			t.Logf("event %d %s %s confirmed %d: %v", ev.ID, ev.Kind, ev.Direction, ev.ConfirmedRun, probeIDs(ev))
		}
		t.Fatalf("%d events, want the one policy change confirmed in run 4", len(evs))
	}
}

// oneSim is the config of one sim target a (confirm_runs 2) whose
// provider follows the given policies, each a flow mapping
// ("{from_run: 3, thresholds: {violence: 0.3}}").
func oneSim(policies ...string) string {
	var b strings.Builder
	b.WriteString("\nconfirm_runs: 2\ntargets:\n  - name: a\n    provider: sim\n    model: m\n    sim:\n      policies:\n")
	for _, p := range policies {
		b.WriteString("        - " + p + "\n")
	}
	return b.String()
}

func rereadOf(r *diff.Result, target string) int {
	for _, s := range r.Stats {
		if s.Target == target {
			return s.Reread
		}
	}
	return -1
}

// A provider undoing a change recorded before an upgrade flips back to
// the same answers, which the upgraded classifier reads anew: the event
// closes as reverted, the way it would have without the upgrade, rather
// than taking the flip back for a new change.
func TestClassifierUpgradeStillSeesReverts(t *testing.T) {
	e := testenv.New(t, oneSim(`{from_run: 3, thresholds: {violence: 0.3}}`, `{from_run: 7, thresholds: {violence: 0.5}}`))
	e.Runs(4) // event 1 confirmed in run 4
	evs := events(t, e)
	if len(evs) != 1 {
		t.Fatalf("%d events before the upgrade, want 1", len(evs))
	}
	upgrade(t, e, addOther)
	e.Runs(4) // runs 5–8: the provider undoes it at run 7
	evs = events(t, e)
	if len(evs) != 1 || evs[0].Status != "reverted" {
		for _, ev := range evs {
			t.Logf("event %d %s %s %s: %v", ev.ID, ev.Kind, ev.Direction, ev.Status, probeIDs(ev))
		}
		t.Fatalf("%d events, want event 1 reverted and nothing else", len(evs))
	}
}

// The provider changes in the very run the upgraded classifier first
// reads its answers: the change is reported (against the verdicts as
// stored, which the cited answers carry), and its evidence verifies.
func TestClassifierUpgradeWithAChangeAtOnce(t *testing.T) {
	e := testenv.New(t, oneSim(`{from_run: 4, thresholds: {violence: 0.3}}`))
	e.Runs(3)
	upgrade(t, e, addOther)
	e.Runs(3) // runs 4–6: the change confirmed in run 5
	evs := ofKind(events(t, e), diff.KindPolicy)
	if len(evs) != 1 || evs[0].ConfirmedRun != 5 {
		t.Fatalf("%d policy events %+v, want the change confirmed in run 5", len(evs), evs)
	}
	verifyEvidence(t, e, evs[0])
	if n := len(events(t, e)); n != 1 {
		t.Errorf("%d events, want only the change", n)
	}
}
