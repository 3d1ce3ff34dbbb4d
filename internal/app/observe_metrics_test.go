package app_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// process is one driftprobe process's metrics, wired as `run` and `serve`
// wire them: a registry over the store, the config recorded, the runner's
// hooks instrumented.
type process struct {
	reg *prometheus.Registry
	m   *metrics.Metrics
}

func newProcess(e *testenv.Env, cfg *config.Config) *process {
	reg, m := app.NewRegistry(e.Store, false)
	app.ConfigLoaded(m, cfg, time.Now())
	return &process{reg, m}
}

// run runs once at `at` (injected clocks) and observes the result.
func (p *process) run(t *testing.T, ctx context.Context, e *testenv.Env, cfg *config.Config, targets []*runner.Target, at time.Time,
	sleep func(context.Context, time.Duration) error, hook func(o *app.RunOptions)) *app.RunResult {
	t.Helper()
	e.Store.SetClock(func() time.Time { return at })
	if sleep == nil {
		sleep = e.Sleep
	}
	o := app.RunOptions{Sleep: sleep, Now: func() time.Time { return at }}
	app.Instrument(p.m, &o)
	if hook != nil {
		hook(&o)
	}
	res, err := app.RunOnce(ctx, cfg, e.Corpus, e.Store, targets, o)
	if err != nil {
		t.Fatalf("run at %v: %v", at, err)
	}
	app.ObserveRun(p.m, res)
	return res
}

// lines returns "name{l=v,...} value" per series of p's registry whose
// family is in names (all when none is given), sorted.
func (p *process) lines(t *testing.T, names ...string) []string {
	t.Helper()
	mfs, err := p.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if len(names) > 0 && !slices.Contains(names, mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out = append(out, mf.GetName()+"{"+strings.Join(ls, ",")+"} "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	slices.Sort(out)
	return out
}

func ofTarget(lines []string, target string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, "target="+target+",") || strings.Contains(l, "target="+target+"}") {
			out = append(out, l)
		}
	}
	return out
}

