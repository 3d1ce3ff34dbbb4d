package metrics_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/storage"
)

// driftprobe_run_overdue_timestamp_seconds (DriftprobeRunsStale: "No
// target is being measured") follows only runs that measured something:
// finished runs in which at least one target answered a probe with a
// verdict (account-level enforcement included), the rule of
// internal/app.MeasuredNothing. A run in which every answer was
// transient, a client error or an unavailable filter is stored (partial,
// or complete when every answer was a client error: a revoked key's 401s
// do not degrade a target) but must not move it. Until some run has
// measured something, the overdue time follows the first finished run.

// overdueRig is a database with targets a and b and a collector with an
// @every 1h schedule.
type overdueRig struct {
	st   *storage.DB
	a, b int64
	sch  *metrics.ScheduleRef
	reg  *prometheus.Registry
}

func newOverdueRig(t *testing.T) *overdueRig {
	st := openStore(t)
	r := &overdueRig{st: st, a: ensureTarget(t, st, "a"), b: ensureTarget(t, st, "b"), sch: &metrics.ScheduleRef{}}
	r.sch.Set(every1h{})
	r.reg = r.fresh()
	return r
}

// fresh is a new collector over the same database (a restarted process).
func (r *overdueRig) fresh() *prometheus.Registry {
	return collectorRegistry(metrics.NewDBCollector(r.st.SQL()).WithSchedule(r.sch))
}

// run records a run started h hours after t0, finished `took` later with
// status and the target-runs given.
func (r *overdueRig) run(t *testing.T, h int, took time.Duration, status string, rts ...storage.RunTarget) {
	t.Helper()
	id := beginRun(t, r.st, t0.Add(time.Duration(h)*time.Hour))
	finish(t, r.st, id, t0.Add(time.Duration(h)*time.Hour), took, status, rts...)
}

// overdueAfter is the series after a run that ended at end after took,
// on the @every 1h schedule: due end+1h, the one after due 1h after that
// one ends (it takes as long), overdue once it has had as long.
func overdueAfter(end time.Time, took time.Duration) []string {
	at := end.Add(2*time.Hour + 2*took)
	return []string{metrics.RunOverdue + "{} " + strconv.FormatFloat(float64(at.Unix()), 'g', -1, 64)}
}

// check compares the series of reg, and of a fresh collector, with want.
func (r *overdueRig) check(t *testing.T, what string, want []string) {
	t.Helper()
	diffLines(t, what, gathered(t, r.reg, metrics.RunOverdue), want)
	diffLines(t, what+" (a fresh collector)", gathered(t, r.fresh(), metrics.RunOverdue), want)
}

func measuredRT(id int64, status string, verdicts int) storage.RunTarget {
	return storage.RunTarget{TargetID: id, Status: status, Observations: 10, Verdicts: verdicts, Transient: 10 - verdicts}
}

// nothingRTs are an outage's target-runs: every answer transient, a
// client error or an unavailable filter.
func nothingRTs(a, b int64) []storage.RunTarget {
	return []storage.RunTarget{
		{TargetID: a, Status: storage.TargetDegraded, Observations: 10, Transient: 8, Unavailable: 2},
		{TargetID: b, Status: storage.TargetDegraded, Observations: 10, ClientErrors: 4, Transient: 6},
	}
}

// (1) A partial run in which no target answered with a verdict does not
// move the overdue time, and neither does a complete one of nothing but
// client errors (a revoked key): the alert fires two slots after the
// last run that measured.
func TestOverduePartialRunMeasuringNothingDoesNotMoveIt(t *testing.T) {
	r := newOverdueRig(t)
	r.run(t, 0, time.Minute, storage.RunComplete, measuredRT(r.a, storage.TargetComplete, 10), measuredRT(r.b, storage.TargetComplete, 10))
	want := overdueAfter(t0.Add(time.Minute), time.Minute)
	r.check(t, "after a complete run", want)

	r.run(t, 1, 2*time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "after a partial run that measured nothing (an outage)", want)

	r.run(t, 2, time.Minute, storage.RunComplete,
		storage.RunTarget{TargetID: r.a, Status: storage.TargetComplete, Observations: 10, ClientErrors: 10},
		storage.RunTarget{TargetID: r.b, Status: storage.TargetComplete, Observations: 10, ClientErrors: 10})
	r.check(t, "after a complete run of only client errors (a revoked key)", want)

	// Nor does a run that did measure but is not the schedule's: aborted
	// (never confirmed by detection), or a compare --run of some targets.
	r.run(t, 3, time.Minute, storage.RunAborted, measuredRT(r.a, storage.TargetComplete, 10))
	id, err := r.st.BeginRun(context.Background(), storage.Run{CorpusName: "c", CorpusVersion: "1", Note: metrics.SubsetRunNote})
	if err != nil {
		t.Fatal(err)
	}
	finish(t, r.st, id, t0.Add(4*time.Hour), time.Minute, storage.RunComplete, measuredRT(r.a, storage.TargetComplete, 10))
	r.check(t, "after an aborted run and a compare --run", want)
}

