package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
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

// Metrics holds driftprobe's process-level instruments. State that must
// survive restarts and one-shot runs (verdict composition, events, runs,
// outbox) is read from the database at scrape time by a DBCollector.
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

	mu       sync.Mutex
	breakers map[string]bool // targets whose breaker state was reported
}

// TargetSet is the set of target names the configuration in force runs:
// configured and enabled. Until Set is first called it holds every name,
// so callers that never load a configuration see every target.
type TargetSet struct {
	mu    sync.RWMutex
	names map[string]bool // nil until Set: every name
	ever  map[string]bool // every name Set ever held
}

// Set replaces the set and returns the names an earlier Set held that it
// no longer does (sorted).
func (s *TargetSet) Set(names []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = make(map[string]bool, len(names))
	if s.ever == nil {
		s.ever = map[string]bool{}
	}
	for _, n := range names {
		s.names[n] = true
		s.ever[n] = true
	}
	var gone []string
	for n := range s.ever {
		if !s.names[n] {
			gone = append(gone, n)
		}
	}
	slices.Sort(gone)
	return gone
}

// Has reports whether name is in the set (always, before the first Set,
// and for a nil set).
func (s *TargetSet) Has(name string) bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.names == nil || s.names[name]
}

// SetConfigured records the targets the configuration in force runs (its
// enabled targets). The DB collector stops exporting series of any other
// target (a removed or disabled target's abuse blocks or degradation must
// not alert forever), and the process instruments drop their series.
func (m *Metrics) SetConfigured(names []string) {
	for _, n := range m.Configured.Set(names) {
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

// SetBreaker records a change of the target's circuit breaker during a run.
func (m *Metrics) SetBreaker(target string, open bool) {
	v := 0.0
	if open {
		v = 1
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
// a run, so none is open any more: every breaker series reads 0 (and
// DriftprobeBreakerOpen, which looks at this gauge, cannot fire between
// runs on the state the last run ended in).
func (m *Metrics) RunEnded(targets ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.breakers == nil {
		m.breakers = map[string]bool{}
	}
	for _, t := range targets {
		m.breakers[t] = true
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
			Help: "The configured run interval (for staleness alerts)."}),
		Configured: &TargetSet{},
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: BuildInfo, Help: "Build information.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()}})
	build.Set(1)
	reg.MustRegister(m.Requests, m.Retries, m.Tokens, m.Cost, m.Breaker, m.RunDuration, m.ReloadOK, m.ReloadTime, m.LockSkips, m.ScheduleSecond, build)
	return m
}

// RegisterRuntime adds the Go and process collectors (not in tests that
// compare exact output).
func RegisterRuntime(reg prometheus.Registerer) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// DBCollector reads current state from the database at scrape time.
type DBCollector struct {
	db      *sql.DB
	timeout time.Duration
	targets *TargetSet // nil: every target the database knows

	verdicts, active, events, open, runs, lastRun, outbox, abuse, degraded, dbSize, dbFree *prometheus.Desc
	changes, uncovered, attrTime, attrOK                                                   *prometheus.Desc
	lastEvent, lastRunProbes, probes, requests, retries, tokens, cost, duration            *prometheus.Desc
}

// NewDBCollector returns a collector over db.
func NewDBCollector(db *sql.DB) *DBCollector {
	return &DBCollector{db: db, timeout: 10 * time.Second,
		verdicts: prometheus.NewDesc(ProbeVerdicts, "Probes whose latest verdict is this class, per normalized category (\"none\" for verdicts without one); a probe with two categories counts in both. Account-level enforcement (driftprobe_abuse_blocks) leaves the latest verdict as it was.", []string{"target", "verdict", "category"}, nil),
		active:   prometheus.NewDesc(CategoryActive, "1 when at least one probe's confirmed baseline on the target is blocked with this category, else 0. Exported only once the target has a confirmed baseline (confirm_runs), so a new target's categories appear established, never as a 0 -> 1 change.", []string{"target", "category"}, nil),
		events:   prometheus.NewDesc(EventsTotal, "Change events recorded, by the kind and direction they opened with (so the counter never decreases as an event grows).", []string{"target", "kind", "direction"}, nil),
		open:     prometheus.NewDesc(EventsOpen, "Events not reverted.", []string{"target", "kind"}, nil),
		runs:     prometheus.NewDesc(RunsTotal, "Runs recorded, by status.", []string{"status"}, nil),
		lastRun:  prometheus.NewDesc(LastRunTimestamp, "End time of the latest run with this status.", []string{"status"}, nil),
		outbox:   prometheus.NewDesc(OutboxPending, "GitHub deliveries queued and not yet sent.", nil, nil),
		abuse:    prometheus.NewDesc(AbuseBlocks, "Probes answered with account-level enforcement (abuse_block) in the target's latest run.", []string{"target"}, nil),
		degraded: prometheus.NewDesc(TargetDegraded, "1 when the target's latest finished run was degraded (too many transient errors or unavailable filters, or an open breaker); an interrupted (aborted) run neither sets nor clears it.", []string{"target"}, nil),
		dbSize:   prometheus.NewDesc(DatabaseSize, "Size of the SQLite database (pages in use and free; the WAL file not included).", nil, nil),
		dbFree:   prometheus.NewDesc(DatabaseFree, "Free pages of the SQLite database, reused by later writes (VACUUM returns them to the file system).", nil, nil),
		changes: prometheus.NewDesc(ProductionChanges, "Production block-rate changes in the latest successful attribution report, by target, normalized category (\"all\": every block on the target), direction (up, down) and attribution (provider, traffic, inconclusive).",
			[]string{"target", "category", "direction", "attribution"}, nil),
		uncovered:     prometheus.NewDesc(UncoveredCategories, "1 for each category production blocks on the target that no corpus probe is tagged with (latest successful attribution report).", []string{"target", "category"}, nil),
		attrTime:      prometheus.NewDesc(AttributionTimestamp, "Time the latest successful attribution report was stored.", nil, nil),
		attrOK:        prometheus.NewDesc(AttributionSuccess, "1 when the latest attribution attempt (after a run) succeeded, 0 when it failed (Prometheus unreachable, bad data).", nil, nil),
		lastEvent:     prometheus.NewDesc(LastEventTimestamp, "Time the latest event of this kind and direction (as opened) was recorded on the target: opened there, or the target joined it.", []string{"target", "kind", "direction"}, nil),
		lastRunProbes: prometheus.NewDesc(LastRunProbes, "Probes of the target's latest finished (not aborted) run by how their first sample was answered: verdict, transient, client_error, filter_unavailable.", []string{"target", "outcome"}, nil),
		probes:        prometheus.NewDesc(RecordedProbes, "Probes answered in every recorded run, by how their first sample was answered (verdict, transient, client_error, filter_unavailable).", []string{"target", "outcome"}, nil),
		requests:      prometheus.NewDesc(RecordedRequests, "Provider request attempts (retries and extra samples included) of every recorded run.", []string{"target"}, nil),
		retries:       prometheus.NewDesc(RecordedRetries, "Retried attempts of every recorded run.", []string{"target"}, nil),
		tokens:        prometheus.NewDesc(RecordedTokens, "Tokens billed in every recorded run, by direction.", []string{"target", "direction"}, nil),
		cost:          prometheus.NewDesc(RecordedCostUSD, "Estimated spend of every recorded run from the target's price table, in USD.", []string{"target"}, nil),
		duration:      prometheus.NewDesc(RecordedRunDuration, "Wall time of every finished run (runs abandoned by a process that died excluded).", nil, nil),
	}
}

// OnlyTargets limits the per-target series to the targets in s (see
// Metrics.SetConfigured); series of the attribution report included.
func (c *DBCollector) OnlyTargets(s *TargetSet) *DBCollector {
	c.targets = s
	return c
}

// Describe implements prometheus.Collector.
func (c *DBCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.verdicts, c.active, c.events, c.open, c.runs, c.lastRun, c.outbox, c.abuse, c.degraded, c.dbSize, c.dbFree,
		c.changes, c.uncovered, c.attrTime, c.attrOK, c.lastEvent, c.lastRunProbes, c.probes, c.requests, c.retries, c.tokens, c.cost, c.duration} {
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
	active := map[[2]string]float64{}
	baselined := map[string]bool{}
	names := map[int64]string{}
	rows, err := c.db.QueryContext(ctx, `SELECT id, name FROM targets`)
	if err != nil {
		fail(c.verdicts, err)
		return
	}
	for rows.Next() {
		var id int64
		var n string
		if rows.Scan(&id, &n) == nil && c.targets.Has(n) {
			names[id] = n
		}
	}
	rows.Close()
	c.collectAttribution(ctx, ch, names)
	all, err := diff.AllStates(ctx, c.db)
	if err != nil {
		fail(c.verdicts, err)
		return
	}
	for id, sts := range all {
		t, ok := names[id]
		if !ok {
			continue
		}
		for _, st := range sts {
			cls, cats := split(st.LastVerdict)
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
	// Until a target has a confirmed baseline no category is known to be
	// active or not: exporting 0 then would make the first confirmed
	// baselines of a new target look like categories that started blocking.
	for t := range baselined {
		for _, cat := range probes.Categories {
			ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, active[[2]string{t, cat}], t, cat)
		}
	}

	c.grouped(ctx, ch, c.events, prometheus.CounterValue, `SELECT t.name, e.opened_kind, e.opened_direction, COUNT(*) FROM events e JOIN event_targets et ON et.event_id = e.id JOIN targets t ON t.id = et.target_id GROUP BY 1, 2, 3`, 3, true)
	c.grouped(ctx, ch, c.open, prometheus.GaugeValue, `SELECT t.name, e.kind, COUNT(*) FROM events e JOIN event_targets et ON et.event_id = e.id JOIN targets t ON t.id = et.target_id WHERE e.status = 'open' GROUP BY 1, 2`, 2, true)
	c.collectLastEvents(ctx, ch)
	c.grouped(ctx, ch, c.runs, prometheus.CounterValue, `SELECT status, COUNT(*) FROM runs WHERE status != 'running' GROUP BY 1`, 1, false)
	// Stored times are RFC 3339 with trailing zeros trimmed, so text order
	// is wrong within a second ("…:05Z" sorts after "…:05.5Z"): take the
	// row with the latest instant (SQLite returns the other column from
	// the row MAX picked) and read its exact text.
	rows, err = c.db.QueryContext(ctx, `SELECT status, finished_at, MAX(unixepoch(finished_at, 'subsec')) FROM runs WHERE status != 'running' GROUP BY 1`)
	if err != nil {
		fail(c.lastRun, err)
	} else {
		for rows.Next() {
			var st, fin string
			var epoch sql.NullFloat64
			if rows.Scan(&st, &fin, &epoch) == nil {
				if t, err := time.Parse(time.RFC3339Nano, fin); err == nil {
					ch <- prometheus.MustNewConstMetric(c.lastRun, prometheus.GaugeValue, float64(t.UnixNano())/1e9, st)
				}
			}
		}
		rows.Close()
	}
	c.collectRunDurations(ctx, ch)
	var pages, free, pageSize float64
	if err := c.db.QueryRowContext(ctx, `SELECT page_count, freelist_count, page_size FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()`).Scan(&pages, &free, &pageSize); err != nil {
		fail(c.dbSize, err)
	} else {
		ch <- prometheus.MustNewConstMetric(c.dbSize, prometheus.GaugeValue, pages*pageSize)
		ch <- prometheus.MustNewConstMetric(c.dbFree, prometheus.GaugeValue, free*pageSize)
	}
	var pending float64
	if err := c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox WHERE sent_at = ''`).Scan(&pending); err != nil {
		fail(c.outbox, err)
	} else {
		ch <- prometheus.MustNewConstMetric(c.outbox, prometheus.GaugeValue, pending)
	}
	c.collectRecorded(ctx, ch)
	c.collectLatestRuns(ctx, ch)
}

// collectLatestRuns exports, per target, what its latest finished run
// found: degradation, answers by outcome and account-level enforcement.
// A finished run is one not aborted: an interrupted run (SIGTERM, a
// deadline, a full disk) stopped before it could answer for the target,
// so it neither marks the target degraded nor clears what the run before
// it found. Abuse blocks are the exception: enforcement seen by an
// interrupted run is still enforcement, so the interrupted run's count
// counts when it is the larger.
func (c *DBCollector) collectLatestRuns(ctx context.Context, ch chan<- prometheus.Metric) {
	rows, err := c.db.QueryContext(ctx, `SELECT t.name, rt.status, rt.verdicts, rt.transient, rt.client_errors, rt.unavailable,
		(SELECT COUNT(*) FROM observations o WHERE o.run_id = rt.run_id AND o.target_id = rt.target_id AND o.class = 'abuse_block' AND o.sample = 0)
		FROM run_targets rt JOIN targets t ON t.id = rt.target_id
		WHERE rt.run_id = (SELECT MAX(run_id) FROM run_targets r2 WHERE r2.target_id = rt.target_id)
		   OR rt.run_id = (SELECT MAX(run_id) FROM run_targets r2 WHERE r2.target_id = rt.target_id AND r2.status != 'aborted')`)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.abuse, err)
		return
	}
	defer rows.Close()
	type latest struct {
		finished                                   bool
		status                                     string
		verdicts, transient, clientErrors, unavail float64
		abuse                                      float64
	}
	byTarget := map[string]*latest{}
	for rows.Next() {
		var t, st string
		var v, tr, ce, un, abuse float64
		if rows.Scan(&t, &st, &v, &tr, &ce, &un, &abuse) != nil || !c.targets.Has(t) {
			continue
		}
		l := byTarget[t]
		if l == nil {
			l = &latest{}
			byTarget[t] = l
		}
		l.abuse = max(l.abuse, abuse)
		if st != "aborted" {
			l.finished, l.status, l.verdicts, l.transient, l.clientErrors, l.unavail = true, st, v, tr, ce, un
		}
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.abuse, err)
		return
	}
	for t, l := range byTarget {
		deg := 0.0
		if l.status == "degraded" {
			deg = 1
		}
		ch <- prometheus.MustNewConstMetric(c.abuse, prometheus.GaugeValue, l.abuse, t)
		ch <- prometheus.MustNewConstMetric(c.degraded, prometheus.GaugeValue, deg, t)
		if !l.finished {
			continue
		}
		for _, o := range []struct {
			outcome string
			v       float64
		}{{OutcomeVerdict, l.verdicts}, {OutcomeTransient, l.transient}, {OutcomeClientError, l.clientErrors}, {OutcomeUnavailable, l.unavail}} {
			ch <- prometheus.MustNewConstMetric(c.lastRunProbes, prometheus.GaugeValue, o.v, t, o.outcome)
		}
	}
}

// collectRecorded exports counters summed over every recorded run of each
// target. Run summaries are never pruned, so they only grow, whichever
// process exports them: a one-shot run's textfile or push carries every
// run so far and increase() works as it does on serve's /metrics.
func (c *DBCollector) collectRecorded(ctx context.Context, ch chan<- prometheus.Metric) {
	rows, err := c.db.QueryContext(ctx, `SELECT t.name, SUM(rt.verdicts), SUM(rt.transient), SUM(rt.client_errors), SUM(rt.unavailable),
		SUM(rt.requests), SUM(rt.retries), SUM(rt.tokens_in), SUM(rt.tokens_out), TOTAL(rt.cost_usd)
		FROM run_targets rt JOIN targets t ON t.id = rt.target_id GROUP BY rt.target_id`)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.requests, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var v, tr, ce, un, req, ret, tin, tout, cost float64
		if err := rows.Scan(&t, &v, &tr, &ce, &un, &req, &ret, &tin, &tout, &cost); err != nil {
			ch <- prometheus.NewInvalidMetric(c.requests, err)
			return
		}
		if !c.targets.Has(t) {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.probes, prometheus.CounterValue, v, t, OutcomeVerdict)
		ch <- prometheus.MustNewConstMetric(c.probes, prometheus.CounterValue, tr, t, OutcomeTransient)
		ch <- prometheus.MustNewConstMetric(c.probes, prometheus.CounterValue, ce, t, OutcomeClientError)
		ch <- prometheus.MustNewConstMetric(c.probes, prometheus.CounterValue, un, t, OutcomeUnavailable)
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, req, t)
		ch <- prometheus.MustNewConstMetric(c.retries, prometheus.CounterValue, ret, t)
		ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.CounterValue, tin, t, "input")
		ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.CounterValue, tout, t, "output")
		ch <- prometheus.MustNewConstMetric(c.cost, prometheus.CounterValue, cost, t)
	}
}

// collectRunDurations exports the wall time of every finished run as a
// histogram with the process histogram's buckets. Runs a dead process
// left running and a later run marked aborted are left out: their end is
// when they were found, not when they stopped.
func (c *DBCollector) collectRunDurations(ctx context.Context, ch chan<- prometheus.Metric) {
	rows, err := c.db.QueryContext(ctx, `SELECT unixepoch(finished_at, 'subsec') - unixepoch(started_at, 'subsec') FROM runs
		WHERE status != 'running' AND finished_at IS NOT NULL AND note NOT LIKE 'abandoned:%'`)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.duration, err)
		return
	}
	defer rows.Close()
	buckets := make(map[float64]uint64, len(runBuckets))
	for _, b := range runBuckets {
		buckets[b] = 0 // every bucket present, also when empty
	}
	var n uint64
	var sum float64
	for rows.Next() {
		var d sql.NullFloat64
		if rows.Scan(&d) != nil || !d.Valid {
			continue
		}
		n++
		sum += d.Float64
		for _, b := range runBuckets {
			if d.Float64 <= b {
				buckets[b]++
			}
		}
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(c.duration, err)
		return
	}
	ch <- prometheus.MustNewConstHistogram(c.duration, n, sum, buckets)
}

// collectLastEvents exports, per target, kind and direction (as opened,
// like driftprobe_events_total), when the latest such event was recorded
// on the target: the first update of the event in the run the target
// joined it (its opening, for the target that opened it). Alerts page on
// how recent it is, which a scrape gap, a restart or a Prometheus that
// first sees an old database cannot fake, as they can a counter's first
// appearance.
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
		at, err := time.Parse(time.RFC3339Nano, joined)
		if err != nil {
			if at, err = time.Parse(time.RFC3339Nano, created); err != nil {
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
	for k, at := range latest {
		ch <- prometheus.MustNewConstMetric(c.lastEvent, prometheus.GaugeValue, float64(at.UnixNano())/1e9, k.target, k.kind, k.direction)
	}
}

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
