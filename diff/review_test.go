package diff_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// synth drives diff.Apply with hand-made observations of one target, so a
// test controls every verdict, sample and run status exactly.
type synth struct {
	t   *testing.T
	db  *storage.DB
	tid int64
}

func newSynth(t *testing.T) *synth {
	t.Helper()
	db, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tid, err := db.EnsureTarget(context.Background(), storage.TargetRow{Name: "a", Provider: "sim", Model: "m", Endpoint: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	return &synth{t: t, db: db, tid: tid}
}

// obs is one sample of a probe: class "allowed", "blocked_output|violence", ...
func obs(probe, sha string, sample int, verdict string) *storage.Observation {
	v := diff.ParseKey(verdict)
	return &storage.Observation{ProbeID: probe, ProbeSHA256: sha, RequestSHA256: sha, Sample: sample,
		Result: probes.Result{Class: v.Class, Categories: v.Categories, ModelID: "m"}, Attempts: 1, ObservedAt: time.Unix(0, 0)}
}

// run records a run with the given target status and applies detection to
// obs (stored first; passed to Apply unless fromDB).
func (s *synth) run(status string, confirmSamples int, fromDB bool, os ...*storage.Observation) *diff.Result {
	s.t.Helper()
	ctx := context.Background()
	id, err := s.db.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1", CorpusHash: "h"})
	if err != nil {
		s.t.Fatal(err)
	}
	for _, o := range os {
		o.RunID, o.TargetID = id, s.tid
	}
	if err := s.db.InsertObservations(ctx, os); err != nil {
		s.t.Fatal(err)
	}
	tr := diff.TargetRun{ID: s.tid, Name: "a", Provider: "sim", Status: status, ConfirmSamples: confirmSamples, Observations: os}
	if fromDB {
		tr.Observations = nil
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := diff.Apply(actx, s.db, diff.Input{RunID: id, CorpusVersion: "1", CorpusHash: "h", Targets: []diff.TargetRun{tr},
		Params: diff.Params{ConfirmRuns: 2, NondeterministicFlips: 2, WindowRuns: 3}})
	if err != nil {
		s.t.Fatalf("run %d: apply: %v", id, err)
	}
	return res
}

func (s *synth) state(probe string) diff.State {
	s.t.Helper()
	sts, err := diff.States(context.Background(), s.db.SQL(), s.tid)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, st := range sts {
		if st.ProbeID == probe {
			return st
		}
	}
	s.t.Fatalf("no state for %s", probe)
	return diff.State{}
}

const (
	sha1 = "1111111111111111111111111111111111111111111111111111111111111111"
	sha2 = "2222222222222222222222222222222222222222222222222222222222222222"
)

// Apply documents nil observations as "read from the database"; doing so
// inside the transaction deadlocked on the store's single connection.
func TestApplyReadsObservationsFromDatabase(t *testing.T) {
	s := newSynth(t)
	s.run(storage.TargetComplete, 0, true, obs("p", sha1, 0, "allowed|"))
	s.run(storage.TargetComplete, 0, true, obs("p", sha1, 0, "allowed|"))
	if st := s.state("p"); st.Baseline != "allowed|" {
		t.Fatalf("baseline %q after two runs read from the database", st.Baseline)
	}
}

// A degraded target-run confirms nothing: not even a new probe's baseline,
// by agreeing samples or by counting toward confirm_runs.
func TestDegradedRunEstablishesNoBaseline(t *testing.T) {
	s := newSynth(t)
	s.run(storage.TargetDegraded, 2, false, obs("p", sha1, 0, "allowed|"), obs("p", sha1, 1, "allowed|"), obs("p", sha1, 2, "allowed|"))
	if st := s.state("p"); st.Baseline != "" {
		t.Fatalf("degraded run established baseline %q by samples", st.Baseline)
	}

	s = newSynth(t)
	s.run(storage.TargetDegraded, 0, false, obs("p", sha1, 0, "allowed|"))
	s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, "allowed|"))
	if st := s.state("p"); st.Baseline != "" {
		t.Fatalf("baseline %q after one degraded and one complete run; confirm_runs is 2", st.Baseline)
	}
	s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, "allowed|"))
	if st := s.state("p"); st.Baseline != "allowed|" {
		t.Fatalf("baseline %q after two complete runs", st.Baseline)
	}
}