func value(t *testing.T, lines []string, series string) float64 {
	t.Helper()
	for _, l := range lines {
		if s, v, _ := strings.Cut(l, "} "); s+"}" == series {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	t.Errorf("no series %s in\n  %s", series, strings.Join(lines, "\n  "))
	return -1
}

// A target disabled or removed from the config exports nothing any more,
// from the database (abuse blocks: DriftprobeAbuseBlock pages with for:
// 0m, degradation, verdicts, categories) or from the process (requests,
// the breaker gauge), once the config that drops it is loaded. Enabled
// again, its history is back, but not what its last run before found
// (months old, perhaps: DriftprobeAbuseBlock would page at once): its
// latest-run series come from runs started since.
func TestMetricsOnlyForConfiguredTargets(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: sim-a, provider: sim, model: m, sim: {abuse_from_run: 3}}
  - {name: sim-b, provider: sim, model: m}
`)
	ctx := context.Background()
	at := func(h float64) time.Time { return testenv.AttributionT0.Add(time.Duration(h * float64(time.Hour))) }
	p := newProcess(e, e.Config)
	for i := range 3 {
		p.run(t, ctx, e, e.Config, e.Targets, at(float64(i)), nil, nil)
	}
	// A breaker reported open during a run (its series stays, at 0).
	o := app.RunOptions{}
	app.Instrument(p.m, &o)
	o.Hooks.OnBreaker(&runner.Target{Config: e.Config.Target("sim-a")}, true)
	app.ObserveRun(p.m, nil)
	all := p.lines(t)
	if v := value(t, all, `driftprobe_abuse_blocks{target=sim-a}`); v != float64(len(e.Corpus.Probes)) {
		t.Fatalf("abuse blocks on sim-a: %v, want every probe", v)
	}
	families := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			n, _, _ := strings.Cut(l, "{")
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		return out
	}
	for _, f := range []string{metrics.AbuseBlocks, metrics.TargetDegraded, metrics.ProbeVerdicts, metrics.CategoryActive, metrics.LastRunProbes, metrics.PreviousRunProbes,
		metrics.RecordedProbes, metrics.RequestsTotal, metrics.RetriesTotal, metrics.TokensTotal, metrics.CostUSDTotal, metrics.BreakerOpen} {
		if !slices.Contains(families(ofTarget(all, "sim-a")), f) {
			t.Errorf("before: sim-a has no %s series", f)
		}
	}

	// The suspended account's target is disabled: nothing of it remains,
	// also after a run of the new config.
	disabled := withDisabled(e.Config, "sim-a")
	app.ConfigLoaded(p.m, disabled, at(2.5))
	if got := ofTarget(p.lines(t), "sim-a"); len(got) != 0 {
		t.Errorf("sim-a disabled, yet exported:\n  %s", strings.Join(got, "\n  "))
	}
	targets, closeT, err := app.BuildTargets(disabled)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT()
	p.run(t, ctx, e, disabled, targets, at(3), nil, nil)
	all = p.lines(t)
	if got := ofTarget(all, "sim-a"); len(got) != 0 {
		t.Errorf("sim-a disabled, after a run:\n  %s", strings.Join(got, "\n  "))
	}
	if value(t, all, `driftprobe_target_degraded{target=sim-b}`) != 0 || len(ofTarget(all, "sim-b")) < 20 {
		t.Errorf("sim-b lost its series:\n  %s", strings.Join(ofTarget(all, "sim-b"), "\n  "))
	}

	// Removed from the file altogether: the same.
	removed := *disabled
	removed.Targets = []*config.Target{disabled.Target("sim-b")}
	app.ConfigLoaded(p.m, &removed, at(3.5))
	if got := ofTarget(p.lines(t), "sim-a"); len(got) != 0 {
		t.Errorf("sim-a removed, yet exported:\n  %s", strings.Join(got, "\n  "))
	}

	// Enabled again (the account restored, months later in real life):
	// its database series are back, but not its last run's abuse blocks,
	// degradation or outcomes.
	app.ConfigLoaded(p.m, e.Config, at(4))
	latestRun := []string{metrics.AbuseBlocks, metrics.TargetDegraded, metrics.LastRunProbes, metrics.PreviousRunProbes}
	got := families(ofTarget(p.lines(t), "sim-a"))
	for _, f := range []string{metrics.ProbeVerdicts, metrics.CategoryActive, metrics.RecordedProbes, metrics.RecordedRequests} {
		if !slices.Contains(got, f) {
			t.Errorf("sim-a enabled again: no %s series (its history)", f)
		}
	}
	for _, f := range latestRun {
		if slices.Contains(got, f) {
			t.Errorf("sim-a enabled again: %s series from its last run before it was disabled:\n  %s", f, strings.Join(ofTarget(p.lines(t, f), "sim-a"), "\n  "))
		}
	}
	// Its first run since: what that run found (the account is still
	// suspended: every probe an abuse block).
	p.run(t, ctx, e, e.Config, e.Targets, at(4), nil, nil)
	all = p.lines(t)
	if v := value(t, all, `driftprobe_abuse_blocks{target=sim-a}`); v != float64(len(e.Corpus.Probes)) {
		t.Errorf("sim-a's first run since enabled again: abuse blocks %v, want every probe", v)
	}
	if got := ofTarget(p.lines(t, metrics.PreviousRunProbes), "sim-a"); len(got) != 0 {
		t.Errorf("sim-a's first run since enabled again: %v, want no previous run", got)
	}
	// sim-b, configured all along, kept its series throughout.
	if got := families(ofTarget(all, "sim-b")); !slices.Contains(got, metrics.PreviousRunProbes) || !slices.Contains(got, metrics.AbuseBlocks) {
		t.Errorf("sim-b: families %v", got)
	}
}

// Whether a target's last run is from before it was disabled is a fact of
// the database, not of a process's memory: a process that starts with the
// target enabled again (a restarted serve, the next one-shot run) exports
// none of its latest-run series (DriftprobeAbuseBlock would page at once
// on a suspension lifted months ago) until it runs again.
func TestRestartDoesNotBringBackDisabledTargetsLastRun(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: sim-a, provider: sim, model: m, sim: {abuse_from_run: 3}}
  - {name: sim-b, provider: sim, model: m}
`)
	ctx := context.Background()
	at := func(h float64) time.Time { return testenv.AttributionT0.Add(time.Duration(h * float64(time.Hour))) }
	p := newProcess(e, e.Config)
	for i := range 3 {
		p.run(t, ctx, e, e.Config, e.Targets, at(float64(i)), nil, nil)
	}
	if v := value(t, p.lines(t), `driftprobe_abuse_blocks{target=sim-a}`); v != float64(len(e.Corpus.Probes)) {
		t.Fatalf("abuse blocks on sim-a: %v, want every probe", v)
	}
	// sim-a disabled; a run of the new config without it.
	disabled := withDisabled(e.Config, "sim-a")
	targets, closeT, err := app.BuildTargets(disabled)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT()
	p = newProcess(e, disabled)
	p.run(t, ctx, e, disabled, targets, at(3), nil, nil)
	// Enabled again, in a new process (its first configuration).
	latestRun := []string{metrics.AbuseBlocks, metrics.TargetDegraded, metrics.LastRunProbes, metrics.PreviousRunProbes}
	p = newProcess(e, e.Config)
	if got := ofTarget(p.lines(t, latestRun...), "sim-a"); len(got) != 0 {
		t.Errorf("a new process with sim-a enabled again exports its last run before the disable:\n  %s", strings.Join(got, "\n  "))
	}
	if got := ofTarget(p.lines(t, metrics.RecordedProbes), "sim-a"); len(got) == 0 {
		t.Error("sim-a enabled again: no recorded series (its history)")
	}
	if got := ofTarget(p.lines(t, latestRun...), "sim-b"); len(got) == 0 {
		t.Error("sim-b, run all along, lost its latest-run series")
	}
}

