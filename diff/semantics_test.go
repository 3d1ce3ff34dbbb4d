package diff_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/storage"
)

// obsFP is obs answered under model m with fingerprint fp.
func obsFP(probe, sha string, sample int, verdict, fp string) *storage.Observation {
	o := obs(probe, sha, sample, verdict)
	o.Result.ModelFP = fp
	return o
}

func (s *synth) events() []*diff.Event {
	s.t.Helper()
	evs, err := diff.ListEvents(context.Background(), s.db, diff.Filter{})
	if err != nil {
		s.t.Fatal(err)
	}
	return evs
}

// steady is n runs in which probes p and q answer allowed under fp.
func (s *synth) steady(n int, fp string) {
	for range n {
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "allowed|", fp), obsFP("q", sha2, 0, "allowed|", fp))
	}
}

// A fingerprint that changed long before a flip did not come with it: the
// baseline held under the new fingerprint for runs, so the flip is a
// policy_change, and its evidence's before-side is an answer under the
// new fingerprint, not the baseline's first observation.
func TestModelChangeLongBeforeFlipIsPolicyChange(t *testing.T) {
	s := newSynth(t)
	s.steady(2, "fp-a")
	s.steady(4, "fp-b") // runs 3-6: the baseline holds under fp-b
	for range 2 {       // runs 7-8: p tightens, q holds
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp-b"), obsFP("q", sha2, 0, "allowed|", "fp-b"))
	}
	evs := s.events()
	if len(evs) != 1 || evs[0].Kind != diff.KindPolicy || evs[0].FirstRun != 7 {
		t.Fatalf("events %+v: want one policy_change first seen at run 7", evs)
	}
	var runOfBefore int64
	if err := s.db.SQL().QueryRow(`SELECT run_id FROM observations WHERE id = ?`, evs[0].Probes[0].BeforeObs).Scan(&runOfBefore); err != nil {
		t.Fatal(err)
	}
	if runOfBefore < 3 {
		t.Errorf("before-side observation from run %d, under fp-a: want one under fp-b (run 3 or later)", runOfBefore)
	}

	// The fingerprint changing in the run the flip starts is a model change.
	s = newSynth(t)
	s.steady(3, "fp-a")
	for range 2 {
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp-b"), obsFP("q", sha2, 0, "allowed|", "fp-b"))
	}
	if evs := s.events(); len(evs) != 1 || evs[0].Kind != diff.KindModel {
		t.Fatalf("events %+v: want one model_change", evs)
	}

	// A flip that began before the fingerprint changed is not the model's.
	s = newSynth(t)
	s.steady(3, "fp-a")
	s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp-a"), obsFP("q", sha2, 0, "allowed|", "fp-a"))
	s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp-b"), obsFP("q", sha2, 0, "allowed|", "fp-b"))
	if evs := s.events(); len(evs) != 1 || evs[0].Kind != diff.KindPolicy || evs[0].FirstRun != 4 {
		t.Fatalf("events %+v: want one policy_change first seen at run 4", evs)
	}
}

// A change in stages (allowed → blocked_output → blocked_input, never
// back) is one policy change first seen when the probe left its baseline,
// not nondeterminism.
func TestStagedTighteningIsPolicyChange(t *testing.T) {
	s := newSynth(t)
	s.steady(2, "fp")
	s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|harassment,hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	for range 2 {
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_input|harassment,hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	}
	evs := s.events()
	if len(evs) != 1 || evs[0].Kind != diff.KindPolicy || evs[0].FirstRun != 3 || evs[0].Direction != diff.Tightened {
		t.Fatalf("events %+v: want one policy_change, tightened, first seen at run 3", evs)
	}
	if st := s.state("p"); st.Nondeterministic || st.Reverts != 0 {
		t.Errorf("state %+v: a staged change is no revert", st)
	}
}

