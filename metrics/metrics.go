package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// Label values that are known ahead of time: counters are exported at 0
// for every combination that can occur, so the first increment is an
// increase() from 0 rather than a new series (which increase() and rate()
// cannot see).
var (
	// EventKinds and EventDirections: driftprobe_events_total's kind and
	// direction, exported for every configured target.
	EventKinds      = []string{diff.KindPolicy, diff.KindModel, diff.KindScoreDrift, diff.KindNondeterminism}
	EventDirections = []string{diff.Tightened, diff.Loosened, diff.Recategorized, diff.Mixed}
	// RunStatuses: driftprobe_runs_total's status (finished runs).
	RunStatuses = []string{storage.RunComplete, storage.RunPartial, storage.RunAborted}
	// VerdictClasses: driftprobe_probes' verdict, exported for every
	// target with a probe state (account-level enforcement is not a
	// verdict about a probe: driftprobe_abuse_blocks).
	VerdictClasses = []string{string(probes.Allowed), string(probes.BlockedInput), string(probes.BlockedOutput), string(probes.ModelRefusal)}
	// InputChangeCauses: the cause label of driftprobe_input_change_*,
	// every value detection records in input_changes.cause. Not exported
	// ahead of time: a series appears with a target's first input change
	// of the cause.
	InputChangeCauses = []string{InputCauseRequest, InputCauseOrigin, InputCauseState}
)

// Metrics holds driftprobe's process-level instruments. State that must
// survive restarts and one-shot runs (verdict composition, events, runs,
// outbox) is read from the database at scrape time by a DBCollector.
//
// Update the per-target instruments through ObserveAttempt,
// ObserveTargetRun, SetBreaker and RunEnded: they record nothing for a
// target the configuration in force does not run, so a run still in
// flight with the configuration a reload replaced cannot bring back the
// series SetConfigured deleted.
type Metrics struct {
	Requests       *prometheus.CounterVec
	Retries        *prometheus.CounterVec
	Tokens         *prometheus.CounterVec
	Cost           *prometheus.CounterVec
	Breaker        *prometheus.GaugeVec
	RunDuration    prometheus.Histogram
	ReloadOK       prometheus.Gauge
	ReloadTime     prometheus.Gauge
	LockSkips      prometheus.Counter
	ScheduleSecond prometheus.Gauge

	// Configured is the set of targets the configuration in force runs
	// (SetConfigured). A DBCollector built with OnlyTargets(Configured)
	// exports per-target series for these targets only.
	Configured *TargetSet
	// Schedule is the schedule in force (SetSchedule). A DBCollector
	// built with WithSchedule(Schedule) exports when the next run that
	// measures something is overdue.
	Schedule *ScheduleRef

	// live orders per-target updates (read-locked: check Configured, then
	// update) against SetConfigured (locked: change the set, delete the
	// series), so no update lands between the two.
	live     sync.RWMutex
	mu       sync.Mutex
	breakers map[string]bool // targets whose breaker state was reported
}

// A Schedule says when runs are due: Next returns the first due time after
// t (robfig/cron's Schedule satisfies it), the zero time when none is.
type Schedule interface{ Next(t time.Time) time.Time }

// ScheduleRef holds the schedule in force; the zero value holds none.
type ScheduleRef struct {
	mu sync.RWMutex
	s  Schedule
}

// Set replaces the schedule (nil: none known).
func (r *ScheduleRef) Set(s Schedule) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s = s
}

// Get returns the schedule in force, nil when none is (or r is nil).
func (r *ScheduleRef) Get() Schedule {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.s
}

// Overdue is when the next run that measures something is overdue, given
// the latest such run's end and duration (a finished run in which a target
// answered with a verdict; the collector decides which): a run that fails
// or measures nothing leaves one more chance. The next run starts at the
// first due time after that end; runs never overlap, so the one after it
// starts at the first due time after it ends (taking as long as the
// last), and is overdue once it has had as long to finish. With runs
// shorter than the schedule's interval that is the second due time after
// the end, plus the duration; longer runs skip slots, and so does this.
// ok is false when s has no such due time.
func Overdue(s Schedule, end time.Time, took time.Duration) (at time.Time, ok bool) {
	took = max(took, 0)
	first := s.Next(end)
	if first.IsZero() {
		return time.Time{}, false
	}
	second := s.Next(first.Add(took))
	if second.IsZero() {
		return time.Time{}, false
	}
	return second.Add(took), true
}

// TargetSet is the set of target names the configuration in force runs:
// configured and enabled, with when each was (re)enabled. Until Set is
// first called it holds every name, so callers that never load a
// configuration see every target.
type TargetSet struct {
	mu    sync.RWMutex
	names map[string]time.Time // nil until Set: every name; the time it was (re)enabled, zero: since the first Set
	ever  map[string]bool      // every name Set ever held
}

// Set replaces the set at now and returns the names an earlier Set held
// that it no longer does (sorted). The names of the first Set are enabled
// since forever (a restarted process exports what the database holds of
// them); a name a later Set adds, or adds back, is enabled from now.
func (s *TargetSet) Set(names []string, now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, prev := s.names == nil, s.names
	s.names = make(map[string]time.Time, len(names))
	if s.ever == nil {
		s.ever = map[string]bool{}
	}
	for _, n := range names {
		since, kept := prev[n]
		switch {
		case first:
			since = time.Time{}
		case !kept:
			since = now
		}
		s.names[n] = since
		s.ever[n] = true
	}
	var gone []string
	for n := range s.ever {
		if _, ok := s.names[n]; !ok {
			gone = append(gone, n)
		}
	}
	slices.Sort(gone)
	return gone
}

// Has reports whether name is in the set (always, before the first Set,
// and for a nil set).
func (s *TargetSet) Has(name string) bool {
	_, ok := s.EnabledSince(name)
	return ok
}

// EnabledSince reports whether name is in the set and since when: the
// zero time when it has been since the first Set (and before the first
// Set, and for a nil set), else the time of the Set that (re)enabled it.
func (s *TargetSet) EnabledSince(name string) (time.Time, bool) {
	if s == nil {
		return time.Time{}, true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.names == nil {
		return time.Time{}, true
	}
	since, ok := s.names[name]
	return since, ok
}

// Names returns the names in the set, sorted, and whether the set was
// ever Set (false: before the first Set, or for a nil set, when it holds
// every name and lists none).
func (s *TargetSet) Names() ([]string, bool) {
	if s == nil {
		return nil, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.names == nil {
		return nil, false
	}
	return slices.Sorted(maps.Keys(s.names)), true
}

// SetConfigured records the targets the configuration in force runs (its
// enabled targets), loaded at now. The DB collector stops exporting series
// of any other target (a removed or disabled target's abuse blocks or
// degradation must not alert forever), and the process instruments drop
// their series. A target enabled again exports the database's latest-run
// series only from runs started after now (see TargetSet.Set).
func (m *Metrics) SetConfigured(names []string, now time.Time) {
	m.live.Lock()
	defer m.live.Unlock()
	for _, n := range m.Configured.Set(names, now) {
		l := prometheus.Labels{"target": n}
		m.Requests.DeletePartialMatch(l)
		m.Retries.DeletePartialMatch(l)
		m.Tokens.DeletePartialMatch(l)
		m.Cost.DeletePartialMatch(l)
		m.mu.Lock()
		m.Breaker.DeletePartialMatch(l)
		delete(m.breakers, n)
		m.mu.Unlock()
	}
}

// ObserveAttempt counts a request attempt to target answered with outcome
// (its class), and a retry when it was one. Nothing is recorded for a
// target the configuration in force does not run.
func (m *Metrics) ObserveAttempt(target, outcome string, retried bool) {
	m.live.RLock()
	defer m.live.RUnlock()
	if !m.Configured.Has(target) {
		return
	}
	m.Requests.WithLabelValues(target, outcome).Inc()
	if retried {
		m.Retries.WithLabelValues(target).Inc()
	}
}

// ObserveTargetRun adds a finished run's tokens and spend on target (and
// creates its retries series at 0, so rate() has one from the first run).
// Nothing is recorded for a target the configuration in force does not
// run.
func (m *Metrics) ObserveTargetRun(target string, tokensIn, tokensOut int, costUSD float64) {
	m.live.RLock()
	defer m.live.RUnlock()
	if !m.Configured.Has(target) {
		return
	}
	m.Retries.WithLabelValues(target)
	m.Tokens.WithLabelValues(target, "input").Add(float64(tokensIn))
	m.Tokens.WithLabelValues(target, "output").Add(float64(tokensOut))
	m.Cost.WithLabelValues(target).Add(costUSD)
}

// SetBreaker records a change of the target's circuit breaker during a
// run (nothing for a target the configuration in force does not run).
func (m *Metrics) SetBreaker(target string, open bool) {
	v := 0.0
	if open {
		v = 1
	}
	m.live.RLock()
	defer m.live.RUnlock()
	if !m.Configured.Has(target) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.breakers == nil {
		m.breakers = map[string]bool{}
	}
	m.breakers[target] = true
	m.Breaker.WithLabelValues(target).Set(v)
}

// RunEnded records that no run is in progress. Breakers exist only within
// a run, so none is open any more: every breaker series reads 0. (What
// holds between runs is the database's record of the runs whose breaker
// opened, driftprobe_breaker_opened_runs, which DriftprobeBreakerOpen
// reads.) targets (the run's) get a series at 0 unless the configuration
// in force no longer runs them.
func (m *Metrics) RunEnded(targets ...string) {
	m.live.RLock()
	defer m.live.RUnlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.breakers == nil {
		m.breakers = map[string]bool{}
	}
	for _, t := range targets {
		if m.Configured.Has(t) {
			m.breakers[t] = true
		}
	}
	for t := range m.breakers {
		m.Breaker.WithLabelValues(t).Set(0)
	}
}

// runBuckets are the run-duration histograms' buckets, in seconds.
var runBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600}

// New registers the process instruments, build info and Go/process
// collectors on reg.
func New(reg prometheus.Registerer, version string) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: RequestsTotal,
			Help: "Provider request attempts by target and outcome class (allowed, blocked_input, ..., transient)."}, []string{"target", "outcome"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: RetriesTotal,
			Help: "Retried attempts (transient outcomes only; blocks are never retried)."}, []string{"target"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: TokensTotal,
			Help: "Tokens billed by direction."}, []string{"target", "direction"}),
		Cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: CostUSDTotal,
			Help: "Estimated spend from the target's price table, in USD."}, []string{"target"}),
		Breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: BreakerOpen,
			Help: "1 while the target's upstream circuit breaker is open during a run; 0 between runs (breakers live only within a run)."}, []string{"target"}),
		RunDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: RunDuration,
			Help: "Wall time of a run.", Buckets: runBuckets}),
		ReloadOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: ConfigReloadOK,
			Help: "1 when the last configuration (re)load succeeded."}),
		ReloadTime: prometheus.NewGauge(prometheus.GaugeOpts{Name: ConfigReloadTime,
			Help: "Time of the last successful configuration load."}),
		LockSkips: prometheus.NewCounter(prometheus.CounterOpts{Name: LockSkipsTotal,
			Help: "Scheduled runs skipped because another process held the run lock."}),
		ScheduleSecond: prometheus.NewGauge(prometheus.GaugeOpts{Name: ScheduleIntervalS,
			Help: "The configured run interval (for staleness alerts); for a cron schedule, the longest gap between two firings over the year from its next firing."}),
		Configured: &TargetSet{},
		Schedule:   &ScheduleRef{},
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: BuildInfo, Help: "Build information.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()}})
	build.Set(1)
	reg.MustRegister(m.Requests, m.Retries, m.Tokens, m.Cost, m.Breaker, m.RunDuration, m.ReloadOK, m.ReloadTime, m.LockSkips, m.ScheduleSecond, build)
	return m
}

