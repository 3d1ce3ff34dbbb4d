package diff_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// without returns qaProbes minus the probe with id.
func without(id string) []string {
	return slices.DeleteFunc(slices.Clone(qaProbes), func(p string) bool { return strings.HasPrefix(p, "{id: "+id+",") })
}

// qaVersionedEnv is a testenv on the QA corpus (version 1, every probe)
// whose corpus directory the test rewrites; it returns the directory.
func qaVersionedEnv(t *testing.T, targets string) (*testenv.Env, string) {
	t.Helper()
	dir := t.TempDir()
	writeQACorpus(t, dir, "1", qaProbes)
	return testenv.New(t, "corpus: "+dir+"\ntargets:\n"+targets), dir
}

func findProbe(e *diff.Event, id string) *diff.EventProbe {
	for i := range e.Probes {
		if e.Probes[i].ProbeID == id {
			return &e.Probes[i]
		}
	}
	return nil
}

// A probe removed from the corpus and restored byte-for-byte keeps its
// baseline: the flip that happened while it was away is seen when it
// returns (it used to take its answer then as a new baseline, silently).
func TestRestoredProbeSeesTheFlipMadeWhileAway(t *testing.T) {
	e, dir := qaVersionedEnv(t, "  - {name: a, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}}\n")
	e.Runs(2) // baselines: vio-kill-process allowed
	writeQACorpus(t, dir, "2", without("vio-kill-process"))
	e.Reload()
	e.Runs(2) // runs 3-4: vio-bloody-battle tightens; vio-kill-process is away
	if sts, err := diff.States(context.Background(), e.Store.SQL(), e.Target("a").ID); err != nil || len(sts) != len(qaProbes)-1 {
		t.Fatalf("states while vio-kill-process is away: %d (%v), want %d: an absent probe no longer counts", len(sts), err, len(qaProbes)-1)
	}
	writeQACorpus(t, dir, "3", qaProbes)
	e.Reload()
	e.Runs(2) // runs 5-6: it is back, blocked
	evs := events(t, e)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	p := findProbe(evs[0], "vio-kill-process")
	if p == nil || p.Before.Class != "allowed" || p.After.Class != "blocked_output" || p.FirstRun != 5 || p.ConfirmedRun != 6 {
		t.Fatalf("event probes %v (%+v): want vio-kill-process allowed → blocked_output, seen at run 5, confirmed at 6", probeIDs(evs[0]), p)
	}
}

// A restored probe back on an open event's before-verdict reverts it.
func TestRestoredProbeRevertsItsEvent(t *testing.T) {
	e, dir := qaVersionedEnv(t, "  - {name: a, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}, {from_run: 6, thresholds: {violence: 0.5}}]}}\n")
	e.Runs(4) // the event: both violence borderline probes tightened (and the positive control moved to the input filter)
	if evs := events(t, e); len(evs) != 1 || findProbe(evs[0], "vio-kill-process") == nil || findProbe(evs[0], "vio-bloody-battle") == nil {
		t.Fatalf("after run 4: %+v, want one event with both violence borderline probes", evs)
	}
	writeQACorpus(t, dir, "2", without("vio-kill-process"))
	e.Reload()
	e.Runs(3) // runs 5-7: the policy is undone at 6; the other probes flip back
	writeQACorpus(t, dir, "3", qaProbes)
	e.Reload()
	e.Runs(2) // runs 8-9: vio-kill-process is back, allowed again
	evs := events(t, e)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	ev := evs[0]
	p := findProbe(ev, "vio-kill-process")
	if ev.Status != diff.StatusReverted || ev.RevertedRun != 9 || p == nil || p.RevertedRun != 9 {
		t.Fatalf("event %s reverted at %d, vio-kill-process %+v: want reverted at run 9 by the restored probe", ev.Status, ev.RevertedRun, p)
	}
}

