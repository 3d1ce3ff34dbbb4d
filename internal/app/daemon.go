package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// DaemonOptions configure `driftprobe serve`.
type DaemonOptions struct {
	ConfigPath string // "" for the built-in config
	DBOverride string
	Clock      clockwork.Clock // schedule, jitter and run lease renewals; nil: the real clock
	Logger     *slog.Logger
	// RunAtStart runs once immediately instead of waiting one interval.
	RunAtStart bool
	// AfterRun is called after each run (GitHub delivery). Optional. It
	// runs on the daemon's delivery worker, never inside the scheduled
	// run: a slow or hanging GitHub never holds probing back (the run
	// job is a singleton, so a tick waiting on delivery would skip the
	// next ones). One call at a time: the runs that finish while a call
	// is in progress are coalesced into one more call, with the latest
	// run's result and config (delivery sends the whole outbox, so one
	// pass after the latest run covers them all). ctx ends when the
	// daemon shuts down; a call not yet started then never is (queued
	// deliveries stay queued for the next process).
	AfterRun func(ctx context.Context, cfg *config.Config, st *storage.DB, res *RunResult)
	// OnRun observes each finished tick (tests).
	OnRun func(res *RunResult, err error)
	// Sleep replaces waits inside runs (tests).
	Sleep func(ctx context.Context, d time.Duration) error
	// Runtime registers Go/process collectors.
	Runtime bool
	// ScrapeTimeout is how long /metrics may take to answer before it is
	// answered HTTP 503 (0: MetricsTimeout; tests shorten it).
	ScrapeTimeout time.Duration
	// Listen is the /metrics address (optional). NewDaemon listens on it
	// once it holds the serve lock and before it opens the database, so an
	// address in use is refused (a usage error) with the database as it
	// was, never migrated; Listener returns it. The address bound is
	// written into the serve lock, so a second daemon refused by it says
	// where the first one serves.
	Listen string
}

// /metrics limits. The collection reads the database through one
// read-only connection, so scrapes in flight at once queue on it: the
// in-flight limit bounds that queue (a runaway scraper piling up
// goroutines), not the database's load. A slot is held until the
// collection ends, past the timeout's 503 (the collection goes on), so a
// database stall queues at most MetricsInFlight collections. Four leave
// room for an HA Prometheus pair whose scrapes coincide, a slow scrape
// still held, and a human's curl; one more is answered 503 at once
// (scrapeLog.limit).
const (
	MetricsInFlight = 4
	MetricsTimeout  = 10 * time.Second
)

// Daemon runs the corpus on a schedule and serves metrics.
type Daemon struct {
	o     DaemonOptions
	clock clockwork.Clock
	log   *slog.Logger
	lease *storage.Lease
	st    *storage.DB
	// scrape is the metrics collector's own read-only connection to the
	// database file (nil without a file: the collector reads through st).
	// The store has a single connection, which a run holds for as long
	// as it waits on another writer's lock; in WAL mode a reader never
	// waits for a writer, so a scrape then still answers. Closed before
	// st: the store's connection, the last, checkpoints and removes the
	// -wal file.
	scrape *storage.DB
	reg    *prometheus.Registry
	m      *metrics.Metrics
	// scrapeLog logs /metrics' failed collections.
	scrapeLog scrapeLog
	// failures counts scheduled runs that failed with an error
	// (driftprobe_run_failures_total).
	failures prometheus.Counter
	// dbPath and dbFile: the database file as the daemon opened it, so
	// that a tick, /readyz and /healthz can tell when the file at the path
	// is gone or another one (the daemon would go on writing into the
	// unlinked file); dbFile is nil when there is no file to compare
	// (":memory:").
	dbPath string
	dbFile os.FileInfo
	// serving is the serve lock, held from NewDaemon to the end of
	// Shutdown.
	serving *serveLock
	ln      net.Listener // on DaemonOptions.Listen; nil without it
	// probeMu serializes /readyz's reads of the database file and keeps
	// them from starting once Shutdown has begun (probeDone).
	probeMu   sync.Mutex
	probeDone bool

	mu      sync.Mutex // guards cfg, cp, targets, closeT; held only briefly
	cfg     *config.Config
	cp      *corpus.Corpus
	targets []*runner.Target
	closeT  func()

	// runMu is held by a run for its whole length. A reload swaps the
	// config at once (it never waits for a run, so SIGTERM stays
	// responsive) and closes the replaced targets once the run using them
	// has ended; closing counts those pending closes for Shutdown.
	runMu   sync.Mutex
	closing sync.WaitGroup
	// runCtx is every run's context, cancelled only by Shutdown: the
	// scheduler's job context also ends when a reload replaces the job's
	// schedule, which must not abort the run in progress.
	runCtx   context.Context
	stopRuns context.CancelFunc

	// The delivery worker (AfterRun): tick hands it the latest finished
	// run (deliverNext, under deliverMu) and wakes it (deliverWake, one
	// slot); deliverDone is closed when it has stopped (Shutdown waits
	// for it before closing the store).
	deliverMu   sync.Mutex
	deliverNext *delivery
	deliverWake chan struct{}
	deliverDone chan struct{}

	sched   gocron.Scheduler
	job     gocron.Job
	running atomic.Int32
	maxRun  atomic.Int32
	runs    atomic.Int64
	ready   atomic.Bool
}

