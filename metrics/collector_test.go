package metrics_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func openStore(t *testing.T) *storage.DB {
	t.Helper()
	st, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func ensureTarget(t *testing.T, st *storage.DB, name string) int64 {
	t.Helper()
	id, err := st.EnsureTarget(context.Background(), storage.TargetRow{Name: name, Provider: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// beginRun starts a run at `at`.
func beginRun(t *testing.T, st *storage.DB, at time.Time) int64 {
	t.Helper()
	st.SetClock(func() time.Time { return at })
	id, err := st.BeginRun(context.Background(), storage.Run{CorpusName: "c", CorpusVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// finish ends run id `took` after `at` with the target-runs given.
func finish(t *testing.T, st *storage.DB, id int64, at time.Time, took time.Duration, status string, rts ...storage.RunTarget) {
	t.Helper()
	st.SetClock(func() time.Time { return at.Add(took) })
	if err := st.FinishRun(context.Background(), id, status, rts); err != nil {
		t.Fatal(err)
	}
}

// abuseObservations stores n abuse_block answers (first samples) of the
// target in the run.
func abuseObservations(t *testing.T, st *storage.DB, runID, targetID int64, n int) {
	t.Helper()
	var obs []*storage.Observation
	for i := range n {
		obs = append(obs, &storage.Observation{RunID: runID, TargetID: targetID, ProbeID: fmt.Sprintf("p%d", i), ProbeSHA256: "p", RequestSHA256: "r",
			Result: probes.Result{Class: probes.AbuseBlock}, ObservedAt: t0})
	}
	if err := st.InsertObservations(context.Background(), obs); err != nil {
		t.Fatal(err)
	}
}

// gathered returns one "name{l=v,...} value" line per series of the
// families named (every family when none is), sorted; histograms as their
// _count and _sum.
func gathered(t *testing.T, g prometheus.Gatherer, names ...string) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
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
			lbl := "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.GetHistogram() != nil:
				out = append(out, mf.GetName()+"_count"+lbl+" "+f(float64(m.GetHistogram().GetSampleCount())),
					mf.GetName()+"_sum"+lbl+" "+f(m.GetHistogram().GetSampleSum()))
			case m.GetCounter() != nil:
				out = append(out, mf.GetName()+lbl+" "+f(m.GetCounter().GetValue()))
			default:
				out = append(out, mf.GetName()+lbl+" "+f(m.GetGauge().GetValue()))
			}
		}
	}
	sort.Strings(out)
	return out
}

func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\ngot\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func collectorRegistry(c *metrics.DBCollector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return reg
}

// Degradation is the latest *finished* target-run's status: an aborted
// (interrupted) run neither marks a target degraded nor clears it, and
// the answers by outcome are that run's. Abuse blocks an interrupted run
// saw still count (the larger of the two runs'), so an interruption can
// raise the page but not silence it.
func TestLatestRunMetrics(t *testing.T) {
	st := openStore(t)
	a, b, c, d := ensureTarget(t, st, "a"), ensureTarget(t, st, "b"), ensureTarget(t, st, "c"), ensureTarget(t, st, "d")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	names := []string{metrics.TargetDegraded, metrics.AbuseBlocks, metrics.LastRunProbes}

	r1 := beginRun(t, st, t0)
	abuseObservations(t, st, r1, c, 2)
	finish(t, st, r1, t0, time.Minute, storage.RunPartial,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 10, Verdicts: 10},
		storage.RunTarget{TargetID: b, Status: storage.TargetDegraded, Observations: 10, Verdicts: 2, Transient: 7, Unavailable: 1, BreakerOpened: true},
		storage.RunTarget{TargetID: c, Status: storage.TargetComplete, Observations: 10, Verdicts: 10},
		storage.RunTarget{TargetID: d, Status: storage.TargetAborted, Observations: 1, Verdicts: 1})
	// Run 2 is interrupted (SIGTERM, a deadline, a full disk).
	r2 := beginRun(t, st, t0.Add(time.Hour))
	abuseObservations(t, st, r2, c, 3)
	finish(t, st, r2, t0.Add(time.Hour), time.Minute, storage.RunAborted,
		storage.RunTarget{TargetID: a, Status: storage.TargetAborted, Observations: 3, Verdicts: 3},
		storage.RunTarget{TargetID: b, Status: storage.TargetAborted, Observations: 1, Transient: 1},
		storage.RunTarget{TargetID: c, Status: storage.TargetAborted, Observations: 3, Verdicts: 3},
		storage.RunTarget{TargetID: d, Status: storage.TargetAborted})
	want := []string{
		"driftprobe_abuse_blocks{target=a} 0",
		"driftprobe_abuse_blocks{target=b} 0",
		"driftprobe_abuse_blocks{target=c} 3",
		"driftprobe_abuse_blocks{target=d} 0",
		"driftprobe_last_run_probes{outcome=client_error,target=a} 0",
		"driftprobe_last_run_probes{outcome=client_error,target=b} 0",
		"driftprobe_last_run_probes{outcome=client_error,target=c} 0",
		"driftprobe_last_run_probes{outcome=filter_unavailable,target=a} 0",
		"driftprobe_last_run_probes{outcome=filter_unavailable,target=b} 1",
		"driftprobe_last_run_probes{outcome=filter_unavailable,target=c} 0",
		"driftprobe_last_run_probes{outcome=transient,target=a} 0",
		"driftprobe_last_run_probes{outcome=transient,target=b} 7",
		"driftprobe_last_run_probes{outcome=transient,target=c} 0",
		"driftprobe_last_run_probes{outcome=verdict,target=a} 10",
		"driftprobe_last_run_probes{outcome=verdict,target=b} 2",
		"driftprobe_last_run_probes{outcome=verdict,target=c} 10",
		"driftprobe_target_degraded{target=a} 0",
		"driftprobe_target_degraded{target=b} 1",
		"driftprobe_target_degraded{target=c} 0",
		"driftprobe_target_degraded{target=d} 0",
	}
	diffLines(t, "after an interrupted run", gathered(t, reg, names...), want)

	// Run 3 finishes: a answers with client errors (an expired key), b
	// recovers; c is interrupted again and sees no enforcement this time,
	// which clears nothing.
	r3 := beginRun(t, st, t0.Add(2*time.Hour))
	finish(t, st, r3, t0.Add(2*time.Hour), time.Minute, storage.RunAborted,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 10, Verdicts: 3, ClientErrors: 7},
		storage.RunTarget{TargetID: b, Status: storage.TargetComplete, Observations: 10, Verdicts: 10},
		storage.RunTarget{TargetID: c, Status: storage.TargetAborted})
	got := gathered(t, reg, names...)
	for _, w := range []string{
		"driftprobe_abuse_blocks{target=c} 2",
		"driftprobe_last_run_probes{outcome=client_error,target=a} 7",
		"driftprobe_last_run_probes{outcome=verdict,target=a} 3",
		"driftprobe_target_degraded{target=b} 0",
		"driftprobe_last_run_probes{outcome=transient,target=b} 0",
	} {
		if !slices.Contains(got, w) {
			t.Errorf("after run 3: no %s in\n  %s", w, strings.Join(got, "\n  "))
		}
	}
}

// Counters summed over every recorded run grow with each run, whichever
// process exports them; the run-duration histogram holds every finished
// run except those a dead process left behind.
func TestRecordedMetrics(t *testing.T) {
	st := openStore(t)
	a := ensureTarget(t, st, "a")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	names := []string{metrics.RecordedProbes, metrics.RecordedRequests, metrics.RecordedRetries, metrics.RecordedTokens, metrics.RecordedCostUSD, metrics.RecordedRunDuration}
	r1 := beginRun(t, st, t0)
	finish(t, st, r1, t0, 30*time.Second, storage.RunComplete,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Verdicts: 5, Transient: 1, ClientErrors: 2, Unavailable: 1, Requests: 11, Retries: 2, TokensIn: 100, TokensOut: 20, CostUSD: 0.5})
	r2 := beginRun(t, st, t0.Add(time.Hour))
	finish(t, st, r2, t0.Add(time.Hour), 1500*time.Millisecond, storage.RunComplete,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Verdicts: 9, Requests: 9, TokensIn: 50, TokensOut: 5, CostUSD: 0.25})
	// A run left running by a process that died, found and marked aborted
	// a day later: not a run duration.
	beginRun(t, st, t0.Add(2*time.Hour))
	st.SetClock(func() time.Time { return t0.Add(26 * time.Hour) })
	if n, err := st.AbandonStaleRuns(context.Background(), t0.Add(25*time.Hour)); err != nil || n != 1 {
		t.Fatalf("abandoned %d runs (%v)", n, err)
	}
	want := []string{
		"driftprobe_recorded_cost_usd_total{target=a} 0.75",
		"driftprobe_recorded_probes_total{outcome=client_error,target=a} 2",
		"driftprobe_recorded_probes_total{outcome=filter_unavailable,target=a} 1",
		"driftprobe_recorded_probes_total{outcome=transient,target=a} 1",
		"driftprobe_recorded_probes_total{outcome=verdict,target=a} 14",
		"driftprobe_recorded_requests_total{target=a} 20",
		"driftprobe_recorded_retries_total{target=a} 2",
		"driftprobe_recorded_run_duration_seconds_count{} 2",
		"driftprobe_recorded_run_duration_seconds_sum{} 31.5",
		"driftprobe_recorded_tokens_total{direction=input,target=a} 150",
		"driftprobe_recorded_tokens_total{direction=output,target=a} 25",
	}
	diffLines(t, "recorded", gathered(t, reg, names...), want)
	// Bucket counts are cumulative, like the process histogram's.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metrics.RecordedRunDuration {
			continue
		}
		var got []string
		for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
			got = append(got, fmt.Sprintf("%g:%d", b.GetUpperBound(), b.GetCumulativeCount()))
		}
		if w := "1:0 5:1 15:1 30:2 60:2 120:2 300:2 600:2 1200:2 3600:2"; strings.Join(got, " ") != w {
			t.Errorf("buckets %s, want %s", strings.Join(got, " "), w)
		}
	}
}