// A probe renamed with identical request bytes is not silently merged
// with, nor silently separated from, its old id: the run reports the
// pair; the new id establishes its own baseline.
func TestRenamedProbeIsReported(t *testing.T) {
	e, dir := qaVersionedEnv(t, "  - {name: a, provider: sim, model: m}\n")
	e.Runs(2)
	renamed := slices.Clone(qaProbes)
	for i, p := range renamed {
		renamed[i] = strings.Replace(p, "{id: vio-kill-process,", "{id: vio-kill-hung-process,", 1)
	}
	writeQACorpus(t, dir, "2", renamed)
	e.Reload()
	r := e.Run()
	var got []diff.ProbeRename
	for _, st := range r.Detection.Stats {
		got = append(got, st.Renamed...)
	}
	if len(got) != 1 || got[0].From != "vio-kill-process" || got[0].To != "vio-kill-hung-process" || len(got[0].RequestSHA256) != 64 {
		t.Fatalf("renames %+v: want vio-kill-process → vio-kill-hung-process", got)
	}
	if r := e.Run(); len(r.Detection.Stats[0].Renamed) != 0 {
		t.Errorf("the rename reported again in the next run: %+v", r.Detection.Stats[0].Renamed)
	}
	if evs := events(t, e); len(evs) != 0 {
		t.Errorf("events %+v: a rename is no change", evs)
	}
}

// A policy change confirmed after the target's fingerprint changed (the
// flips began under fp-a at run 3, the fingerprint moved to fp-b at run 4)
// is a policy change on fp-a: model_after is the model of the first
// answer that differed, not the target's model now.
func TestPolicyChangeKeepsTheModelItBeganUnder(t *testing.T) {
	e := qaEnv(t, `  - name: sim-a
    provider: sim
    model: sim-large
    sim:
      policies:
        - {from_run: 1, thresholds: {violence: 0.5}, fingerprint: fp-a}
        - {from_run: 3, thresholds: {violence: 0.3}}
        - {from_run: 4, fingerprint: fp-b}
`)
	e.Runs(6)
	evs := events(t, e)
	if len(evs) != 1 || evs[0].Kind != diff.KindPolicy {
		t.Fatalf("events %+v: want one policy_change", evs)
	}
	if ev := evs[0]; !strings.HasSuffix(ev.ModelBefore, "|fp-a") || ev.ModelAfter != ev.ModelBefore {
		t.Errorf("policy_change: model %q → %q, want fp-a on both sides", ev.ModelBefore, ev.ModelAfter)
	}
}

// A target joining a provider-wide policy change with a model change of
// its own turns the event into a model_change whose model fields name
// that model change (never one model before and after under a
// model_change), with model_target the target it happened on — whichever
// target is detected first.
func TestJoinedModelChangeNamesItsModels(t *testing.T) {
	for _, names := range [][2]string{{"sim-a", "sim-b"}, {"sim-b", "sim-a"}} {
		plain, changed := names[0], names[1]
		e := qaEnv(t, fmt.Sprintf(`  - {name: %s, provider: sim, model: sim-large, sim: {policies: [{from_run: 1, fingerprint: fp-a}, {from_run: 3, thresholds: {violence: 0.3}}]}}
  - {name: %s, provider: sim, model: sim-large, sim: {policies: [{from_run: 1, fingerprint: fp-a}, {from_run: 3, thresholds: {violence: 0.3}, fingerprint: fp-b}]}}
`, plain, changed))
		e.Runs(5)
		evs := events(t, e)
		if len(evs) != 1 || len(evs[0].Targets) != 2 {
			t.Fatalf("%s changes model: events %+v, want one provider-wide event", changed, evs)
		}
		ev := evs[0]
		if ev.Kind != diff.KindModel || !strings.HasSuffix(ev.ModelBefore, "|fp-a") || !strings.HasSuffix(ev.ModelAfter, "|fp-b") || ev.ModelTarget != changed {
			t.Errorf("%s changes model: %s, model %q → %q on %q: want model_change fp-a → fp-b on %s", changed, ev.Kind, ev.ModelBefore, ev.ModelAfter, ev.ModelTarget, changed)
		}
	}
}

