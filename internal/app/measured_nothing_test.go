package app_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// MeasuredNothing is `run`'s exit-3 rule, shared with serve: no target
// answered a single probe with a verdict or account-level enforcement.
func TestMeasuredNothing(t *testing.T) {
	target := func(verdicts, transient, clientErr, unavail, abuse int) *runner.TargetSummary {
		return &runner.TargetSummary{RunTarget: storage.RunTarget{Verdicts: verdicts, Transient: transient, ClientErrors: clientErr, Unavailable: unavail},
			Counts: map[probes.Class]int{probes.AbuseBlock: abuse}}
	}
	sum := func(status string, ts ...*runner.TargetSummary) *runner.Summary {
		return &runner.Summary{RunID: 7, Status: status, Targets: ts}
	}
	err := app.MeasuredNothing(sum(storage.RunPartial, target(0, 10, 0, 2, 0), target(0, 0, 62, 0, 0)))
	if !errors.Is(err, app.ErrMeasuredNothing) {
		t.Fatalf("every answer transient, a client error or unavailable: %v, want ErrMeasuredNothing", err)
	}
	const want = "run 7 measured nothing: no target answered a probe with a verdict (10 transient, 62 client errors, 2 filter unavailable); check the keys, base URLs and network (`driftprobe plan`, the run's JSON); the run is stored"
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant (as `driftprobe run` has always said):\n%s", err, want)
	}
	for name, s := range map[string]*runner.Summary{
		"one target measured":        sum(storage.RunPartial, target(0, 10, 0, 0, 0), target(1, 9, 0, 0, 0)),
		"account-level enforcement":  sum(storage.RunPartial, target(0, 10, 0, 0, 1)),
		"aborted (reported as such)": sum(storage.RunAborted, target(0, 3, 0, 0, 0)),
		"no target":                  sum(storage.RunComplete),
		"no summary":                 nil,
	} {
		if err := app.MeasuredNothing(s); err != nil {
			t.Errorf("%s: %v, want nil", name, err)
		}
	}
}

// A scheduled run in which no target measured anything is a failed run
// (the counter DriftprobeRunFailed reads, a `run failed` line at ERROR
// with `run`'s wording); it is stored, and the next run that measures is
// a success again.
func TestServeRunMeasuringNothingFails(t *testing.T) {
	dir := t.TempDir()
	h, logs, _ := newFaultDaemon(t, writeCfg(t, dir, `
database: %DB%
schedule: "@every 10m"
max_attempts: 1
targets:
  - name: down
    provider: sim
    model: m
    sim: {error_status: 503, error_rate: 1}
  - name: up
    provider: sim
    model: m
    sim: {error_status: 503, error_rate: 1}
`), app.DaemonOptions{})
	err := h.tickErr(t, 10*time.Minute)
	if !errors.Is(err, app.ErrMeasuredNothing) || !strings.Contains(err.Error(), "run 1 measured nothing") {
		t.Fatalf("tick: %v, want run 1 measured nothing", err)
	}
	if got := counterValue(t, h.d.Registry(), metrics.RunFailuresTotal); got != 1 {
		t.Errorf("%s = %v, want 1", metrics.RunFailuresTotal, got)
	}
	if l := logs.String(); !strings.Contains(l, `level=ERROR msg="run failed"`) || !strings.Contains(l, "measured nothing") || strings.Contains(l, `msg="run finished"`) {
		t.Errorf("log, want an ERROR `run failed` line saying it measured nothing, and no `run finished`:\n%s", l)
	}
	if id, err := h.d.Store().LatestFinishedRunID(t.Context()); err != nil || id != 1 {
		t.Errorf("latest finished run: %d %v, want run 1 stored", id, err)
	}
	// One target answering again: measured, no failure.
	b, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "  - name: up\n    provider: sim\n    model: m\n    sim: {error_status: 503, error_rate: 1}\n", "  - name: up\n    provider: sim\n    model: m\n", 1)
	writeCfg(t, dir, cfg)
	if err := h.d.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := h.tickErr(t, 10*time.Minute); err != nil {
		t.Errorf("a run in which one target measured: %v, want no failure", err)
	}
	if got := counterValue(t, h.d.Registry(), metrics.RunFailuresTotal); got != 1 {
		t.Errorf("%s = %v after a measuring run, want still 1", metrics.RunFailuresTotal, got)
	}
}
