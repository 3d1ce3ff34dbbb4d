package app_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/storage"
)

// faultLog is a bytes.Buffer safe for the daemon's goroutines.
type faultLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *faultLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *faultLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// newFaultDaemon is newDaemon with the daemon's log in a buffer and
// options of the test's own (Sleep; OnRun is the harness's). stop shuts
// the daemon down (once: the test's cleanup calls it too).
func newFaultDaemon(t *testing.T, cfgPath string, o app.DaemonOptions) (h *daemonHarness, logs *faultLog, stop func() error) {
	t.Helper()
	h = &daemonHarness{clock: clockwork.NewFakeClock(), done: make(chan error, 100)}
	logs = &faultLog{}
	o.ConfigPath, o.Clock, o.Logger = cfgPath, h.clock, slog.New(slog.NewTextHandler(logs, nil))
	o.OnRun = func(_ *app.RunResult, err error) { h.done <- err }
	if o.Sleep == nil {
		o.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	}
	d, err := app.NewDaemon(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	h.d = d
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var err2 error
	stop = func() error { once.Do(func() { err2 = d.Shutdown() }); return err2 }
	t.Cleanup(func() { stop() })
	return h, logs, stop
}

// counterValue is the value of the single series of the counter name in
// g (0 when there is none).
func counterValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// runDurations is how many runs driftprobe_run_duration_seconds observed.
func runDurations(t *testing.T, g prometheus.Gatherer) uint64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == metrics.RunDuration {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A database file removed or replaced under a running serve: the next tick
// does not run (a run would "succeed" into the file serve opened, which
// nothing else reads and which is lost when serve exits); it is a failed
// run (driftprobe_run_failures_total, the `run failed` log line), so
// DriftprobeRunFailed fires, and /readyz fails. /healthz does not: a
// liveness restart would open the file at the path through serve's -wal,
// which SQLite leaves there (see Handler).
func TestTickRefusesRemovedOrReplacedDatabase(t *testing.T) {
	for _, c := range []struct {
		name string
		swap func(t *testing.T, db string)
	}{
		{"removed", func(t *testing.T, db string) {
			for _, f := range []string{db, db + "-wal", db + "-shm"} {
				if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
		}},
		{"replaced by a restored backup", func(t *testing.T, db string) {
			bak := db + ".bak"
			st, err := storage.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			err = st.Backup(context.Background(), bak)
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(bak, db); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h, logs, stop := newFaultDaemon(t, writeCfg(t, dir, schedCfg), app.DaemonOptions{})
			srv := httptest.NewServer(h.d.Handler())
			defer srv.Close()
			h.tick(t, 10*time.Minute)
			c.swap(t, filepath.Join(dir, "d.db"))

			db := filepath.Join(dir, "d.db")
			err := h.tickErr(t, 10*time.Minute)
			if !errors.Is(err, app.ErrDatabaseReplaced) || !strings.Contains(err.Error(), "database file was removed or replaced under the daemon: restart it") {
				t.Fatalf("tick after the swap: %v, want it refused", err)
			}
			if !strings.Contains(err.Error(), db+"-wal") {
				t.Errorf("the error does not say to delete the -wal left at the path: %v", err)
			}
			// (At least 1: the harness advances the clock again when a tick
			// is slow to come, and every tick after the swap is refused.)
			if got := counterValue(t, h.d.Registry(), metrics.RunFailuresTotal); got < 1 {
				t.Errorf("%s = %v, want the refused tick counted", metrics.RunFailuresTotal, got)
			}
			if got := counterValue(t, h.d.Registry(), metrics.LockSkipsTotal); got != 0 {
				t.Errorf("%s = %v, want 0", metrics.LockSkipsTotal, got)
			}
			if l := logs.String(); !strings.Contains(l, `msg="run failed"`) || !strings.Contains(l, "database file was removed or replaced under the daemon: restart it") {
				t.Errorf("log lacks the run-failed line: %s", l)
			}
			// Nothing was written into the file serve still holds.
			var runs int
			if err := h.d.Store().SQL().QueryRow(`SELECT COUNT(*) FROM runs`).Scan(&runs); err != nil || runs != 1 {
				t.Errorf("runs in the file serve opened: %d (%v), want only the one before the swap", runs, err)
			}
			if code, body := httpGet(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "restart") {
				t.Errorf("/readyz: %d %s", code, body)
			}
			if code, body := httpGet(t, srv.URL+"/healthz"); code != http.StatusOK {
				t.Errorf("/healthz: %d %s, want ok", code, body)
			}
			// Why /healthz stays ok: when the file serve opened has moved,
			// SQLite neither checkpoints nor deletes its -wal on close, so
			// after serve exits the -wal is still at the path, paired with
			// whatever file is there; a liveness restart would read the
			// restored backup through it.
			if c.name != "removed" {
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(db + "-wal"); err != nil {
					t.Errorf("serve's -wal after it exited: %v; if SQLite now removes it, /healthz could fail to restart serve", err)
				}
			}
		})
	}
}

// A run that lost its lease mid-run (another process took it over while
// serve was paused or stalled: here it takes over a lease whose holder it
// is told has ended) is not a tick skipped because the lease was held
// elsewhere: it ran, was interrupted and is recorded aborted. It counts as
// a failed run, is logged as one, and is observed (its duration).
func TestLeaseLostMidRunIsAFailureNotASkip(t *testing.T) {
	dir := t.TempDir()
	waiting := make(chan struct{}, 1000)
	h, logs, _ := newFaultDaemon(t, writeCfg(t, dir, "lock_ttl: 30s\n"+blockedRunCfg), app.DaemonOptions{
		// The run sits in its first retry wait until its context ends:
		// when its lease renewal (every 10 s of the daemon's clock)
		// finds the lease lost.
		Sleep: func(ctx context.Context, _ time.Duration) error {
			select {
			case waiting <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return ctx.Err()
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := h.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(10 * time.Minute)
	select {
	case <-waiting:
	case <-ctx.Done():
		t.Fatal("run never started")
	}
	other, err := storage.Open(ctx, filepath.Join(dir, "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	taker := storage.Lease{Holder: "B", Host: "host-b", PID: 2, Command: "driftprobe run", Gone: func(storage.Lease) bool { return true }}
	if err := other.AcquireLock(ctx, taker, time.Hour); err != nil {
		t.Fatalf("taking over serve's lease: %v", err)
	}
	h.clock.Advance(10 * time.Second) // serve's next renewal
	select {
	case err = <-h.done:
	case <-ctx.Done():
		t.Fatal("the run did not stop when its lease was lost")
	}
	if !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("run: %v, want the lease lost", err)
	}
	if got := counterValue(t, h.d.Registry(), metrics.LockSkipsTotal); got != 0 {
		t.Errorf("%s = %v, want 0: the run was not skipped, it ran", metrics.LockSkipsTotal, got)
	}
	if got := counterValue(t, h.d.Registry(), metrics.RunFailuresTotal); got != 1 {
		t.Errorf("%s = %v, want 1", metrics.RunFailuresTotal, got)
	}
	if n := runDurations(t, h.d.Registry()); n != 1 {
		t.Errorf("run durations observed: %d, want 1", n)
	}
	l := logs.String()
	if strings.Contains(l, "skipping scheduled run") || !strings.Contains(l, `msg="run failed"`) || !strings.Contains(l, "lease lost") {
		t.Errorf("log: %s", l)
	}
	if run, err := other.Run(ctx, 1); err != nil || run.Status != storage.RunAborted {
		t.Errorf("run 1: %+v %v, want recorded aborted", run, err)
	}

	// A tick that finds the lease held elsewhere is still a skip.
	if err := h.tickErr(t, 10*time.Minute); !errors.Is(err, storage.ErrLocked) || errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("tick while B holds the lease: %v", err)
	}
	if got := counterValue(t, h.d.Registry(), metrics.LockSkipsTotal); got < 1 {
		t.Errorf("%s = %v after a tick skipped, want it counted", metrics.LockSkipsTotal, got)
	}
	if got := counterValue(t, h.d.Registry(), metrics.RunFailuresTotal); got != 1 {
		t.Errorf("%s = %v after a tick skipped, want still 1", metrics.RunFailuresTotal, got)
	}
}

// /readyz stays ready, and /metrics answers, while serve's own run waits
// on another writer's lock (SQLite's busy timeout, as during a `db prune` or an `outbox
// --send`): the store's single connection (or the lease's, while the run
// takes its lease) is the run's then, and the readiness check must not
// need it.
func TestReadyWhileRunWaitsOnBusyDatabase(t *testing.T) {
	dir := t.TempDir()
	h, _, _ := newFaultDaemon(t, writeCfg(t, dir, schedCfg), app.DaemonOptions{})
	srv := httptest.NewServer(h.d.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	other, err := storage.Open(ctx, filepath.Join(dir, "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	if err := h.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(10 * time.Minute)
	// The run takes the store's connection, or the lease's (taking the
	// lease), and waits on the lock with it.
	for h.d.Store().SQL().Stats().InUse == 0 && h.d.Store().LeaseSQL().Stats().InUse == 0 {
		select {
		case err := <-h.done:
			t.Fatalf("the run ended while the database was locked: %v", err)
		case <-ctx.Done():
			t.Fatal("the run never took the store's connection or the lease's")
		case <-time.After(time.Millisecond):
		}
	}
	if code, body := httpGet(t, srv.URL+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz while the run waits on the lock: %d %q, want ready", code, body)
	}
	if code, _ := httpGet(t, srv.URL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	// A scrape reads through the collector's own connection: it answers
	// well inside a scrape timeout (the run waits up to SQLite's busy
	// timeout, 10 s, with the store's connection) and carries the
	// database's series.
	scrape := &http.Client{Timeout: 4 * time.Second}
	if resp, err := scrape.Get(srv.URL + "/metrics"); err != nil {
		t.Errorf("/metrics while the run waits on the lock: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "\n"+metrics.DatabaseSize+" ") {
			t.Errorf("/metrics while the run waits on the lock: %d, %s missing:\n%s", resp.StatusCode, metrics.DatabaseSize, b)
		}
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatalf("run after the lock was released: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the run never finished")
	}
	if code, body := httpGet(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the run: %d %s", code, body)
	}
}

// /readyz still fails when the database at the path cannot be read
// (here: not a database any more), though the store's own connection
// would answer a ping.
func TestReadyzFailsOnUnreadableDatabase(t *testing.T) {
	dir := t.TempDir()
	h, _, _ := newFaultDaemon(t, writeCfg(t, dir, schedCfg), app.DaemonOptions{})
	srv := httptest.NewServer(h.d.Handler())
	defer srv.Close()
	h.tick(t, 10*time.Minute)
	if code, body := httpGet(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	db := filepath.Join(dir, "d.db")
	if _, err := h.d.Store().SQL().Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt([]byte("not a database!!"), 0) // the header's magic string, in place
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if code, body := httpGet(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "database: ") {
		t.Errorf("/readyz on a file that is no database: %d %s", code, body)
	}
}

// A Pushgateway URL with a query string or a fragment is refused before
// anything is sent: the push client appends its grouping path to the URL
// as given, so the PUT went to the URL's path with the grouping path
// inside the query. The refusal does not repeat the URL (the query may
// hold a token); a textfile is still written.
func TestPushURLWithQueryRefused(t *testing.T) {
	var mu sync.Mutex
	var got []string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
	}))
	defer gw.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "driftprobe_test_total", Help: "x"}))
	for _, u := range []string{gw.URL + "/pgw?auth=QTOKENqa123", gw.URL + "/?", gw.URL + "/#frag", gw.URL + "?auth=QTOKENqa123#x"} {
		tf := filepath.Join(t.TempDir(), "m.prom")
		err := app.ExportMetricsAs(context.Background(), reg, tf, u, "i1")
		if !errors.Is(err, app.ErrPushURLQuery) || strings.Contains(err.Error(), "QTOKEN") {
			t.Errorf("push to %q: %v, want ErrPushURLQuery without the URL", u, err)
		}
		if _, err := os.Stat(tf); err != nil {
			t.Errorf("push to %q: textfile not written: %v", u, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 {
		t.Errorf("pushed anyway: %v", got)
	}
}

// The collector's read-only connection closes before the store's, so the
// store's, the last, checkpoints the database and removes its -wal and
// -shm at shutdown, as a daemon without it did: a scrape must not leave
// the file needing the -wal beside it.
func TestShutdownLeavesNoWALAfterScrapes(t *testing.T) {
	dir := t.TempDir()
	h, _, stop := newFaultDaemon(t, writeCfg(t, dir, schedCfg), app.DaemonOptions{})
	srv := httptest.NewServer(h.d.Handler())
	defer srv.Close()
	h.tick(t, 10*time.Minute)
	if code, body := httpGet(t, srv.URL+"/metrics"); code != http.StatusOK || !strings.Contains(body, "\n"+metrics.DatabaseSize+" ") {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "d.db")
	for _, f := range []string{db + "-wal", db + "-shm"} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after shutdown: %v, want it removed", f, err)
		}
	}
	st, err := storage.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if id, err := st.LatestFinishedRunID(context.Background()); err != nil || id != 1 {
		t.Errorf("latest finished run after shutdown: %d %v, want the tick's run 1", id, err)
	}
}