// A run keeps the config it started with. When a reload during it
// removes one of its targets, the target's process series are deleted and
// stay deleted: the run's later attempts, breaker changes and totals for
// it record nothing (they would bring its series back until the next
// reload).
func TestReloadDuringRunKeepsRemovedTargetDeleted(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: sim-a, provider: sim, model: m, concurrency: 1}
  - {name: sim-b, provider: sim, model: m, concurrency: 1}
`)
	ctx := context.Background()
	p := newProcess(e, e.Config)
	p.run(t, ctx, e, e.Config, e.Targets, testenv.AttributionT0, nil, nil)
	if got := ofTarget(p.lines(t, metrics.RequestsTotal), "sim-a"); len(got) == 0 {
		t.Fatal("no requests series of sim-a after its first run")
	}
	removed := *e.Config
	removed.Targets = []*config.Target{e.Config.Target("sim-b")}
	var reloaded atomic.Bool
	res := p.run(t, ctx, e, e.Config, e.Targets, testenv.AttributionT0.Add(time.Hour), nil, func(o *app.RunOptions) {
		attempt, breaker := o.Hooks.OnAttempt, o.Hooks.OnBreaker
		o.Hooks.OnAttempt = func(tg *runner.Target, class probes.Class, retried bool) {
			if reloaded.CompareAndSwap(false, true) {
				// serve reloads a config without sim-a while this run,
				// which has it, is in progress.
				app.ConfigLoaded(p.m, &removed, testenv.AttributionT0.Add(time.Hour))
				breaker(&runner.Target{Config: e.Config.Target("sim-a")}, true)
			}
			attempt(tg, class, true)
		}
	})
	if len(res.Summary.Targets) != 2 {
		t.Fatalf("the run had %d targets, want both", len(res.Summary.Targets))
	}
	if got := ofTarget(p.lines(t), "sim-a"); len(got) != 0 {
		t.Errorf("sim-a removed during the run, yet exported after it:\n  %s", strings.Join(got, "\n  "))
	}
	all := p.lines(t)
	// (Every attempt of the run was reported as a retry; the run also
	// screens the baselines it establishes: more attempts than probes.)
	var attempts int
	for _, ts := range res.Summary.Targets {
		if ts.Target == "sim-b" {
			attempts = ts.Requests
		}
	}
	if v := value(t, all, `driftprobe_retries_total{target=sim-b}`); attempts <= len(e.Corpus.Probes) || v != float64(attempts) {
		t.Errorf("sim-b retries %v, want the run's %d attempts: the run's attempts on the targets still configured count", v, attempts)
	}
	value(t, all, `driftprobe_breaker_open{target=sim-b}`)
}

// A fresh target (confirm_runs: 2) exports its verdicts after its first
// run and no category_active series; after the second, when its baselines
// confirm, every category, its positive controls' at 1 (a dashboard
// gauge: what pages is driftprobe_new_category_timestamp_seconds, see
// TestNewCategoryTimestampMetric).
func TestCategoryActiveAppearsWhenBaselinesConfirm(t *testing.T) {
	e := testenv.New(t, "targets:\n  - {name: fresh, provider: sim, model: m}\n")
	ctx := context.Background()
	p := newProcess(e, e.Config)
	p.run(t, ctx, e, e.Config, e.Targets, testenv.AttributionT0, nil, nil)
	if got := p.lines(t, metrics.CategoryActive); len(got) != 0 {
		t.Errorf("after run 1: %v, want no category_active series", got)
	}
	if got := p.lines(t, metrics.ProbeVerdicts); len(got) == 0 {
		t.Error("after run 1: no verdicts")
	}
	p.run(t, ctx, e, e.Config, e.Targets, testenv.AttributionT0.Add(time.Hour), nil, nil)
	got := p.lines(t, metrics.CategoryActive)
	active := 0
	for _, l := range got {
		if strings.HasSuffix(l, " 1") {
			active++
		}
	}
	if len(got) != 11 || active == 0 || active == len(got) {
		t.Errorf("after run 2: %d categories, %d active:\n  %s", len(got), active, strings.Join(got, "\n  "))
	}
}

// One-shot runs (CronJob, timer) are one process each: the per-process
// driftprobe_requests_total says the same every run, so
// DriftprobeClientErrors reads what the database recorded. Its series say
// what each run found and only grow across processes.
func TestOneShotRunsExportRecordedClientErrors(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: sim-badkey, provider: sim, model: m, sim: {error_status: 401, error_rate: 1}}
  - {name: sim-ok, provider: sim, model: m}
`)
	ctx := context.Background()
	n := float64(len(e.Corpus.Probes))
	for i := 1; i <= 2; i++ {
		p := newProcess(e, e.Config) // a new process every run
		p.run(t, ctx, e, e.Config, e.Targets, testenv.AttributionT0.Add(time.Duration(i)*time.Hour), nil, nil)
		all := p.lines(t)
		if v := value(t, all, `driftprobe_requests_total{outcome=client_error,target=sim-badkey}`); v != n {
			t.Errorf("process %d: requests_total %v, want this run's %v (the same every run)", i, v, n)
		}
		for series, want := range map[string]float64{
			`driftprobe_last_run_probes{outcome=client_error,target=sim-badkey}`:         n,
			`driftprobe_last_run_probes{outcome=verdict,target=sim-badkey}`:              0,
			`driftprobe_last_run_probes{outcome=client_error,target=sim-ok}`:             0,
			`driftprobe_last_run_probes{outcome=verdict,target=sim-ok}`:                  n,
			`driftprobe_recorded_probes_total{outcome=client_error,target=sim-badkey}`:   n * float64(i),
			`driftprobe_recorded_requests_total{target=sim-badkey}`:                      n * float64(i),
			`driftprobe_recorded_probes_total{outcome=verdict,target=sim-ok}`:            n * float64(i),
			`driftprobe_recorded_run_duration_seconds{}`:                                 float64(i),
			`driftprobe_recorded_tokens_total{direction=input,target=sim-badkey}`:        0,
			`driftprobe_recorded_probes_total{outcome=filter_unavailable,target=sim-ok}`: 0,
		} {
			if v := value(t, all, series); v != want {
				t.Errorf("process %d: %s = %v, want %v", i, series, v, want)
			}
		}
	}
}

