package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/metrics"
)

// runFailures is driftprobe_run_failures_total as the daemon's registry
// has it, whatever else its collection fails on.
func runFailures(t *testing.T, d *app.Daemon) (float64, error) {
	t.Helper()
	mfs, err := d.Registry().Gather() // what it gathered, with its errors
	for _, mf := range mfs {
		if mf.GetName() == metrics.RunFailuresTotal && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue(), err
		}
	}
	t.Fatalf("no %s (%v)", metrics.RunFailuresTotal, err)
	return 0, err
}

// A scheduled run whose detection failed for a target whose detection
// state does not decode is a failed run, as `run` exits 3 on it
// (DetectionFailed: the tick's error, driftprobe_run_failures_total, a
// `run failed` line at ERROR naming the target and the row to remove),
// while the other target is detected: its policy change is recorded. Once
// the row is removed, the runs succeed again.
func TestServeRunWithDamagedStateFails(t *testing.T) {
	dir := t.TempDir()
	h, logs, _ := newFaultDaemon(t, writeCfg(t, dir, `
database: %DB%
schedule: "@every 10m"
targets:
  - {name: a, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.01}}]}}
  - {name: b, provider: sim, model: m}
`), app.DaemonOptions{})
	ctx := context.Background()
	h.tick(t, 10*time.Minute)
	h.tick(t, 10*time.Minute)
	if _, err := h.d.Store().SQL().Exec(`UPDATE probe_states SET states = x'00ff00ff' WHERE target_id = (SELECT id FROM targets WHERE name = 'b')`); err != nil {
		t.Fatal(err)
	}
	for run := 3; run <= 4; run++ {
		err := h.tickErr(t, 10*time.Minute)
		if !errors.Is(err, app.ErrDetectionFailed) || !strings.Contains(err.Error(), "target b: detection state of target 2") {
			t.Fatalf("tick %d: %v, want b's detection failed", run, err)
		}
		got, gerr := runFailures(t, h.d)
		if got != float64(run-2) {
			t.Errorf("tick %d: %s = %v, want %d", run, metrics.RunFailuresTotal, got, run-2)
		}
		// While the row is damaged /metrics still answers: b is left out
		// of the state-derived series and exported as damaged
		// (DriftprobeDetectionStateDamaged), a's series are there.
		if gerr != nil {
			t.Errorf("tick %d: collection error %v, want b left out, the rest collected", run, gerr)
		}
		if got := stateSeriesOf(t, h.d); got["b"] != metrics.DetectionStateDamaged || got["a"] != metrics.Probes {
			t.Errorf("tick %d: series by target %v, want b damaged, a's probes", run, got)
		}
	}
	if l := logs.String(); !strings.Contains(l, `level=ERROR msg="run failed"`) || !strings.Contains(l, "DELETE FROM probe_states WHERE target_id = 2") ||
		!strings.Contains(l, `level=ERROR msg="detection failed for a target`) || !strings.Contains(l, "target=b") {
		t.Errorf("log, want ERROR lines naming b and the row to remove:\n%s", l)
	}
	evs, err := diff.ListEvents(ctx, h.d.Store(), diff.Filter{})
	if err != nil || len(evs) != 1 || evs[0].Kind != diff.KindPolicy || strings.Join(evs[0].Targets, ",") != "a" || evs[0].ConfirmedRun != 4 {
		t.Fatalf("events %+v (%v), want a's policy change confirmed at run 4", evs, err)
	}
	if ids, err := h.d.Store().UndetectedRuns(ctx); err != nil || len(ids) != 0 {
		t.Errorf("undetected runs %v (%v), want none", ids, err)
	}

	if _, err := h.d.Store().SQL().Exec(`DELETE FROM probe_states WHERE target_id = (SELECT id FROM targets WHERE name = 'b')`); err != nil {
		t.Fatal(err)
	}
	h.tick(t, 10*time.Minute)
	if got, err := runFailures(t, h.d); got != 2 || err != nil {
		t.Errorf("after the row's removal: %s = %v (%v), want still 2, collected", metrics.RunFailuresTotal, got, err)
	}
	if got := stateSeriesOf(t, h.d); got["b"] != metrics.Probes || got["a"] != metrics.Probes {
		t.Errorf("after the row's removal and a run: series by target %v, want a's and b's probes, none damaged", got)
	}
}

// stateSeriesOf returns, per target, driftprobe_detection_state_damaged
// when the daemon's registry exports it at 1 for the target, else
// driftprobe_probes when it exports that, else nothing.
func stateSeriesOf(t *testing.T, d *app.Daemon) map[string]string {
	t.Helper()
	mfs, _ := d.Registry().Gather()
	out := map[string]string{}
	for _, mf := range mfs {
		name := mf.GetName()
		if name != metrics.DetectionStateDamaged && name != metrics.Probes {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "target" {
					continue
				}
				if name == metrics.DetectionStateDamaged && m.GetGauge().GetValue() == 1 {
					out[l.GetValue()] = name
				} else if out[l.GetValue()] == "" && name == metrics.Probes {
					out[l.GetValue()] = name
				}
			}
		}
	}
	return out
}