// NewRunFailures registers driftprobe_run_failures_total on reg and returns
// it, at 0 from the start (so the first failure is an increase() from 0).
// Only `serve` registers it: a one-shot run that fails exits non-zero and
// exports nothing, so the CronJob's or timer's failure is its signal, and
// a constant 0 in its textfile would only say "no failure" wrongly.
func NewRunFailures(reg prometheus.Registerer) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: RunFailuresTotal,
		Help: "Scheduled runs of driftprobe serve that failed: an error (a full disk, a broken database, a failed detection), a run that lost its run lease mid-run, a tick refused because the database file was removed or replaced, and a run that measured nothing (no target answered a single probe with a verdict); not counting runs interrupted by shutdown or ticks skipped for the run lease. The log says `run failed` with the error."})
	reg.MustRegister(c)
	return c
}

// RegisterRuntime adds the Go and process collectors (not in tests that
// compare exact output).
func RegisterRuntime(reg prometheus.Registerer) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// DBCollector reads current state from the database at scrape time.
//
// A scrape holds the connection it reads through (serve gives it a
// read-only connection of its own; a one-shot run's export reads through
// the store's single connection, so run writes would wait for it): its
// cost must not grow with run history. Per-target latest runs are read
// through the run_targets (target_id, run_id) index, and everything summed
// over finished runs (the recorded_* counters, the run-duration histogram,
// runs by status and the latest run per status) is kept in the collector
// and extended by the runs that finished since the last scrape: a finished
// run never changes, and runs and run_targets are never pruned.
type DBCollector struct {
	db       *sql.DB
	timeout  time.Duration
	targets  *TargetSet       // nil: every target the database knows
	schedule *ScheduleRef     // nil: no overdue time
	now      func() time.Time // the scrape's clock (WithClock): GitHub waits that ended before it are not exported

	verdicts, active, events, open, runs, lastRun, outbox, abuse, degraded, dbSize, dbFree *prometheus.Desc
	unknown                                                                                *prometheus.Desc
	changes, uncovered, attrTime, attrOK                                                   *prometheus.Desc
	lastEvent, lastRunProbes, probes, requests, retries, tokens, cost, duration            *prometheus.Desc
	newCategory, prevRunProbes, overdue                                                    *prometheus.Desc
	probeCount, breakerRuns                                                                *prometheus.Desc
	inputAt, inputProbes                                                                   *prometheus.Desc
	holdUntil, damaged, parkedDamaged                                                      *prometheus.Desc

	cache  runCache
	inputs inputCache
}