// NewDaemon loads the config, opens the database and builds the targets.
func NewDaemon(ctx context.Context, o DaemonOptions) (*Daemon, error) {
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Daemon{o: o, clock: o.Clock, log: o.Logger, lease: NewLease("driftprobe serve")}
	cfg, cp, err := d.load()
	if err != nil {
		return nil, err
	}
	// One daemon per database, refused before the database is opened.
	var warn string
	if d.serving, warn, err = acquireServeLock(cfg.Database, d.clock.Now()); err != nil {
		return nil, err
	}
	if warn != "" {
		d.log.Warn(warn)
	}
	if o.Listen != "" {
		if d.ln, err = net.Listen("tcp", o.Listen); err != nil {
			d.serving.release()
			return nil, Usage(fmt.Errorf("serve: --listen %s: %w", o.Listen, err))
		}
		d.serving.write(d.ln.Addr().String()) // the port bound (":0" picks one)
	}
	if d.st, err = OpenStore(ctx, cfg); err != nil {
		d.closeListener()
		d.serving.release()
		return nil, err
	}
	d.dbPath = cfg.Database
	if fi, err := os.Stat(cfg.Database); err == nil && fi.Mode().IsRegular() {
		d.dbFile = fi
	}
	targets, closeT, err := BuildTargets(cfg)
	if err != nil {
		d.st.Close()
		d.closeListener()
		d.serving.release()
		return nil, err
	}
	d.cfg, d.cp, d.targets, d.closeT = cfg, cp, targets, closeT
	read := d.st.SQL()
	if d.dbFile != nil {
		if d.scrape, err = storage.OpenReadOnly(ctx, cfg.Database); err != nil {
			closeT()
			d.st.Close()
			d.closeListener()
			d.serving.release()
			return nil, fmt.Errorf("open %s for metrics: %w", cfg.Database, err)
		}
		read = d.scrape.SQL()
	}
	d.reg, d.m = newRegistry(read, o.Runtime)
	d.scrapeLog = scrapeLog{log: d.log, clock: d.clock, timeout: o.ScrapeTimeout}
	if d.scrapeLog.timeout <= 0 {
		d.scrapeLog.timeout = MetricsTimeout
	}
	d.failures = metrics.NewRunFailures(d.reg)
	d.runCtx, d.stopRuns = context.WithCancel(context.WithoutCancel(ctx))
	d.deliverWake, d.deliverDone = make(chan struct{}, 1), make(chan struct{})
	if o.AfterRun != nil {
		go d.deliverLoop()
	} else {
		close(d.deliverDone)
	}
	ConfigLoaded(d.m, cfg, d.clock.Now())
	return d, nil
}

