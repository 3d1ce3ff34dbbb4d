package diff_test

import (
	"context"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// An empty states blob (the column is NOT NULL) is a damaged row, never "no state": read as
// an empty state it let retention prune the target's baselines and the
// next run restart every baseline silently (no input change, no ticket).
func TestEmptyStateBlobIsDamage(t *testing.T) {
	for _, value := range []string{"x''", "zeroblob(0)"} {
		t.Run(value, func(t *testing.T) {
			e := testenv.New(t, `
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
`)
			ctx := context.Background()
			e.Runs(1)
			b := targetID(t, e, "b")
			if _, err := e.Store.SQL().Exec(`UPDATE probe_states SET states = `+value+` WHERE target_id = ?`, b); err != nil {
				t.Fatal(err)
			}
			_, damaged, err := diff.ReadableStates(ctx, e.Store.SQL())
			if err != nil || len(damaged) != 1 || damaged[0] != b {
				t.Errorf("ReadableStates with b's blob %s: damaged %v, %v; want [%d]", value, damaged, err, b)
			}
			pins, err := diff.LoadPins(ctx, e.Store)
			if err != nil || len(pins.Targets) != 1 || pins.Targets[0].TargetID != b {
				t.Errorf("LoadPins with b's blob %s: kept whole %+v, %v; want b", value, pins.Targets, err)
			}
		})
	}
}
