package metrics_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// eventSeries returns the 16 events_total lines of target, each at 0
// except those given (label order as gathered: direction, kind, target).
func eventSeries(target string, set map[[2]string]int) []string {
	var out []string
	for _, k := range metrics.EventKinds {
		for _, d := range metrics.EventDirections {
			out = append(out, "driftprobe_events_total{direction="+d+",kind="+k+",target="+target+"} "+strconv.Itoa(set[[2]string{k, d}]))
		}
	}
	slices.Sort(out)
	return out
}

// The label values exported ahead of time are those detection and the
// runner write.
func TestPreinitialisedLabelValues(t *testing.T) {
	if want := []string{diff.KindPolicy, diff.KindModel, diff.KindScoreDrift, diff.KindNondeterminism}; !slices.Equal(metrics.EventKinds, want) {
		t.Errorf("EventKinds %v, want %v", metrics.EventKinds, want)
	}
	if want := []string{diff.Tightened, diff.Loosened, diff.Recategorized, diff.Mixed}; !slices.Equal(metrics.EventDirections, want) {
		t.Errorf("EventDirections %v, want %v", metrics.EventDirections, want)
	}
	for _, c := range metrics.VerdictClasses {
		if cl := probes.Class(c); !cl.IsVerdict() || cl == probes.AbuseBlock {
			t.Errorf("verdict class %q", c)
		}
	}
}

// increase() and rate() cannot see a series' first sample: a counter
// created at 1 when the first event of its (target, kind, direction)
// is recorded hides that event from every "per hour" and "in range"
// panel. driftprobe_events_total therefore has a series at 0 for every
// configured target (the database knowing it or not: one never run yet
// has its series too), kind and direction; a target not configured has
// none.
func TestEventsTotalExportedAtZeroForEveryConfiguredTarget(t *testing.T) {
	st := openStore(t)
	a, _ := ensureTarget(t, st, "a"), ensureTarget(t, st, "b")
	set := &metrics.TargetSet{}
	set.Set([]string{"a", "c"}, t0)
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()).OnlyTargets(set))

	want := append(eventSeries("a", nil), eventSeries("c", nil)...)
	slices.Sort(want)
	diffLines(t, "before any event", gathered(t, reg, metrics.EventsTotal), want)

	addEvent(t, st, "e1", a, diff.KindPolicy, diff.Tightened, 1, "2026-11-20T10:00:00Z", 0, 0, "")
	want = append(eventSeries("a", map[[2]string]int{{diff.KindPolicy, diff.Tightened}: 1}), eventSeries("c", nil)...)
	slices.Sort(want)
	diffLines(t, "after the first event", gathered(t, reg, metrics.EventsTotal), want)

	// Without a configuration (no OnlyTargets): every target the database
	// knows.
	got := gathered(t, collectorRegistry(metrics.NewDBCollector(st.SQL())), metrics.EventsTotal)
	want = append(eventSeries("a", map[[2]string]int{{diff.KindPolicy, diff.Tightened}: 1}), eventSeries("b", nil)...)
	slices.Sort(want)
	diffLines(t, "every target of the database", got, want)
}

// driftprobe_runs_total has every finished status from the start, so a
// status's first run (the first partial one, say) is an increase from 0.
func TestRunsTotalExportedAtZeroForEveryStatus(t *testing.T) {
	st := openStore(t)
	a := ensureTarget(t, st, "a")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	diffLines(t, "fresh database", gathered(t, reg, metrics.RunsTotal), []string{
		"driftprobe_runs_total{status=aborted} 0",
		"driftprobe_runs_total{status=complete} 0",
		"driftprobe_runs_total{status=partial} 0",
	})
	r := beginRun(t, st, t0)
	finish(t, st, r, t0, time.Minute, storage.RunPartial, storage.RunTarget{TargetID: a, Status: storage.TargetDegraded, Observations: 1, Transient: 1})
	diffLines(t, "after a partial run", gathered(t, reg, metrics.RunsTotal), []string{
		"driftprobe_runs_total{status=aborted} 0",
		"driftprobe_runs_total{status=complete} 0",
		"driftprobe_runs_total{status=partial} 1",
	})
}