// driftprobe_last_event_timestamp_seconds is when detection recorded the
// event (the store's clock), so alerts can tell a new event from an old
// one seen again after a gap.
func TestEventTimestampMetric(t *testing.T) {
	e := testenv.New(t, testenv.AttributionConfig)
	ctx := context.Background()
	p := newProcess(e, e.Config)
	for i := range 5 {
		p.run(t, ctx, e, e.Config, e.Targets, testenv.AttributionT0.Add(time.Duration(i)*time.Hour), nil, nil)
	}
	// sim-a tightens from run 4; confirmed in run 5, at T0+4h.
	var all []string
	for _, l := range p.lines(t, metrics.LastEventTimestamp, metrics.EventsTotal) {
		if !strings.HasSuffix(l, "} 0") { // every kind and direction is exported, at 0 until its first event
			all = append(all, l)
		}
	}
	want := []string{
		"driftprobe_events_total{direction=tightened,kind=policy_change,target=sim-a} 1",
		"driftprobe_last_event_timestamp_seconds{direction=tightened,kind=policy_change,target=sim-a} " +
			strconv.FormatFloat(float64(testenv.AttributionT0.Add(4*time.Hour).Unix()), 'g', -1, 64),
	}
	if !slices.Equal(all, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(all, "\n  "), strings.Join(want, "\n  "))
	}
}