// delivery is a run handed to the delivery worker.
type delivery struct {
	cfg *config.Config
	res *RunResult
}

// queueDelivery hands a finished run to the delivery worker and returns at
// once. A run handed over earlier and not yet started is replaced: one
// pass after the latest run delivers what both queued.
func (d *Daemon) queueDelivery(cfg *config.Config, res *RunResult) {
	if d.o.AfterRun == nil {
		return
	}
	d.deliverMu.Lock()
	d.deliverNext = &delivery{cfg: cfg, res: res}
	d.deliverMu.Unlock()
	select {
	case d.deliverWake <- struct{}{}:
	default: // already woken: it takes deliverNext when it gets there
	}
}

// deliverLoop is the delivery worker: it calls AfterRun for the latest
// run handed to it, one call at a time, until the daemon shuts down
// (runCtx ends, which also cancels a call in progress).
func (d *Daemon) deliverLoop() {
	defer close(d.deliverDone)
	for {
		select {
		case <-d.runCtx.Done():
			return
		case <-d.deliverWake:
		}
		d.deliverMu.Lock()
		next := d.deliverNext
		d.deliverNext = nil
		d.deliverMu.Unlock()
		if next == nil || d.runCtx.Err() != nil {
			continue
		}
		d.o.AfterRun(d.runCtx, next.cfg, d.st, next.res)
	}
}

func (d *Daemon) load() (*config.Config, *corpus.Corpus, error) {
	cfg, err := LoadConfig(d.o.ConfigPath, d.o.DBOverride, true)
	if err != nil {
		return nil, nil, err
	}
	cp, err := LoadCorpus(cfg, "", false) // RunOnce locks a new version
	if err != nil {
		return nil, nil, err
	}
	return cfg, cp, nil
}

// Listener returns the listener NewDaemon opened on DaemonOptions.Listen
// (nil without it). The caller serves on it; Shutdown closes it (after the
// server has, when one served on it).
func (d *Daemon) Listener() net.Listener { return d.ln }

// closeListener closes the listener NewDaemon opened, if any (NewDaemon
// giving up, Shutdown).
func (d *Daemon) closeListener() {
	if d.ln != nil {
		d.ln.Close()
	}
}

// Registry returns the metrics registry.
func (d *Daemon) Registry() *prometheus.Registry { return d.reg }

// Metrics returns the process instruments.
func (d *Daemon) Metrics() *metrics.Metrics { return d.m }

// Store returns the database.
func (d *Daemon) Store() *storage.DB { return d.st }

// Config returns the configuration in force.
func (d *Daemon) Config() *config.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

// Runs returns how many scheduled runs finished; MaxConcurrent the most
// that were ever in flight at once (1, by construction).
func (d *Daemon) Runs() int64          { return d.runs.Load() }
func (d *Daemon) MaxConcurrent() int32 { return d.maxRun.Load() }

func interval(s string) (time.Duration, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "@every ")
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(rest))
	return d, err == nil
}

// definition turns the config's schedule into a gocron job definition.
func definition(cfg *config.Config) gocron.JobDefinition {
	if iv, ok := interval(cfg.Schedule); ok {
		if j := cfg.Jitter.D(); j > 0 && j < iv {
			return gocron.DurationRandomJob(iv-j, iv+j)
		}
		return gocron.DurationJob(iv)
	}
	return gocron.CronJob(cfg.Schedule, false)
}

// schedulerStopTimeout is how long Shutdown lets the scheduler wait for a
// run in progress to end (gocron's stop timeout) before Shutdown waits for
// it itself (tests shorten it).
var schedulerStopTimeout = 10 * time.Second

