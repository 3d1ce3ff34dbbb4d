package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// quietNoise: on a noisy sim (seed 1) probes are marked nondeterministic
// in the first runs (event 1); in run 10 one of them settles again on one
// of the two verdicts it was marked between: the noise it was marked for,
// which tells nothing and changes nothing of the event.
const quietNoise = `
targets:
  - {name: prod, provider: sim, model: sim-large, sim: {noise: 0.5, noise_band: 0.2, seed: 1}}
`

// A run that changes nothing about an event does not make it look updated:
// no update is logged, the run reports no event, and the event keeps its
// last_run and updated_at, so neither `events --since` nor the "updated
// run N" text names it.
func TestEventNotTouchedByRunThatChangesNothing(t *testing.T) {
	e := testenv.New(t, quietNoise)
	ctx := context.Background()
	e.Runs(9)
	before, err := diff.ListEvents(ctx, e.Store, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	res := e.Run()
	if res.Summary.RunID != 10 {
		t.Fatalf("run %d, want 10", res.Summary.RunID)
	}
	after, err := diff.ListEvents(ctx, e.Store, diff.Filter{})
	if err != nil || len(after) != len(before) {
		t.Fatalf("events after run 10: %d (%v), before: %d", len(after), err, len(before))
	}
	for i, a := range after {
		b := before[i]
		if len(a.Updates) != len(b.Updates) {
			// A real change: this test is about the others.
			continue
		}
		if a.LastRun != b.LastRun || !a.UpdatedAt.Equal(b.UpdatedAt) {
			t.Errorf("event %d: last_run %d → %d, updated_at %v → %v, with no update recorded", a.ID, b.LastRun, a.LastRun, b.UpdatedAt, a.UpdatedAt)
		}
	}
	if len(res.Events) != 0 {
		for _, ev := range res.Events {
			t.Logf("run 10 reports event %d (%s), updates %+v", ev.ID, ev.Kind, ev.Updates)
		}
		t.Errorf("run 10 reports %d event(s) it changed nothing about", len(res.Events))
	}
	since, err := diff.ListEvents(ctx, e.Store, diff.Filter{Since: 10})
	if err != nil || len(since) != 0 {
		t.Errorf("events --since 10: %d (%v), want none", len(since), err)
	}
	var text strings.Builder
	app.WriteEvents(&text, after, nil)
	if strings.Contains(text.String(), "updated run 10") {
		t.Errorf("events text:\n%s", text.String())
	}
}

// An event retracted because its only probes proved nondeterministic is
// shown as retracted in `events`, not as reverted: the provider did not
// necessarily change anything (its JSON status stays reverted).
func TestEventsTextSaysRetracted(t *testing.T) {
	e := testenv.New(t, quietNoise)
	e.Runs(8)
	evs, err := diff.ListEvents(context.Background(), e.Store, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	app.WriteEvents(&text, evs, nil)
	found := false
	for _, ev := range evs {
		if ev.Kind != diff.KindPolicy || ev.Updates[len(ev.Updates)-1].Change != diff.ChangeRetracted {
			continue
		}
		found = true
		if ev.Status != diff.StatusReverted {
			t.Errorf("event %d: status %q, want %q (the JSON contract)", ev.ID, ev.Status, diff.StatusReverted)
		}
		for _, l := range strings.Split(text.String(), "\n") {
			if strings.HasPrefix(l, fmt.Sprintf("event %d ", ev.ID)) && (!strings.HasSuffix(l, "· retracted") || strings.Contains(l, "reverted")) {
				t.Errorf("headline of retracted event %d: %q", ev.ID, l)
			}
		}
	}
	if !found {
		t.Fatalf("no retracted policy event:\n%s", text.String())
	}
}