// NewDBCollector returns a collector over db.
func NewDBCollector(db *sql.DB) *DBCollector {
	return &DBCollector{db: db, timeout: 10 * time.Second, now: time.Now,
		verdicts: prometheus.NewDesc(ProbeVerdicts, "Probes whose latest verdict is this class, per normalized category (\"none\" for verdicts without one); a probe with two categories counts in both. Account-level enforcement (driftprobe_abuse_blocks) leaves the latest verdict as it was.", []string{"target", "verdict", "category"}, nil),
		active:   prometheus.NewDesc(CategoryActive, "1 when at least one probe's confirmed baseline on the target is blocked with this category, else 0 (a dashboard gauge: a probe whose baseline confirms late, or a probe a new corpus version adds, can turn a category 1 without any provider change; driftprobe_new_category_timestamp_seconds is what pages). Exported only once the target has a confirmed baseline (confirm_runs).", []string{"target", "category"}, nil),
		events:   prometheus.NewDesc(EventsTotal, "Change events recorded on the target, by the kind and direction they opened with (so the counter never decreases as an event grows), plus one model_change (with the direction the event opened with) for every event a model change merged into after it opened; 0 for every configured target, kind and direction until the first.", []string{"target", "kind", "direction"}, nil),
		open:     prometheus.NewDesc(EventsOpen, "Events not reverted.", []string{"target", "kind"}, nil),
		runs:     prometheus.NewDesc(RunsTotal, "Runs recorded, by status (complete, partial and aborted are 0 until the first).", []string{"status"}, nil),
		lastRun:  prometheus.NewDesc(LastRunTimestamp, "End time of the latest run with this status (compare --run runs of some targets not counted: they are not the schedule's).", []string{"status"}, nil),
		outbox:   prometheus.NewDesc(OutboxPending, "GitHub deliveries queued and not yet sent.", nil, nil),
		unknown:  prometheus.NewDesc(UnknownSignals, "Answers of the target's latest finished run (first samples) carrying something the classifier does not know (a new field, finish or stop reason, filter category): the provider's wire format moved, and a verdict may rest on a reading that no longer holds.", []string{"target"}, nil),
		abuse:    prometheus.NewDesc(AbuseBlocks, "Probes answered with account-level enforcement (abuse_block) in the target's latest finished run (an interrupted run's count when it is larger; none while its latest run predates a disable).", []string{"target"}, nil),
		degraded: prometheus.NewDesc(TargetDegraded, "1 when the target's latest finished run was degraded (too many transient errors or unavailable filters, or an open breaker); an interrupted (aborted) run neither sets nor clears it, even for a target that finished inside it.", []string{"target"}, nil),
		dbSize:   prometheus.NewDesc(DatabaseSize, "Size of the SQLite database (pages in use and free; the WAL file not included).", nil, nil),
		dbFree:   prometheus.NewDesc(DatabaseFree, "Free pages of the SQLite database, reused by later writes (VACUUM returns them to the file system).", nil, nil),
		changes: prometheus.NewDesc(ProductionChanges, "Production block-rate changes in the latest successful attribution report, by target, normalized category (\"all\": every block on the target), direction (up, down) and attribution (provider, traffic, inconclusive).",
			[]string{"target", "category", "direction", "attribution"}, nil),
		uncovered:     prometheus.NewDesc(UncoveredCategories, "1 for each category production blocks on the target that no corpus probe is tagged with (latest successful attribution report).", []string{"target", "category"}, nil),
		attrTime:      prometheus.NewDesc(AttributionTimestamp, "Time the latest successful attribution report was stored.", nil, nil),
		attrOK:        prometheus.NewDesc(AttributionSuccess, "1 when the latest attribution attempt (after a run) succeeded, 0 when it failed (Prometheus unreachable, bad data).", nil, nil),
		lastEvent:     prometheus.NewDesc(LastEventTimestamp, "Time the latest event of this kind and direction (as opened) was recorded on the target: opened there, or the target joined it. An event that became a model_change after it opened (a model change merged into it) is also a model_change, with its direction, from the update that made it one, on the target whose flips did.", []string{"target", "kind", "direction"}, nil),
		lastRunProbes: prometheus.NewDesc(LastRunProbes, "Probes of the target's latest finished run (its run not aborted) by how their first sample was answered: verdict, transient, client_error, filter_unavailable.", []string{"target", "outcome"}, nil),
		probes:        prometheus.NewDesc(RecordedProbes, "Probes answered in every recorded run, by how their first sample was answered (verdict, transient, client_error, filter_unavailable).", []string{"target", "outcome"}, nil),
		requests:      prometheus.NewDesc(RecordedRequests, "Provider request attempts (retries and extra samples included) of every recorded run.", []string{"target"}, nil),
		retries:       prometheus.NewDesc(RecordedRetries, "Retried attempts of every recorded run.", []string{"target"}, nil),
		tokens:        prometheus.NewDesc(RecordedTokens, "Tokens billed in every recorded run, by direction.", []string{"target", "direction"}, nil),
		cost:          prometheus.NewDesc(RecordedCostUSD, "Estimated spend of every recorded run from the target's price table, in USD.", []string{"target"}, nil),
		duration:      prometheus.NewDesc(RecordedRunDuration, "Wall time of every finished run (runs abandoned by a process that died excluded).", nil, nil),
		newCategory:   prometheus.NewDesc(NewCategoryTimestamp, "Time the event whose confirmed flips (identical request bytes) first made this category fire on the target was recorded there (its new_categories): opened, joined or extended in that run. A category that starts firing through a baseline (a probe confirming late, a new corpus version) has no series.", []string{"target", "category"}, nil),
		overdue:       prometheus.NewDesc(RunOverdue, "When the next run that measures something is overdue: the schedule's second due time after the latest run that measured something ended (one failed run is tolerated), plus that run's duration; jitter included. A run measured something when it finished (complete or partial) and at least one target answered a probe with a verdict (account-level enforcement included); a run in which every answer was transient, a client error or an unavailable filter (an outage, a revoked key: what driftprobe run exits 3 on) does not count, nor do aborted runs and compare --run runs. Until a run has measured something, it follows the first finished run. Absent before the first finished run.", nil, nil),
		prevRunProbes: prometheus.NewDesc(PreviousRunProbes, "Probes of the finished (not aborted) run before the target's latest finished run, by how their first sample was answered (as driftprobe_last_run_probes).", []string{"target", "outcome"}, nil),
		probeCount:    prometheus.NewDesc(Probes, "Probes whose latest verdict on the target is this class, each probe counted once whatever its categories (driftprobe_probe_verdicts counts a probe once per category); every verdict class is exported, 0 when no probe has it.", []string{"target", "verdict"}, nil),
		inputAt:       prometheus.NewDesc(InputChangeTimestamp, "End time (runs.finished_at, as driftprobe_last_run_timestamp_seconds) of the latest run whose detection restarted probes' baselines on the target for this cause, recorded as input changes: request (their request bytes changed: a target parameter such as temperature, max_tokens, seed or options, a corpus version editing a prompt or system message, an adapter rendering other bytes) or origin (the target moved to another endpoint: base_url, region, gateway; or another account: OpenAI organization, project) or state (the target's detection state was missing though earlier runs had established it: its row removed from the database, as db check advises for one that no longer decodes, or lost; at the endpoint it returned to, the state it had left there). Detection follows the run's end (a run detected late, by the next run, keeps its own end). A provider change at that moment is absorbed into the new baselines; detection on those probes resumes once they hold (confirm_runs). No series before the target's first input change of the cause.", []string{"target", "cause"}, nil),
		inputProbes:   prometheus.NewDesc(InputChangeProbes, "Probes whose baselines (held or still being established) the run of driftprobe_input_change_timestamp_seconds restarted on the target for this cause: for request the probes whose bytes changed, for origin every probe the target had state for at the endpoint it left, for state every probe the run sent (or, back at an endpoint whose state is missing, every probe the target had state for at the endpoint it left).", []string{"target", "cause"}, nil),
		breakerRuns:   prometheus.NewDesc(BreakerOpenedRuns, "How many of the target's latest finished (not aborted) runs in a row opened its circuit breaker: 0 when the latest did not (counted up to 24). Held between runs, in every deployment, unlike driftprobe_breaker_open.", []string{"target"}, nil),
		holdUntil:     prometheus.NewDesc(GitHubHoldUntil, "When the GitHub wait in force ends (unix time): after a rate limit or an outage driftprobe records \"no request to GitHub before T\" and sends nothing there (no issue, no comment) before T, every pending outbox row waiting; `driftprobe outbox` lists the waits, `driftprobe outbox --clear-holds` deletes a wrong one. api is the GitHub API root's origin (scheme://host:port); scope is host for an outage (every credential on that host waits) or credential for a rate limit of the credential that called (which credential is not exported; `driftprobe outbox` names it). The latest end per api and scope. A wait is at most an hour from the failure that set it. Absent when no wait is in force at the scrape: a wait that has ended is not exported, even before the next delivery deletes its record. A textfile or Pushgateway copy keeps what its run saw: compare with time().", []string{"api", "scope"}, nil),
		damaged:       prometheus.NewDesc(DetectionStateDamaged, "1 while the target's detection state (its probe_states row) does not decode: its detection has stopped (each run reports it failed, the other targets are detected), it has no driftprobe_probe_verdicts, driftprobe_probes or driftprobe_category_active series, and retention keeps every observation of it, meanwhile. `driftprobe db check` names the row and the statement that removes it (DELETE FROM probe_states WHERE target_id = N); the target's baselines then restart (input changes with cause state). Absent otherwise.", []string{"target"}, nil),
		parkedDamaged: prometheus.NewDesc(ParkedStateDamaged, "How many of the detection states the target parked at endpoints it left (its parked_states rows) do not decode: its detection at its current endpoint goes on (its series are exported as usual), but a return to such an endpoint fails its detection there (each run reports it failed), and retention keeps every observation of the target, until the row is removed. `driftprobe db check` names each row and the statement that removes it (DELETE FROM parked_states WHERE target_id = N AND origin = '…'); a return there then restarts its baselines (input changes with cause state). Absent otherwise.", []string{"target"}, nil),
	}
}

// OnlyTargets limits the per-target series to the targets in s (see
// Metrics.SetConfigured); series of the attribution report included. The
// latest-run series of a target s enabled again after its first Set come
// only from runs started since (TargetSet.EnabledSince).
func (c *DBCollector) OnlyTargets(s *TargetSet) *DBCollector {
	c.targets = s
	return c
}

// WithSchedule makes the collector export driftprobe_run_overdue_timestamp_seconds
// from the schedule r holds at scrape time (see Overdue); without one the
// series is absent.
func (c *DBCollector) WithSchedule(r *ScheduleRef) *DBCollector {
	c.schedule = r
	return c
}

// WithClock makes the collector read the time from now (default
// time.Now): a GitHub wait that ends at or before it is over and not
// exported. For tests, and for callers whose store runs on another clock.
func (c *DBCollector) WithClock(now func() time.Time) *DBCollector {
	c.now = now
	return c
}

