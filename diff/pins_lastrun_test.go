package diff_test

import (
	"context"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/storage"
)

// Retention keeps what an event says: an event probe's last run before
// (where its issue's `diff --from` and attribution's window start) is the
// run whose answer carried the before verdict last. That answer is kept
// with the event's before and after observations, so pruning every run
// it may leaves last_run_before as it was, rather than moving it back to
// the run the baseline rests on (a diff range that no longer shows the
// flip alone, an attribution window of days instead of one run).
func TestPruneKeepsLastRunBefore(t *testing.T) {
	c := newClaims(t)
	allowed := func(int) answer { return answer{"allowed|", "m|fp", -1} }
	for range 5 {
		c.run(allowed) // runs 1–5: the baseline rests on an early one
	}
	for range 2 {
		c.run(func(i int) answer { // runs 6–7: p0 blocked, confirmed
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
	p := evs[0].Probes[0]
	if p.FirstRun != 6 || p.LastRunBefore != 5 || p.BeforeRun >= 5 {
		t.Fatalf("p0: first run %d, last run before %d, before run %d: want 6, 5 and an earlier baseline run", p.FirstRun, p.LastRunBefore, p.BeforeRun)
	}

	ctx := context.Background()
	pins, err := diff.LoadPins(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.db.Prune(ctx, storage.PruneOptions{ObservationsBefore: time.Now().Add(time.Hour), Pinned: pins.Observations, KeepRuns: pins.Runs})
	if err != nil {
		t.Fatal(err)
	}
	if res.ObservationsDeleted == 0 {
		t.Fatalf("prune deleted nothing: %+v", res)
	}
	after := c.events()[0].Probes[0]
	if after.LastRunBefore != p.LastRunBefore || after.BeforeRun != p.BeforeRun {
		t.Errorf("after retention p0's last run before is %d (before run %d), was %d (%d): retention changed what the event says", after.LastRunBefore, after.BeforeRun, p.LastRunBefore, p.BeforeRun)
	}
}