// Start starts the scheduler. Runs never overlap (singleton mode) and never
// overlap with another process on the same database (the run lease).
func (d *Daemon) Start() error {
	s, err := gocron.NewScheduler(gocron.WithClock(d.clock), gocron.WithStopTimeout(schedulerStopTimeout))
	if err != nil {
		return err
	}
	d.sched = s
	cfg := d.Config()
	opts := []gocron.JobOption{gocron.WithName("driftprobe-run"), gocron.WithSingletonMode(gocron.LimitModeReschedule)}
	if d.o.RunAtStart {
		opts = append(opts, gocron.WithStartAt(gocron.WithStartImmediately()))
	}
	if d.job, err = s.NewJob(definition(cfg), gocron.NewTask(d.tick), opts...); err != nil {
		return fmt.Errorf("schedule %q: %w", cfg.Schedule, err)
	}
	s.Start()
	d.ready.Store(true)
	return nil
}

// tick is one scheduled run. It runs under the daemon's runCtx, not the
// scheduler's job context (see runCtx).
func (d *Daemon) tick(context.Context) {
	ctx := d.runCtx
	n := d.running.Add(1)
	defer d.running.Add(-1)
	for {
		m := d.maxRun.Load()
		if n <= m || d.maxRun.CompareAndSwap(m, n) {
			break
		}
	}
	d.runMu.Lock()
	defer d.runMu.Unlock()
	d.mu.Lock()
	cfg, cp, targets := d.cfg, d.cp, d.targets
	d.mu.Unlock()
	if _, every := interval(cfg.Schedule); !every && cfg.Jitter > 0 {
		// Cron schedules have no built-in jitter: wait a random part of it.
		select {
		case <-ctx.Done():
			return
		case <-d.clock.After(time.Duration(rand.Int64N(int64(cfg.Jitter)))):
		}
	}
	var res *RunResult
	// The file at the path must still be the one the store opened: a run
	// into a removed or replaced file "succeeds" into a file nothing else
	// reads and that is lost when the daemon exits. It is refused, and
	// counts as a failed run (DriftprobeRunFailed).
	err := d.sameDatabaseFile()
	if err != nil {
		err = fmt.Errorf("run not started: %w", err)
	} else {
		o := RunOptions{Logger: d.log, Lease: d.lease, Clock: d.clock, Sleep: d.o.Sleep, Note: "serve"}
		Instrument(d.m, &o)
		res, err = RunOnce(ctx, cfg, cp, d.st, targets, o)
	}
	skipped := leaseHeldElsewhere(err)
	if !skipped {
		ObserveRun(d.m, res) // the run is over: its totals, and every breaker back to 0
	}
	switch {
	case skipped:
		d.m.LockSkips.Inc()
		d.log.Warn("skipping scheduled run", "reason", err)
	case err != nil:
		// Also a run whose lease was lost mid-run (storage.ErrLeaseLost):
		// it did work, stopped half-way and is recorded aborted.
		d.failures.Inc()
		d.log.Error("run failed", "err", err)
	default:
		// A run in which no target answered a single probe with a
		// verdict (a provider outage, a revoked key, no network), or
		// whose detection failed for a target (a detection state that
		// does not decode: the other targets were detected), is stored
		// and detected, and delivery still runs, but it is a failed run,
		// as `driftprobe run` exits 3 on it.
		err = errors.Join(MeasuredNothing(res.Summary), DetectionFailed(res))
		if err != nil {
			d.failures.Inc()
			d.log.Error("run failed", "err", err, "run", res.Summary.RunID, "status", res.Summary.Status)
		} else {
			d.log.Info("run finished", "run", res.Summary.RunID, "status", res.Summary.Status, "events", len(res.Events))
		}
		// Delivery happens on its own worker: the next run is never
		// held back by GitHub.
		d.queueDelivery(cfg, res)
	}
	d.runs.Add(1)
	if d.o.OnRun != nil {
		d.o.OnRun(res, err)
	}
}

// leaseHeldElsewhere reports whether err is a run that never started
// because another process holds the run lease: a tick skipped, nothing
// ran. A run that lost its lease mid-run (another process took it over
// while this one was paused or stalled) also matches storage.ErrLocked,
// but it ran and was interrupted: storage.ErrLeaseLost tells it apart.
func leaseHeldElsewhere(err error) bool {
	return errors.Is(err, storage.ErrLocked) && !errors.Is(err, storage.ErrLeaseLost)
}

