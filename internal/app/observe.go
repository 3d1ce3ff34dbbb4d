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
	o.Hooks.OnBreaker = func(t *runner.Target, open bool) {
		v := 0.0
		if open {
			v = 1
		}
		m.Breaker.WithLabelValues(t.Config.Name).Set(v)
	}
}

// ObserveRun records a finished run's totals.
func ObserveRun(m *metrics.Metrics, res *RunResult) {
	if m == nil || res == nil {
		return
	}
	s := res.Summary
	m.RunDuration.Observe(s.Duration.Seconds())
	for _, t := range s.Targets {
		// Present from the first run (0 until one happens), so rate() and
		// alerts see a series rather than nothing.
		m.Retries.WithLabelValues(t.Target)
		m.Tokens.WithLabelValues(t.Target, "input").Add(float64(t.TokensIn))
		m.Tokens.WithLabelValues(t.Target, "output").Add(float64(t.TokensOut))
		m.Cost.WithLabelValues(t.Target).Add(t.CostUSD)
		if !t.BreakerOpened {
			m.Breaker.WithLabelValues(t.Target).Set(0)
		}
	}
}

// NewRegistry builds a registry with driftprobe's metrics and the database
// collector.
func NewRegistry(st *storage.DB, runtime bool) (*prometheus.Registry, *metrics.Metrics) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, Version)
	reg.MustRegister(metrics.NewDBCollector(st.SQL()))
	if runtime {
		metrics.RegisterRuntime(reg)
	}
	return reg, m
}

// ConfigLoaded records a successful configuration load and the schedule's
// interval (used by staleness alerts, also for one-shot runs).
func ConfigLoaded(m *metrics.Metrics, cfg *config.Config, now time.Time) {
	m.ReloadOK.Set(1)
	m.ReloadTime.Set(float64(now.UnixNano()) / 1e9)
	if iv, ok := interval(cfg.Schedule); ok {
		m.ScheduleSecond.Set(iv.Seconds())
	} else if sch, err := cronSpec(cfg.Schedule); err == nil {
		n1 := sch.Next(now)
		m.ScheduleSecond.Set(sch.Next(n1).Sub(n1).Seconds())
	}
}