// An interrupted run (SIGTERM, a deadline) marks no target degraded and
// clears none: driftprobe_target_degraded is the latest finished run's.
func TestAbortedRunIsNotDegraded(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: ok, provider: sim, model: m, concurrency: 1, sim: {error_status: 503, fail_first: 1}}
  - {name: down, provider: sim, model: m, concurrency: 1, sim: {error_status: 503, error_rate: 1}}
`)
	ctx := context.Background()
	p := newProcess(e, e.Config)
	res := p.run(t, ctx, e, e.Config, e.Targets, testenv.AttributionT0, nil, nil)
	if got := res.Summary.Targets; got[0].Status != storage.TargetDegraded || got[1].Status != storage.TargetComplete {
		t.Fatalf("run 1: %s %s, want down degraded, ok complete", got[0].Status, got[1].Status)
	}
	// Run 2 is interrupted at its first retry wait.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	res = p.run(t, runCtx, e, e.Config, e.Targets, testenv.AttributionT0.Add(time.Hour), func(ctx context.Context, _ time.Duration) error {
		cancel()
		return context.Canceled
	}, nil)
	if res.Summary.Status != storage.RunAborted || res.Summary.Targets[0].Status != storage.TargetAborted || res.Summary.Targets[1].Status != storage.TargetAborted {
		t.Fatalf("run 2: %s, want aborted", res.Summary.Status)
	}
	all := p.lines(t, metrics.TargetDegraded)
	want := []string{"driftprobe_target_degraded{target=down} 1", "driftprobe_target_degraded{target=ok} 0"}
	if !slices.Equal(all, want) {
		t.Errorf("after the interrupted run:\n  %s\nwant\n  %s", strings.Join(all, "\n  "), strings.Join(want, "\n  "))
	}
}

// Breakers exist only within a run. The gauge reads 1 while one is open
// during the run and 0 once the run is over, also when it ended with the
// breaker open (the target-run is degraded: that is the record), and also
// after a run that failed (ObserveRun with no result).
func TestBreakerGaugeZeroAfterRun(t *testing.T) {
	e := testenv.New(t, "targets:\n  - {name: down, provider: sim, model: m, concurrency: 1, sim: {error_status: 503, error_rate: 1}}\n")
	ctx := context.Background()
	p := newProcess(e, e.Config)
	var sawOpen atomic.Bool
	res := p.run(t, ctx, e, e.Config, e.Targets, testenv.AttributionT0, nil, func(o *app.RunOptions) {
		live := o.Hooks.OnBreaker
		o.Hooks.OnBreaker = func(tg *runner.Target, open bool) {
			live(tg, open)
			if open && testutil.ToFloat64(p.m.Breaker.WithLabelValues(tg.Config.Name)) == 1 {
				sawOpen.Store(true)
			}
		}
	})
	if !res.Summary.Targets[0].BreakerOpened || res.Summary.Targets[0].Status != storage.TargetDegraded {
		t.Fatalf("the breaker never opened: %+v", res.Summary.Targets[0].RunTarget)
	}
	if !sawOpen.Load() {
		t.Error("the gauge never read 1 while the breaker was open")
	}
	if got := p.lines(t, metrics.BreakerOpen); !slices.Equal(got, []string{"driftprobe_breaker_open{target=down} 0"}) {
		t.Errorf("after the run: %v, want the breaker at 0", got)
	}
	if v := value(t, p.lines(t), `driftprobe_target_degraded{target=down}`); v != 1 {
		t.Errorf("degraded %v, want 1", v)
	}

	// A run that fails after the breaker opened (detection error, lost
	// lease) has no result; it is over all the same.
	o := app.RunOptions{}
	app.Instrument(p.m, &o)
	o.Hooks.OnBreaker(&runner.Target{Config: e.Config.Target("down")}, true)
	app.ObserveRun(p.m, nil)
	if got := p.lines(t, metrics.BreakerOpen); !slices.Equal(got, []string{"driftprobe_breaker_open{target=down} 0"}) {
		t.Errorf("after a failed run: %v, want the breaker at 0", got)
	}
}

// driftprobe_new_category_timestamp_seconds, what DriftprobeNewCategoryActive
// pages on, appears only when the provider starts blocking a category on
// identical bytes (the event's new_categories), stamped when detection
// recorded the event: never as a fresh target's baselines confirm, though
// its categories appear in driftprobe_category_active then.
func TestNewCategoryTimestampMetric(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    sim:
      policies:
        - {from_run: 1, thresholds: {privacy: 1.01}}
        - {from_run: 3, thresholds: {privacy: 0.5}}
`)
	ctx := context.Background()
	p := newProcess(e, e.Config)
	for i := range 2 {
		p.run(t, ctx, e, e.Config, e.Targets, testenv.AttributionT0.Add(time.Duration(i)*time.Hour), nil, nil)
	}
	if got := p.lines(t, metrics.CategoryActive); len(got) != 11 {
		t.Fatalf("after the baselines confirmed: %v, want every category", got)
	}
	if got := p.lines(t, metrics.NewCategoryTimestamp); len(got) != 0 {
		t.Errorf("a fresh target's baselines: %v, want no new-category series", got)
	}
	// privacy starts blocking in run 3 and is confirmed in run 4 (T0+3h).
	for i := 2; i < 5; i++ {
		p.run(t, ctx, e, e.Config, e.Targets, testenv.AttributionT0.Add(time.Duration(i)*time.Hour), nil, nil)
	}
	want := []string{"driftprobe_new_category_timestamp_seconds{category=privacy,target=a} " +
		strconv.FormatFloat(float64(testenv.AttributionT0.Add(3*time.Hour).Unix()), 'g', -1, 64)}
	if got := p.lines(t, metrics.NewCategoryTimestamp); !slices.Equal(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if v := value(t, p.lines(t), `driftprobe_category_active{category=privacy,target=a}`); v != 1 {
		t.Errorf("privacy active %v, want 1", v)
	}
}