// abuse_block is account-level, never an answer about the bytes: an extra
// sample answered with it is no disagreement (no revert, no noise).
func TestAbuseBlockSampleIsNoDisagreement(t *testing.T) {
	s := newSynth(t)
	s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, "allowed|"))
	s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, "allowed|"))
	// The account gets suspended while the screening sample is in flight.
	s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, "blocked_output|violence"), obs("p", sha1, 1, "abuse_block|"))
	if st := s.state("p"); st.Reverts != 0 {
		t.Fatalf("abuse_block sample counted as %d revert(s)", st.Reverts)
	}
	res := s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, "blocked_output|violence"))
	if len(res.EventIDs()) != 1 {
		t.Fatalf("candidate held two runs, got changes %+v, want one event", res.Changes)
	}
}

// A flip back on different request bytes is not a revert of an event
// recorded on the old bytes.
func TestRevertNeedsSameBytes(t *testing.T) {
	s := newSynth(t)
	for _, v := range []string{"allowed|", "allowed|", "blocked_output|violence", "blocked_output|violence"} {
		s.run(storage.TargetComplete, 0, false, obs("p", sha1, 0, v))
	}
	// Corpus edit: new bytes, a new baseline (blocked), then they loosen.
	for _, v := range []string{"blocked_output|violence", "blocked_output|violence", "allowed|", "allowed|"} {
		s.run(storage.TargetComplete, 0, false, obs("p", sha2, 0, v))
	}
	evs, err := diff.ListEvents(context.Background(), s.db, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Status+"/"+e.Direction)
	}
	if strings.Join(got, ",") != "open/tightened,open/loosened" {
		t.Fatalf("events %v, want the first still open and a new loosened one", got)
	}
}

// A probe removed from the corpus stops counting once a complete run no
// longer answers it.
func TestRemovedProbeStatePruned(t *testing.T) {
	e := testenv.New(t, "targets:\n  - {name: a, provider: sim, model: m}\n")
	e.Runs(2)
	keep := e.Corpus.Probes[:10]
	e.Corpus.Probes = keep
	e.Run()
	all, err := diff.AllStates(context.Background(), e.Store.SQL())
	if err != nil {
		t.Fatal(err)
	}
	for _, sts := range all {
		if len(sts) != len(keep) {
			t.Fatalf("%d states after pruning, want %d", len(sts), len(keep))
		}
	}
}

// compare refuses to gate on too few comparable probes.
func TestCompareNeedsCoverage(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: cur, provider: sim, model: m}
  - {name: cand, provider: sim, model: m2, max_attempts: 1, breaker: {failures: 1000}, sim: {error_status: 404, error_rate: 1}}
