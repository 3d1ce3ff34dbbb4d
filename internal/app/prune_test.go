package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// Runs with retention configured prune after themselves: old observations
// go, old bodies go, and what events cite and detection needs stays, so an
// event's evidence still verifies after its runs aged out.
func TestRetentionPrunesAfterEachRun(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
retention: {bodies: 1d, observations: 2d}
targets:
  - name: a
    provider: sim
    model: m
    sim:
      policies:
        - {from_run: 1, thresholds: {privacy: 1.01}}
        - {from_run: 3, thresholds: {privacy: 0.5, violence: 0.3}}
`)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e.Store.SetClock(clock)
	run := func() *app.RunResult {
		t.Helper()
		res, err := app.RunOnce(ctx, e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(12 * time.Hour)
		return res
	}
	var deletedTotal, dropped int64
	for i := 0; i < 8; i++ { // runs at 0h, 12h, … 84h
		res := run()
		j := res.JSON()
		if res.Pruned == nil || j.Pruned != res.Pruned {
			t.Fatalf("run %d: prune result %+v, in run --json %+v", i+1, res.Pruned, j.Pruned)
		}
		deletedTotal += res.Pruned.ObservationsDeleted
		dropped += res.Pruned.BodiesDropped
	}
	// By the last run (at 84h) observations of runs before 36h (runs 1–3)
	// were deleted and bodies of runs before 60h (4–5) dropped, except
	// pinned ones.
	if deletedTotal == 0 || dropped == 0 {
		t.Errorf("runs pruned %d observations and %d bodies in all, want both > 0", deletedTotal, dropped)
	}
	evs, err := diff.ListEvents(ctx, e.Store, diff.Filter{})
	if err != nil || len(evs) == 0 {
		t.Fatalf("events: %d %v, want the policy change", len(evs), err)
	}
	pinned := map[int64]bool{}
	for _, ev := range evs {
		rec, err := evidence.Build(ctx, e.Store, ev.ID, now)
		if err != nil {
			t.Fatalf("evidence of event %d: %v", ev.ID, err)
		}
		if !rec.AllVerified {
			t.Errorf("event %d: evidence no longer verifies after pruning", ev.ID)
		}
		for _, p := range ev.Probes {
			pinned[p.BeforeObs], pinned[p.AfterObs] = true, true
			if p.BeforeObs == 0 || p.AfterObs == 0 {
				t.Errorf("event %d probe %s: before %d after %d", ev.ID, p.ProbeID, p.BeforeObs, p.AfterObs)
			}
		}
	}
	pins, err := diff.LoadPins(ctx, e.Store)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range pins.Observations {
		pinned[id] = true // detection baselines and candidates too
	}
	db := e.Store.SQL()
	// perRun counts a run's observations, those not pinned, and those not
	// pinned that still hold a body.
	perRun := func(run int64) (rows, unpinned, unpinnedBodies int) {
		t.Helper()
		r, err := db.QueryContext(ctx, `SELECT id, body IS NOT NULL FROM observations WHERE run_id = ?`, run)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for r.Next() {
			var id int64
			var b bool
			if err := r.Scan(&id, &b); err != nil {
				t.Fatal(err)
			}
			rows++
			if !pinned[id] {
				unpinned++
				if b {
					unpinnedBodies++
				}
			}
		}
		return rows, unpinned, unpinnedBodies
	}
	probes := len(e.Corpus.Probes)
	deleted := 0
	for run := int64(1); run <= 8; run++ {
		rows, unpinned, unpinnedBodies := perRun(run)
		switch {
		case run <= 3: // older than 2d: only what is pinned is left
			if unpinned != 0 {
				t.Errorf("run %d: %d observations left that nothing pins", run, unpinned)
			}
			deleted += probes - rows
		case run <= 5: // older than 1d: rows stay, bodies only where pinned
			if rows < probes || unpinned == 0 || unpinnedBodies != 0 {
				t.Errorf("run %d: %d observations, %d unpinned, %d unpinned with bodies; want all rows, bodies only on pinned ones", run, rows, unpinned, unpinnedBodies)
			}
		default:
			if rows < probes || unpinnedBodies != unpinned {
				t.Errorf("run %d: %d observations, %d unpinned of which %d with bodies; want it untouched", run, rows, unpinned, unpinnedBodies)
			}
		}
	}
	if deleted == 0 {
		t.Error("nothing was deleted from the runs older than 2 days")
	}
	// Detection still works on the pruned database: another run on
	// unchanged policy confirms nothing new and fails nothing.
	res := run()
	if len(res.Events) != 0 {
		t.Errorf("a run after pruning reported %d events, want none", len(res.Events))
	}
}
