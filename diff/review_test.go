package diff_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
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
	// enqueue is Params.Enqueue (nil: GitHub not configured).
	enqueue func(kind string) bool
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
		Params: diff.Params{ConfirmRuns: 2, NondeterministicFlips: 2, WindowRuns: 3, Enqueue: s.enqueue}})
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
// longer answers it; its baseline is kept for its return.
func TestRemovedProbeStatePruned(t *testing.T) {
	e := testenv.New(t, "targets:\n  - {name: a, provider: sim, model: m}\n")
	e.Runs(2)
	n := len(e.Corpus.Probes)
	keep := e.Corpus.Probes[:10]
	e.Corpus.Probes = keep
	e.Run()
	all, err := diff.AllStates(context.Background(), e.Store.SQL())
	if err != nil {
		t.Fatal(err)
	}
	for id, sts := range all {
		if len(sts) != len(keep) {
			t.Fatalf("%d states after pruning, want %d", len(sts), len(keep))
		}
		if bs, err := diff.Baselines(context.Background(), e.Store.SQL(), id); err != nil || len(bs) != n {
			t.Fatalf("%d baselines kept (%v), want all %d: a removed probe keeps its baseline for its return", len(bs), err, n)
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

// Whether an event has an issue is decided when it opens, by the kind it
// opens as (github.kinds): an event queued then keeps its issue up to date
// (comments, the revert that closes it) after its kind changes to one not
// listed; an event not queued then is never queued, even when its kind
// becomes a listed one.
func TestEnqueueDecidedWhenEventOpens(t *testing.T) {
	for _, c := range []struct {
		kinds []string
		want  string // outbox actions, in order
	}{
		{[]string{diff.KindPolicy}, "open,comment,revert"},
		{[]string{diff.KindModel}, ""},
	} {
		t.Run(strings.Join(c.kinds, ","), func(t *testing.T) {
			s := newSynth(t)
			s.enqueue = func(kind string) bool { return slices.Contains(c.kinds, kind) }
			var shas []string
			for i := 1; i <= 9; i++ {
				shas = append(shas, strings.Repeat(fmt.Sprint(i), 64))
			}
			// round runs once with the probes of blocked blocked: p0 on
			// the unchanged model, p1 on a new one (seen only on its
			// answer: a model change on the flips).
			round := func(blocked ...int) {
				var os []*storage.Observation
				for i, sha := range shas {
					o := obs(fmt.Sprintf("p%d", i), sha, 0, "allowed|")
					if slices.Contains(blocked, i) {
						o = obs(fmt.Sprintf("p%d", i), sha, 0, "blocked_output|violence")
					}
					o.Result.ModelFP = "fp_old"
					if i == 1 && slices.Contains(blocked, i) {
						o.Result.ModelID, o.Result.ModelFP = "m-2", "fp_new"
					}
					os = append(os, o)
				}
				s.run(storage.TargetComplete, 0, false, os...)
			}
			round()
			round()
			round(0)
			round(0) // confirmed: opens as policy_change
			round(0, 1)
			round(0, 1) // p1 joins: the event becomes model_change
			round()
			round() // both flip back: reverted
			evs, err := diff.ListEvents(context.Background(), s.db, diff.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 || evs[0].Kind != diff.KindModel || evs[0].Status != diff.StatusReverted {
				var got []string
				for _, e := range evs {
					got = append(got, e.Kind+"/"+e.Status)
				}
				t.Fatalf("events %v, want one model_change, reverted", got)
			}
			var changes []string
			for _, u := range evs[0].Updates {
				changes = append(changes, u.Change)
			}
			if got := strings.Join(changes, ","); got != "opened,probes_added,reverted" {
				t.Fatalf("updates %s, want opened,probes_added,reverted", got)
			}
			rows, err := s.db.SQL().Query(`SELECT action FROM outbox ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var actions []string
			for rows.Next() {
				var a string
				rows.Scan(&a)
				actions = append(actions, a)
			}
			if got := strings.Join(actions, ","); got != c.want {
				t.Errorf("kinds %v: outbox %q, want %q", c.kinds, got, c.want)
			}
		})
	}
}

// multi drives diff.Apply over several targets of one provider (sim) with
// hand-made observations: nine probes p0…p8 with fixed bytes each.
type multi struct {
	t       *testing.T
	db      *storage.DB
	names   []string
	ids     map[string]int64
	changes []diff.Change // every round's, in order
}

func newMulti(t *testing.T, names ...string) *multi {
	t.Helper()
	db, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m := &multi{t: t, db: db, names: names, ids: map[string]int64{}}
	for _, n := range names {
		if m.ids[n], err = db.EnsureTarget(context.Background(), storage.TargetRow{Name: n, Provider: "sim", Model: n, Endpoint: "chat"}); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// round records one run, each target answering probe i with answer(target,
// i): a verdict ("allowed|", "blocked_output|violence", ...) and the model
// id|fingerprint it reports. Targets are detected in the order given.
func (m *multi) round(answer func(target string, i int) (verdict, model string)) {
	m.t.Helper()
	ctx := context.Background()
	run, err := m.db.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1", CorpusHash: "h"})
	if err != nil {
		m.t.Fatal(err)
	}
	var trs []diff.TargetRun
	for _, n := range m.names {
		var os []*storage.Observation
		for i := range 9 {
			v, model := answer(n, i)
			o := obs(fmt.Sprintf("p%d", i), strings.Repeat(fmt.Sprint(i+1), 64), 0, v)
			o.Result.ModelID, o.Result.ModelFP, _ = strings.Cut(model, "|")
			o.RunID, o.TargetID = run, m.ids[n]
			os = append(os, o)
		}
		if err := m.db.InsertObservations(ctx, os); err != nil {
			m.t.Fatal(err)
		}
		trs = append(trs, diff.TargetRun{ID: m.ids[n], Name: n, Provider: "sim", Status: storage.TargetComplete, Observations: os})
	}
	res, err := diff.Apply(ctx, m.db, diff.Input{RunID: run, CorpusVersion: "1", CorpusHash: "h", Targets: trs,
		Params: diff.Params{ConfirmRuns: 2, NondeterministicFlips: 2, WindowRuns: 3}})
	if err != nil {
		m.t.Fatal(err)
	}
	m.changes = append(m.changes, res.Changes...)
}

// A target joining a provider-wide event with a model change of its own
// (seen on its flips) makes the event a model change; the event's model
// fields then name that model change (never one model before and after
// under a model_change), model_target names the target it happened on,
// and the join names the joining target's models.
func TestJoiningTargetsModelChangeNamed(t *testing.T) {
	m := newMulti(t, "a", "b")
	round := func(blocked ...int) {
		t.Helper()
		m.round(func(n string, i int) (string, string) {
			switch {
			case !slices.Contains(blocked, i):
				return "allowed|", n + "|fp_" + n
			case n == "b":
				return "blocked_output|violence", "b-2|fp_b2"
			}
			return "blocked_output|violence", n + "|fp_" + n
		})
	}
	round()
	round()
	round(0)
	round(0) // a opens a policy change; b joins with its flips on b-2
	evs := m.events()
	if len(evs) != 1 || evs[0].Kind != diff.KindModel || evs[0].Target != "a" || evs[0].ModelBefore != "b|fp_b" || evs[0].ModelAfter != "b-2|fp_b2" || evs[0].ModelTarget != "b" {
		t.Fatalf("events %+v: want a's event, a model_change b|fp_b → b-2|fp_b2 on b", evs)
	}
	var joined []string
	for _, c := range m.changes {
		if c.Change == diff.ChangeTargetJoined {
			joined = append(joined, c.Detail)
		}
	}
	// The join says how many of its flips moved as the event's did (all
	// here), not only how many flipped.
	if len(joined) != 1 || !strings.Contains(joined[0], "model on b: b|fp_b → b-2|fp_b2") || !regexp.MustCompile(`\((\d+) probes, (\d+) of them moved as the event's did\)`).MatchString(joined[0]) {
		t.Fatalf("join details %q", joined)
	}
}

func (m *multi) events() []*diff.Event {
	m.t.Helper()
	evs, err := diff.ListEvents(context.Background(), m.db, diff.Filter{})
	if err != nil {
		m.t.Fatal(err)
	}
	return evs
}

// model_before/model_after stay the opener's through a provider-wide
// event's life: a target joining it, and later adding probes to it, never
// overwrites them; the opener's model change seen only on its flips keeps
// naming the flips' models after the join and after more of its probes
// join.
func TestJoinedTargetKeepsTheOpenersModels(t *testing.T) {
	m := newMulti(t, "a", "b")
	// blocked[target] lists the probes blocked in a run. Nine probes, so a
	// target's most common model is its usual one; a's flips answer on a
	// new model (a model change seen only on them), b's on its usual one.
	round := func(blocked map[string][]int) {
		t.Helper()
		m.round(func(n string, i int) (string, string) {
			switch {
			case !slices.Contains(blocked[n], i):
				return "allowed|", n + "|fp_" + n
			case n == "a":
				return "blocked_output|violence", "a-2|fp_a2"
			}
			return "blocked_output|violence", n + "|fp_" + n
		})
	}
	check := func(when string, targets string, probes int) {
		t.Helper()
		evs := m.events()
		if len(evs) != 1 {
			t.Fatalf("%s: %d events, want one", when, len(evs))
		}
		e := evs[0]
		if got := strings.Join(e.Targets, ","); got != targets || len(e.Probes) != probes {
			t.Fatalf("%s: targets %s with %d probes, want %s with %d", when, got, len(e.Probes), targets, probes)
		}
		if e.Kind != diff.KindModel || e.ModelBefore != "a|fp_a" || e.ModelAfter != "a-2|fp_a2" {
			t.Errorf("%s: %s, model %q → %q, want model_change a|fp_a → a-2|fp_a2 (the opener's flips)", when, e.Kind, e.ModelBefore, e.ModelAfter)
		}
	}
	round(nil)
	round(nil)
	round(map[string][]int{"a": {0}})
	round(map[string][]int{"a": {0}, "b": {0}}) // a opens
	check("a opened", "a", 1)
	round(map[string][]int{"a": {0}, "b": {0}}) // b joins
	check("b joined", "a,b", 2)
	round(map[string][]int{"a": {0, 1}, "b": {0, 1}})
	round(map[string][]int{"a": {0, 1}, "b": {0, 1}}) // both add p1: a first, then b
	check("both added a probe", "a,b", 4)
}

// The provider-wide join counts probes, not the event's rows: a probe the
// event holds twice (moved on two of its targets, into different
// categories) is one shared probe. Here t-hate tightens hate (p0, p1) and
// blocks privacy probe p2 for hate; t-privacy tightens p2 and p3 (half of
// its two flips shared: it joins); t-violence tightens p5, p6 and p2 (one
// of its three flips shared: less than half, its own event), though the
// event holds p2 in two rows (blocked for hate, for privacy).
func TestProviderWideJoinCountsProbes(t *testing.T) {
	m := newMulti(t, "t-hate", "t-privacy", "t-violence")
	after := map[string]map[int]string{
		"t-hate":     {0: "blocked_output|hate", 1: "blocked_output|hate", 2: "blocked_output|hate"},
		"t-privacy":  {2: "blocked_output|privacy", 3: "blocked_output|privacy"},
		"t-violence": {5: "blocked_output|violence", 6: "blocked_output|violence", 2: "blocked_output|violence"},
	}
	for run := 1; run <= 5; run++ {
		m.round(func(n string, i int) (string, string) {
			if v, ok := after[n][i]; ok && run >= 3 {
				return v, "m|fp"
			}
			return "allowed|", "m|fp"
		})
	}
	var got []string
	for _, e := range m.events() {
		got = append(got, strings.Join(e.Targets, "+"))
	}
	if strings.Join(got, ",") != "t-hate+t-privacy,t-violence" {
		t.Errorf("events on %v, want t-hate+t-privacy and t-violence alone", got)
	}
}
