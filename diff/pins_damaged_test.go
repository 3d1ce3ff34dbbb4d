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

// LoadPins with a target's detection state that does not decode: no
// error; that target is kept whole (Pins.Targets, naming the row and the
// DELETE that removes it), and the other targets' pins are exactly what
// they are without that target's state. Once the row is removed, no target
// is kept whole. A cancelled context still fails it.
func TestLoadPinsKeepsDamagedTargetWhole(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
`)
	ctx := context.Background()
	e.Runs(2)
	b := targetID(t, e, "b")
	healthy, err := diff.LoadPins(ctx, e.Store)
	if err != nil || len(healthy.Targets) != 0 {
		t.Fatalf("pins before any damage: kept whole %+v, %v", healthy.Targets, err)
	}
	if _, err := e.Store.SQL().Exec(`UPDATE probe_states SET states = x'00ff00ff' WHERE target_id = ?`, b); err != nil {
		t.Fatal(err)
	}
	damaged, err := diff.LoadPins(ctx, e.Store)
	if err != nil {
		t.Fatalf("pins with b's state damaged: %v, want b kept whole and the others' pins", err)
	}
	if len(damaged.Targets) != 1 || damaged.Targets[0].TargetID != b || len(damaged.Targets[0].Damaged) != 1 {
		t.Fatalf("kept whole: %+v, want b's damaged row", damaged.Targets)
	}
	d := damaged.Targets[0].Damaged[0]
	del := fmt.Sprintf("DELETE FROM probe_states WHERE target_id = %d", b)
	if d.TargetID != b || d.Origin != "" || !strings.Contains(d.Error(), "corrupt probe state") || !strings.Contains(damaged.Targets[0].Reason(), del) {
		t.Errorf("b's damage %+v, reason %q; want its probe_states row and %q", d, damaged.Targets[0].Reason(), del)
	}
	if len(damaged.Observations) >= len(healthy.Observations) {
		t.Errorf("pins with b's state damaged: %d observations, before %d: b's baselines still read", len(damaged.Observations), len(healthy.Observations))
	}
	for _, id := range damaged.Observations {
		if !slices.Contains(healthy.Observations, id) {
			t.Errorf("observation %d pinned only once b's state is damaged", id)
		}
	}

	if _, err := e.Store.SQL().Exec(del); err != nil {
		t.Fatal(err)
	}
	removed, err := diff.LoadPins(ctx, e.Store)
	if err != nil || len(removed.Targets) != 0 {
		t.Fatalf("pins after the DELETE: kept whole %+v, %v; want none", removed.Targets, err)
	}
	if !slices.Equal(removed.Observations, damaged.Observations) || !slices.Equal(removed.Runs, damaged.Runs) {
		t.Errorf("the other targets' pins differ with b's state damaged (%v, runs %v) and removed (%v, runs %v)",
			damaged.Observations, damaged.Runs, removed.Observations, removed.Runs)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := diff.LoadPins(cctx, e.Store); err == nil {
		t.Error("LoadPins under a cancelled context: no error")
	}
}