// Reload re-reads the configuration. A bad configuration is rejected, the
// old one keeps running, and the reload metric and one error log line say
// so.
func (d *Daemon) Reload() error {
	cfg, cp, err := d.load()
	if err != nil {
		d.m.ReloadOK.Set(0)
		d.log.Error("config reload rejected; keeping the running config", "err", err)
		return err
	}
	if cfg.Database != d.Config().Database {
		d.m.ReloadOK.Set(0)
		err := fmt.Errorf("config reload rejected: the database cannot change while serving (%s → %s)", d.Config().Database, cfg.Database)
		d.log.Error(err.Error())
		return Usage(err)
	}
	targets, closeT, err := BuildTargets(cfg)
	if err != nil {
		d.m.ReloadOK.Set(0)
		d.log.Error("config reload rejected; keeping the running config", "err", err)
		return err
	}
	// The new schedule first: if the scheduler refuses it, nothing changes
	// and the old config keeps running on its old schedule.
	old := d.Config()
	if d.sched != nil && (cfg.Schedule != old.Schedule || cfg.Jitter != old.Jitter) {
		j, err := d.sched.Update(d.job.ID(), definition(cfg), gocron.NewTask(d.tick), gocron.WithName("driftprobe-run"), gocron.WithSingletonMode(gocron.LimitModeReschedule))
		if err != nil {
			closeT()
			d.m.ReloadOK.Set(0)
			d.log.Error("config reload rejected: the scheduler refuses its schedule; keeping the running config", "schedule", cfg.Schedule, "err", err)
			return fmt.Errorf("config reload rejected: schedule %q: %w", cfg.Schedule, err)
		}
		d.job = j
	}
	d.mu.Lock()
	oldClose := d.closeT
	d.cfg, d.cp, d.targets, d.closeT = cfg, cp, targets, closeT
	d.mu.Unlock()
	// A run in progress keeps the config and targets it started with; the
	// replaced targets close once it ends (the next run uses the new ones).
	d.closing.Add(1)
	go func() {
		defer d.closing.Done()
		d.runMu.Lock()
		defer d.runMu.Unlock()
		oldClose()
	}()
	ConfigLoaded(d.m, cfg, d.clock.Now())
	d.log.Info("config reloaded", "targets", len(targets), "schedule", cfg.Schedule)
	return nil
}