// Describe implements prometheus.Collector.
func (c *DBCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.verdicts, c.active, c.events, c.open, c.runs, c.lastRun, c.outbox, c.abuse, c.unknown, c.degraded, c.dbSize, c.dbFree,
		c.changes, c.uncovered, c.attrTime, c.attrOK, c.lastEvent, c.lastRunProbes, c.probes, c.requests, c.retries, c.tokens, c.cost, c.duration,
		c.newCategory, c.prevRunProbes, c.overdue, c.probeCount, c.breakerRuns, c.inputAt, c.inputProbes, c.holdUntil, c.damaged, c.parkedDamaged} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *DBCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	fail := func(d *prometheus.Desc, err error) { ch <- prometheus.NewInvalidMetric(d, err) }

	// Per target: the latest verdict and the confirmed baseline of every probe.
	type key struct{ target, verdict, category string }
	counts := map[key]float64{}
	perProbe := map[[2]string]float64{} // target, verdict: each probe once
	active := map[[2]string]float64{}
	baselined := map[string]bool{}
	names := map[int64]string{} // the configured targets'
	var ids []int64             // every target's
	rows, err := c.db.QueryContext(ctx, qTargets)
	if err != nil {
		fail(c.verdicts, err)
		return
	}
	for rows.Next() {
		var id int64
		var n string
		if rows.Scan(&id, &n) != nil {
			continue
		}
		ids = append(ids, id)
		if c.targets.Has(n) {
			names[id] = n
		}
	}
	rows.Close()
	c.collectAttribution(ctx, ch, names)
	// A target whose state does not decode is left out of the
	// state-derived series and exported as damaged; any other error fails
	// the collection (HTTP 500), as every query does.
	all, damaged, err := diff.ReadableStates(ctx, c.db)
	if err != nil {
		fail(c.verdicts, err)
		return
	}
	for _, id := range damaged {
		if t, ok := names[id]; ok {
			ch <- prometheus.MustNewConstMetric(c.damaged, prometheus.GaugeValue, 1, t)
		}
	}
	parked, err := diff.DamagedParkedStates(ctx, c.db)
	if err != nil {
		fail(c.parkedDamaged, err)
		return
	}
	for id, n := range parked {
		if t, ok := names[id]; ok {
			ch <- prometheus.MustNewConstMetric(c.parkedDamaged, prometheus.GaugeValue, float64(n), t)
		}
	}
	for id, sts := range all {
		t, ok := names[id]
		if !ok {
			continue
		}
		for _, st := range sts {
			cls, cats := split(st.LastVerdict)
			perProbe[[2]string{t, cls}]++
			if len(cats) == 0 {
				cats = []string{"none"}
			}
			for _, cat := range cats {
				counts[key{t, cls, cat}]++
			}
			if st.Baseline == "" {
				continue
			}
			baselined[t] = true
			if bcls, bcats := split(st.Baseline); probes.Class(bcls).IsBlock() {
				for _, cat := range bcats {
					active[[2]string{t, cat}] = 1
				}
			}
		}
	}
	for k, v := range counts {
		ch <- prometheus.MustNewConstMetric(c.verdicts, prometheus.GaugeValue, v, k.target, k.verdict, k.category)
	}
	// Every verdict class of every target with a probe state, 0 when no
	// probe has it: a block share has a numerator whenever it has a
	// denominator.
	for id, sts := range all {
		if t, ok := names[id]; ok && len(sts) > 0 {
			for _, v := range VerdictClasses {
				perProbe[[2]string{t, v}] += 0
			}
		}
	}
	for k, v := range perProbe {
		ch <- prometheus.MustNewConstMetric(c.probeCount, prometheus.GaugeValue, v, k[0], k[1])
	}
	// Until a target has a confirmed baseline no category is known to be
	// active or not, so a target has no series before. A dashboard gauge:
	// what pages is a category a confirmed flip introduced
	// (collectNewCategories).
	for t := range baselined {
		for _, cat := range probes.Categories {
			ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, active[[2]string{t, cat}], t, cat)
		}
	}
	c.collectNewCategories(ctx, ch, names)

	c.collectEvents(ctx, ch, names)
	c.grouped(ctx, ch, c.open, prometheus.GaugeValue, `SELECT t.name, e.kind, SUM(e.status = 'open') FROM events e JOIN event_targets et ON et.event_id = e.id JOIN targets t ON t.id = et.target_id GROUP BY 1, 2`, 2, true)
	c.collectLastEvents(ctx, ch)
	c.collectInputChanges(ctx, ch, names)
	var pages, free, pageSize float64
	if err := c.db.QueryRowContext(ctx, `SELECT page_count, freelist_count, page_size FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()`).Scan(&pages, &free, &pageSize); err != nil {
		fail(c.dbSize, err)
	} else {
		ch <- prometheus.MustNewConstMetric(c.dbSize, prometheus.GaugeValue, pages*pageSize)
		ch <- prometheus.MustNewConstMetric(c.dbFree, prometheus.GaugeValue, free*pageSize)
	}
	var pending float64
	if err := c.db.QueryRowContext(ctx, qOutboxPending).Scan(&pending); err != nil {
		fail(c.outbox, err)
	} else {
		ch <- prometheus.MustNewConstMetric(c.outbox, prometheus.GaugeValue, pending)
	}
	c.collectHolds(ctx, ch)
	c.collectRuns(ctx, ch, ids, names)
	c.collectLatestRuns(ctx, ch, names)
}

// The queries a scrape runs whose cost could grow with history; each must
// be an index search, never a table scan (TestScrapeQueryPlans).
const (
	qTargets       = `SELECT id, name FROM targets`
	qOutboxPending = `SELECT COUNT(*) FROM outbox WHERE sent_at = ''`
	// The GitHub waits recorded (ghissue's github_holds, schema 21): one
	// row per API origin and credential (empty for an outage), bounded by the
	// GitHub configurations the database has served, not by history.
	qGitHubHolds = `SELECT api, credential, until FROM github_holds`
	// The highest run id (a database replaced by an older copy has a
	// lower one than the cache summed: start over).
	qMaxRun = `SELECT COALESCE(MAX(id), 0) FROM runs`
	// Runs after the cache's watermark, in id order, and whether any
	// target answered a probe with a verdict in the run (run_targets.verdicts
	// counts first samples of every verdict class, abuse_block included,
	// since schema 1): internal/app.MeasuredNothing's rule, read through
	// the run_targets primary key.
	qRunsAfter = `SELECT id, status, COALESCE(finished_at, ''), unixepoch(finished_at, 'subsec'),
		unixepoch(finished_at, 'subsec') - unixepoch(started_at, 'subsec'), note,
		EXISTS (SELECT 1 FROM run_targets rt WHERE rt.run_id = runs.id AND rt.verdicts > 0)
		FROM runs WHERE id > ? ORDER BY id`
	// A target's summaries of a range of runs, added up. Integers only
	// (spend in nano-dollars), so sums are exact whatever runs they are
	// split into: every process computes the same counters.
	qTargetRunsSum = `SELECT COUNT(*), COALESCE(SUM(verdicts), 0), COALESCE(SUM(transient), 0), COALESCE(SUM(client_errors), 0), COALESCE(SUM(unavailable), 0),
		COALESCE(SUM(requests), 0), COALESCE(SUM(retries), 0), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0), COALESCE(SUM(CAST(round(cost_usd * 1e9) AS INTEGER)), 0)
		FROM run_targets WHERE target_id = ? AND run_id > ? AND run_id <= ?`
	// One run's summaries (a run finished while one before it still runs).
	qRunTargetsOf = `SELECT target_id, verdicts, transient, client_errors, unavailable, requests, retries, tokens_in, tokens_out, CAST(round(cost_usd * 1e9) AS INTEGER)
		FROM run_targets WHERE run_id = ?`
	// A target's latest run of any status, and its latest two finished
	// runs: runs not aborted. The run's status decides, not the
	// target-run's: a target that finished inside a run interrupted
	// later (SIGTERM while another target was still probing) was not
	// confirmed by detection either, and must neither set nor clear
	// what the finished run before found.
	qLatestRun = `SELECT rt.run_id, rt.status, rt.verdicts, rt.transient, rt.client_errors, rt.unavailable, r.started_at, rt.breaker_opened
		FROM run_targets rt JOIN runs r ON r.id = rt.run_id WHERE rt.target_id = ? ORDER BY rt.run_id DESC LIMIT 1`
	qLatestFinished = `SELECT rt.run_id, rt.status, rt.verdicts, rt.transient, rt.client_errors, rt.unavailable, r.started_at, rt.breaker_opened
		FROM run_targets rt JOIN runs r ON r.id = rt.run_id WHERE rt.target_id = ? AND r.status IN ('complete', 'partial') AND rt.status != 'aborted' ORDER BY rt.run_id DESC LIMIT 2`
	// A target's finished runs before a run, latest first, at most a
	// number: how far back its breaker kept opening
	// (driftprobe_breaker_opened_runs, read only while it did in the
	// latest two).
	qFinishedBefore = `SELECT rt.run_id, rt.status, rt.verdicts, rt.transient, rt.client_errors, rt.unavailable, r.started_at, rt.breaker_opened
		FROM run_targets rt JOIN runs r ON r.id = rt.run_id WHERE rt.target_id = ? AND rt.run_id < ? AND r.status IN ('complete', 'partial') AND rt.status != 'aborted' ORDER BY rt.run_id DESC LIMIT ?`
	// Whether a finished full run between two runs (exclusive) did not
	// run the target: the configuration in force then had it disabled or
	// removed, so what the target's runs before found is stale. Subset
	// runs (SubsetRunNote) run only some targets and prove nothing; an
	// aborted run may have stopped before it reached the target. Reads
	// the runs after the first one (by id) up to the first that did not
	// run the target: for a target every run runs, none.
	qSkippedBetween = `SELECT EXISTS (SELECT 1 FROM runs r WHERE r.id > ? AND r.id < ? AND r.status IN ('complete', 'partial') AND r.note != '` + SubsetRunNote + `'
		AND NOT EXISTS (SELECT 1 FROM run_targets rt WHERE rt.run_id = r.id AND rt.target_id = ?))`
	// Account-level enforcement in one target-run (first samples).
	qAbuse = `SELECT COUNT(*) FROM observations WHERE run_id = ? AND target_id = ? AND class = 'abuse_block' AND sample = 0`
	// Answers with something the classifier did not know (storage keeps
	// it in observations.unknown).
	qUnknown = `SELECT COUNT(*) FROM observations WHERE run_id = ? AND target_id = ? AND unknown != '' AND sample = 0`
	// Categories a confirmed flip introduced on a target: the category
	// was first seen firing on the target (target_categories.first_run)
	// in a run where an event recorded the target's flips, the event
	// lists it in new_categories, and one of the target's flipped probes
	// in the event fires with it. The time is the event's first update
	// about the target in that run (target_id 0: an update written before
	// migration 0011, which did not record it). CROSS JOIN fixes the join
	// order: from the composition history (targets x vocabulary) through
	// each target's events, never a scan of event_probes.
	qNewCategories = `SELECT tc.target_id, tc.category, ep.after,
		COALESCE((SELECT u.at FROM event_updates u WHERE u.event_id = e.id AND u.run_id = tc.first_run AND u.target_id IN (tc.target_id, 0) ORDER BY u.id LIMIT 1), '')
		FROM target_categories tc CROSS JOIN event_targets et CROSS JOIN events e CROSS JOIN event_probes ep
		WHERE et.target_id = tc.target_id AND e.id = et.event_id AND ep.event_id = e.id AND ep.target_id = tc.target_id
		  AND instr(',' || e.new_categories || ',', ',' || tc.category || ',') > 0
		  AND instr(',' || substr(ep.after, instr(ep.after, '|') + 1) || ',', ',' || tc.category || ',') > 0`
)