// addEvent stores an event of kind/direction opened on opener at `opened`
// in run openRun, which target `joiner` (0: none) joined in run joinRun at
// `joined`.
func addEvent(t *testing.T, st *storage.DB, fp string, opener int64, kind, dir string, openRun int64, opened string, joiner, joinRun int64, joined string) {
	t.Helper()
	db := st.SQL()
	res, err := db.Exec(`INSERT INTO events (fingerprint, target_id, provider, kind, direction, opened_kind, opened_direction, first_run, confirmed_run, last_run, corpus_version, corpus_hash, created_at, updated_at)
		VALUES (?, ?, 'sim', ?, ?, ?, ?, ?, ?, ?, '1', 'h', ?, ?)`, fp, opener, kind, dir, kind, dir, openRun, openRun, openRun, opened, opened)
	if err != nil {
		t.Fatal(err)
	}
	eid, _ := res.LastInsertId()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO event_targets (event_id, target_id, joined_run) VALUES (?, ?, ?)`, eid, opener, openRun)
	exec(`INSERT INTO event_updates (event_id, run_id, change, at) VALUES (?, ?, 'opened', ?)`, eid, openRun, opened)
	if joiner != 0 {
		exec(`INSERT INTO event_targets (event_id, target_id, joined_run) VALUES (?, ?, ?)`, eid, joiner, joinRun)
		exec(`INSERT INTO event_updates (event_id, run_id, change, at) VALUES (?, ?, 'target_joined', ?)`, eid, joinRun, joined)
	}
}

// driftprobe_last_event_timestamp_seconds is, per target, kind and
// direction as opened, when the latest such event was recorded on the
// target: when it opened there, or when the target joined it.
// (2026-11-20T10:00:00Z is 1.7951688e+09.)
func TestLastEventTimestamps(t *testing.T) {
	st := openStore(t)
	a, b := ensureTarget(t, st, "a"), ensureTarget(t, st, "b")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	addEvent(t, st, "e1", a, "policy_change", "tightened", 1, "2026-11-20T10:00:00Z", b, 2, "2026-11-20T11:00:00Z")
	addEvent(t, st, "e2", a, "policy_change", "tightened", 3, "2026-11-20T12:00:00Z", 0, 0, "")
	// Within one second text order is wrong ("…:05Z" after "…:05.5Z").
	addEvent(t, st, "e3", a, "nondeterminism", "mixed", 4, "2026-11-20T10:30:05.5Z", 0, 0, "")
	addEvent(t, st, "e4", a, "nondeterminism", "mixed", 3, "2026-11-20T10:30:05Z", 0, 0, "")
	want := []string{
		"driftprobe_events_total{direction=mixed,kind=nondeterminism,target=a} 2",
		"driftprobe_events_total{direction=tightened,kind=policy_change,target=a} 2",
		"driftprobe_events_total{direction=tightened,kind=policy_change,target=b} 1",
		"driftprobe_last_event_timestamp_seconds{direction=mixed,kind=nondeterminism,target=a} 1.7951706055e+09",
		"driftprobe_last_event_timestamp_seconds{direction=tightened,kind=policy_change,target=a} 1.795176e+09",
		"driftprobe_last_event_timestamp_seconds{direction=tightened,kind=policy_change,target=b} 1.7951724e+09",
	}
	diffLines(t, "events", gathered(t, reg, metrics.EventsTotal, metrics.LastEventTimestamp), want)
}

// applyRun stores a run of target tid answering each probe with the verdict
// given (class or class|categories) and applies detection to it.
func applyRun(t *testing.T, st *storage.DB, tid int64, at time.Time, verdicts map[string]string) {
	t.Helper()
	ctx := context.Background()
	run := beginRun(t, st, at)
	var obs []*storage.Observation
	for id, v := range verdicts {
		cls, cats, _ := strings.Cut(v, "|")
		r := probes.Result{Class: probes.Class(cls)}
		if cats != "" {
			r.Categories = strings.Split(cats, ",")
		}
		obs = append(obs, &storage.Observation{RunID: run, TargetID: tid, ProbeID: id, ProbeSHA256: "s" + id, RequestSHA256: "r" + id, Result: r, ObservedAt: at})
	}
	if err := st.InsertObservations(ctx, obs); err != nil {
		t.Fatal(err)
	}
	finish(t, st, run, at, time.Minute, storage.RunComplete, storage.RunTarget{TargetID: tid, Status: storage.TargetComplete, Observations: len(obs), Verdicts: len(obs)})
	if _, err := diff.Apply(ctx, st, diff.Input{RunID: run, CorpusVersion: "1", CorpusHash: "h", Params: diff.Params{ConfirmRuns: 2},
		Targets: []diff.TargetRun{{ID: tid, Name: "a", Provider: "sim", Status: storage.TargetComplete, Observations: obs}}}); err != nil {
		t.Fatal(err)
	}
}

// A target's categories are exported only once it has confirmed
// baselines: before that nothing is known to be active or not, and a 0
// would make its first confirmed baselines look like categories that
// started blocking (DriftprobeNewCategoryActive would page on every new
// target). From then on every category is 0 or 1.
func TestCategoryActiveOnlyWithConfirmedBaselines(t *testing.T) {
	st := openStore(t)
	a := ensureTarget(t, st, "a")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	verdicts := map[string]string{"ctl": "blocked_input|violence", "ok": "allowed"}
	applyRun(t, st, a, t0, verdicts)
	if got := gathered(t, reg, metrics.CategoryActive); len(got) != 0 {
		t.Errorf("after the first run (no baseline confirmed): %v, want no category_active series", got)
	}
	if got := gathered(t, reg, metrics.ProbeVerdicts); len(got) != 2 {
		t.Errorf("after the first run: verdicts %v, want both probes", got)
	}
	applyRun(t, st, a, t0.Add(time.Hour), verdicts)
	got := gathered(t, reg, metrics.CategoryActive)
	var want []string
	for _, c := range probes.Categories {
		v := "0"
		if c == "violence" {
			v = "1"
		}
		want = append(want, "driftprobe_category_active{category="+c+",target=a} "+v)
	}
	sort.Strings(want)
	diffLines(t, "after the baselines confirmed", got, want)
}

// With OnlyTargets, a target outside the set exports no series at all
// (abuse blocks, degradation, verdicts, categories, events, runs,
// attribution): a removed or disabled target must not keep alerting.
// Before the set is first set, and without OnlyTargets, every target is.
func TestOnlyTargets(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	a, b := ensureTarget(t, st, "a"), ensureTarget(t, st, "b")
	verdicts := map[string]string{"ctl": "blocked_input|violence"}
	applyRun(t, st, a, t0, verdicts)
	applyRun(t, st, b, t0.Add(time.Minute), verdicts)
	applyRun(t, st, a, t0.Add(time.Hour), verdicts)
	applyRun(t, st, b, t0.Add(time.Hour+time.Minute), verdicts)
	r := beginRun(t, st, t0.Add(2*time.Hour))
	abuseObservations(t, st, r, b, 4)
	finish(t, st, r, t0.Add(2*time.Hour), time.Minute, storage.RunPartial,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 1, Verdicts: 1},
		storage.RunTarget{TargetID: b, Status: storage.TargetDegraded, Observations: 4, Verdicts: 4})
	addEvent(t, st, "e1", a, "policy_change", "tightened", 1, "2026-11-20T10:00:00Z", b, 2, "2026-11-20T11:00:00Z")
	addEvent(t, st, "e2", b, "model_change", "mixed", 2, "2026-11-20T11:00:00Z", 0, 0, "")
	if _, err := st.SaveAttributionReport(ctx, storage.AttributionReport{RunID: r, Report: []byte(`{"changes":[
		{"target":"a","category":"violence","direction":"up","attribution":"provider"},
		{"target":"b","category":"violence","direction":"up","attribution":"provider"}],
		"uncovered_categories":[{"target":"a","category":"hate","blocked":3},{"target":"b","category":"hate","blocked":3}]}`)}, storage.AttributionReportsKept); err != nil {
		t.Fatal(err)
	}

	of := func(lines []string, target string) []string {
		var out []string
		for _, l := range lines {
			if strings.Contains(l, "target="+target+",") || strings.Contains(l, "target="+target+"}") {
				out = append(out, l)
			}
		}
		return out
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
	perTarget := []string{metrics.ProbeVerdicts, metrics.CategoryActive, metrics.EventsTotal, metrics.EventsOpen, metrics.AbuseBlocks, metrics.TargetDegraded,
		metrics.ProductionChanges, metrics.UncoveredCategories, metrics.LastEventTimestamp, metrics.LastRunProbes, metrics.RecordedProbes,
		metrics.RecordedRequests, metrics.RecordedRetries, metrics.RecordedTokens, metrics.RecordedCostUSD}

	set := &metrics.TargetSet{}
	for _, c := range []struct {
		name string
		reg  *prometheus.Registry
	}{
		{"without OnlyTargets", collectorRegistry(metrics.NewDBCollector(st.SQL()))},
		{"before the set is first set", collectorRegistry(metrics.NewDBCollector(st.SQL()).OnlyTargets(set))},
	} {
		all := gathered(t, c.reg)
		if got := families(of(all, "b")); !slices.Equal(got, families(of(all, "a"))) || len(got) != len(perTarget) {
			t.Errorf("%s: b's families %v, a's %v, want all of %v", c.name, got, families(of(all, "a")), perTarget)
		}
	}
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()).OnlyTargets(set))
	if gone := set.Set([]string{"a"}); len(gone) != 0 {
		t.Errorf("first Set returned %v", gone)
	}
	all := gathered(t, reg)
	if got := of(all, "b"); len(got) != 0 {
		t.Errorf("b is not configured, yet exported:\n  %s", strings.Join(got, "\n  "))
	}
	if got := families(of(all, "a")); len(got) != len(perTarget) {
		t.Errorf("a's families %v, want all of %v", got, perTarget)
	}
	for _, w := range []string{"driftprobe_runs_total{status=complete} 4", "driftprobe_attribution_success{} 1"} {
		if !slices.Contains(all, w) {
			t.Errorf("no %s: series without a target are not filtered", w)
		}
	}
	// b enabled again: back, with everything the database kept.
	if gone := set.Set([]string{"a", "b"}); len(gone) != 0 {
		t.Errorf("Set returned %v", gone)
	}
	if got := families(of(gathered(t, reg), "b")); len(got) != len(perTarget) {
		t.Errorf("b enabled again: families %v", got)
	}
	if gone := set.Set(nil); !slices.Equal(gone, []string{"a", "b"}) {
		t.Errorf("Set(nil) returned %v, want [a b]", gone)
	}
}
