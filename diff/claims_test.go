package diff_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// What an event claims (its runs, models and the answers it cites) must be
// what the stored answers show. These tests drive diff.Apply with
// hand-made answers of one target, three probes p0–p2, with scores and
// models.

type claims struct {
	t       *testing.T
	db      *storage.DB
	tid     int64
	changes []diff.Change
	status  string // the next run's target status ("": complete)
}

func newClaims(t *testing.T) *claims {
	t.Helper()
	db, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tid, err := db.EnsureTarget(context.Background(), storage.TargetRow{Name: "a", Provider: "sim", Model: "m", Endpoint: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	return &claims{t: t, db: db, tid: tid}
}

// answer is one probe's answer: a verdict key, the model id|fingerprint it
// names, and its hate score (< 0: none).
type answer struct {
	verdict, model string
	hate           float64
}

// run records one complete run in which probe i answers as(i), and applies
// detection (GitHub configured for every kind).
func (c *claims) run(as func(i int) answer) {
	c.t.Helper()
	ctx := context.Background()
	id, err := c.db.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1", CorpusHash: "h"})
	if err != nil {
		c.t.Fatal(err)
	}
	var os []*storage.Observation
	for i := range 3 {
		a := as(i)
		v := diff.ParseKey(a.verdict)
		o := &storage.Observation{ProbeID: fmt.Sprintf("p%d", i), RequestSHA256: strings.Repeat(fmt.Sprint(i+1), 64), Attempts: 1, ObservedAt: time.Unix(0, 0),
			Result: probes.Result{Class: v.Class, Categories: v.Categories}}
		o.ProbeSHA256 = o.RequestSHA256
		o.Result.ModelID, o.Result.ModelFP, _ = strings.Cut(a.model, "|")
		if a.hate >= 0 {
			o.Result.Signals = []probes.Signal{{Category: "hate", Raw: "hate", Score: a.hate, HasScore: true}}
		}
		o.RunID, o.TargetID = id, c.tid
		os = append(os, o)
	}
	if err := c.db.InsertObservations(ctx, os); err != nil {
		c.t.Fatal(err)
	}
	status := c.status
	if status == "" {
		status = storage.TargetComplete
	}
	c.status = ""
	if err := c.db.FinishRun(ctx, id, storage.RunComplete, []storage.RunTarget{{TargetID: c.tid, Status: status}}); err != nil {
		c.t.Fatal(err)
	}
	res, err := diff.Apply(ctx, c.db, diff.Input{RunID: id, CorpusVersion: "1", CorpusHash: "h",
		Targets: []diff.TargetRun{{ID: c.tid, Name: "a", Provider: "sim", Status: status, Observations: os}},
		Params:  diff.Params{ConfirmRuns: 2, NondeterministicFlips: 2, WindowRuns: 3, ScoreTolerance: 0.15, Enqueue: func(string) bool { return true }}})
	if err != nil {
		c.t.Fatalf("run %d: %v", id, err)
	}
	c.changes = append(c.changes, res.Changes...)
}

func (c *claims) events() []*diff.Event {
	c.t.Helper()
	evs, err := diff.ListEvents(context.Background(), c.db, diff.Filter{})
	if err != nil {
		c.t.Fatal(err)
	}
	return evs
}

// citedModels fails the test unless a score drift event names the models
// of the answers its first row cites, before and after.
func (c *claims) citedModels(e *diff.Event) {
	c.t.Helper()
	model := func(id int64) string {
		o, err := c.db.Observation(context.Background(), id)
		if err != nil {
			c.t.Fatal(err)
		}
		return o.Result.ModelID + "|" + o.Result.ModelFP
	}
	if p := e.Probes[0]; e.ModelBefore != model(p.BeforeObs) || e.ModelAfter != model(p.AfterObs) {
		c.t.Errorf("event %d names %s → %s; the answers it cites were answered by %s and %s", e.ID, e.ModelBefore, e.ModelAfter, model(p.BeforeObs), model(p.AfterObs))
	}
}

// hateOf returns the hate score of a stored observation.
func (c *claims) hateOf(id int64) float64 {
	c.t.Helper()
	o, err := c.db.Observation(context.Background(), id)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, s := range o.Result.Signals {
		if s.Raw == "hate" {
			return s.Score
		}
	}
	c.t.Fatalf("observation %d has no hate score", id)
	return 0
}

// "Last run before" is where a diff to the flip shows it: a run in which
// the probe got no answer (a 429 after retries) is not it.
func TestLastRunBeforeHadTheBeforeVerdict(t *testing.T) {
	c := newClaims(t)
	allowed := func(int) answer { return answer{"allowed|", "m|fp", -1} }
	for range 3 {
		c.run(allowed) // runs 1–3
	}
	c.run(func(i int) answer { // run 4: p0 unanswered
		if i == 0 {
			return answer{"transient|", "", -1}
		}
		return allowed(i)
	})
	for range 2 {
		c.run(func(i int) answer { // runs 5–6: p0 blocked
			if i == 0 {
				return answer{"blocked_output|violence", "m|fp", -1}
			}
			return allowed(i)
		})
	}
	evs := c.events()
	if len(evs) != 1 || len(evs[0].Probes) != 1 {
		t.Fatalf("events %+v, want one with p0", evs)
	}
	if p := evs[0].Probes[0]; p.FirstRun != 5 || p.LastRunBefore != 3 {
		t.Errorf("p0 flipped in run %d, last run before %d: want 5 and 3 (run 4 had no answer from p0)", p.FirstRun, p.LastRunBefore)
	}
}

// Scores that move with a model upgrade drift from the old model's answer:
// the event names both models and cites the answer carrying the scores it
// moved from; a later drift cites the answer the earlier one ended on,
// also when it moves the same probe again within the event's window.
func TestScoreDriftWithModelChangeCitesTheOldAnswer(t *testing.T) {
	c := newClaims(t)
	// p0's score moves with the upgrade in run 4; p1's moves on m2 in run
	// 10 and again in run 16 (past the window of the one before); p2's in
	// run 10 with p1's, and again in run 12, within that event's window.
	for run := 1; run <= 17; run++ {
		model, p0, p1, p2 := "m2|fp2", 0.50, 0.10, 0.10
		if run <= 3 {
			model, p0 = "m1|fp1", 0.10
		}
		if run >= 10 {
			p1, p2 = 0.50, 0.50
		}
		if run >= 12 {
			p2 = 0.90
		}
		if run >= 16 {
			p1 = 0.90
		}
		c.run(func(i int) answer { return answer{"allowed|", model, []float64{p0, p1, p2}[i]} })
	}
	evs := c.events()
	if len(evs) != 3 {
		t.Fatalf("%d events %+v, want three score drifts", len(evs), evs)
	}
	type drift struct {
		probe string
		from  float64
	}
	for i, want := range []struct {
		before, after string
		drifts        []drift
	}{
		{"m1|fp1", "m2|fp2", []drift{{"p0", 0.10}}},
		{"m2|fp2", "m2|fp2", []drift{{"p1", 0.10}, {"p2", 0.50}}},
		{"m2|fp2", "m2|fp2", []drift{{"p1", 0.50}}},
	} {
		e := evs[i]
		if e.Kind != diff.KindScoreDrift || len(e.Probes) != len(want.drifts) {
			t.Fatalf("event %d: %s %+v, want a score drift of %+v", i+1, e.Kind, e.Probes, want.drifts)
		}
		if e.ModelBefore != want.before || e.ModelAfter != want.after {
			t.Errorf("event %d: model %s → %s, want %s → %s", i+1, e.ModelBefore, e.ModelAfter, want.before, want.after)
		}
		for j, w := range want.drifts {
			p := e.Probes[j]
			if p.ProbeID != w.probe || len(p.ScoreMoves) != 1 || p.ScoreMoves[0].Before != w.from {
				t.Fatalf("event %d: %s moves %+v, want %s's hate from %v", i+1, p.ProbeID, p.ScoreMoves, w.probe, w.from)
			}
			if got := c.hateOf(p.BeforeObs); got != w.from {
				t.Errorf("event %d: %s cites before observation %d (run %d) with hate %v, but claims the score moved from %v", i+1, p.ProbeID, p.BeforeObs, p.BeforeRun, got, w.from)
			}
			if got := c.hateOf(p.AfterObs); got != p.ScoreMoves[0].After {
				t.Errorf("event %d: %s cites after observation %d with hate %v, but claims the score moved to %v", i+1, p.ProbeID, p.AfterObs, got, p.ScoreMoves[0].After)
			}
		}
	}
}

// A probe marked nondeterministic that then changes and holds is still no
// policy change, but the change is told: an update of its nondeterminism
// event, queued for GitHub; the run it was marked in stays.
func TestMarkedProbeThatSettlesIsTold(t *testing.T) {
	c := newClaims(t)
	p0 := func(v string) func(int) answer {
		return func(i int) answer {
			if i == 0 {
				return answer{v, "m|fp", -1}
			}
			return answer{"allowed|", "m|fp", -1}
		}
	}
	for _, v := range []string{"allowed|", "allowed|", "blocked_output|violence", "allowed|", "blocked_output|violence", "allowed|"} {
		c.run(p0(v)) // runs 1–6: p0 goes back and forth
	}
	evs := c.events()
	if len(evs) != 1 || evs[0].Kind != diff.KindNondeterminism {
		t.Fatalf("events %+v, want p0 marked nondeterministic", evs)
	}
	marked, updates := evs[0].Probes[0].FirstRun, len(evs[0].Updates)
	outbox := func() (n int) {
		t.Helper()
		if err := c.db.SQL().QueryRow(`SELECT COUNT(*) FROM outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	queued := outbox()
	c.changes = nil
	for range 3 {
		c.run(p0("blocked_input|hate")) // runs 7–9: a new verdict, held
	}
	evs = c.events()
	if len(evs) != 1 {
		t.Fatalf("events %+v: a marked probe's change is no new event", evs)
	}
	e := evs[0]
	p := e.Probes[0]
	if p.Before.Key() != "allowed|" || p.After.Key() != "blocked_output|violence" || p.FirstRun != marked {
		t.Errorf("p0's row: %s ↔ %s, marked in run %d (want the pair it was marked for, allowed ↔ blocked_output[violence], still run %d)", p.Before, p.After, p.FirstRun, marked)
	}
	if len(e.Updates) != updates+1 || !strings.Contains(e.Updates[len(e.Updates)-1].Detail, "p0 → blocked_input[hate]") {
		t.Errorf("updates %+v: want one telling p0 settled at blocked_input[hate]", e.Updates)
	}
	if len(c.changes) != 1 || c.changes[0].EventID != e.ID {
		t.Errorf("the runs' changes %+v: want the update of event %d", c.changes, e.ID)
	}
	if got := outbox(); got != queued+1 {
		t.Errorf("outbox rows %d → %d: the update is not queued for the issue", queued, got)
	}
}

// Flips within the window join the open event whatever their own cause: a
// flip on an unchanged model after the target's own model change joins the
// model_change (one change, as a provider-wide one would be), and the
// update says no model change came with it.
func TestPolicyFlipAfterModelChangeSaysSo(t *testing.T) {
	m := newMulti(t, "a")
	round := func(model string, blocked ...int) {
		t.Helper()
		m.round(func(_ string, i int) (string, string) {
			for _, b := range blocked {
				if b == i {
					return "blocked_output|violence", model
				}
			}
			return "allowed|", model
		})
	}
	round("a|m1")
	round("a|m1")
	round("a|m2", 0)
	round("a|m2", 0) // run 4: model_change confirmed (p0)
	round("a|m2", 0, 1)
	round("a|m2", 0, 1) // run 6: p1 flipped on m2, its baseline held under m2 in runs 3–4
	evs := m.events()
	if len(evs) != 1 || evs[0].Kind != diff.KindModel || len(evs[0].Probes) != 2 {
		t.Fatalf("events %+v, want one model_change holding p0 and p1", evs)
	}
	u := evs[0].Updates[len(evs[0].Updates)-1]
	if u.Change != diff.ChangeProbesAdded || !strings.Contains(u.Detail, "1 more probe(s) on a: p1") || !strings.Contains(u.Detail, "no model change came with these flips on a") {
		t.Errorf("p1's update %+v: want it added, saying no model change came with it", u)
	}
}

// Regressions found in review of the first version of these fixes.

func p0is(v string) func(int) answer {
	return func(i int) answer {
		if i == 0 {
			return answer{v, "m|fp", -1}
		}
		return answer{"allowed|", "m|fp", -1}
	}
}

// Scores move with a model upgrade (run 4) while the verdict holds on m2,
// then the verdict flips on m2: its baseline held under m2, so that is a
// policy change on m2 — the scores moving with the model do not make the
// later flip the model change's doing. The same when noisy scores on m2
// never let the drift confirm.
func TestFlipAfterScoresMovedWithModelIsPolicy(t *testing.T) {
	for _, noisy := range []bool{false, true} {
		c := newClaims(t)
		last, flipFrom := 6, 5
		if noisy {
			last, flipFrom = 16, 15
		}
		for run := 1; run <= last; run++ {
			c.run(func(i int) answer {
				h := 0.5
				if noisy && run%2 == 0 {
					h = 0.9
				}
				switch {
				case run <= 3:
					return answer{"allowed|", "m1|fp1", 0.10}
				case run < flipFrom || i != 0:
					return answer{"allowed|", "m2|fp2", h}
				}
				return answer{"blocked_output|violence", "m2|fp2", h}
			})
		}
		for _, e := range c.events() {
			if e.Kind != diff.KindScoreDrift && e.Kind != diff.KindPolicy {
				t.Errorf("noisy %v: event %d: %s %s → %s; p0's baseline held under m2: want a policy_change on m2", noisy, e.ID, e.Kind, e.ModelBefore, e.ModelAfter)
			}
		}
	}
}

// An answer with no scores under the new model does not become the
// drift's before side.
func TestDriftBeforeSideSkipsScorelessAnswers(t *testing.T) {
	c := newClaims(t)
	for run := 1; run <= 7; run++ {
		c.run(func(i int) answer {
			switch {
			case run <= 3:
				return answer{"allowed|", "m1|fp1", 0.10}
			case run == 5:
				return answer{"allowed|", "m2|fp2", -1}
			}
			return answer{"allowed|", "m2|fp2", 0.50}
		})
	}
	evs := c.events()
	if len(evs) == 0 {
		t.Fatal("no score drift")
	}
	for _, e := range evs {
		for _, p := range e.Probes {
			if got := c.hateOf(p.BeforeObs); len(p.ScoreMoves) == 0 || got != p.ScoreMoves[0].Before {
				t.Errorf("event %d %s: before observation's hate %v, claims from %+v", e.ID, p.ProbeID, got, p.ScoreMoves)
			}
		}
	}
}

// A drift names the models of the two answers it cites (here the scores
// moved under m1 and confirmed under m2: both, as the record shows); one
// probe drifting twice within an event's window keeps its row's runs in
// order.
func TestDriftRowsNameTheirOwnModelsAndRuns(t *testing.T) {
	c := newClaims(t)
	for run := 1; run <= 5; run++ {
		c.run(func(i int) answer {
			switch {
			case run <= 3:
				return answer{"allowed|", "m1|fp1", 0.10}
			case run == 4:
				return answer{"allowed|", "m1|fp1", 0.50}
			}
			return answer{"allowed|", "m2|fp2", 0.50}
		})
	}
	for _, e := range c.events() {
		c.citedModels(e)
	}
	c = newClaims(t)
	for run := 1; run <= 13; run++ {
		h := 0.10
		if run >= 10 {
			h = 0.50
		}
		if run >= 12 {
			h = 0.90
		}
		c.run(func(i int) answer { return answer{"allowed|", "m|fp", h} })
	}
	for _, e := range c.events() {
		for _, p := range e.Probes {
			if p.BeforeRun >= p.FirstRun || p.FirstRun != 12 {
				t.Errorf("event %d %s: before observation from run %d, first run %d (want before 12, first run 12: the latest drift)", e.ID, p.ProbeID, p.BeforeRun, p.FirstRun)
			}
		}
	}
}

// A marked probe whose change holds long after it was marked updates its
// nondeterminism event (no second event, no second issue); one going back
// and forth between the two verdicts it was marked for, in stretches, is
// the noise it was marked for: nothing told, its row still names the two.
func TestSettledLongAfterAndStretches(t *testing.T) {
	marked := []string{"allowed|", "allowed|", "blocked_output|violence", "allowed|", "blocked_output|violence", "allowed|"}
	c := newClaims(t)
	for _, v := range marked {
		c.run(p0is(v))
	}
	for range 6 {
		c.run(p0is("allowed|")) // runs 7–12: past the window
	}
	for range 2 {
		c.run(p0is("blocked_input|hate")) // runs 13–14
	}
	if evs := c.events(); len(evs) != 1 || len(evs[0].Updates) != 2 || !strings.Contains(evs[0].Updates[1].Detail, "p0 → blocked_input[hate]") {
		t.Errorf("events %+v: want nondeterminism event 1 updated with p0's change", evs)
	}

	c = newClaims(t)
	for _, v := range marked {
		c.run(p0is(v))
	}
	c.changes = nil
	for k := range 12 { // runs 7–18: AABBAABB…
		v := "allowed|"
		if (k/2)%2 == 1 {
			v = "blocked_output|violence"
		}
		c.run(p0is(v))
	}
	if len(c.changes) != 0 {
		t.Errorf("changes told for back and forth between the marked verdicts: %+v", c.changes)
	}
	for _, e := range c.events() {
		for _, p := range e.Probes {
			if e.Kind == diff.KindNondeterminism && p.Before.Key() == p.After.Key() {
				t.Errorf("event %d: %s's row claims it moves between %s and %s", e.ID, p.ProbeID, p.Before, p.After)
			}
		}
	}
}

// The run before a flip whose answer had the before-verdict's class but
// other categories (a degraded run, where answers start nothing) is not
// where the probe held its before-verdict.
func TestLastRunBeforeComparesCategories(t *testing.T) {
	c := newClaims(t)
	for range 3 {
		c.run(p0is("blocked_output|violence")) // runs 1–3
	}
	c.status = storage.TargetDegraded
	c.run(func(i int) answer { // run 4: degraded; p0 answers another category
		if i == 0 {
			return answer{"blocked_output|hate", "m|fp", -1}
		}
		return answer{"transient|", "", -1}
	})
	for range 2 {
		c.run(p0is("allowed|")) // runs 5–6
	}
	evs := c.events()
	if len(evs) != 1 || len(evs[0].Probes) != 1 {
		t.Fatalf("events %+v, want p0's flip", evs)
	}
	if p := evs[0].Probes[0]; p.FirstRun != 5 || p.LastRunBefore != 3 {
		t.Errorf("p0 flipped in run %d, last run before %d: want 5 and 3", p.FirstRun, p.LastRunBefore)
	}
}