// Handler serves /metrics, /healthz and /readyz.
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	// A collection that failed is no scrape: HTTP 500, so Prometheus
	// records up == 0 rather than a complete-looking scrape without the
	// families the failing query feeds (a firing page would resolve
	// without a word), and the log says why (scrapeLog). The in-flight
	// limit is scrapeLog's own, inside the instrumentation (its 503s count
	// in promhttp_metric_handler_requests_total), so that a scrape refused
	// by it is never logged as one that timed out. It is inside the
	// timeout too (the TimeoutHandler promhttp's Timeout would add, made
	// here: it answers 503 but leaves the collection running): a slot is
	// held until the collection ends, not the answer, so a database stall
	// never piles up more than MetricsInFlight collections queued on the
	// read-only connection.
	mux.Handle("/metrics", d.scrapeLog.watch(promhttp.InstrumentMetricHandler(d.reg, http.TimeoutHandler(
		d.scrapeLog.limit(MetricsInFlight, promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{
			Registry: d.reg, ErrorHandling: promhttp.HTTPErrorOnError, ErrorLog: &d.scrapeLog,
			EnableOpenMetrics: true})),
		d.scrapeLog.timeout, fmt.Sprintf("Exceeded configured timeout of %v.\n", d.scrapeLog.timeout)))))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		// Not failed by a database file removed or replaced under the
		// daemon (every tick is then a failed run, and /readyz fails): a
		// liveness restart would not recover. The daemon's -wal and -shm
		// stay at the path when it exits (SQLite leaves them once the file
		// it opened has moved), and the next daemon would read the file at
		// the path through them: a restored backup undone or mixed with
		// the old file's pages, an empty new database filled with some.
		// Someone must remove them first (RUNBOOK, DriftprobeRunFailed).
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if !d.ready.Load() {
			http.Error(w, "scheduler not started", http.StatusServiceUnavailable)
			return
		}
		if err := d.sameDatabaseFile(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := d.readDatabase(ctx); err != nil {
			http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}

// readDatabase checks that the database file can be opened and read. It
// reads through a read-only connection of its own, opened for the check:
// the store has a single connection, which a run holds for as long as it
// waits on another writer's lock (SQLite's busy timeout, during a `db
// prune`, an `outbox --send`, a backup), and readiness must not fail for
// that. In WAL mode a reader never waits for a writer. A database with no
// file (":memory:") is pinged through the store.
func (d *Daemon) readDatabase(ctx context.Context) error {
	if d.dbFile == nil {
		return d.st.SQL().PingContext(ctx)
	}
	d.probeMu.Lock()
	defer d.probeMu.Unlock()
	if d.probeDone {
		return errors.New("shutting down")
	}
	ro, err := storage.OpenReadOnly(ctx, d.dbPath)
	if err != nil {
		return err
	}
	defer ro.Close()
	_, err = ro.SchemaVersion(ctx)
	return err
}

// ErrDatabaseReplaced is matched (errors.Is) by the error of a scheduled
// run refused, and of /readyz, when the file at the configured database
// path is no longer the one the daemon opened.
var ErrDatabaseReplaced = errors.New("database file was removed or replaced under the daemon: restart it")

// dbFileError is what sameDatabaseFile found: the file at path gone (or
// not even stat-able: err) or another file (err nil).
type dbFileError struct {
	path string
	err  error
}

func (e *dbFileError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("%s (%v; the daemon still has the file it opened, in /proc/%d/fd, which nothing else reads; before starting it again, delete any %s-wal and %s-shm: they belong to that file)",
			ErrDatabaseReplaced, e.err, os.Getpid(), e.path, e.path)
	}
	return fmt.Sprintf("%s (%s was replaced since the daemon opened it; before starting it again, delete %s-wal and %s-shm: they belong to the old file)",
		ErrDatabaseReplaced, e.path, e.path, e.path)
}

func (e *dbFileError) Is(target error) bool { return target == ErrDatabaseReplaced }
func (e *dbFileError) Unwrap() error        { return e.err }

// sameDatabaseFile reports a *dbFileError when the file at the database's
// path is not the one the daemon opened: removed (the daemon would go on
// writing into the unlinked file, which nothing else can read and which
// is gone when it exits; until then it can still be copied out of
// /proc/PID/fd) or replaced (a restored backup, a copy moved into place).
// SQLite's handle keeps working in both cases, so a ping cannot tell. A
// restart opens the file at the path, once the daemon's -wal and -shm,
// which SQLite leaves at the path when the file it opened has moved, are
// removed.
func (d *Daemon) sameDatabaseFile() error {
	if d.dbFile == nil {
		return nil
	}
	fi, err := os.Stat(d.dbPath)
	switch {
	case err != nil:
		return &dbFileError{path: d.dbPath, err: err}
	case !os.SameFile(d.dbFile, fi):
		return &dbFileError{path: d.dbPath}
	}
	return nil
}