// (2) A partial run in which one target answered with a verdict (the
// other's every answer transient) moves it, and so does one whose only
// verdicts were account-level enforcement (run_targets.verdicts counts
// abuse_block); a run that measured nothing after them leaves it there.
func TestOverduePartialRunWithOneMeasuredTargetMovesIt(t *testing.T) {
	r := newOverdueRig(t)
	r.run(t, 0, 2*time.Minute, storage.RunPartial,
		storage.RunTarget{TargetID: r.a, Status: storage.TargetDegraded, Observations: 10, Transient: 10},
		measuredRT(r.b, storage.TargetDegraded, 1))
	want := overdueAfter(t0.Add(2*time.Minute), 2*time.Minute)
	r.check(t, "after a partial run in which b measured one probe", want)
	r.run(t, 1, time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "after a run that measured nothing", want)

	start := t0.Add(2 * time.Hour)
	id := beginRun(t, r.st, start)
	abuseObservations(t, r.st, id, r.a, 3)
	finish(t, r.st, id, start, time.Minute, storage.RunPartial,
		storage.RunTarget{TargetID: r.a, Status: storage.TargetDegraded, Observations: 10, Verdicts: 3, Transient: 7},
		storage.RunTarget{TargetID: r.b, Status: storage.TargetDegraded, Observations: 10, Transient: 10})
	want = overdueAfter(start.Add(time.Minute), time.Minute)
	r.check(t, "after a partial run whose only verdicts were abuse blocks", want)
	r.run(t, 3, time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "after another run that measured nothing", want)
}

// (3) A complete run moves it (from the partial run that measured before
// it), and a run that measured nothing after it leaves it there.
func TestOverdueCompleteRunMovesIt(t *testing.T) {
	r := newOverdueRig(t)
	r.check(t, "before any run", nil)
	r.run(t, 0, time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "after only a run that measured nothing (the first finished run)", overdueAfter(t0.Add(time.Minute), time.Minute))
	r.run(t, 1, time.Minute, storage.RunPartial, measuredRT(r.a, storage.TargetComplete, 10), measuredRT(r.b, storage.TargetDegraded, 0))
	r.check(t, "after a partial run that measured", overdueAfter(t0.Add(time.Hour+time.Minute), time.Minute))
	r.run(t, 2, 3*time.Minute, storage.RunComplete, measuredRT(r.a, storage.TargetComplete, 10), measuredRT(r.b, storage.TargetComplete, 9))
	want := overdueAfter(t0.Add(2*time.Hour+3*time.Minute), 3*time.Minute)
	r.check(t, "after a complete run", want)
	r.run(t, 3, time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "after a run that measured nothing", want)
}

