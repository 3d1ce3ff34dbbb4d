package app

import (
	"database/sql"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// Instrument wires runner hooks to metrics. A run keeps the config it
// started with: after a reload removed or disabled one of its targets, the
// hooks record nothing more for it (metrics.Metrics checks the configured
// set), so its deleted series stay deleted.
func Instrument(m *metrics.Metrics, o *RunOptions) {
	if m == nil {
		return
	}
	o.Hooks.OnAttempt = func(t *runner.Target, class probes.Class, retried bool) {
		m.ObserveAttempt(t.Config.Name, string(class), retried)
	}
	// Live during a run only: ObserveRun sets every breaker back to 0.
	o.Hooks.OnBreaker = func(t *runner.Target, open bool) {
		m.SetBreaker(t.Config.Name, open)
	}
}

// ObserveRun records a finished run's totals, and that the run is over:
// breakers exist only within a run, so after it none is open and
// driftprobe_breaker_open reads 0 for every target (a breaker that opened
// during the run is in the run's record: the target-run is degraded).
// Call it after every RunOnce that ran, failed ones too (res may be nil).
// Targets the configuration in force no longer runs (a reload during the
// run removed or disabled them) get nothing: their series stay deleted.
func ObserveRun(m *metrics.Metrics, res *RunResult) {
	if m == nil {
		return
	}
	if res == nil || res.Summary == nil {
		m.RunEnded()
		return
	}
	s := res.Summary
	m.RunDuration.Observe(s.Duration.Seconds())
	names := make([]string, 0, len(s.Targets))
	for _, t := range s.Targets {
		// Retries present from the first run (0 until one happens), so
		// rate() and alerts see a series rather than nothing.
		m.ObserveTargetRun(t.Target, t.TokensIn, t.TokensOut, t.CostUSD)
		names = append(names, t.Target)
	}
	m.RunEnded(names...)
}

// NewRegistry builds a registry with driftprobe's metrics and the database
// collector. Once ConfigLoaded has recorded a configuration, the collector
// exports per-target series only for its enabled targets.
func NewRegistry(st *storage.DB, runtime bool) (*prometheus.Registry, *metrics.Metrics) {
	return newRegistry(st.SQL(), runtime)
}

// newRegistry is NewRegistry with the collector reading db.
func newRegistry(db *sql.DB, runtime bool) (*prometheus.Registry, *metrics.Metrics) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, Version)
	reg.MustRegister(metrics.NewDBCollector(db).OnlyTargets(m.Configured).WithSchedule(m.Schedule))
	if runtime {
		metrics.RegisterRuntime(reg)
	}
	return reg, m
}

// ConfigLoaded records a successful configuration load at now, the
// schedule's interval (used by staleness alerts, also for one-shot runs)
// and the targets it runs: only enabled targets keep per-target series, so
// a target removed or disabled (a suspended account's, say) stops
// alerting. A target enabled again by a later load exports its latest-run
// series (abuse blocks, degradation, the latest runs' probes) only from
// runs that start after now, never its months-old last run; the targets of
// the first load export theirs from the database as it is. now must be on
// the store's clock (runs' start times are compared with it).
func ConfigLoaded(m *metrics.Metrics, cfg *config.Config, now time.Time) {
	enabled := cfg.Enabled()
	names := make([]string, len(enabled))
	for i, t := range enabled {
		names[i] = t.Name
	}
	m.SetConfigured(names, now)
	m.ReloadOK.Set(1)
	m.ReloadTime.Set(float64(now.UnixNano()) / 1e9)
	if iv, ok := interval(cfg.Schedule); ok {
		m.ScheduleSecond.Set(iv.Seconds())
		m.Schedule.Set(every(iv + max(cfg.Jitter.D(), 0)))
	} else if sch, err := cronSpec(cfg.Schedule); err == nil {
		m.ScheduleSecond.Set(longestGap(sch, now).Seconds())
		m.Schedule.Set(delayed{sch, max(cfg.Jitter.D(), 0)})
	} else {
		m.Schedule.Set(nil)
	}
}
