package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
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
}

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
			Help: "1 while the target's upstream circuit breaker is open."}, []string{"target"}),
		RunDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: RunDuration,
			Help: "Wall time of a run.", Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600}}),
		ReloadOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: ConfigReloadOK,
			Help: "1 when the last configuration (re)load succeeded."}),
		ReloadTime: prometheus.NewGauge(prometheus.GaugeOpts{Name: ConfigReloadTime,
			Help: "Time of the last successful configuration load."}),
		LockSkips: prometheus.NewCounter(prometheus.CounterOpts{Name: LockSkipsTotal,
			Help: "Scheduled runs skipped because another process held the run lock."}),
		ScheduleSecond: prometheus.NewGauge(prometheus.GaugeOpts{Name: ScheduleIntervalS,
			Help: "The configured run interval (for staleness alerts)."}),
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

	verdicts, active, events, open, runs, lastRun, outbox, abuse, degraded, dbSize, dbFree *prometheus.Desc
	changes, uncovered, attrTime, attrOK                                                   *prometheus.Desc
}

// NewDBCollector returns a collector over db.
func NewDBCollector(db *sql.DB) *DBCollector {
	return &DBCollector{db: db, timeout: 10 * time.Second,
		verdicts: prometheus.NewDesc(ProbeVerdicts, "Probes whose latest verdict is this class, per normalized category (\"none\" for verdicts without one); a probe with two categories counts in both. Account-level enforcement (driftprobe_abuse_blocks) leaves the latest verdict as it was.", []string{"target", "verdict", "category"}, nil),
		active:   prometheus.NewDesc(CategoryActive, "1 when at least one probe's confirmed baseline on the target is blocked with this category.", []string{"target", "category"}, nil),
		events:   prometheus.NewDesc(EventsTotal, "Change events recorded, by the kind and direction they opened with (so the counter never decreases as an event grows).", []string{"target", "kind", "direction"}, nil),
		open:     prometheus.NewDesc(EventsOpen, "Events not reverted.", []string{"target", "kind"}, nil),
		runs:     prometheus.NewDesc(RunsTotal, "Runs recorded, by status.", []string{"status"}, nil),
		lastRun:  prometheus.NewDesc(LastRunTimestamp, "End time of the latest run with this status.", []string{"status"}, nil),
		outbox:   prometheus.NewDesc(OutboxPending, "GitHub deliveries queued and not yet sent.", nil, nil),
		abuse:    prometheus.NewDesc(AbuseBlocks, "Probes answered with account-level enforcement (abuse_block) in the target's latest run.", []string{"target"}, nil),
		degraded: prometheus.NewDesc(TargetDegraded, "1 when the target's latest run was degraded (too many transient errors or an open breaker).", []string{"target"}, nil),
		dbSize:   prometheus.NewDesc(DatabaseSize, "Size of the SQLite database (pages in use and free; the WAL file not included).", nil, nil),
		dbFree:   prometheus.NewDesc(DatabaseFree, "Free pages of the SQLite database, reused by later writes (VACUUM returns them to the file system).", nil, nil),
		changes: prometheus.NewDesc(ProductionChanges, "Production block-rate changes in the latest successful attribution report, by target, normalized category (\"all\": every block on the target), direction (up, down) and attribution (provider, traffic, inconclusive).",
			[]string{"target", "category", "direction", "attribution"}, nil),
		uncovered: prometheus.NewDesc(UncoveredCategories, "1 for each category production blocks on the target that no corpus probe is tagged with (latest successful attribution report).", []string{"target", "category"}, nil),
		attrTime:  prometheus.NewDesc(AttributionTimestamp, "Time the latest successful attribution report was stored.", nil, nil),
		attrOK:    prometheus.NewDesc(AttributionSuccess, "1 when the latest attribution attempt (after a run) succeeded, 0 when it failed (Prometheus unreachable, bad data).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *DBCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.verdicts, c.active, c.events, c.open, c.runs, c.lastRun, c.outbox, c.abuse, c.degraded, c.dbSize, c.dbFree,
		c.changes, c.uncovered, c.attrTime, c.attrOK} {
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
	targets := map[string]bool{}
	names := map[int64]string{}
	rows, err := c.db.QueryContext(ctx, `SELECT id, name FROM targets`)
	if err != nil {
		fail(c.verdicts, err)
		return
	}
	for rows.Next() {
		var id int64
		var n string
		if rows.Scan(&id, &n) == nil {
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
		t := names[id]
		targets[t] = true
		for _, st := range sts {
			cls, cats := split(st.LastVerdict)
			if len(cats) == 0 {
				cats = []string{"none"}
			}
			for _, cat := range cats {
				counts[key{t, cls, cat}]++
			}
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
	for t := range targets {
		for _, cat := range probes.Categories {
			ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, active[[2]string{t, cat}], t, cat)
		}
	}

	c.grouped(ctx, ch, c.events, prometheus.CounterValue, `SELECT t.name, e.opened_kind, e.opened_direction, COUNT(*) FROM events e JOIN event_targets et ON et.event_id = e.id JOIN targets t ON t.id = et.target_id GROUP BY 1, 2, 3`, 3)
	c.grouped(ctx, ch, c.open, prometheus.GaugeValue, `SELECT t.name, e.kind, COUNT(*) FROM events e JOIN event_targets et ON et.event_id = e.id JOIN targets t ON t.id = et.target_id WHERE e.status = 'open' GROUP BY 1, 2`, 2)
	c.grouped(ctx, ch, c.runs, prometheus.CounterValue, `SELECT status, COUNT(*) FROM runs WHERE status != 'running' GROUP BY 1`, 1)
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
	// Latest run per target: abuse blocks and degradation.
	rows, err = c.db.QueryContext(ctx, `SELECT t.name, rt.status, (SELECT COUNT(*) FROM observations o WHERE o.run_id = rt.run_id AND o.target_id = rt.target_id AND o.class = 'abuse_block' AND o.sample = 0)
		FROM run_targets rt JOIN targets t ON t.id = rt.target_id
		WHERE rt.run_id = (SELECT MAX(run_id) FROM run_targets r2 WHERE r2.target_id = rt.target_id)`)
	if err != nil {
		fail(c.abuse, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var t, st string
		var abuse float64
		if rows.Scan(&t, &st, &abuse) != nil {
			continue
		}
		deg := 0.0
		if st != "complete" {
			deg = 1
		}
		ch <- prometheus.MustNewConstMetric(c.abuse, prometheus.GaugeValue, abuse, t)
		ch <- prometheus.MustNewConstMetric(c.degraded, prometheus.GaugeValue, deg, t)
	}
}

// collectAttribution exports the latest stored attribution reports (none
// without the config's attribution block). Label values are bounded: a
// target must be one the database knows (names: configured targets that
// ran), a category one of the normalized vocabulary, direction and
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

// grouped emits one metric per row: n label columns then a value.
func (c *DBCollector) grouped(ctx context.Context, ch chan<- prometheus.Metric, d *prometheus.Desc, vt prometheus.ValueType, q string, n int) {
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
