package app_test

// QA (daemon and what operators see): failing tests for findings of the
// ops review. Deterministic: fake clock, loopback sim only.

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/metrics"
)

// A firing page must not silently resolve because the DB collector could
// not read one row. serve answers /metrics with promhttp.ContinueOnError:
// when a collector query fails (here: one damaged value in the target's
// latest run summary, the kind of row `db check` reports), the scrape is
// still HTTP 200 and the failing families (driftprobe_abuse_blocks,
// driftprobe_target_degraded, driftprobe_breaker_opened_runs,
// driftprobe_last_run_probes, ...) are simply left out. Prometheus sees
// up == 1 and the series disappear: DriftprobeAbuseBlock (a page)
// resolves, nothing is logged and no rule watches
// promhttp_metric_handler_errors_total. A one-shot run on the same
// database refuses the export and logs an ERROR instead.
//
// Want: a scrape whose collection failed is not served as a complete 200
// (HTTPErrorOnError: up == 0, a generic target-down alert), or the series
// the failing query did not concern are still exported.
func TestQAOpsScrapeFailsOpenOnCollectorError(t *testing.T) {
	dir := t.TempDir()
	h := newDaemon(t, writeCfg(t, dir, `
database: %DB%
schedule: "@every 10m"
targets:
  - name: a
    provider: sim
    model: m
    sim: {abuse_from_run: 1}
`))
	h.tick(t, 10*time.Minute)
	srv := httptest.NewServer(h.d.Handler())
	defer srv.Close()
	get := func() (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	const series = `driftprobe_abuse_blocks{target="a"}`
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, series+" 62") {
		t.Fatalf("precondition: HTTP %d, %s 62 present: %v", code, series, strings.Contains(body, series+" 62"))
	}
	// One damaged value in the latest run summary of the target.
	if _, err := h.d.Store().SQL().Exec(`UPDATE run_targets SET breaker_opened = 'x' WHERE run_id = 1`); err != nil {
		t.Fatal(err)
	}
	code, body := get()
	if code == http.StatusOK && !strings.Contains(body, series) {
		t.Errorf("/metrics answered HTTP 200 without %s (the collector failed; promhttp_metric_handler_errors_total{cause=\"gathering\"} rose, nothing else says so): a firing DriftprobeAbuseBlock page resolves silently", series)
	}
}

// serve treats a run that measured nothing (every target answered only
// transient errors: a provider outage, an unreachable network) as a
// normal finished run: the tick logs "run finished" at INFO and
// driftprobe_run_failures_total stays 0, so DriftprobeRunFailed never
// fires. The one-shot `driftprobe run` calls the same run a runtime
// failure (exit 3, "run N measured nothing"). (The run is recorded
// `partial`; driftprobe_run_overdue_timestamp_seconds now counts only runs
// that measured something, so DriftprobeRunsStale follows: metrics'
// TestOverduePartialRunMeasuringNothingDoesNotMoveIt.)
//
// Want: serve reports such a run the way `run` does: a failed run
// (OnRun's error, driftprobe_run_failures_total + 1, an error log line).
func TestQAOpsServeRunMeasuringNothingIsNotAFailure(t *testing.T) {
	dir := t.TempDir()
	h := newDaemon(t, writeCfg(t, dir, `
database: %DB%
schedule: "@every 10m"
max_attempts: 1
targets:
  - name: down
    provider: sim
    model: m
    sim: {error_status: 503, error_rate: 1}
`))
	err := h.tickErr(t, 10*time.Minute)
	failures := counterValue(t, h.d.Registry(), metrics.RunFailuresTotal)
	if err == nil || failures != 1 {
		t.Errorf("a scheduled run in which no target answered a single probe: tick error %v, %s = %v; want it failed and counted (as `driftprobe run` exits 3: measured nothing)",
			err, metrics.RunFailuresTotal, failures)
	}
}

// driftprobe_schedule_interval_seconds is the longest gap of a cron
// schedule "over the coming five weeks" (longestGap): for a schedule
// whose next firing is more than 35 days away (quarterly, yearly) the
// walk never starts and the gauge is 0. The "missing" DriftprobeRunsStale
// rule grants a serve waiting for its first slot `2 *
// max(driftprobe_schedule_interval_seconds)`: 0, so a `serve
// --no-initial-run` on such a schedule tickets after 2h; the dashboard's
// "Schedule interval" stat shows 0.
func TestQAOpsCronIntervalZeroWhenNextFiringIsFar(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	body := "database: " + filepath.Join(dir, "d.db") + "\nschedule: \"CRON_TZ=UTC 0 6 1 1,4,7,10 *\"\ntargets:\n  - {name: a, provider: sim, model: m}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := app.LoadConfig(p, "", false)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(prometheus.NewRegistry(), "test")
	// 1 February: the next quarterly firing (1 April) is 59 days away.
	now := time.Date(2027, 2, 1, 12, 0, 0, 0, time.UTC)
	app.ConfigLoaded(m, cfg, now)
	if got := testutil.ToFloat64(m.ScheduleSecond); got < 80*24*3600 {
		t.Errorf("%s = %v for a quarterly schedule loaded on %s, want its gap (~91 days)", metrics.ScheduleIntervalS, got, now.Format(time.DateOnly))
	}
}