// (4) The collector keeps what it read (runCache): a scrape reads only
// the runs finished since the last one, and runs that finish after a run
// still in progress are kept apart until it ends (a lost lease's
// overlap). Scraped after every step, it says what a fresh collector (a
// restarted process) says; a run that measured nothing and ends last,
// out of id order, does not move it.
func TestOverdueCachedMatchesFresh(t *testing.T) {
	r := newOverdueRig(t)
	r.run(t, -1, time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "run 0 (measured nothing)", overdueAfter(t0.Add(-time.Hour+time.Minute), time.Minute))
	r.run(t, 0, time.Minute, storage.RunComplete, measuredRT(r.a, storage.TargetComplete, 10), measuredRT(r.b, storage.TargetComplete, 10))
	want1 := overdueAfter(t0.Add(time.Minute), time.Minute)
	r.check(t, "run 1 (measured)", want1)

	// Run 2 is in progress; runs 3 and 4 (another process, once run 2's
	// lease was lost) finish before it.
	r2 := beginRun(t, r.st, t0.Add(time.Hour))
	r.check(t, "run 2 running", want1)
	r.run(t, 2, 2*time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "run 3 (measured nothing) finished after run 2 started", want1)
	r.run(t, 3, time.Minute, storage.RunPartial, measuredRT(r.a, storage.TargetDegraded, 2), measuredRT(r.b, storage.TargetDegraded, 0))
	want4 := overdueAfter(t0.Add(3*time.Hour+time.Minute), time.Minute)
	r.check(t, "run 4 (measured) finished after run 2 started", want4)
	// Run 2 ends last, having measured nothing.
	finish(t, r.st, r2, t0.Add(time.Hour), 4*time.Hour, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "run 2 (measured nothing) finished last", want4)
	r.check(t, "scraped again", want4)

	r.run(t, 6, time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "run 5 (measured nothing)", want4)
	r.run(t, 7, time.Minute, storage.RunComplete, measuredRT(r.a, storage.TargetComplete, 10), measuredRT(r.b, storage.TargetComplete, 10))
	r.check(t, "run 6 (measured)", overdueAfter(t0.Add(7*time.Hour+time.Minute), time.Minute))

	// Overlap again, both measuring: the run that ended last counts, not
	// the one with the higher id.
	r7 := beginRun(t, r.st, t0.Add(8*time.Hour))
	r.run(t, 9, time.Minute, storage.RunPartial, measuredRT(r.a, storage.TargetComplete, 10), measuredRT(r.b, storage.TargetDegraded, 0))
	r.check(t, "run 8 (measured) finished while run 7 runs", overdueAfter(t0.Add(9*time.Hour+time.Minute), time.Minute))
	finish(t, r.st, r7, t0.Add(8*time.Hour), 2*time.Hour, storage.RunComplete, measuredRT(r.a, storage.TargetComplete, 10), measuredRT(r.b, storage.TargetComplete, 10))
	r.check(t, "run 7 (measured) finished last", overdueAfter(t0.Add(10*time.Hour), 2*time.Hour))
}

// A deployment that never measured anything (a key wrong from the start)
// must go stale too: until a run measured something, the overdue time
// follows the first finished run (by end, not id), however many runs that
// measured nothing follow it; the first run that measures takes over.
func TestOverdueNeverMeasuredFollowsFirstFinishedRun(t *testing.T) {
	r := newOverdueRig(t)
	r.run(t, -1, time.Minute, storage.RunAborted, measuredRT(r.a, storage.TargetComplete, 10))
	r.check(t, "after an aborted run", nil)
	r1 := beginRun(t, r.st, t0)
	r.check(t, "run 1 running", nil)
	r.run(t, 1, 2*time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	want := overdueAfter(t0.Add(time.Hour+2*time.Minute), 2*time.Minute)
	r.check(t, "run 2 (measured nothing) finished first", want)
	finish(t, r.st, r1, t0, 3*time.Hour, storage.RunComplete,
		storage.RunTarget{TargetID: r.a, Status: storage.TargetComplete, Observations: 10, ClientErrors: 10})
	r.check(t, "run 1 (only client errors) finished after it", want)
	r.run(t, 4, time.Minute, storage.RunAborted, measuredRT(r.a, storage.TargetComplete, 10))
	r.run(t, 5, time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "an aborted run and another that measured nothing", want)
	// A run in progress, one that measured nothing finishing after it
	// started.
	r6 := beginRun(t, r.st, t0.Add(6*time.Hour))
	r.run(t, 7, time.Minute, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "a run that measured nothing while another runs", want)
	finish(t, r.st, r6, t0.Add(6*time.Hour), 2*time.Hour, storage.RunPartial, nothingRTs(r.a, r.b)...)
	r.check(t, "the run in progress ended, having measured nothing", want)
	r.run(t, 9, time.Minute, storage.RunPartial, measuredRT(r.a, storage.TargetDegraded, 1), measuredRT(r.b, storage.TargetDegraded, 0))
	r.check(t, "the first run that measured", overdueAfter(t0.Add(9*time.Hour+time.Minute), time.Minute))
}