// Shutdown stops the scheduler (cancelling a run in progress, which is
// then recorded as aborted) and the delivery worker (cancelling a
// delivery pass in progress: what it did not send stays queued), and
// releases everything. It waits for a run in progress to end however long
// its abort takes (systemd's TimeoutStopSec, Kubernetes'
// terminationGracePeriodSeconds bound it); a run that outlasts the
// scheduler's own stop timeout is logged, not an error.
func (d *Daemon) Shutdown() error {
	d.ready.Store(false)
	d.probeMu.Lock() // no readiness read from now on (its handle would outlive the store's)
	d.probeDone = true
	d.probeMu.Unlock()
	d.stopRuns() // a run in progress ends, recorded aborted
	var err error
	if d.sched != nil {
		// A run still ending past the scheduler's stop timeout (its final
		// writes waiting on another writer's lock) is no failed shutdown:
		// it is waited for below (runMu), and ends recorded aborted.
		if err = d.sched.Shutdown(); errors.Is(err, gocron.ErrStopJobsTimedOut) {
			d.log.Info("shutting down: the run in progress is still ending (recorded aborted); waiting for it")
			err = nil
		}
	}
	d.closing.Wait()
	<-d.deliverDone // a delivery pass in progress was cancelled with the runs: it ends first
	d.runMu.Lock()  // a run still ending past the scheduler's stop timeout ends first
	defer d.runMu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closeT != nil {
		d.closeT()
	}
	if d.scrape != nil {
		d.scrape.Close()
	}
	if cerr := d.st.Close(); err == nil {
		err = cerr
	}
	d.closeListener()   // the server closed it already when serving on it
	d.serving.release() // once the database is closed: the next daemon may start
	return err
}

// scrapeLog logs the collections of /metrics that failed (a database
// query of the collector failing: a damaged row, an unreadable page), at
// error level, without flooding the log with a scrape every 15 seconds:
// the first failure is logged at once; while failures go on, a new error
// text is logged at most once per scrapeLogMinGap, and the same one again
// every scrapeLogRemind, with how many scrapes failed meanwhile. The
// first scrape answered again after failures is logged too. It is
// promhttp's ErrorLog (which hands it the error) and wraps the handler
// (watch: which says when a scrape was answered), and limits the scrapes
// in flight (limit). A 503 is either a scrape refused by that limit or
// one that outlasted the timeout, each logged as what it is.
type scrapeLog struct {
	log     *slog.Logger
	clock   clockwork.Clock
	timeout time.Duration // promhttp's: a scrape answered 503 after it

	mu      sync.Mutex
	failing bool
	since   time.Time // the first failure of this spell
	failed  int       // scrapes failed in this spell
	unsaid  int       // of which since the last log line
	last    string    // the error text logged last
	at      time.Time // when

	timeouts  int       // scrapes timed out since the last line saying so
	timeoutAt time.Time // when that line was logged
	refusals  int       // scrapes refused by the in-flight limit since the last line saying so
	refusedAt time.Time // when that line was logged
}

const (
	scrapeLogMinGap = time.Minute
	scrapeLogRemind = 15 * time.Minute
)