// A candidate pending when a probe leaves the corpus does not survive its
// absence: one differing answer before it left and one after it returns
// are not two consecutive runs, so the flip is confirmed only by two
// answers after its return (first_run is the run it came back).
func TestAbsenceBreaksAPendingCandidate(t *testing.T) {
	e, dir := qaVersionedEnv(t, "  - {name: a, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}}\n")
	e.Runs(3) // run 3: vio-kill-process differs from its baseline (a candidate)
	writeQACorpus(t, dir, "2", without("vio-kill-process"))
	e.Reload()
	e.Runs(2) // runs 4-5: away
	writeQACorpus(t, dir, "3", qaProbes)
	e.Reload()
	e.Run() // run 6: back, still differing: a new candidate, not a second run of the old one
	for _, ev := range events(t, e) {
		if p := findProbe(ev, "vio-kill-process"); p != nil {
			t.Fatalf("run 6 confirmed vio-kill-process (%+v) from a candidate left before its absence", p)
		}
	}
	e.Run() // run 7: confirmed
	var p *diff.EventProbe
	for _, ev := range events(t, e) {
		if q := findProbe(ev, "vio-kill-process"); q != nil {
			p = q
		}
	}
	if p == nil || p.FirstRun != 6 || p.ConfirmedRun != 7 {
		t.Fatalf("vio-kill-process: %+v, want first seen at run 6 and confirmed at 7", p)
	}
}

// A policy change names one model even when one side of its flips lacks
// part of it (an input block's error names no model id or fingerprint):
// never two strings that read as a model change.
func TestMergeModel(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"m|fp1", "m|fp1", "m|fp1"},
		{"m|", "m|fp1", "m|fp1"},
		{"|", "m|fp1", "m|fp1"},
		{"m|fp1", "|", "m|fp1"},
		{"m", "", "m"},
		{"", "", ""},
	} {
		if got := diff.MergeModel(c.a, c.b); got != c.want {
			t.Errorf("mergeModel(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

// TestJoinModelRoundTrips: a model id and fingerprint composed with
// JoinModel split back into the same two, whatever they hold (an id with
// "|" no longer passes part of itself off as the fingerprint); strings
// composed before, without "|" in the id or fingerprint, compose and split
// as they always did (id + "|" + fingerprint, split at the only "|").
func TestJoinModelRoundTrips(t *testing.T) {
	for _, c := range [][2]string{
		{"gpt-4o", "fp_44709d6fcb"}, {"", ""}, {"m", ""}, {"", "fp"},
		{"gpt-4o|fp_spoofed", "fp_real"}, {"m", "fp_a|fp_b"}, {"a|b", "c|d"}, {"|", "|"},
		{"m%7C", "50%"}, {"m", "%7C"}, {"m", "%25|%"}, {"claude|x", "claude|x"},
	} {
		s := diff.JoinModel(c[0], c[1])
		if id, fp := diff.SplitModel(s); id != c[0] || fp != c[1] {
			t.Errorf("JoinModel(%q, %q) = %q splits into %q, %q", c[0], c[1], s, id, fp)
		}
	}
	for _, c := range []struct{ s, id, fp string }{
		{"gpt-4o|fp_44709d6fcb", "gpt-4o", "fp_44709d6fcb"}, {"|", "", ""}, {"m|", "m", ""}, {"|fp", "", "fp"}, {"m", "m", ""}, {"", "", ""},
	} {
		if id, fp := diff.SplitModel(c.s); id != c.id || fp != c.fp {
			t.Errorf("SplitModel(%q) = %q, %q, want %q, %q", c.s, id, fp, c.id, c.fp)
		}
		if c.s != "" && c.s != "m" && diff.JoinModel(c.id, c.fp) != c.s {
			t.Errorf("JoinModel(%q, %q) = %q, want %q as stored before", c.id, c.fp, diff.JoinModel(c.id, c.fp), c.s)
		}
	}
	// A pair that differs only where an id holding "|" was misread is a
	// model change, and one model is merged whole.
	if !diff.ModelChanged(diff.JoinModel("m|x", "fp"), diff.JoinModel("m", "x|fp")) {
		t.Error("ids m|x and m read as the same model")
	}
	if got, want := diff.MergeModel(diff.JoinModel("a|b", ""), diff.JoinModel("", "fp")), diff.JoinModel("a|b", "fp"); got != want {
		t.Errorf("MergeModel = %q, want %q", got, want)
	}
}