// Reverts add up toward nondeterminism only when they come close
// together: two blips far apart leave the probe's later, real change a
// policy change with its new category, not a muted nondeterminism event.
func TestBlipsFarApartAreNotNondeterminism(t *testing.T) {
	s := newSynth(t)
	blip := func() {
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
		s.steady(1, "fp")
	}
	s.steady(2, "fp")
	blip()
	s.steady(30, "fp")
	blip()
	if st := s.state("p"); st.Nondeterministic {
		t.Fatalf("two blips 31 runs apart marked the probe nondeterministic: %+v", st)
	}
	for range 2 {
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	}
	evs := s.events()
	if len(evs) != 1 || evs[0].Kind != diff.KindPolicy || strings.Join(evs[0].NewCategories, ",") != "hate" {
		t.Fatalf("events %+v: want one policy_change with new category hate", evs)
	}

	// Two blips close together still mark it.
	s = newSynth(t)
	s.steady(2, "fp")
	blip()
	s.steady(3, "fp")
	blip()
	if st := s.state("p"); !st.Nondeterministic {
		t.Fatalf("two blips 5 runs apart: not nondeterministic: %+v", st)
	}
}

// A probe marked nondeterministic after its flip joined an open policy
// event leaves that event's evidence (its flips are never policy
// evidence); the event, left without evidence, is reverted.
func TestNondeterministicProbeLeavesPolicyEvent(t *testing.T) {
	s := newSynth(t)
	s.steady(2, "fp")
	for range 2 { // runs 3-4: p flips, confirmed
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	}
	if evs := s.events(); len(evs) != 1 || evs[0].Status != "open" {
		t.Fatalf("events %+v: want one open policy event", evs)
	}
	// Runs 5-6: p's samples disagree twice: nondeterministic.
	for range 2 {
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("p", sha1, 1, "allowed|", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	}
	if st := s.state("p"); !st.Nondeterministic {
		t.Fatalf("p not nondeterministic: %+v", st)
	}
	var policy, nd *diff.Event
	for _, e := range s.events() {
		switch e.Kind {
		case diff.KindPolicy:
			policy = e
		case diff.KindNondeterminism:
			nd = e
		}
	}
	if policy == nil || policy.Status != "reverted" {
		t.Fatalf("policy event %+v: want reverted once its only probe was withdrawn", policy)
	}
	// Retracted, not "reverted": the provider reverted nothing.
	if last := policy.Updates[len(policy.Updates)-1]; last.Change != diff.ChangeRetracted || !strings.Contains(last.Detail, "marked nondeterministic") {
		t.Errorf("last update %+v: want %s", last, diff.ChangeRetracted)
	}
	if nd == nil || nd.Probes[0].Before.Key() == nd.Probes[0].After.Key() {
		t.Fatalf("nondeterminism event %+v: want before and after the two verdicts it moves between", nd)
	}
}

// diff lists verdicts that differ; a probe answered with a transient error
// (or a client error, or an unavailable filter) in either run has no
// verdict there: it is counted as not compared, never listed as a flip
// with a direction.
func TestDiffRunsSkipsNonVerdicts(t *testing.T) {
	s := newSynth(t)
	s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, "blocked_output|hate"), obs("q", sha2, 0, "allowed|"))
	s.run(storage.TargetDegraded, 0, false, obs("p", sha1, 0, "transient|"), obs("q", sha2, 0, "blocked_output|violence"))
	d, err := diff.DiffRuns(context.Background(), s.db, "a", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Probes) != 1 || d.Probes[0].ProbeID != "q" || d.NotCompared != 1 {
		t.Fatalf("diff %+v: want only q listed, p not compared", d)
	}
}

