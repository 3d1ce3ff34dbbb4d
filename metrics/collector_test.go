package metrics_test

import (
	"context"
	"fmt"
	"maps"
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

func openStore(t testing.TB) *storage.DB {
	t.Helper()
	st, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func ensureTarget(t testing.TB, st *storage.DB, name string) int64 {
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

// nonzero drops the lines of counters and gauges at 0 (the series
// exported ahead of their first increment) from lines.
func nonzero(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasSuffix(l, "} 0") {
			out = append(out, l)
		}
	}
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
	// recovers; c is interrupted and sees no enforcement this time, which
	// clears nothing.
	r3 := beginRun(t, st, t0.Add(2*time.Hour))
	finish(t, st, r3, t0.Add(2*time.Hour), time.Minute, storage.RunPartial,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 10, Verdicts: 3, ClientErrors: 7},
		storage.RunTarget{TargetID: b, Status: storage.TargetComplete, Observations: 10, Verdicts: 10},
		storage.RunTarget{TargetID: c, Status: storage.TargetAborted})
	got := gathered(t, reg, append(names, metrics.PreviousRunProbes)...)
	for _, w := range []string{
		// The finished run before the latest: a's and b's run 1 (run 2
		// was interrupted); c's latest finished run is run 1, so c has
		// no previous one.
		"driftprobe_previous_run_probes{outcome=verdict,target=a} 10",
		"driftprobe_previous_run_probes{outcome=client_error,target=a} 0",
		"driftprobe_previous_run_probes{outcome=transient,target=b} 7",
		"driftprobe_previous_run_probes{outcome=filter_unavailable,target=b} 1",
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
	for _, l := range got {
		if strings.HasPrefix(l, metrics.PreviousRunProbes) && (strings.Contains(l, "target=c}") || strings.Contains(l, "target=d}")) {
			t.Errorf("after run 3: %s, but c and d have no finished run before their latest", l)
		}
	}
}

// A run is finished by its own status: a target that finished (complete
// or degraded) inside a run interrupted later was confirmed by nothing,
// so it neither sets nor clears the target's degradation, and its answers
// are not the latest finished run's (DriftprobeClientErrors).
func TestTargetsOfInterruptedRunsDoNotCount(t *testing.T) {
	st := openStore(t)
	a, b := ensureTarget(t, st, "a"), ensureTarget(t, st, "b")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	names := []string{metrics.TargetDegraded, metrics.LastRunProbes, metrics.PreviousRunProbes}
	r1 := beginRun(t, st, t0)
	finish(t, st, r1, t0, time.Minute, storage.RunPartial,
		storage.RunTarget{TargetID: a, Status: storage.TargetDegraded, Observations: 10, Verdicts: 3, Transient: 7},
		storage.RunTarget{TargetID: b, Status: storage.TargetComplete, Observations: 10, Verdicts: 10})
	want := gathered(t, reg, names...)
	// Run 2 is interrupted after a finished (recovered) and b finished
	// degraded with client errors, while another target still probed.
	r2 := beginRun(t, st, t0.Add(time.Hour))
	finish(t, st, r2, t0.Add(time.Hour), time.Minute, storage.RunAborted,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 10, Verdicts: 10},
		storage.RunTarget{TargetID: b, Status: storage.TargetDegraded, Observations: 10, Verdicts: 2, Transient: 2, ClientErrors: 6})
	diffLines(t, "after targets finished inside an interrupted run", gathered(t, reg, names...), want)
	for _, w := range []string{"driftprobe_target_degraded{target=a} 1", "driftprobe_target_degraded{target=b} 0"} {
		if !slices.Contains(want, w) {
			t.Errorf("no %s in\n  %s", w, strings.Join(want, "\n  "))
		}
	}
}

// A target's latest run is stale once a later finished full run did not
// run it (it was disabled or removed then): its latest-run series are not
// exported until it runs again, in any process (a one-shot run, a serve
// restarted with the target in its first configuration), so its last run
// before the disable never pages again. An interrupted run after it is
// enabled again counts for abuse blocks (its own) but brings back no
// finished run; a finished run before the gap is no previous run. Subset
// runs (compare --run) prove nothing about the targets they skip.
func TestLatestRunSeriesStaleAfterDisable(t *testing.T) {
	st := openStore(t)
	a, b := ensureTarget(t, st, "a"), ensureTarget(t, st, "b")
	set := &metrics.TargetSet{}
	set.Set([]string{"a", "b"}, t0) // a process's first configuration: enabled since forever
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()).OnlyTargets(set))
	names := []string{metrics.AbuseBlocks, metrics.TargetDegraded, metrics.LastRunProbes, metrics.PreviousRunProbes}
	of := func(lines []string, target string) []string {
		var out []string
		for _, l := range lines {
			if strings.Contains(l, "target="+target+",") || strings.Contains(l, "target="+target+"}") {
				out = append(out, l)
			}
		}
		return out
	}
	ok := func(id int64, n int) storage.RunTarget {
		return storage.RunTarget{TargetID: id, Status: storage.TargetComplete, Observations: n, Verdicts: n}
	}
	run := func(h int, status, note string, abuseB int, rts ...storage.RunTarget) {
		t.Helper()
		at := t0.Add(time.Duration(h) * time.Hour)
		st.SetClock(func() time.Time { return at })
		id, err := st.BeginRun(context.Background(), storage.Run{CorpusName: "c", CorpusVersion: "1", Note: note})
		if err != nil {
			t.Fatal(err)
		}
		if abuseB > 0 {
			abuseObservations(t, st, id, b, abuseB)
		}
		finish(t, st, id, at, time.Minute, status, rts...)
	}
	// b is suspended: enforcement, and degraded.
	run(0, storage.RunPartial, "", 2, ok(a, 5), storage.RunTarget{TargetID: b, Status: storage.TargetDegraded, Observations: 4, Verdicts: 4})
	if got := of(gathered(t, reg, names...), "b"); !slices.Contains(got, "driftprobe_abuse_blocks{target=b} 2") {
		t.Fatalf("before the disable: %v", got)
	}
	// b disabled: runs without it. A compare --run of b alone in between
	// is no evidence about a.
	run(1, storage.RunComplete, "", 0, ok(a, 5))
	run(2, storage.RunComplete, metrics.SubsetRunNote, 0, ok(b, 3))
	run(3, storage.RunComplete, "", 0, ok(a, 6))
	diffLines(t, "b disabled (a process that starts with b enabled)", of(gathered(t, reg, names...), "b"), nil)
	if got := of(gathered(t, reg, names...), "a"); !slices.Contains(got, "driftprobe_last_run_probes{outcome=verdict,target=a} 6") ||
		!slices.Contains(got, "driftprobe_previous_run_probes{outcome=verdict,target=a} 5") {
		t.Errorf("a, which every full run ran: %v", got)
	}
	// b enabled again; its first run is interrupted before it saw
	// anything: no enforcement, no finished run.
	run(4, storage.RunAborted, "", 0, ok(a, 6), storage.RunTarget{TargetID: b, Status: storage.TargetAborted})
	diffLines(t, "b's first run since was interrupted", of(gathered(t, reg, names...), "b"), []string{
		"driftprobe_abuse_blocks{target=b} 0",
		"driftprobe_target_degraded{target=b} 0",
	})
	// Its next run finishes: the latest run's series, no previous run
	// (its finished run before is from before the gap).
	run(5, storage.RunComplete, "", 0, ok(a, 6), ok(b, 4))
	diffLines(t, "b after a finished run", of(gathered(t, reg, names...), "b"), []string{
		"driftprobe_abuse_blocks{target=b} 0",
		"driftprobe_last_run_probes{outcome=client_error,target=b} 0",
		"driftprobe_last_run_probes{outcome=filter_unavailable,target=b} 0",
		"driftprobe_last_run_probes{outcome=transient,target=b} 0",
		"driftprobe_last_run_probes{outcome=verdict,target=b} 4",
		"driftprobe_target_degraded{target=b} 0",
	})
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