// driftprobe_probe_verdicts counts a probe once per category it fires
// with (composition), so it sums to more than the probes: a share of
// probes must come from driftprobe_probes, which counts each probe once
// and has every verdict class (0 when no probe has it).
func TestProbesCountEachProbeOnce(t *testing.T) {
	st := openStore(t)
	a := ensureTarget(t, st, "a")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	applyRun(t, st, a, t0, map[string]string{
		"multi": "blocked_input|harassment,hate,violence",
		"one":   "blocked_output|violence",
		"ok1":   "allowed",
		"ok2":   "allowed",
	})
	diffLines(t, "probes", gathered(t, reg, metrics.Probes), []string{
		"driftprobe_probes{target=a,verdict=allowed} 2",
		"driftprobe_probes{target=a,verdict=blocked_input} 1",
		"driftprobe_probes{target=a,verdict=blocked_output} 1",
		"driftprobe_probes{target=a,verdict=model_refusal} 0",
	})
	sum := 0.0
	for _, l := range gathered(t, reg, metrics.ProbeVerdicts) {
		v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		sum += v
	}
	if sum != 6 {
		t.Errorf("probe_verdicts sum to %v, want 6 (4 probes, one of them in 3 categories)", sum)
	}
	// A target without probe states (its probes all answered with client
	// errors, say) has no series: no share to compute.
	ensureTarget(t, st, "b")
	for _, l := range gathered(t, reg, metrics.Probes) {
		if strings.Contains(l, "target=b") {
			t.Errorf("target without states: %s", l)
		}
	}
}

// driftprobe_breaker_opened_runs is held between runs (from the database,
// in every deployment): how many of the target's latest finished runs in
// a row opened its breaker. Interrupted runs neither count nor break the
// streak; a run without the breaker ends it; so does a gap where the
// target was disabled; it counts up to BreakerRunsCap.
func TestBreakerOpenedRuns(t *testing.T) {
	st := openStore(t)
	a, b := ensureTarget(t, st, "a"), ensureTarget(t, st, "b")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	h := 0
	run := func(status string, rts ...storage.RunTarget) {
		t.Helper()
		r := beginRun(t, st, t0.Add(time.Duration(h)*time.Hour))
		finish(t, st, r, t0.Add(time.Duration(h)*time.Hour), time.Minute, status, rts...)
		h++
	}
	ok := func(id int64) storage.RunTarget {
		return storage.RunTarget{TargetID: id, Status: storage.TargetComplete, Observations: 10, Verdicts: 10}
	}
	opened := func(id int64) storage.RunTarget {
		return storage.RunTarget{TargetID: id, Status: storage.TargetDegraded, Observations: 10, Verdicts: 2, Transient: 8, BreakerOpened: true}
	}
	aborted := func(id int64) storage.RunTarget {
		return storage.RunTarget{TargetID: id, Status: storage.TargetAborted, Observations: 3, Transient: 3, BreakerOpened: true}
	}
	check := func(what string, wa, wb int) {
		t.Helper()
		diffLines(t, what, gathered(t, reg, metrics.BreakerOpenedRuns), []string{
			"driftprobe_breaker_opened_runs{target=a} " + strconv.Itoa(wa),
			"driftprobe_breaker_opened_runs{target=b} " + strconv.Itoa(wb),
		})
	}
	run(storage.RunComplete, ok(a), ok(b))
	check("healthy", 0, 0)
	run(storage.RunPartial, opened(a), ok(b))
	check("a's breaker opened once", 1, 0)
	run(storage.RunAborted, aborted(a), aborted(b))
	check("an interrupted run in between", 1, 0)
	run(storage.RunPartial, opened(a), opened(b))
	run(storage.RunPartial, opened(a), opened(b))
	check("runs in a row", 3, 2)
	run(storage.RunPartial, ok(a), opened(b))
	check("a recovered", 0, 3)

	// b disabled for a run (a full run without it), then enabled again:
	// its runs before the gap are not part of the streak.
	run(storage.RunComplete, ok(a))
	run(storage.RunPartial, ok(a), opened(b))
	run(storage.RunPartial, ok(a), opened(b))
	check("after a disable gap", 0, 2)

	for range metrics.BreakerRunsCap + 5 {
		run(storage.RunPartial, opened(a), opened(b))
	}
	check("a long outage", metrics.BreakerRunsCap, metrics.BreakerRunsCap)
}