// An aborted run is never one of diff's default runs, and a diff against
// one says how little it compared: the probes it never observed are
// counted as missing, not silently read as "0 differ".
func TestDiffRunsAbortedRunsAndMissingProbes(t *testing.T) {
	s := newSynth(t)
	ctx := context.Background()
	finish := func(_ *diff.Result, run, target string) int64 {
		t.Helper()
		id, err := s.db.LatestRunID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.db.FinishRun(ctx, id, run, []storage.RunTarget{{RunID: id, TargetID: s.tid, Target: "a", Status: target}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	r1 := finish(s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, "allowed|"), obs("q", sha2, 0, "allowed|"), obs("r", sha1, 0, "allowed|")), storage.RunComplete, storage.TargetComplete)
	r2 := finish(s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, "allowed|"), obs("q", sha2, 0, "blocked_output|hate"), obs("r", sha1, 0, "allowed|")), storage.RunComplete, storage.TargetComplete)
	r3 := finish(s.run(storage.TargetAborted, 0, false, obs("p", sha1, 0, "allowed|")), storage.RunAborted, storage.TargetAborted)

	d, err := diff.DiffRuns(ctx, s.db, "a", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.FromRun != r1 || d.ToRun != r2 || len(d.Probes) != 1 || d.Compared != 3 || d.Missing != 0 {
		t.Fatalf("default diff %+v: want runs %d → %d (the aborted run %d skipped), q differing, 3 compared", d, r1, r2, r3)
	}
	d, err = diff.DiffRuns(ctx, s.db, "a", r2, r3)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Probes) != 0 || d.Compared != 1 || d.Missing != 2 || d.ToStatus != storage.RunAborted || d.FromStatus != storage.RunComplete {
		t.Fatalf("diff against the aborted run %+v: want 1 compared, 2 missing, its status aborted", d)
	}
}

// A probe going back and forth between two verdicts that both differ from
// its baseline (never back to it) is nondeterministic, not a change in
// stages that never holds.
func TestFlappingBetweenTwoCandidatesIsNondeterminism(t *testing.T) {
	s := newSynth(t)
	s.steady(2, "fp")
	for i := range 6 {
		v := "blocked_output|hate"
		if i%2 == 1 {
			v = "model_refusal|"
		}
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, v, "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	}
	if st := s.state("p"); !st.Nondeterministic {
		t.Fatalf("p alternating between two non-baseline verdicts: %+v, want nondeterministic", st)
	}
	for _, e := range s.events() {
		if e.Kind != diff.KindNondeterminism {
			t.Errorf("event %+v: want only nondeterminism", e)
		}
	}
}

// An answer that names no model (an input block's error) counts as the
// model the target reported that run: a flip to such answers in the run
// the target's model changed is a model change, whatever the model does
// next.
func TestModellessFlipJudgedByTargetModel(t *testing.T) {
	s := newSynth(t)
	s.steady(3, "fp-a")
	noModel := func() *storage.Observation {
		o := obs("p", sha1, 0, "blocked_input|hate")
		o.Result.ModelID = ""
		return o
	}
	s.run(storage.TargetComplete, 0, false, noModel(), obsFP("q", sha2, 0, "allowed|", "fp-b"))
	s.run(storage.TargetComplete, 0, false, noModel(), obsFP("q", sha2, 0, "allowed|", "fp-c"))
	evs := s.events()
	if len(evs) != 1 || evs[0].Kind != diff.KindModel {
		t.Fatalf("events %+v: want one model_change", evs)
	}
}

// An event whose probes end some flipped back and some withdrawn is
// reverted (the provider undid part of it), not retracted; only an event
// all of whose probes were withdrawn is retracted. Withdrawn probes say so.
func TestMixedEndIsRevertNotRetraction(t *testing.T) {
	s := newSynth(t)
	s.steady(2, "fp")
	for range 2 { // runs 3-4: both flip, one event
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("q", sha2, 0, "blocked_output|hate", "fp"))
	}
	for range 2 { // runs 5-6: q flips back (confirmed at 6)
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	}
	for range 2 { // runs 7-8: p's samples disagree: withdrawn, nothing left
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("p", sha1, 1, "allowed|", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	}
	var policy *diff.Event
	for _, e := range s.events() {
		if e.Kind == diff.KindPolicy {
			policy = e
		}
	}
	if policy == nil || policy.Status != diff.StatusReverted {
		t.Fatalf("policy event %+v: want reverted", policy)
	}
	if last := policy.Updates[len(policy.Updates)-1]; last.Change != diff.ChangeReverted {
		t.Errorf("last update %s, want %s: q's flip back was the provider's", last.Change, diff.ChangeReverted)
	}
	for _, p := range policy.Probes {
		if (p.ProbeID == "p") != p.Withdrawn || !p.Reverted {
			t.Errorf("probe %s: withdrawn %v reverted %v", p.ProbeID, p.Withdrawn, p.Reverted)
		}
	}
}

// Detection is applied to a run once: a second Apply (a process that
// stalled past its lease while another detected its run) is refused and
// changes nothing, so one run's flips never count as two runs'.
func TestApplyOncePerRun(t *testing.T) {
	s := newSynth(t)
	s.steady(2, "fp")
	flipped := []*storage.Observation{obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp")}
	s.run(storage.TargetComplete, 0, false, flipped...)
	again := diff.Input{RunID: 3, CorpusVersion: "1", CorpusHash: "h",
		Targets: []diff.TargetRun{{ID: s.tid, Name: "a", Provider: "sim", Status: storage.TargetComplete, Observations: flipped}},
		Params:  diff.Params{ConfirmRuns: 2, NondeterministicFlips: 2, WindowRuns: 3}}
	if _, err := diff.Apply(context.Background(), s.db, again); !errors.Is(err, storage.ErrAlreadyDetected) {
		t.Fatalf("second Apply of run 3: %v, want ErrAlreadyDetected", err)
	}
	if evs := s.events(); len(evs) != 0 {
		t.Fatalf("events %+v: one run confirmed a flip as two", evs)
	}
}

// A probe withdrawn as nondeterministic no longer steers its event's
// direction: what is left of the evidence does.
func TestWithdrawnProbeLeavesDirection(t *testing.T) {
	s := newSynth(t)
	for range 2 { // baselines: p allowed, q blocked
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "allowed|", "fp"), obsFP("q", sha2, 0, "blocked_output|violence", "fp"))
	}
	for range 2 { // runs 3-4: p tightens, q loosens: one mixed event
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	}
	if evs := s.events(); len(evs) != 1 || evs[0].Direction != diff.Mixed {
		t.Fatalf("events %+v: want one mixed event", evs)
	}
	for range 2 { // runs 5-6: q's samples disagree: withdrawn
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"), obsFP("q", sha2, 1, "blocked_output|violence", "fp"))
	}
	for _, e := range s.events() {
		if e.Kind == diff.KindPolicy && (e.Status != diff.StatusOpen || e.Direction != diff.Tightened) {
			t.Errorf("policy event after q's withdrawal: %s %s, want open and tightened", e.Status, e.Direction)
		}
	}
}

