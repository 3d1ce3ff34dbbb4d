package metrics_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/metrics"
)

// stateSeries are the families the collector derives from detection
// states (diff.ReadableStates).
var stateSeries = []string{metrics.ProbeVerdicts, metrics.Probes, metrics.CategoryActive}

// ofTarget keeps the lines of target's series.
func ofTarget(lines []string, target string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, "target="+target+",") || strings.Contains(l, "target="+target+"}") {
			out = append(out, l)
		}
	}
	return out
}

// A target whose detection state (probe_states row) does not decode
// stops only its own state-derived series: the collection succeeds (no
// HTTP 500 blanking every target's pages), the other targets' series are
// exported as before, the damaged target has no verdict composition,
// probe counts or active categories, and
// driftprobe_detection_state_damaged{target} is 1 for it — for a
// configured, enabled target only (a disabled one's damaged row exports
// nothing, as its other series). Once the row is removed, as db check
// advises, the gauge is gone. Real runs on the simulator.
func TestDamagedStateLeavesOnlyItsTargetOut(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
  - {name: off, provider: sim, model: m}
`)
	e.Runs(2) // baselines confirmed on every target
	set := &metrics.TargetSet{}
	set.Set([]string{"a", "b"}, t0) // off disabled since
	reg := collectorRegistry(metrics.NewDBCollector(e.Store.SQL()).OnlyTargets(set))
	before := gathered(t, reg, stateSeries...)
	if len(ofTarget(before, "a")) == 0 || len(ofTarget(before, "b")) == 0 {
		t.Fatalf("before: no state series for a or b:\n%s", strings.Join(before, "\n"))
	}
	if got := gathered(t, reg, metrics.DetectionStateDamaged); len(got) != 0 {
		t.Errorf("before any damage: %v, want no %s series", got, metrics.DetectionStateDamaged)
	}
	id := func(name string) int64 {
		t.Helper()
		tr, err := e.Store.TargetByName(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		return tr.ID
	}
	for _, name := range []string{"b", "off"} {
		if _, err := e.Store.SQL().Exec(`UPDATE probe_states SET states = x'00ff00ff' WHERE target_id = ?`, id(name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("collection with b's state damaged failed (every target's series lost): %v", err)
	}
	got := gathered(t, reg, stateSeries...)
	diffLines(t, "a's state series with b's state damaged", ofTarget(got, "a"), ofTarget(before, "a"))
	if b := ofTarget(got, "b"); len(b) != 0 {
		t.Errorf("b's state damaged: still exports %v", b)
	}
	diffLines(t, "damaged", gathered(t, reg, metrics.DetectionStateDamaged),
		[]string{metrics.DetectionStateDamaged + "{target=b} 1"})
	if all := gathered(t, reg); !slices.ContainsFunc(all, func(l string) bool {
		return strings.HasPrefix(l, metrics.EventsTotal+"{") && strings.Contains(l, "target=b")
	}) {
		t.Errorf("b's other series gone with its state: %v", ofTarget(all, "b"))
	}

	// The row removed (db check's DELETE): the gauge goes; b has no state
	// series until its next run.
	if _, err := e.Store.SQL().Exec(`DELETE FROM probe_states WHERE target_id = ?`, id("b")); err != nil {
		t.Fatal(err)
	}
	if got := gathered(t, reg, metrics.DetectionStateDamaged); len(got) != 0 {
		t.Errorf("after the DELETE: %v, want no %s series", got, metrics.DetectionStateDamaged)
	}
	diffLines(t, "a's state series after the DELETE", ofTarget(gathered(t, reg, stateSeries...), "a"), ofTarget(before, "a"))
}