// every1h is an @every 1h schedule.
type every1h struct{}

func (every1h) Next(t time.Time) time.Time { return t.Add(time.Hour) }

// driftprobe_run_overdue_timestamp_seconds follows the latest run that
// finished with measurements: complete, or partial (one flaky target
// among many makes every run partial, and the others are still
// measured). Aborted runs are not confirmed by detection and do not move
// it, even with verdicts (finished runs that measured nothing:
// measured_overdue_test.go).
func TestOverdueFollowsFinishedRuns(t *testing.T) {
	st := openStore(t)
	a, b := ensureTarget(t, st, "a"), ensureTarget(t, st, "b")
	sch := &metrics.ScheduleRef{}
	sch.Set(every1h{})
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()).WithSchedule(sch))
	at := func(d time.Duration) string { return strconv.FormatFloat(float64(t0.Add(d).Unix()), 'g', -1, 64) }
	if got := gathered(t, reg, metrics.RunOverdue); len(got) != 0 {
		t.Errorf("before any run: %v", got)
	}
	r := beginRun(t, st, t0)
	finish(t, st, r, t0, time.Minute, storage.RunComplete,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 5, Verdicts: 5}, storage.RunTarget{TargetID: b, Status: storage.TargetComplete, Observations: 5, Verdicts: 5})
	// Ended 00:01 after 1m: the next run is due 01:01 and ends 01:02, the
	// one after is due 02:02 and overdue at 02:03 (metrics.Overdue).
	diffLines(t, "after a complete run", gathered(t, reg, metrics.RunOverdue), []string{"driftprobe_run_overdue_timestamp_seconds{} " + at(2*time.Hour+3*time.Minute)})
	r = beginRun(t, st, t0.Add(time.Hour))
	finish(t, st, r, t0.Add(time.Hour), time.Minute, storage.RunPartial,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 5, Verdicts: 5}, storage.RunTarget{TargetID: b, Status: storage.TargetDegraded, Observations: 5, Transient: 5})
	diffLines(t, "after a partial run", gathered(t, reg, metrics.RunOverdue), []string{"driftprobe_run_overdue_timestamp_seconds{} " + at(3*time.Hour+3*time.Minute)})
	r = beginRun(t, st, t0.Add(2*time.Hour))
	finish(t, st, r, t0.Add(2*time.Hour), time.Minute, storage.RunAborted,
		storage.RunTarget{TargetID: a, Status: storage.TargetComplete, Observations: 5, Verdicts: 5}, storage.RunTarget{TargetID: b, Status: storage.TargetAborted, Observations: 2, Verdicts: 2})
	diffLines(t, "after an aborted run", gathered(t, reg, metrics.RunOverdue), []string{"driftprobe_run_overdue_timestamp_seconds{} " + at(3*time.Hour+3*time.Minute)})
}

// TargetSet.Names lists the set once it was Set, sorted.
func TestTargetSetNames(t *testing.T) {
	var nilSet *metrics.TargetSet
	if n, ok := nilSet.Names(); ok || n != nil {
		t.Errorf("nil set: %v %v", n, ok)
	}
	s := &metrics.TargetSet{}
	if _, ok := s.Names(); ok {
		t.Error("before Set: ok")
	}
	s.Set([]string{"b", "a"}, t0)
	if n, ok := s.Names(); !ok || !slices.Equal(n, []string{"a", "b"}) {
		t.Errorf("after Set: %v %v", n, ok)
	}
}