// collectHolds exports, per GitHub API origin and scope (HoldScopeHost: an
// outage, a row with an empty credential; HoldScopeCredential: a rate
// limit of a credential), the end of the latest GitHub wait in force at
// c.now: while it lasts no delivery pass sends anything to GitHub (see
// ghissue). A wait that has ended is not exported (its row stays until
// the next pass GitHub answers deletes it), and neither is a row whose
// until does not parse (ghissue reads it as no wait either). Several
// credentials' rate limits on one origin (a renamed token variable, two
// configurations sharing the database) are one series, the latest end:
// the credential is never a label. A query or scan error fails the
// collection (HTTP 500), as for every database series.
func (c *DBCollector) collectHolds(ctx context.Context, ch chan<- prometheus.Metric) {
	rows, err := c.db.QueryContext(ctx, qGitHubHolds)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.holdUntil, fmt.Errorf("github holds: %w", err))
		return
	}
	defer rows.Close()
	now := c.now()
	latest := map[[2]string]time.Time{} // api, scope
	for rows.Next() {
		var api, credential, until string
		if err := rows.Scan(&api, &credential, &until); err != nil {
			ch <- prometheus.NewInvalidMetric(c.holdUntil, fmt.Errorf("github holds: %w", err))
			return
		}
		end := storage.ParseTime(until)
		if !end.After(now) {
			continue
		}
		scope := HoldScopeCredential
		if credential == "" {
			scope = HoldScopeHost
		}
		if k := [2]string{api, scope}; end.After(latest[k]) {
			latest[k] = end
		}
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.holdUntil, fmt.Errorf("github holds: %w", err))
		return
	}
	for k, end := range latest {
		ch <- prometheus.MustNewConstMetric(c.holdUntil, prometheus.GaugeValue, float64(end.UnixNano())/1e9, k[0], k[1])
	}
}

// collectNewCategories exports, per target and category, when the event
// whose confirmed flips first made the category fire on the target was
// recorded there: composition changes on identical bytes, which page
// (DriftprobeNewCategoryActive, gap-proof like the event timestamps). A
// category a baseline brings (a probe whose first answers were 429s and
// confirms late, a probe added by a new corpus version) is learned by
// detection without a flip and has no series; a category is new on a
// target once, so its series never changes. Label values are bounded: the
// configured targets and the normalized vocabulary.
func (c *DBCollector) collectNewCategories(ctx context.Context, ch chan<- prometheus.Metric, names map[int64]string) {
	rows, err := c.db.QueryContext(ctx, qNewCategories)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.newCategory, err)
		return
	}
	defer rows.Close()
	latest := map[[2]string]time.Time{}
	for rows.Next() {
		var id int64
		var cat, after, at string
		if err := rows.Scan(&id, &cat, &after, &at); err != nil {
			ch <- prometheus.NewInvalidMetric(c.newCategory, err)
			return
		}
		t, ok := names[id]
		if !ok || !slices.Contains(probes.Categories, cat) {
			continue
		}
		if cls, cats := split(after); !probes.Class(cls).IsBlock() || !slices.Contains(cats, cat) {
			continue
		}
		when := storage.ParseTime(at)
		if when.IsZero() {
			continue
		}
		k := [2]string{t, cat}
		if prev, ok := latest[k]; !ok || when.After(prev) {
			latest[k] = when
		}
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.newCategory, err)
		return
	}
	for k, at := range latest {
		ch <- prometheus.MustNewConstMetric(c.newCategory, prometheus.GaugeValue, float64(at.UnixNano())/1e9, k[0], k[1])
	}
}

// Input changes (driftprobe_input_change_*). input_changes has no index
// but its primary key and is never pruned, so a scrape never searches it
// by target: the collector keeps, per target and cause, the latest run that
// recorded input changes, and each scrape reads only the rows recorded
// since the last one (a rowid range). The first scrape of a collector (a
// one-shot run's only one) reads every row once.
const (
	// The highest row id (lower than the cache's watermark: the database
	// was replaced by an older copy, start over).
	qMaxInputChange = `SELECT COALESCE(MAX(id), 0) FROM input_changes`
	// Rows after the watermark, in id order.
	qInputChangesAfter = `SELECT id, run_id, target_id, cause, probe_id FROM input_changes WHERE id > ? ORDER BY id`
	// A run's end (its start, for a run never marked finished: detection
	// runs only after a run finished, so none should be).
	qRunEnd = `SELECT COALESCE(finished_at, started_at) FROM runs WHERE id = ?`
)

// inputCache holds, per target id and cause, the latest run that recorded
// input changes of the cause on the target and the probes it restarted.
// Rows are final once visible: detection inserts a run's rows in the
// transaction that detects it, at most once per run, in increasing row
// ids, and nothing updates or deletes them; so upTo, the highest row id
// read, is a watermark.
type inputCache struct {
	mu     sync.Mutex
	upTo   int64
	latest map[inputKey]*inputRun
}

type inputKey struct {
	target int64
	cause  string
}

// inputRun is the latest run that recorded input changes of a cause on a
// target.
type inputRun struct {
	run    int64
	end    time.Time
	probes map[string]bool // distinct probe ids
}

// collectInputChanges exports, per configured target and cause (request,
// origin, state: InputChangeCauses), when the latest run that restarted probes'
// baselines on the target for that cause ended, and how many probes it
// restarted. A baseline restart is a blind spot: a provider change at the
// same moment becomes part of the new baseline, so
// DriftprobeBaselinesRestarted tickets on how recent the timestamp is
// (gap-proof, like the event timestamps: a scrape gap, a restart or a
// Prometheus first seeing an old database re-exports an old value). No
// series before a target's first input change of a cause; a run that
// recorded causes of both kinds (a move back to an endpoint whose parked
// state resumes, with probes whose bytes changed meanwhile) counts under
// each. names are the configured targets the database knows: other
// targets, and causes outside InputChangeCauses, export nothing. The
// cache changes only when every query succeeded; on an error both
// families are invalid for the scrape.
func (c *DBCollector) collectInputChanges(ctx context.Context, ch chan<- prometheus.Metric, names map[int64]string) {
	ic := &c.inputs
	ic.mu.Lock()
	defer ic.mu.Unlock()
	fail := func(err error) {
		ch <- prometheus.NewInvalidMetric(c.inputAt, err)
		ch <- prometheus.NewInvalidMetric(c.inputProbes, err)
	}
	var maxID int64
	if err := c.db.QueryRowContext(ctx, qMaxInputChange).Scan(&maxID); err != nil {
		fail(err)
		return
	}
	upTo, latest := ic.upTo, ic.latest
	if maxID < upTo || latest == nil {
		upTo, latest = 0, map[inputKey]*inputRun{}
	}
	// Read the new rows into copies of the entries they touch.
	changed := map[inputKey]*inputRun{}
	if maxID > upTo {
		rows, err := c.db.QueryContext(ctx, qInputChangesAfter, upTo)
		if err != nil {
			fail(err)
			return
		}
		for rows.Next() {
			var id, run, target int64
			var cause, probe string
			if err := rows.Scan(&id, &run, &target, &cause, &probe); err != nil {
				rows.Close()
				fail(err)
				return
			}
			upTo = max(upTo, id)
			if !slices.Contains(InputChangeCauses, cause) {
				continue
			}
			k := inputKey{target, cause}
			cur := changed[k]
			if cur == nil {
				cur = latest[k]
			}
			switch {
			case cur == nil || run > cur.run:
				cur = &inputRun{run: run, probes: map[string]bool{}}
			case run < cur.run:
				continue // an older run's rows: not the latest
			case changed[k] == nil:
				cur = &inputRun{run: cur.run, end: cur.end, probes: maps.Clone(cur.probes)}
			}
			cur.probes[probe] = true
			changed[k] = cur
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			fail(err)
			return
		}
	}
	for _, r := range changed {
		if !r.end.IsZero() {
			continue
		}
		var end sql.NullString
		if err := c.db.QueryRowContext(ctx, qRunEnd, r.run).Scan(&end); err != nil && !errors.Is(err, sql.ErrNoRows) {
			fail(err)
			return
		}
		r.end = storage.ParseTime(end.String) // zero for a run the database lacks: not exported
	}
	// Every query succeeded: commit (entries of latest are never changed
	// in place, so nothing above touched the cache).
	maps.Copy(latest, changed)
	ic.upTo, ic.latest = upTo, latest
	for k, r := range latest {
		t, ok := names[k.target]
		if !ok || r.end.IsZero() {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.inputAt, prometheus.GaugeValue, float64(r.end.UnixNano())/1e9, t, k.cause)
		ch <- prometheus.MustNewConstMetric(c.inputProbes, prometheus.GaugeValue, float64(len(r.probes)), t, k.cause)
	}
}

// latestRow is one target-run summary.
type latestRow struct {
	run                                        int64
	status                                     string
	verdicts, transient, clientErrors, unavail float64
	started                                    time.Time
	breaker                                    bool // the target's breaker opened in the run
}