// The collector sums each finished run once and keeps the sums: a scrape
// reads only the runs that finished since the last one (its cost must not
// grow with history), including a run that was still running at the last
// scrape and runs that finish out of id order. A process that starts
// afresh (a one-shot run's) computes the very same values, so the
// counters never go backwards between processes.
func TestRecordedSumsEachFinishedRunOnce(t *testing.T) {
	st := openStore(t)
	a := ensureTarget(t, st, "a")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	names := []string{metrics.RecordedRequests, metrics.RecordedCostUSD, metrics.RecordedRunDuration, metrics.RunsTotal, metrics.LastRunTimestamp}
	rt := func(requests int, cost float64) storage.RunTarget {
		return storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Verdicts: requests, Requests: requests, CostUSD: cost}
	}
	end := func(h, m int) string {
		return strconv.FormatFloat(float64(t0.Add(time.Duration(h)*time.Hour+time.Duration(m)*time.Minute).Unix()), 'g', -1, 64)
	}
	check := func(what string, requests, cost string, runs int, durSum string, complete string) {
		t.Helper()
		want := []string{
			"driftprobe_last_run_timestamp_seconds{status=complete} " + complete,
			"driftprobe_recorded_cost_usd_total{target=a} " + cost,
			"driftprobe_recorded_requests_total{target=a} " + requests,
			"driftprobe_recorded_run_duration_seconds_count{} " + strconv.Itoa(runs),
			"driftprobe_recorded_run_duration_seconds_sum{} " + durSum,
			"driftprobe_runs_total{status=aborted} 0",
			"driftprobe_runs_total{status=complete} " + strconv.Itoa(runs),
			"driftprobe_runs_total{status=partial} 0",
		}
		got := gathered(t, reg, names...)
		diffLines(t, what, got, want)
		// A fresh collector (a new process) says exactly the same.
		diffLines(t, what+" (a fresh collector)", gathered(t, collectorRegistry(metrics.NewDBCollector(st.SQL())), names...), got)
	}

	r1 := beginRun(t, st, t0)
	finish(t, st, r1, t0, time.Minute, storage.RunComplete, rt(10, 0.1))
	check("run 1", "10", "0.1", 1, "60", end(0, 1))
	// Run 2 is in progress at the next scrape; run 3, started by another
	// process once run 2's lease was lost, finishes first.
	r2 := beginRun(t, st, t0.Add(time.Hour))
	check("run 2 running", "10", "0.1", 1, "60", end(0, 1))
	r3 := beginRun(t, st, t0.Add(2*time.Hour))
	finish(t, st, r3, t0.Add(2*time.Hour), 2*time.Minute, storage.RunComplete, rt(30, 0.2))
	check("run 3 finished before run 2", "40", "0.3", 2, "180", end(2, 2))
	finish(t, st, r2, t0.Add(time.Hour), 3*time.Hour, storage.RunComplete, rt(20, 0.3))
	check("run 2 finished", "60", "0.6", 3, "10980", end(4, 0))
	check("scraped again", "60", "0.6", 3, "10980", end(4, 0))

	// Summed runs are not read again: a change to a finished run's row
	// (which nothing in driftprobe makes) shows in a fresh collector only.
	if _, err := st.SQL().Exec(`UPDATE run_targets SET requests = requests + 1000 WHERE run_id = ?`, r1); err != nil {
		t.Fatal(err)
	}
	if got := gathered(t, reg, metrics.RecordedRequests); !slices.Equal(got, []string{"driftprobe_recorded_requests_total{target=a} 60"}) {
		t.Errorf("after rewriting run 1: %v, want the sum of the first scrapes (finished runs are read once)", got)
	}
	if got := gathered(t, collectorRegistry(metrics.NewDBCollector(st.SQL())), metrics.RecordedRequests); !slices.Equal(got, []string{"driftprobe_recorded_requests_total{target=a} 1060"}) {
		t.Errorf("a fresh collector: %v", got)
	}
}

