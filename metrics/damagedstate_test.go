package metrics_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/probes"
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

// A state a target parked at an endpoint it left (parked_states row) that
// does not decode has a gauge of its own,
// driftprobe_parked_state_damaged{target}, counting such rows: the target's
// detection at its current endpoint goes on, so its state series stay as
// they were and driftprobe_detection_state_damaged (detection stopped) is
// not exported for it. Configured, enabled targets only; gone once the rows
// are removed. Real runs on the simulator, the targets moved from one
// endpoint to another.
func TestDamagedParkedStateHasItsOwnGauge(t *testing.T) {
	urlA := testenv.SimServer(t)
	urlB := testenv.SimServer(t)
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: gw, provider: sim, model: m, base_url: "`+urlA+`"}
  - {name: off, provider: sim, model: m, base_url: "`+urlA+`"}
`)
	e.Runs(2) // baselines at A
	for _, name := range []string{"gw", "off"} {
		e.Config.Target(name).BaseURL = urlB
	}
	e.Rebuild()
	e.Runs(2) // A's states parked; baselines at B
	set := &metrics.TargetSet{}
	set.Set([]string{"a", "gw"}, t0) // off disabled since
	reg := collectorRegistry(metrics.NewDBCollector(e.Store.SQL()).OnlyTargets(set))
	before := gathered(t, reg, stateSeries...)
	if len(ofTarget(before, "gw")) == 0 {
		t.Fatalf("before: no state series for gw:\n%s", strings.Join(before, "\n"))
	}
	if got := gathered(t, reg, metrics.ParkedStateDamaged); len(got) != 0 {
		t.Errorf("before any damage: %v, want no %s series", got, metrics.ParkedStateDamaged)
	}
	sqlExec := func(q string, args ...any) int64 {
		t.Helper()
		r, err := e.Store.SQL().Exec(q, args...)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := r.RowsAffected()
		return n
	}
	if n := sqlExec(`UPDATE parked_states SET states = x'00ff00ff' WHERE origin = ?`, probes.URLOrigin(urlA)); n != 2 {
		t.Fatalf("damaged %d parked rows, want gw's and off's", n)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("collection with gw's parked state damaged failed: %v", err)
	}
	diffLines(t, "parked damaged", gathered(t, reg, metrics.ParkedStateDamaged),
		[]string{metrics.ParkedStateDamaged + "{target=gw} 1"})
	if got := gathered(t, reg, metrics.DetectionStateDamaged); len(got) != 0 {
		t.Errorf("gw's parked state damaged: %v, want no %s series (its detection goes on)", got, metrics.DetectionStateDamaged)
	}
	diffLines(t, "state series with gw's parked state damaged", gathered(t, reg, stateSeries...), before)

	// A second endpoint's parked state of gw that does not decode counts.
	sqlExec(`INSERT INTO parked_states (target_id, origin, states, parked_run)
		SELECT target_id, 'https://c.example', states, parked_run FROM parked_states WHERE target_id = (SELECT id FROM targets WHERE name = 'gw')`)
	diffLines(t, "two parked rows damaged", gathered(t, reg, metrics.ParkedStateDamaged),
		[]string{metrics.ParkedStateDamaged + "{target=gw} 2"})

	// The rows removed (db check's DELETEs): the gauge goes.
	sqlExec(`DELETE FROM parked_states WHERE target_id = (SELECT id FROM targets WHERE name = 'gw')`)
	if got := gathered(t, reg, metrics.ParkedStateDamaged); len(got) != 0 {
		t.Errorf("after the DELETE: %v, want no %s series", got, metrics.ParkedStateDamaged)
	}
}