// latestRows runs q (qLatestRun, qLatestFinished, qFinishedBefore) with
// args (the target's id first) and keeps the rows of runs started at or
// after since.
func (c *DBCollector) latestRows(ctx context.Context, q string, since time.Time, args ...any) ([]latestRow, error) {
	rows, err := c.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []latestRow
	for rows.Next() {
		var r latestRow
		var started string
		if err := rows.Scan(&r.run, &r.status, &r.verdicts, &r.transient, &r.clientErrors, &r.unavail, &started, &r.breaker); err != nil {
			return nil, err
		}
		if !since.IsZero() {
			if at := storage.ParseTime(started); at.IsZero() || at.Before(since) {
				continue
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// collectLatestRuns exports, per configured target, what its latest
// finished runs found: degradation, answers by outcome (the latest and the
// one before), account-level enforcement and how many of them in a row
// opened the target's circuit breaker. A finished run is one not
// aborted: an interrupted run (SIGTERM, a deadline, a full disk) stopped
// before detection could answer for the target, so it neither marks the
// target degraded nor clears what the run before it found, even for a
// target that finished inside it. Abuse blocks are the exception:
// enforcement seen by an interrupted run is still enforcement, so the
// interrupted run's count counts when it is the larger.
//
// A target's run is stale once a later finished full run did not run the
// target (qSkippedBetween): the target was disabled or removed then, and
// what its last run before found, months old perhaps, must not page
// again when it is enabled again (in whatever process: a restarted serve,
// a one-shot run). A target whose latest run is stale has none of these
// series until it runs again; a previous run before such a gap is no
// previous run. A target enabled again in this process
// (TargetSet.EnabledSince) also has them only from runs started since.
func (c *DBCollector) collectLatestRuns(ctx context.Context, ch chan<- prometheus.Metric, names map[int64]string) {
	fail := func(err error) { ch <- prometheus.NewInvalidMetric(c.abuse, err) }
	abuseOf := func(run, target int64) (float64, error) {
		var n float64
		err := c.db.QueryRowContext(ctx, qAbuse, run, target).Scan(&n)
		return n, err
	}
	// skipped: whether a finished full run after run `after` (and
	// before run `before`, 0: any later) did not run the target.
	skipped := func(target, after, before int64) (bool, error) {
		if before == 0 {
			before = math.MaxInt64
		}
		var b bool
		err := c.db.QueryRowContext(ctx, qSkippedBetween, after, before, target).Scan(&b)
		return b, err
	}
	outcomes := func(d *prometheus.Desc, r latestRow, t string) {
		for _, o := range []struct {
			outcome string
			v       float64
		}{{OutcomeVerdict, r.verdicts}, {OutcomeTransient, r.transient}, {OutcomeClientError, r.clientErrors}, {OutcomeUnavailable, r.unavail}} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, o.v, t, o.outcome)
		}
	}
	for id, t := range names {
		since, ok := c.targets.EnabledSince(t)
		if !ok {
			continue
		}
		latest, err := c.latestRows(ctx, qLatestRun, since, id)
		if err != nil {
			fail(err)
			return
		}
		if len(latest) == 0 {
			continue // no run since it was (re)enabled: run ids follow start times
		}
		if stale, err := skipped(id, latest[0].run, 0); err != nil {
			fail(err)
			return
		} else if stale {
			continue // disabled since its latest run, not run again yet
		}
		finished, err := c.latestRows(ctx, qLatestFinished, since, id)
		if err != nil {
			fail(err)
			return
		}
		if len(finished) > 0 && finished[0].run != latest[0].run {
			// Its latest run was interrupted: is the finished one before
			// it from before a disable?
			stale, err := skipped(id, finished[0].run, latest[0].run)
			if err != nil {
				fail(err)
				return
			}
			if stale {
				finished = nil
			}
		}
		if len(finished) > 1 {
			stale, err := skipped(id, finished[1].run, finished[0].run)
			if err != nil {
				fail(err)
				return
			}
			if stale {
				finished = finished[:1]
			}
		}
		abuse, err := abuseOf(latest[0].run, id)
		if err != nil {
			fail(err)
			return
		}
		deg, unknown := 0.0, 0.0
		if len(finished) > 0 {
			if err := c.db.QueryRowContext(ctx, qUnknown, finished[0].run, id).Scan(&unknown); err != nil {
				fail(err)
				return
			}
			if finished[0].run != latest[0].run {
				n, err := abuseOf(finished[0].run, id)
				if err != nil {
					fail(err)
					return
				}
				abuse = max(abuse, n)
			}
			if finished[0].status == "degraded" {
				deg = 1
			}
			outcomes(c.lastRunProbes, finished[0], t)
			if len(finished) > 1 {
				outcomes(c.prevRunProbes, finished[1], t)
			}
		}
		// Consecutive finished runs, latest first, whose breaker opened:
		// what DriftprobeBreakerOpen tickets on (a breaker lives only
		// within a run, and driftprobe_breaker_open is 0 between runs).
		// Interrupted runs neither count nor break the streak; a gap where
		// the target was disabled ends it, as for the previous run.
		streak := 0
		for _, r := range finished {
			if !r.breaker {
				break
			}
			streak++
		}
		if streak == 2 {
			more, err := c.latestRows(ctx, qFinishedBefore, since, id, finished[1].run, BreakerRunsCap-streak)
			if err != nil {
				fail(err)
				return
			}
			prev := finished[1].run
			for _, r := range more {
				if !r.breaker {
					break
				}
				if stale, err := skipped(id, r.run, prev); err != nil {
					fail(err)
					return
				} else if stale {
					break
				}
				streak++
				prev = r.run
			}
		}
		ch <- prometheus.MustNewConstMetric(c.abuse, prometheus.GaugeValue, abuse, t)
		ch <- prometheus.MustNewConstMetric(c.unknown, prometheus.GaugeValue, unknown, t)
		ch <- prometheus.MustNewConstMetric(c.degraded, prometheus.GaugeValue, deg, t)
		ch <- prometheus.MustNewConstMetric(c.breakerRuns, prometheus.GaugeValue, float64(streak), t)
	}
}

// runCache holds what the collector summed over finished runs, so a
// scrape reads only the runs that finished since the last one. Every run
// with an id up to upTo is finished and in base; above holds the finished
// runs after a run that was still running at a scrape (a lost lease's
// overlap; normally none), each read once, added at export until the
// watermark passes them. Sums are integers (spend in nano-dollars,
// durations in microseconds), exact in any order: every process (a
// one-shot run's, a restarted serve) computes the same values, and the
// counters never go backwards.
type runCache struct {
	mu    sync.Mutex
	upTo  int64
	base  runTotals
	above map[int64]*runSummary
}

// runTotals is what a set of finished runs adds up to.
type runTotals struct {
	targets map[int64]*targetTotals
	byState map[string]float64 // runs by status
	last    map[string]lastFinish
	// lastMeasured is the latest scheduled (not subset) finished run in
	// which some target answered with a verdict (runSummary.measured),
	// firstFinished the earliest scheduled finished run, measured or not;
	// text "" before the first.
	lastMeasured, firstFinished lastFinish
	durN                        uint64
	durUS                       int64    // total wall time, microseconds
	durCum                      []uint64 // per runBuckets: runs at most that long
}

// targetTotals is what a target's summaries (run_targets rows) add up to.
type targetTotals struct {
	rows                                                                         int64
	verdicts, transient, clientErrors, unavail, requests, retries, in, out, nUSD int64
}

func (t *targetTotals) add(o targetTotals) {
	t.rows += o.rows
	t.verdicts += o.verdicts
	t.transient += o.transient
	t.clientErrors += o.clientErrors
	t.unavail += o.unavail
	t.requests += o.requests
	t.retries += o.retries
	t.in += o.in
	t.out += o.out
	t.nUSD += o.nUSD
}

type lastFinish struct {
	epoch float64
	text  string
	took  float64 // seconds; 0 when unknown
}

// runSummary is one finished run: its status, end and duration, and (for
// a run kept in above) its per-target summaries.
type runSummary struct {
	id          int64
	status, fin string
	epoch, took sql.NullFloat64
	abandoned   bool
	subset      bool // a compare --run of some targets: not the schedule's run
	measured    bool // some target answered a probe with a verdict (abuse_block included)
	targets     map[int64]targetTotals
}

func newRunTotals() runTotals {
	return runTotals{targets: map[int64]*targetTotals{}, byState: map[string]float64{}, last: map[string]lastFinish{}, durCum: make([]uint64, len(runBuckets))}
}

// clone returns a copy of t that adding to leaves t as it was.
func (t *runTotals) clone() runTotals {
	c := runTotals{targets: make(map[int64]*targetTotals, len(t.targets)), byState: maps.Clone(t.byState), last: maps.Clone(t.last),
		lastMeasured: t.lastMeasured, firstFinished: t.firstFinished, durN: t.durN, durUS: t.durUS, durCum: slices.Clone(t.durCum)}
	for id, v := range t.targets {
		vv := *v
		c.targets[id] = &vv
	}
	return c
}

// addTarget adds summaries of a target.
func (t *runTotals) addTarget(id int64, v targetTotals) {
	if v.rows == 0 {
		return
	}
	if t.targets[id] == nil {
		t.targets[id] = &targetTotals{}
	}
	t.targets[id].add(v)
}

// addRun adds a finished run's status, end and duration (its per-target
// summaries are added separately).
func (t *runTotals) addRun(r *runSummary) {
	t.byState[r.status]++
	// A subset run (compare --run) is no scheduled run: a monitor whose
	// schedule stopped must look stale however many comparisons ran.
	if r.epoch.Valid && r.fin != "" && !r.subset {
		if l, ok := t.last[r.status]; !ok || r.epoch.Float64 > l.epoch {
			t.last[r.status] = lastFinish{r.epoch.Float64, r.fin, r.took.Float64}
		}
		// A finished run measured something when a target answered with
		// a verdict: a run in which every answer was transient, a client
		// error (a revoked key's 401s leave a run complete) or an
		// unavailable filter measured nothing, whatever its status, and
		// neither does an aborted run (detection never confirmed it).
		finished := r.status == storage.RunComplete || r.status == storage.RunPartial
		if finished && r.measured && (t.lastMeasured.text == "" || r.epoch.Float64 > t.lastMeasured.epoch) {
			t.lastMeasured = lastFinish{r.epoch.Float64, r.fin, r.took.Float64}
		}
		if finished && (t.firstFinished.text == "" || r.epoch.Float64 < t.firstFinished.epoch) {
			t.firstFinished = lastFinish{r.epoch.Float64, r.fin, r.took.Float64}
		}
	}
	// A run a dead process left running ends when it was found, not when
	// it stopped: not a duration.
	if r.took.Valid && r.fin != "" && !r.abandoned {
		t.durN++
		t.durUS += int64(math.Round(r.took.Float64 * 1e6))
		for i, b := range runBuckets {
			if r.took.Float64 <= b {
				t.durCum[i]++
			}
		}
	}
}

// update reads the runs that finished since the last scrape and returns
// the totals of every finished run. targets are every target's id. The
// cache changes only when every query succeeded.
func (c *DBCollector) update(ctx context.Context, targets []int64) (runTotals, error) {
	rc := &c.cache
	var maxID int64
	if err := c.db.QueryRowContext(ctx, qMaxRun).Scan(&maxID); err != nil {
		return runTotals{}, err
	}
	if maxID < rc.upTo || rc.base.targets == nil {
		// First scrape, or a database replaced by an older copy.
		rc.upTo, rc.base, rc.above = 0, newRunTotals(), map[int64]*runSummary{}
	}
	rows, err := c.db.QueryContext(ctx, qRunsAfter, rc.upTo)
	if err != nil {
		return runTotals{}, err
	}
	// prefix: the finished runs before the first one still running (the
	// watermark moves to the last of them); beyond: new finished runs
	// after it.
	var prefix, beyond []*runSummary
	blocked := false
	for rows.Next() {
		r := &runSummary{}
		var note string
		if err := rows.Scan(&r.id, &r.status, &r.fin, &r.epoch, &r.took, &note, &r.measured); err != nil {
			rows.Close()
			return runTotals{}, err
		}
		r.abandoned = strings.HasPrefix(note, "abandoned:")
		r.subset = note == SubsetRunNote
		switch {
		case r.status == "running":
			blocked = true
		case !blocked:
			prefix = append(prefix, r)
		case rc.above[r.id] == nil:
			beyond = append(beyond, r)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return runTotals{}, err
	}
	// Every target's summaries of the prefix, in one indexed range each
	// (runs kept in above included: their rows were not added to base).
	// A finished run's summaries were written with its status, and runs
	// started later have higher ids: the range holds exactly the prefix.
	add := map[int64]targetTotals{}
	if len(prefix) > 0 {
		hi := prefix[len(prefix)-1].id
		for _, id := range targets {
			var v targetTotals
			if err := c.db.QueryRowContext(ctx, qTargetRunsSum, id, rc.upTo, hi).Scan(&v.rows, &v.verdicts, &v.transient, &v.clientErrors, &v.unavail,
				&v.requests, &v.retries, &v.in, &v.out, &v.nUSD); err != nil {
				return runTotals{}, err
			}
			add[id] = v
		}
	}
	for _, r := range beyond {
		r.targets = map[int64]targetTotals{}
		rows, err := c.db.QueryContext(ctx, qRunTargetsOf, r.id)
		if err != nil {
			return runTotals{}, err
		}
		for rows.Next() {
			var id int64
			v := targetTotals{rows: 1}
			if err := rows.Scan(&id, &v.verdicts, &v.transient, &v.clientErrors, &v.unavail, &v.requests, &v.retries, &v.in, &v.out, &v.nUSD); err != nil {
				rows.Close()
				return runTotals{}, err
			}
			r.targets[id] = v
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return runTotals{}, err
		}
	}

	// Every query succeeded: move the watermark over the prefix, keep the
	// runs beyond it.
	for _, r := range prefix {
		if kept := rc.above[r.id]; kept != nil {
			r = kept
			delete(rc.above, r.id)
		}
		rc.base.addRun(r)
		rc.upTo = r.id
	}
	for id, v := range add {
		rc.base.addTarget(id, v)
	}
	for _, r := range beyond {
		rc.above[r.id] = r
	}
	if len(rc.above) == 0 {
		return rc.base, nil
	}
	total := rc.base.clone()
	for _, r := range rc.above {
		total.addRun(r)
		for id, v := range r.targets {
			total.addTarget(id, v)
		}
	}
	return total, nil
}

// collectRuns exports what is summed over finished runs: runs by status
// and the latest end per status, the recorded_* counters per configured
// target and the run-duration histogram. Run summaries are never pruned,
// so these only grow, whichever process exports them: a one-shot run's
// textfile or push carries every run so far and increase() works as it
// does on serve's /metrics. targets are every target's id, names the
// configured ones'.
func (c *DBCollector) collectRuns(ctx context.Context, ch chan<- prometheus.Metric, targets []int64, names map[int64]string) {
	c.cache.mu.Lock()
	defer c.cache.mu.Unlock()
	tot, err := c.update(ctx, targets)
	if err != nil {
		for _, d := range []*prometheus.Desc{c.runs, c.requests, c.duration} {
			ch <- prometheus.NewInvalidMetric(d, err)
		}
		return
	}
	// Every finished status from the start, 0 until its first run: a
	// status's first run is then an increase() from 0.
	byState := maps.Clone(tot.byState)
	for _, st := range RunStatuses {
		byState[st] += 0
	}
	for st, n := range byState {
		ch <- prometheus.MustNewConstMetric(c.runs, prometheus.CounterValue, n, st)
	}
	for st, l := range tot.last {
		t := storage.ParseTime(l.text)
		if t.IsZero() {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.lastRun, prometheus.GaugeValue, float64(t.UnixNano())/1e9, st)
	}
	// The overdue time follows the latest scheduled run that measured
	// something: finished (complete, or partial: some target degraded or
	// cut short, the others measured, and DriftprobeTargetDegraded
	// tickets the one that was not) with at least one target answering a
	// probe with a verdict or account-level enforcement. Runs that
	// measured nothing let it pass: aborted ones, ones that failed before
	// they were recorded, and finished ones in which every answer was
	// transient, a client error or an unavailable filter (an outage, a
	// revoked key: what `driftprobe run` exits 3 on and serve counts as a
	// failed run, internal/app.MeasuredNothing). Until a run has
	// measured something it follows the first finished run, so that a
	// deployment that never measured anything (a key wrong from the
	// start) goes stale as one that stopped measuring does.
	measured := tot.lastMeasured
	if measured.text == "" {
		measured = tot.firstFinished
	}
	if measuredAt := storage.ParseTime(measured.text); !measuredAt.IsZero() {
		if sch := c.schedule.Get(); sch != nil {
			if at, ok := Overdue(sch, measuredAt, time.Duration(measured.took*float64(time.Second))); ok {
				ch <- prometheus.MustNewConstMetric(c.overdue, prometheus.GaugeValue, float64(at.UnixNano())/1e9)
			}
		}
	}
	for id, v := range tot.targets {
		t, ok := names[id]
		if !ok {
			continue
		}
		f := func(n int64) float64 { return float64(n) }
		ch <- prometheus.MustNewConstMetric(c.probes, prometheus.CounterValue, f(v.verdicts), t, OutcomeVerdict)
		ch <- prometheus.MustNewConstMetric(c.probes, prometheus.CounterValue, f(v.transient), t, OutcomeTransient)
		ch <- prometheus.MustNewConstMetric(c.probes, prometheus.CounterValue, f(v.clientErrors), t, OutcomeClientError)
		ch <- prometheus.MustNewConstMetric(c.probes, prometheus.CounterValue, f(v.unavail), t, OutcomeUnavailable)
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, f(v.requests), t)
		ch <- prometheus.MustNewConstMetric(c.retries, prometheus.CounterValue, f(v.retries), t)
		ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.CounterValue, f(v.in), t, "input")
		ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.CounterValue, f(v.out), t, "output")
		ch <- prometheus.MustNewConstMetric(c.cost, prometheus.CounterValue, f(v.nUSD)/1e9, t)
	}
	buckets := make(map[float64]uint64, len(runBuckets))
	for i, b := range runBuckets {
		buckets[b] = tot.durCum[i] // every bucket present, also when empty
	}
	ch <- prometheus.MustNewConstHistogram(c.duration, tot.durN, float64(tot.durUS)/1e6, buckets)
}