// withDisabled returns a copy of cfg with the target name disabled.
func withDisabled(cfg *config.Config, name string) *config.Config {
	out := *cfg
	out.Targets = nil
	for _, tc := range cfg.Targets {
		c := *tc
		c.Disabled = c.Name == name
		out.Targets = append(out.Targets, &c)
	}
	return &out
}

// driftprobe_run_overdue_timestamp_seconds follows the schedule slot by
// slot: with a weekday cron schedule a complete Friday run is overdue on
// Tuesday (Monday's run may fail once), not a week later as twice the
// longest gap would say; a reload's schedule and jitter apply at once.
func TestRunOverdueFollowsTheSchedule(t *testing.T) {
	e := testenv.New(t, `
schedule: "0 9 * * 1-5"
targets:
  - {name: sim-a, provider: sim, model: m}
`)
	ctx := context.Background()
	p := newProcess(e, e.Config)
	overdue := func(what string, want time.Time) {
		t.Helper()
		got := p.lines(t, metrics.RunOverdue)
		w := []string{}
		if !want.IsZero() {
			w = []string{metrics.RunOverdue + "{} " + strconv.FormatFloat(float64(want.Unix()), 'g', -1, 64)}
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s: got %q, want %q", what, got, w)
		}
	}
	overdue("before any complete run", time.Time{})
	friday := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	p.run(t, ctx, e, e.Config, e.Targets, friday, nil, nil)
	overdue("after Friday's run", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	monday := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	p.run(t, ctx, e, e.Config, e.Targets, monday, nil, nil)
	overdue("after Monday's run", time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))

	reload := func(schedule string, jitter time.Duration) {
		t.Helper()
		cfg := *e.Config
		cfg.Schedule, cfg.Jitter = schedule, config.Duration(jitter)
		app.ConfigLoaded(p.m, &cfg, monday)
	}
	reload("@every 1h", 10*time.Minute)
	overdue("@every 1h, jitter 10m", monday.Add(2*70*time.Minute))
	reload("0 9 * * 1-5", 15*time.Minute)
	overdue("weekdays, jitter 15m", time.Date(2026, 12, 2, 9, 15, 0, 0, time.UTC))
}