// A probe already in an event that moves again (a second stage of the
// change) is reported as changed again, not as one more probe.
func TestProbeMovingAgainIsNotMoreProbes(t *testing.T) {
	s := newSynth(t)
	s.steady(2, "fp")
	for range 2 { // runs 3-4: p blocked at output: the event opens
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_output|hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	}
	for range 2 { // runs 5-6: p now blocked at input
		s.run(storage.TargetComplete, 0, false, obsFP("p", sha1, 0, "blocked_input|hate", "fp"), obsFP("q", sha2, 0, "allowed|", "fp"))
	}
	evs := s.events()
	if len(evs) != 1 || len(evs[0].Probes) != 1 {
		t.Fatalf("events %+v: want one event with p", evs)
	}
	last := evs[0].Updates[len(evs[0].Updates)-1]
	if strings.Contains(last.Detail, "more probe") || !strings.Contains(last.Detail, "1 probe(s) on a changed again: p") {
		t.Errorf("update detail %q: want p changed again, not more probes", last.Detail)
	}
}

// A target without a complete run is named, with what compare needs.
func TestLatestCompleteRunMissingSaysWhy(t *testing.T) {
	s := newSynth(t)
	s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, "allowed|")) // never finished
	_, _, err := diff.LatestCompleteRun(context.Background(), s.db, "a", "")
	if !errors.Is(err, diff.ErrNoCompleteRun) || !strings.Contains(err.Error(), "target a: no complete run (every run of it so far was partial, degraded or aborted") {
		t.Fatalf("%v", err)
	}
}