// collectLastEvents exports, per target, kind and direction (as opened,
// like driftprobe_events_total), when the latest such event was recorded
// on the target: the first update of the event in the run the target
// joined it (its opening, for the target that opened it). Alerts page on
// how recent it is, which a scrape gap, a restart or a Prometheus that
// first sees an old database cannot fake, as they can a counter's first
// appearance. Flips merged into an open event later record nothing here,
// except a model change that turned a policy_change event into a
// model_change (qKindEscalations): that pages as one, once.
func (c *DBCollector) collectLastEvents(ctx context.Context, ch chan<- prometheus.Metric) {
	rows, err := c.db.QueryContext(ctx, `SELECT t.name, e.opened_kind, e.opened_direction, e.created_at,
		COALESCE((SELECT u.at FROM event_updates u WHERE u.event_id = e.id AND u.run_id = et.joined_run ORDER BY u.id LIMIT 1), '')
		FROM events e JOIN event_targets et ON et.event_id = e.id JOIN targets t ON t.id = et.target_id`)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.lastEvent, err)
		return
	}
	defer rows.Close()
	type key struct{ target, kind, direction string }
	latest := map[key]time.Time{}
	for rows.Next() {
		var k key
		var created, joined string
		if rows.Scan(&k.target, &k.kind, &k.direction, &created, &joined) != nil || !c.targets.Has(k.target) {
			continue
		}
		at := storage.ParseTime(joined)
		if at.IsZero() {
			if at = storage.ParseTime(created); at.IsZero() {
				continue
			}
		}
		if prev, ok := latest[k]; !ok || at.After(prev) {
			latest[k] = at
		}
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.lastEvent, err)
		return
	}
	// An event that opened as a policy change and became a model change
	// (a model change merged into it within window_runs): a model_change
	// recorded on the target whose flips escalated it, when they did.
	esc, err := c.db.QueryContext(ctx, qKindEscalations)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.lastEvent, err)
		return
	}
	defer esc.Close()
	for esc.Next() {
		k := key{kind: diff.KindModel}
		var opened, at string
		if esc.Scan(&k.target, &k.direction, &opened, &at) != nil || !c.targets.Has(k.target) {
			continue
		}
		when := storage.ParseTime(at)
		if when.IsZero() {
			continue
		}
		if prev, ok := latest[k]; !ok || when.After(prev) {
			latest[k] = when
		}
	}
	if err := esc.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.lastEvent, err)
		return
	}
	for k, at := range latest {
		ch <- prometheus.MustNewConstMetric(c.lastEvent, prometheus.GaugeValue, float64(at.UnixNano())/1e9, k.target, k.kind, k.direction)
	}
}