`)
	e.Run()
	_, err := diff.Compare(context.Background(), e.Store, e.Corpus, "cur", "cand", 0, -1)
	if err == nil {
		t.Fatal("compare gated on a candidate that answered nothing")
	}
}

// A model change seen only on the flipped probes' answers (the target's
// most common model held) is a model_change whose event names the flips'
// models, not the same model before and after.
func TestModelChangeOnFlipsNamesTheirModels(t *testing.T) {
	s := newSynth(t)
	// Nine probes: the target's most common model stays the old one even
	// with three flipped.
	var shas []string
	for i := 1; i <= 9; i++ {
		shas = append(shas, strings.Repeat(fmt.Sprint(i), 64))
	}
	// round runs once with the first flipped probes blocked on the new
	// model, the rest allowed on the old one.
	round := func(flipped int) {
		var os []*storage.Observation
		for i, sha := range shas {
			o := obs(fmt.Sprintf("p%d", i), sha, 0, "allowed|")
			o.Result.ModelFP = "fp_old"
			if i < flipped {
				o = obs(fmt.Sprintf("p%d", i), sha, 0, "blocked_output|violence")
				o.Result.ModelID, o.Result.ModelFP = "m-2", "fp_new"
			}
			os = append(os, o)
		}
		s.run(storage.TargetComplete, 0, false, os...)
	}
	round(0)
	round(0)
	round(2)
	round(2)
	evs, err := diff.ListEvents(context.Background(), s.db, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != diff.KindModel {
		t.Fatalf("events %+v, want one model_change", evs)
	}
	if e := evs[0]; e.ModelBefore != "m|fp_old" || e.ModelAfter != "m-2|fp_new" {
		t.Errorf("model %q → %q, want m|fp_old → m-2|fp_new", e.ModelBefore, e.ModelAfter)
	}
	// A third probe joins later: the event still names the flips' model.
	round(3)
	round(3)
	evs, err = diff.ListEvents(context.Background(), s.db, diff.Filter{})
	if err != nil || len(evs) != 1 || len(evs[0].Probes) != 3 {
		t.Fatalf("after p2 joined: %+v %v", evs, err)
	}
	if e := evs[0]; e.ModelBefore != "m|fp_old" || e.ModelAfter != "m-2|fp_new" {
		t.Errorf("after a join: model %q → %q, want m|fp_old → m-2|fp_new", e.ModelBefore, e.ModelAfter)
	}
}

// A probe that changed differently on another target of the same provider
// (a stage change there, allowed→blocked here) does not join the event as
// a provider-wide change; the same change does.
func TestProviderWideJoinNeedsTheSameChange(t *testing.T) {
	for _, c := range []struct {
		name       string
		bBefore    string
		bAfter     string
		wantJoined bool
	}{
		{"stage change", "blocked_output|violence", "blocked_input|violence", false},
		{"same change", "allowed|", "blocked_output|violence", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := storage.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var ids [2]int64
			for i, n := range []string{"a", "b"} {
				if ids[i], err = db.EnsureTarget(ctx, storage.TargetRow{Name: n, Provider: "sim", Model: "m", Endpoint: "chat"}); err != nil {
					t.Fatal(err)
				}
			}
			// Target b changes one run after a: a's event is open when b's
			// change is confirmed.
			verdicts := [][2]string{{"allowed|", c.bBefore}, {"allowed|", c.bBefore}, {"blocked_output|violence", c.bBefore}, {"blocked_output|violence", c.bAfter}, {"blocked_output|violence", c.bAfter}}
			for _, v := range verdicts {
				run, err := db.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1", CorpusHash: "h"})
				if err != nil {
					t.Fatal(err)
				}
				var trs []diff.TargetRun
				for i, n := range []string{"a", "b"} {
					o := obs("p", sha1, 0, v[i])
					o.RunID, o.TargetID = run, ids[i]
					if err := db.InsertObservations(ctx, []*storage.Observation{o}); err != nil {
						t.Fatal(err)
					}
					trs = append(trs, diff.TargetRun{ID: ids[i], Name: n, Provider: "sim", Status: storage.TargetComplete, Observations: []*storage.Observation{o}})
				}
				if _, err := diff.Apply(ctx, db, diff.Input{RunID: run, CorpusVersion: "1", CorpusHash: "h", Targets: trs,
					Params: diff.Params{ConfirmRuns: 2, NondeterministicFlips: 2, WindowRuns: 3}}); err != nil {
					t.Fatal(err)
				}
			}
			evs, err := diff.ListEvents(ctx, db, diff.Filter{Target: "a"})
			if err != nil || len(evs) != 1 {
				t.Fatalf("events on a: %+v %v", evs, err)
			}
			joined := len(evs[0].Targets) == 2
			if joined != c.wantJoined {
				t.Errorf("a's event targets %v, want b joined: %v", evs[0].Targets, c.wantJoined)
			}
		})
	}
}