// Println implements promhttp.Logger.
func (l *scrapeLog) Println(v ...any) {
	var err error
	if len(v) == 2 {
		err, _ = v[1].(error)
	}
	if err == nil || v[0] != "error gathering metrics:" {
		// Writing the answer failed: the scraper went away.
		l.log.Debug("metrics: " + strings.TrimSpace(fmt.Sprintln(v...)))
		return
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.failing {
		l.failing, l.since, l.failed, l.unsaid, l.last = true, now, 0, 0, ""
	}
	l.failed++
	l.unsaid++
	msg, gap := err.Error(), now.Sub(l.at)
	if l.failed == 1 || (msg != l.last && gap >= scrapeLogMinGap) || gap >= scrapeLogRemind {
		l.log.Error("metrics collection failed: /metrics answers HTTP 500 until it succeeds (Prometheus records up == 0); `driftprobe db check` names damaged rows",
			"err", err, "failed_scrapes", l.failed, "unlogged", l.unsaid-1, "failing_since", l.since.UTC().Format(time.RFC3339))
		l.last, l.at, l.unsaid = msg, now, 0
	}
}

// timedOut logs a scrape that outlasted the handler's timeout (promhttp
// answers 503 and never reports it as an error): the collection waits on
// the database (a long write elsewhere, a slow disk). At most once per
// scrapeLogMinGap.
func (l *scrapeLog) timedOut() {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timeouts++
	if l.timeoutAt.IsZero() || now.Sub(l.timeoutAt) >= scrapeLogMinGap {
		l.log.Warn(fmt.Sprintf("metrics scrape timed out: /metrics answered HTTP 503 after %s (the collection waits on the database: a long write, a slow disk)", l.timeout),
			"timed_out_scrapes", l.timeouts)
		l.timeoutAt, l.timeouts = now, 0
	}
}

// refused logs a scrape answered 503 at once because r.n scrapes were
// in flight (limit): too many scrapers at the same moment, no database
// problem — unless some of them are collections whose scrape was already
// answered (timed out) or given up, still waiting on the database. At
// most once per scrapeLogMinGap.
func (l *scrapeLog) refused(r scrapeRefusal) {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refusals++
	if l.refusedAt.IsZero() || now.Sub(l.refusedAt) >= scrapeLogMinGap {
		msg := fmt.Sprintf("metrics scrape refused: /metrics answered HTTP 503 at once, %d scrapes being in flight already (the most it serves at once; not a database problem): scrape it from fewer places at the same moment", r.n)
		if r.abandoned > 0 {
			msg = fmt.Sprintf("metrics scrape refused: /metrics answered HTTP 503 at once, %d scrapes being in flight already (the most it serves at once), %d of them collections of scrapes already timed out or given up, still waiting on the database (a long write, a slow disk)", r.n, r.abandoned)
		}
		l.log.Warn(msg, "refused_scrapes", l.refusals)
		l.refusedAt, l.refusals = now, 0
	}
}

// scrapeRefusal is a scrape refused by limit: n scrapes were in flight, of
// which abandoned had been answered already (timed out) or given up.
type scrapeRefusal struct{ n, abandoned int }

// scrapeOutcome is what limit tells watch of one scrape, through the
// request's context: refused is set when the in-flight limit refused it.
// limit runs in the timeout's goroutine, watch outside it: atomic.
type scrapeOutcome struct{ refused atomic.Pointer[scrapeRefusal] }

type scrapeOutcomeKey struct{}

// limit wraps h so that at most n scrapes are in it at once: one more is
// answered HTTP 503 at once, without waiting, and marked refused for
// watch (which logs it: refused). limit must be inside the timeout: a
// slot is then held until h returns, the collection ended, even after
// its scrape was answered 503 (the collection cannot be cancelled).
func (l *scrapeLog) limit(n int, h http.Handler) http.Handler {
	var mu sync.Mutex
	held := make(map[*http.Request]struct{}, n) // the scrapes holding a slot
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if len(held) < n {
			held[r] = struct{}{}
			mu.Unlock()
			defer func() {
				mu.Lock()
				delete(held, r)
				mu.Unlock()
			}()
			h.ServeHTTP(w, r)
			return
		}
		ref := scrapeRefusal{n: n}
		for q := range held {
			if q.Context().Err() != nil { // timed out, or the scraper went away
				ref.abandoned++
			}
		}
		mu.Unlock()
		if o, ok := r.Context().Value(scrapeOutcomeKey{}).(*scrapeOutcome); ok {
			o.refused.Store(&ref)
		}
		http.Error(w, fmt.Sprintf("%d scrapes of /metrics are in flight, the most served at once: try again later", n), http.StatusServiceUnavailable)
	})
}

// answered records a scrape answered with metrics.
func (l *scrapeLog) answered() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.failing {
		return
	}
	l.log.Info("metrics collection recovered: /metrics answers again", "failed_scrapes", l.failed,
		"failing_for", l.clock.Since(l.since).Round(time.Second))
	l.failing = false
}

// watch wraps the /metrics handler h: a scrape it answers with 200 ends
// a spell of failures; a 503 is logged as refused when limit refused it
// (limit must be inside h), else as timed out (the timeout's, the only
// other 503).
func (l *scrapeLog) watch(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		o := &scrapeOutcome{}
		h.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), scrapeOutcomeKey{}, o)))
		ref := o.refused.Load()
		switch {
		case sw.status == 0 || sw.status == http.StatusOK:
			l.answered()
		case sw.status == http.StatusServiceUnavailable && ref != nil:
			l.refused(*ref)
		case sw.status == http.StatusServiceUnavailable:
			l.timedOut()
		}
	})
}

// statusWriter records the status code written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