// addEvent stores an event of kind/direction opened on opener at `opened`
// in run openRun, which target `joiner` (0: none) joined in run joinRun at
// `joined`.
func addEvent(t *testing.T, st *storage.DB, fp string, opener int64, kind, dir string, openRun int64, opened string, joiner, joinRun int64, joined string) int64 {
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
	return eid
}

// introduce records, as detection does, that event eid's flips on target
// in run made category fire there for the first time: the event lists it
// in new_categories, a flipped probe of the target blocks with it, and the
// target's composition history dates it to that run.
func introduce(t *testing.T, st *storage.DB, eid, target, run int64, category string) {
	t.Helper()
	db := st.SQL()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE events SET new_categories = CASE WHEN new_categories = '' THEN ? ELSE new_categories || ',' || ? END WHERE id = ?`, []any{category, category, eid}},
		{`INSERT INTO event_probes (event_id, target_id, probe_id, request_sha256, before, after, first_run, confirmed_run) VALUES (?, ?, ?, 'r', 'allowed|', ?, ?, ?)`,
			[]any{eid, target, "p-" + category, "blocked_input|" + category, run, run}},
		{`INSERT INTO target_categories (target_id, category, first_run) VALUES (?, ?, ?)`, []any{target, category, run}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
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
	diffLines(t, "events", nonzero(gathered(t, reg, metrics.EventsTotal, metrics.LastEventTimestamp)), want)
}

// applyRun stores a run of target tid answering each probe with the verdict
// given (class or class|categories) and applies detection to it. A run of
// one target: a subset run, which says nothing about the other targets.
func applyRun(t *testing.T, st *storage.DB, tid int64, at time.Time, verdicts map[string]string) {
	t.Helper()
	ctx := context.Background()
	st.SetClock(func() time.Time { return at })
	run, err := st.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1", Note: metrics.SubsetRunNote})
	if err != nil {
		t.Fatal(err)
	}
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
// started blocking on the dashboard. From then on every category is 0 or
// 1. (A dashboard gauge: what pages is a category a confirmed flip
// introduced, TestNewCategoryTimestamps.)
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
	e1 := addEvent(t, st, "e1", a, "policy_change", "tightened", 1, "2026-11-20T10:00:00Z", b, 2, "2026-11-20T11:00:00Z")
	addEvent(t, st, "e2", b, "model_change", "mixed", 2, "2026-11-20T11:00:00Z", 0, 0, "")
	introduce(t, st, e1, a, 1, "hate")
	introduce(t, st, e1, b, 2, "sexual")
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
		metrics.RecordedRequests, metrics.RecordedRetries, metrics.RecordedTokens, metrics.RecordedCostUSD, metrics.PreviousRunProbes, metrics.NewCategoryTimestamp,
		metrics.Probes, metrics.BreakerOpenedRuns, metrics.UnknownSignals}

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
	if gone := set.Set([]string{"a"}, t0.Add(150*time.Minute)); len(gone) != 0 {
		t.Errorf("first Set returned %v", gone)
	}
	all := gathered(t, reg)
	if got := of(all, "b"); len(got) != 0 {
		t.Errorf("b is not configured, yet exported:\n  %s", strings.Join(got, "\n  "))
	}
	// a was in the first Set: enabled since forever, its runs (all
	// before that Set) count.
	if got := families(of(all, "a")); len(got) != len(perTarget) {
		t.Errorf("a's families %v, want all of %v", got, perTarget)
	}
	for _, w := range []string{"driftprobe_runs_total{status=complete} 4", "driftprobe_attribution_success{} 1"} {
		if !slices.Contains(all, w) {
			t.Errorf("no %s: series without a target are not filtered", w)
		}
	}

	// b enabled again at 3h: back, with everything the database kept,
	// except what its latest runs found (its abuse blocks, degradation and
	// outcomes, of a run before it was disabled, perhaps months old): those
	// come only from runs started since. A run that started just before
	// (with the config that did not run b) does not count either.
	latestRun := []string{metrics.AbuseBlocks, metrics.TargetDegraded, metrics.LastRunProbes, metrics.PreviousRunProbes, metrics.BreakerOpenedRuns, metrics.UnknownSignals}
	r = beginRun(t, st, t0.Add(3*time.Hour-time.Minute))
	if gone := set.Set([]string{"a", "b"}, t0.Add(3*time.Hour)); len(gone) != 0 {
		t.Errorf("Set returned %v", gone)
	}
	finish(t, st, r, t0.Add(3*time.Hour-time.Minute), 2*time.Minute, storage.RunComplete,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 1, Verdicts: 1},
		storage.RunTarget{TargetID: b, Status: storage.TargetDegraded, Observations: 4, Verdicts: 4})
	var want []string
	for _, f := range perTarget {
		if !slices.Contains(latestRun, f) {
			want = append(want, f)
		}
	}
	slices.Sort(want)
	if got := families(of(gathered(t, reg), "b")); !slices.Equal(got, want) {
		t.Errorf("b enabled again: families %v, want %v", got, want)
	}
	if got := families(of(gathered(t, reg), "a")); len(got) != len(perTarget) {
		t.Errorf("a kept in the set: families %v, want all of %v", got, perTarget)
	}
	// Its first run since: the latest run's series, no previous run yet.
	r = beginRun(t, st, t0.Add(4*time.Hour))
	abuseObservations(t, st, r, b, 1)
	finish(t, st, r, t0.Add(4*time.Hour), time.Minute, storage.RunComplete,
		storage.RunTarget{TargetID: b, Status: storage.TargetComplete, Observations: 4, Verdicts: 4})
	got := gathered(t, reg, latestRun...)
	diffLines(t, "b after its first run since", of(got, "b"), []string{
		"driftprobe_abuse_blocks{target=b} 1",
		"driftprobe_breaker_opened_runs{target=b} 0",
		"driftprobe_last_run_probes{outcome=client_error,target=b} 0",
		"driftprobe_last_run_probes{outcome=filter_unavailable,target=b} 0",
		"driftprobe_last_run_probes{outcome=transient,target=b} 0",
		"driftprobe_last_run_probes{outcome=verdict,target=b} 4",
		"driftprobe_target_degraded{target=b} 0",
		"driftprobe_unknown_signals{target=b} 0",
	})
	if gone := set.Set(nil, t0); !slices.Equal(gone, []string{"a", "b"}) {
		t.Errorf("Set(nil) returned %v, want [a b]", gone)
	}
}

// targetAnswers is one target's answers in a run: probe -> verdict (class
// or class|categories).
type targetAnswers struct {
	id      int64
	name    string
	answers map[string]string
	model   string // the model id the provider reports ("": none)
}

// detectRun stores a run at `at` in which each target answered as given
// and applies detection to it (every target on provider "sim", so flips of
// the same probes join one provider-wide event).
func detectRun(t *testing.T, st *storage.DB, at time.Time, targets ...targetAnswers) {
	t.Helper()
	ctx := context.Background()
	run := beginRun(t, st, at)
	var rts []storage.RunTarget
	var in []diff.TargetRun
	for _, ta := range targets {
		var obs []*storage.Observation
		for id, v := range ta.answers {
			cls, cats, _ := strings.Cut(v, "|")
			r := probes.Result{Class: probes.Class(cls), ModelID: ta.model}
			if cats != "" {
				r.Categories = strings.Split(cats, ",")
			}
			obs = append(obs, &storage.Observation{RunID: run, TargetID: ta.id, ProbeID: id, ProbeSHA256: "s" + id, RequestSHA256: "r" + id, Result: r, ObservedAt: at})
		}
		if err := st.InsertObservations(ctx, obs); err != nil {
			t.Fatal(err)
		}
		rts = append(rts, storage.RunTarget{TargetID: ta.id, Status: storage.TargetComplete, Observations: len(obs), Verdicts: len(obs)})
		in = append(in, diff.TargetRun{ID: ta.id, Name: ta.name, Provider: "sim", Status: storage.TargetComplete, Observations: obs})
	}
	finish(t, st, run, at, time.Minute, storage.RunComplete, rts...)
	st.SetClock(func() time.Time { return at })
	if _, err := diff.Apply(ctx, st, diff.Input{RunID: run, CorpusVersion: "1", CorpusHash: "h", Params: diff.Params{ConfirmRuns: 2}, Targets: in}); err != nil {
		t.Fatal(err)
	}
}

// driftprobe_new_category_timestamp_seconds has a series only for a
// category a confirmed flip on identical bytes made fire on a target for
// the first time (the event's new_categories): never for a target's first
// baselines, a probe whose baseline confirms late (its first answer was a
// 429) or a probe a new corpus version adds, although each turns a
// driftprobe_category_active series 0 -> 1. Its value is when the event
// recorded the target's flips, and it never changes. A target that joins
// a provider-wide event gets the categories new on it, not the event's
// others.
func TestNewCategoryTimestamps(t *testing.T) {
	st := openStore(t)
	a, b := ensureTarget(t, st, "a"), ensureTarget(t, st, "b")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	hour := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	stamp := func(h int) string { return strconv.FormatFloat(float64(hour(h).Unix()), 'g', -1, 64) }
	active := func(target, category string) string {
		for _, l := range gathered(t, reg, metrics.CategoryActive) {
			if strings.HasPrefix(l, "driftprobe_category_active{category="+category+",target="+target+"} ") {
				return l[strings.LastIndexByte(l, ' ')+1:]
			}
		}
		return "none"
	}
	ansA := map[string]string{"ctl": "blocked_input|violence", "ok": "allowed", "x": "allowed", "y": "allowed", "late": "transient"}
	ansB := map[string]string{"ctl": "blocked_input|violence", "ok": "allowed"}
	run := func(h int) {
		t.Helper()
		detectRun(t, st, hour(h), targetAnswers{a, "a", maps.Clone(ansA), ""}, targetAnswers{b, "b", maps.Clone(ansB), ""})
	}
	// Runs 1-2: the first baselines confirm.
	run(0)
	run(1)
	// Runs 3-4: "late" answers for the first time (its run-1 answer was a
	// 429) and confirms harassment; "bump" (a new corpus version) confirms
	// privacy. Both categories go 0 -> 1 without any provider change.
	ansA["late"] = "blocked_output|harassment"
	ansA["bump"] = "blocked_input|privacy"
	run(2)
	if got := active("a", "harassment"); got != "0" {
		t.Fatalf("harassment active %s before the late baseline confirmed", got)
	}
	run(3)
	for _, c := range []string{"harassment", "privacy"} {
		if got := active("a", c); got != "1" {
			t.Errorf("%s active %s after its baseline confirmed, want 1", c, got)
		}
	}
	if got := gathered(t, reg, metrics.NewCategoryTimestamp); len(got) != 0 {
		t.Errorf("late baseline, corpus bump: %v, want no new-category series", got)
	}
	// Runs 5-6: the provider starts blocking "ok" on both targets, with
	// self_harm and hate on a, self_harm on b: an event opens on a in run
	// 6 (new: hate, self_harm) and b joins it. On b, "hb" (a probe whose
	// first answer came in run 5) confirms hate in the same run 6 by
	// baseline: hate is in the event's new_categories, yet not brought to
	// b by a flip.
	ansA["ok"] = "blocked_input|hate,self_harm"
	ansB["ok"] = "blocked_input|self_harm"
	ansB["hb"] = "blocked_output|hate"
	run(4)
	run(5)
	want := []string{
		"driftprobe_new_category_timestamp_seconds{category=hate,target=a} " + stamp(5),
		"driftprobe_new_category_timestamp_seconds{category=self_harm,target=a} " + stamp(5),
		"driftprobe_new_category_timestamp_seconds{category=self_harm,target=b} " + stamp(5),
	}
	diffLines(t, "after the event", gathered(t, reg, metrics.NewCategoryTimestamp), want)
	if got := active("b", "hate"); got != "1" {
		t.Errorf("hate on b: active %s, want 1", got)
	}
	// Runs 7-8: more probes flip within the event's window: "x" brings
	// weapons (merged into the event's new_categories), "y" violence, which
	// a already blocked: no new series for it. The earlier ones keep their
	// time.
	ansA["x"] = "blocked_output|weapons"
	ansA["y"] = "blocked_input|violence"
	run(6)
	run(7)
	want = append(want, "driftprobe_new_category_timestamp_seconds{category=weapons,target=a} "+stamp(7))
	slices.Sort(want)
	diffLines(t, "after more flips joined the event", gathered(t, reg, metrics.NewCategoryTimestamp), want)
	events, err := diff.ListEvents(context.Background(), st, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || strings.Join(events[0].NewCategories, ",") != "hate,self_harm,weapons" || strings.Join(events[0].Targets, ",") != "a,b" {
		t.Errorf("%d events, want one on a and b with new categories hate,self_harm,weapons", len(events))
		for _, e := range events {
			t.Logf("  %+v", *e)
		}
	}
}

// A model change merged into an open policy_change event within
// window_runs (the event's kind becomes model_change) is a model change
// recorded on the target when it was: it exports a model_change
// timestamp then (DriftprobeModelChange pages once), with the event's
// direction, and leaves the policy_change timestamp as it was, so the
// policy change does not page again. driftprobe_events_total counts it
// once more, under model_change with the direction the event opened
// with (a label that never moves), so the dashboards' event panels show
// the model change that paged; its policy_change count stays.
func TestModelChangeMergedIntoOpenEvent(t *testing.T) {
	st := openStore(t)
	a := ensureTarget(t, st, "a")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	hour := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	stamp := func(h int) string { return strconv.FormatFloat(float64(hour(h).Unix()), 'g', -1, 64) }
	ans := map[string]string{"ctl": "blocked_input|violence", "ok": "allowed", "x": "blocked_output|weapons"}
	model := "m-2026-01"
	run := func(h int) {
		t.Helper()
		detectRun(t, st, hour(h), targetAnswers{a, "a", maps.Clone(ans), model})
	}
	run(0)
	run(1)
	// Runs 3-4: "ok" starts blocking: a policy_change, tightened.
	ans["ok"] = "blocked_input|privacy"
	run(2)
	run(3)
	want := []string{
		"driftprobe_events_total{direction=tightened,kind=policy_change,target=a} 1",
		"driftprobe_last_event_timestamp_seconds{direction=tightened,kind=policy_change,target=a} " + stamp(3),
	}
	diffLines(t, "after the policy change", nonzero(gathered(t, reg, metrics.EventsTotal, metrics.LastEventTimestamp)), want)
	// Runs 5-6: the provider swaps the model and "x" stops blocking
	// (weapons vanishes), within the open event's window: merged into it.
	model = "m-2026-06"
	ans["x"] = "allowed"
	run(4)
	run(5)
	events, err := diff.ListEvents(context.Background(), st, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Kind != diff.KindModel || events[0].Direction != "mixed" {
		for _, e := range events {
			t.Logf("  %+v", *e)
		}
		t.Fatalf("%d events, want the policy change escalated to a mixed model_change", len(events))
	}
	want = append(want, "driftprobe_last_event_timestamp_seconds{direction=mixed,kind=model_change,target=a} "+stamp(5),
		"driftprobe_events_total{direction=tightened,kind=model_change,target=a} 1")
	slices.Sort(want)
	diffLines(t, "after the model change merged into it", nonzero(gathered(t, reg, metrics.EventsTotal, metrics.LastEventTimestamp)), want)
	// Later runs change nothing.
	run(6)
	diffLines(t, "a run later", nonzero(gathered(t, reg, metrics.EventsTotal, metrics.LastEventTimestamp)), want)
	// The escalating update is found by its recorded kind, whatever its
	// detail says; an update recorded before kinds were (kind '') by its
	// detail.
	if _, err := st.SQL().Exec(`UPDATE event_updates SET detail = 'reworded' WHERE kind = ?`, diff.KindModel); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "by kind", nonzero(gathered(t, collectorRegistry(metrics.NewDBCollector(st.SQL())), metrics.EventsTotal, metrics.LastEventTimestamp)), want)
	if _, err := st.SQL().Exec(`UPDATE event_updates SET kind = '', detail = 'more; kind is now ` + diff.KindModel + `' WHERE detail = 'reworded'`); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "by detail, for older updates", nonzero(gathered(t, collectorRegistry(metrics.NewDBCollector(st.SQL())), metrics.EventsTotal, metrics.LastEventTimestamp)), want)
}

// An event reverted leaves driftprobe_events_open at 0 for its target and
// kind, not absent: "== 0" and dashboards read 0, not "no data".
func TestEventsOpenDropsToZero(t *testing.T) {
	st := openStore(t)
	a := ensureTarget(t, st, "a")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	addEvent(t, st, "e1", a, "policy_change", "tightened", 1, "2026-11-20T10:00:00Z", 0, 0, "")
	addEvent(t, st, "e2", a, "nondeterminism", "mixed", 2, "2026-11-20T11:00:00Z", 0, 0, "")
	if _, err := st.SQL().Exec(`UPDATE events SET status = 'reverted' WHERE fingerprint = 'e2'`); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "events open", gathered(t, reg, metrics.EventsOpen), []string{
		"driftprobe_events_open{kind=nondeterminism,target=a} 0",
		"driftprobe_events_open{kind=policy_change,target=a} 1",
	})
}

// driftprobe_unknown_signals counts the latest finished run's first
// answers that carried something the classifier does not know (a new
// field, finish reason or category); an interrupted run changes nothing.
func TestUnknownSignals(t *testing.T) {
	st := openStore(t)
	a := ensureTarget(t, st, "a")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	store := func(run int64, unknown ...[]string) {
		t.Helper()
		var obs []*storage.Observation
		for i, u := range unknown {
			obs = append(obs, &storage.Observation{RunID: run, TargetID: a, ProbeID: fmt.Sprintf("p%d", i), ProbeSHA256: "p", RequestSHA256: "r",
				Result: probes.Result{Class: probes.Allowed, Unknown: u}, ObservedAt: t0})
		}
		// A second sample with unknown entries is not a probe's answer.
		obs = append(obs, &storage.Observation{RunID: run, TargetID: a, ProbeID: "p0", Sample: 1, ProbeSHA256: "p", RequestSHA256: "r",
			Result: probes.Result{Class: probes.Allowed, Unknown: []string{"finish_reason:new"}}, ObservedAt: t0})
		if err := st.InsertObservations(context.Background(), obs); err != nil {
			t.Fatal(err)
		}
	}
	r1 := beginRun(t, st, t0)
	store(r1, []string{"finish_reason:guardrail"}, nil, []string{"new_key"}, nil)
	finish(t, st, r1, t0, time.Minute, storage.RunComplete, storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 4, Verdicts: 4})
	diffLines(t, "run 1", gathered(t, reg, metrics.UnknownSignals), []string{"driftprobe_unknown_signals{target=a} 2"})
	r2 := beginRun(t, st, t0.Add(time.Hour))
	store(r2, []string{"x"}, []string{"y"}, []string{"z"})
	finish(t, st, r2, t0.Add(time.Hour), time.Minute, storage.RunAborted, storage.RunTarget{TargetID: a, Status: storage.TargetAborted, Observations: 3, Verdicts: 3})
	diffLines(t, "after an interrupted run", gathered(t, reg, metrics.UnknownSignals), []string{"driftprobe_unknown_signals{target=a} 2"})
	r3 := beginRun(t, st, t0.Add(2*time.Hour))
	store(r3, nil, nil)
	finish(t, st, r3, t0.Add(2*time.Hour), time.Minute, storage.RunComplete, storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 2, Verdicts: 2})
	diffLines(t, "run 3", gathered(t, reg, metrics.UnknownSignals), []string{"driftprobe_unknown_signals{target=a} 0"})
}
