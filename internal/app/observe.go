package app

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// Instrument wires runner hooks to metrics.
func Instrument(m *metrics.Metrics, o *RunOptions) {
	if m == nil {
		return
	}
	o.Hooks.OnAttempt = func(t *runner.Target, class probes.Class, retried bool) {
		m.Requests.WithLabelValues(t.Config.Name, string(class)).Inc()
		if retried {
			m.Retries.WithLabelValues(t.Config.Name).Inc()
		}
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
		// Present from the first run (0 until one happens), so rate() and
		// alerts see a series rather than nothing.
		m.Retries.WithLabelValues(t.Target)
		m.Tokens.WithLabelValues(t.Target, "input").Add(float64(t.TokensIn))
		m.Tokens.WithLabelValues(t.Target, "output").Add(float64(t.TokensOut))
		m.Cost.WithLabelValues(t.Target).Add(t.CostUSD)
		names = append(names, t.Target)
	}
	m.RunEnded(names...)
}

// NewRegistry builds a registry with driftprobe's metrics and the database
// collector. Once ConfigLoaded has recorded a configuration, the collector
// exports per-target series only for its enabled targets.
func NewRegistry(st *storage.DB, runtime bool) (*prometheus.Registry, *metrics.Metrics) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, Version)
	reg.MustRegister(metrics.NewDBCollector(st.SQL()).OnlyTargets(m.Configured))
	if runtime {
		metrics.RegisterRuntime(reg)
	}
	return reg, m
}

// ConfigLoaded records a successful configuration load, the schedule's
// interval (used by staleness alerts, also for one-shot runs) and the
// targets it runs: only enabled targets keep per-target series, so a
// target removed or disabled (a suspended account's, say) stops alerting.
func ConfigLoaded(m *metrics.Metrics, cfg *config.Config, now time.Time) {
	enabled := cfg.Enabled()
	names := make([]string, len(enabled))
	for i, t := range enabled {
		names[i] = t.Name
	}
	m.SetConfigured(names)
	m.ReloadOK.Set(1)
	m.ReloadTime.Set(float64(now.UnixNano()) / 1e9)
	if iv, ok := interval(cfg.Schedule); ok {
		m.ScheduleSecond.Set(iv.Seconds())
	} else if sch, err := cronSpec(cfg.Schedule); err == nil {
		n1 := sch.Next(now)
		m.ScheduleSecond.Set(sch.Next(n1).Sub(n1).Seconds())
	}
}