// qEventsOpened counts, per target, the events recorded there (opened
// there, or joined) by the kind and direction they opened with.
const qEventsOpened = `SELECT t.name, e.opened_kind, e.opened_direction, COUNT(*) FROM events e JOIN event_targets et ON et.event_id = e.id JOIN targets t ON t.id = et.target_id GROUP BY 1, 2, 3`

// collectEvents exports driftprobe_events_total. Per target, kind and
// direction: the events recorded on the target (opened there, or joined),
// by the kind and direction they opened with; and, under kind
// model_change, one for every event a model change merged into after it
// opened as a policy change (an escalation: it pages as a model change,
// DriftprobeModelChange), counted on the target whose flips made it one,
// with the direction the event opened with. The event's current direction
// can still move (tightened to mixed), and a counter whose labels move
// would decrease; the kind changes once, and only to model_change.
//
// Every configured target has a series for every kind and direction, 0
// until its first such event: increase() and rate() cannot see a series'
// first sample, so a counter born at 1 would hide nearly every event.
// names are the configured targets the database knows.
func (c *DBCollector) collectEvents(ctx context.Context, ch chan<- prometheus.Metric, names map[int64]string) {
	type key struct{ target, kind, direction string }
	counts := map[key]float64{}
	rows, err := c.db.QueryContext(ctx, qEventsOpened)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.events, err)
		return
	}
	for rows.Next() {
		var k key
		var n float64
		if err := rows.Scan(&k.target, &k.kind, &k.direction, &n); err != nil {
			rows.Close()
			ch <- prometheus.NewInvalidMetric(c.events, err)
			return
		}
		if c.targets.Has(k.target) {
			counts[k] += n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.events, err)
		return
	}
	esc, err := c.db.QueryContext(ctx, qKindEscalations)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.events, err)
		return
	}
	for esc.Next() {
		k := key{kind: diff.KindModel}
		var now, at string
		if err := esc.Scan(&k.target, &now, &k.direction, &at); err != nil {
			esc.Close()
			ch <- prometheus.NewInvalidMetric(c.events, err)
			return
		}
		if c.targets.Has(k.target) {
			counts[k]++
		}
	}
	esc.Close()
	if err := esc.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.events, err)
		return
	}
	configured, ok := c.targets.Names()
	if !ok {
		for _, n := range names {
			configured = append(configured, n)
		}
	}
	for _, t := range configured {
		for _, kind := range EventKinds {
			for _, dir := range EventDirections {
				counts[key{t, kind, dir}] += 0
			}
		}
	}
	for k, v := range counts {
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, v, k.target, k.kind, k.direction)
	}
}

// qKindEscalations finds, per event whose kind became model_change after
// it opened as another kind, the first update that made it one (detection
// appends "; kind is now model_change" to that update's detail): the
// target whose flips did (the update's target; the opener's for an update
// written before migration 0011), the event's direction (now), the
// direction it opened with and the update's time. Reads the few escalated
// events, then their updates through the event_updates (event_id, id)
// index.
var qKindEscalations = `SELECT t.name, e.direction, e.opened_direction, u.at
	FROM events e CROSS JOIN event_updates u JOIN targets t ON t.id = CASE WHEN u.target_id != 0 THEN u.target_id ELSE e.target_id END
	WHERE e.kind = '` + diff.KindModel + `' AND e.opened_kind != '` + diff.KindModel + `' AND u.event_id = e.id
	  AND u.id = (SELECT MIN(v.id) FROM event_updates v WHERE v.event_id = e.id
	    AND (v.kind = '` + diff.KindModel + `' OR (v.kind = '' AND instr(v.detail, '; kind is now ` + diff.KindModel + `') > 0)))`

// collectAttribution exports the latest stored attribution reports (none
// without the config's attribution block). Label values are bounded: a
// target must be one the database knows (names: targets that ran, and
// with OnlyTargets are still configured), a category one of the normalized vocabulary, direction and
// attribution their documented values; anything else in a report is
// skipped, never exported.
func (c *DBCollector) collectAttribution(ctx context.Context, ch chan<- prometheus.Metric, names map[int64]string) {
	latest, ok, err := storage.LatestAttributionReports(ctx, c.db)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.attrOK, err)
		return
	}
	if latest == nil {
		return
	}
	success := 0.0
	if latest.OK() {
		success = 1
	}
	ch <- prometheus.MustNewConstMetric(c.attrOK, prometheus.GaugeValue, success)
	if ok == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.attrTime, prometheus.GaugeValue, float64(ok.CreatedAt.UnixNano())/1e9)
	var rep attribution.Report
	if err := json.Unmarshal(ok.Report, &rep); err != nil {
		// A report that cannot be read exports no changes; an invalid
		// metric here would fail a whole textfile or Pushgateway export.
		return
	}
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	category := func(cat string) (string, bool) {
		if cat == "" {
			return "all", true
		}
		return cat, slices.Contains(probes.Categories, cat)
	}
	type change struct{ target, category, direction, attribution string }
	changes := map[change]float64{}
	for _, r := range rep.Changes {
		cat, okCat := category(r.Category)
		if !known[r.Target] || !okCat || (r.Direction != attribution.Up && r.Direction != attribution.Down) ||
			(r.Attribution != attribution.Provider && r.Attribution != attribution.Traffic && r.Attribution != attribution.Inconclusive) {
			continue
		}
		changes[change{r.Target, cat, r.Direction, r.Attribution}]++
	}
	for k, v := range changes {
		ch <- prometheus.MustNewConstMetric(c.changes, prometheus.GaugeValue, v, k.target, k.category, k.direction, k.attribution)
	}
	uncovered := map[[2]string]bool{}
	for _, u := range rep.Uncovered {
		if cat, okCat := category(u.Category); known[u.Target] && okCat && u.Category != "" {
			uncovered[[2]string{u.Target, cat}] = true
		}
	}
	for k := range uncovered {
		ch <- prometheus.MustNewConstMetric(c.uncovered, prometheus.GaugeValue, 1, k[0], k[1])
	}
}

// grouped emits one metric per row: n label columns then a value. With
// byTarget the first label is a target, and rows of targets not in
// c.targets are skipped.
func (c *DBCollector) grouped(ctx context.Context, ch chan<- prometheus.Metric, d *prometheus.Desc, vt prometheus.ValueType, q string, n int, byTarget bool) {
	rows, err := c.db.QueryContext(ctx, q)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(d, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		labels := make([]string, n)
		dest := make([]any, n+1)
		for i := range labels {
			dest[i] = &labels[i]
		}
		var v float64
		dest[n] = &v
		if err := rows.Scan(dest...); err != nil {
			ch <- prometheus.NewInvalidMetric(d, err)
			return
		}
		if byTarget && !c.targets.Has(labels[0]) {
			continue
		}
		ch <- prometheus.MustNewConstMetric(d, vt, v, labels...)
	}
}

func split(key string) (string, []string) {
	c, cats, _ := strings.Cut(key, "|")
	if cats == "" {
		return c, nil
	}
	return c, strings.Split(cats, ",")
}
