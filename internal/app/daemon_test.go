package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/storage"
)

const schedCfg = `
database: %DB%
schedule: "@every 10m"
targets:
  - name: a
    provider: sim
    model: m
    sim:
      policies:
        - {from_run: 1, thresholds: {privacy: 1.01}}
        - {from_run: 3, thresholds: {privacy: 0.5, violence: 0.3}}
`

func writeCfg(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(body, "%DB%", filepath.Join(dir, "d.db"))), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type daemonHarness struct {
	d     *app.Daemon
	clock *clockwork.FakeClock
	done  chan error
}

func newDaemon(t *testing.T, cfgPath string) *daemonHarness {
	t.Helper()
	return newDaemonWith(t, cfgPath, nil)
}

// newDaemonWith is newDaemon with the options adjusted by opt (when not
// nil) before the daemon is built. An OnRun that opt sets is called before
// the harness records the run's end.
func newDaemonWith(t *testing.T, cfgPath string, opt func(*app.DaemonOptions)) *daemonHarness {
	t.Helper()
	h := &daemonHarness{clock: clockwork.NewFakeClock(), done: make(chan error, 100)}
	o := app.DaemonOptions{ConfigPath: cfgPath, Clock: h.clock,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	if opt != nil {
		opt(&o)
	}
	onRun := o.OnRun
	o.OnRun = func(res *app.RunResult, err error) {
		if onRun != nil {
			onRun(res, err)
		}
		h.done <- err
	}
	d, err := app.NewDaemon(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	h.d = d
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Shutdown() })
	return h
}

// tick advances the fake clock one interval and waits for the run, which
// must succeed (tickErr returns its error instead).
func (h *daemonHarness) tick(t *testing.T, iv time.Duration) {
	t.Helper()
	if err := h.tickErr(t, iv); err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestDaemonRunsOnScheduleAndMetricsMove(t *testing.T) {
	dir := t.TempDir()
	h := newDaemon(t, writeCfg(t, dir, schedCfg))
	if h.d.Runs() != 0 {
		t.Fatal("ran before the first interval")
	}
	active := func() float64 {
		n, err := testutil.GatherAndCount(h.d.Registry(), metrics.CategoryActive)
		if err != nil || n == 0 {
			t.Fatalf("no %s series: %v", metrics.CategoryActive, err)
		}
		mfs, _ := h.d.Registry().Gather()
		for _, mf := range mfs {
			if mf.GetName() != metrics.CategoryActive {
				continue
			}
			for _, m := range mf.Metric {
				var cat string
				for _, l := range m.Label {
					if l.GetName() == "category" {
						cat = l.GetValue()
					}
				}
				if cat == "privacy" {
					return m.GetGauge().GetValue()
				}
			}
		}
		return -1
	}
	for i := 1; i <= 2; i++ {
		h.tick(t, 10*time.Minute)
	}
	if got := active(); got != 0 {
		t.Fatalf("privacy active = %v before the change", got)
	}
	for i := 3; i <= 4; i++ {
		h.tick(t, 10*time.Minute)
	}
	if h.d.Runs() != 4 || h.d.MaxConcurrent() != 1 {
		t.Fatalf("runs %d, max concurrent %d", h.d.Runs(), h.d.MaxConcurrent())
	}
	if got := active(); got != 1 {
		t.Errorf("privacy active = %v after the confirmed change, want 1", got)
	}
	if n := testutil.ToFloat64(h.d.Metrics().ScheduleSecond); n != 600 {
		t.Errorf("schedule interval %v", n)
	}
	// (Every kind and direction of the target is exported, at 0 until its
	// first event.)
	if got := nonzeroSeries(t, h.d.Registry(), metrics.EventsTotal); len(got) != 1 || got[0] != `driftprobe_events_total{direction="tightened",kind="policy_change",target="a"} 1` {
		t.Errorf("events: %v", got)
	}
	problems, err := testutil.GatherAndLint(h.d.Registry())
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	// /metrics over HTTP, checked by promtool when it is installed.
	srv := httptest.NewServer(h.d.Handler())
	defer srv.Close()
	body := get(t, srv.URL+"/metrics")
	// (The sim answers every request here: retries_total is there at 0.)
	for _, want := range []string{"driftprobe_category_active{", "driftprobe_runs_total{status=\"complete\"} 4", "driftprobe_requests_total{", "driftprobe_retries_total{target=\"a\"} 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// (A float in the exposition format: 1.048576e+06 past a megabyte.)
	if m := regexp.MustCompile(`(?m)^driftprobe_database_size_bytes (\S+)$`).FindStringSubmatch(body); m == nil {
		t.Error("/metrics has no database size")
	} else if v, err := strconv.ParseFloat(m[1], 64); err != nil || v < 10000 {
		t.Errorf("/metrics database size: %q, want the database's (at least 10 KB after 4 runs)", m[1])
	}
	if !regexp.MustCompile(`(?m)^driftprobe_database_free_bytes \d+$`).MatchString(body) {
		t.Error("/metrics lacks driftprobe_database_free_bytes")
	}
	if get(t, srv.URL+"/readyz") != "ready\n" || get(t, srv.URL+"/healthz") != "ok\n" {
		t.Error("health endpoints")
	}
	if path, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(path, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	} else if os.Getenv("DRIFTPROBE_REQUIRE_PROMTOOL") != "" {
		t.Fatal("promtool required but not installed")
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestBadReloadKeepsOldConfig(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeCfg(t, dir, schedCfg)
	h := newDaemon(t, cfgPath)
	h.tick(t, 10*time.Minute)
	if err := os.WriteFile(cfgPath, []byte("targets:\n  - name: a\n    provider: nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.d.Reload(); err == nil {
		t.Fatal("bad config accepted")
	}
	if v := testutil.ToFloat64(h.d.Metrics().ReloadOK); v != 0 {
		t.Errorf("reload metric %v, want 0", v)
	}
	if got := h.d.Config().Targets[0].Provider; got != "sim" {
		t.Fatalf("running config replaced: provider %q", got)
	}
	h.tick(t, 10*time.Minute) // the old config keeps running
	// A good config (new schedule) is taken.
	writeCfg(t, dir, strings.Replace(schedCfg, "@every 10m", "@every 20m", 1))
	if err := h.d.Reload(); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(h.d.Metrics().ReloadOK); v != 1 || h.d.Config().Schedule != "@every 20m" {
		t.Errorf("reload metric %v schedule %s", v, h.d.Config().Schedule)
	}
	h.tick(t, 20*time.Minute)
	if h.d.Runs() != 3 {
		t.Errorf("runs %d, want 3", h.d.Runs())
	}
}

// A second process on the same database is refused while the first holds
// the lease; a lease whose holder Gone says has ended, or an expired one,
// is taken over.
func TestRunLease(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	ctx := context.Background()
	a, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a.SetClock(clock)
	b.SetClock(clock)
	la := storage.Lease{Holder: "A", Host: "host-a", PID: 1, Command: "driftprobe serve"}
	lb := storage.Lease{Holder: "B", Host: "host-b", PID: 2, Command: "driftprobe run"}
	if err := a.AcquireLock(ctx, la, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	err = b.AcquireLock(ctx, lb, 10*time.Minute)
	if err == nil || !strings.Contains(err.Error(), "driftprobe serve (pid 1 on host-a)") {
		t.Fatalf("second holder: %v", err)
	}
	if err := a.AcquireLock(ctx, la, 10*time.Minute); err != nil {
		t.Fatalf("renewal by the holder: %v", err)
	}
	var asked []string
	lb.Gone = func(h storage.Lease) bool { asked = append(asked, h.Holder); return false }
	if err := b.AcquireLock(ctx, lb, 10*time.Minute); !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("holder not gone: %v", err)
	}
	if len(asked) != 1 || asked[0] != "A" {
		t.Fatalf("Gone asked about %q", asked)
	}
	lc := storage.Lease{Holder: "C", Host: "host-a", PID: 3, Command: "driftprobe run", Gone: func(h storage.Lease) bool { return h.Holder == "A" }}
	if err := b.AcquireLock(ctx, lc, 10*time.Minute); err != nil {
		t.Fatalf("lease of an ended holder not taken over: %v", err)
	}
	if err := a.AcquireLock(ctx, la, 10*time.Minute); !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("A renewed a lease taken over: %v", err)
	}
	if err := b.ReleaseLock(ctx, lc); err != nil {
		t.Fatal(err)
	}
	if err := a.AcquireLock(ctx, la, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	lb.Gone = nil
	mu.Lock()
	now = now.Add(11 * time.Minute)
	mu.Unlock()
	if err := b.AcquireLock(ctx, lb, 10*time.Minute); err != nil {
		t.Fatalf("expired lease not taken over: %v", err)
	}
	if h, _ := a.LockHolder(ctx); h == nil || h.Holder != "B" {
		t.Fatalf("holder %+v", h)
	}
	if err := b.ReleaseLock(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if h, _ := a.LockHolder(ctx); h != nil {
		t.Fatalf("lease not released: %+v", h)
	}
}

// Shutdown during a run cancels it cleanly: the run is recorded aborted,
// the lease released, and nothing is half-written.
func TestShutdownAbortsRunCleanly(t *testing.T) {
	dir := t.TempDir()
	d := startBlockedRun(t, dir, blockedRunCfg)
	st, err := storage.Open(context.Background(), filepath.Join(dir, "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if h, _ := st.LockHolder(context.Background()); h == nil {
		t.Fatal("no lease held during the run")
	}
	if err := d.Shutdown(); err != nil {
		t.Fatal(err)
	}
	run, err := st.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != storage.RunAborted || run.FinishedAt.IsZero() {
		t.Errorf("run status %s finished %v, want aborted", run.Status, run.FinishedAt)
	}
	if h, _ := st.LockHolder(context.Background()); h != nil {
		t.Errorf("lease still held after shutdown: %+v", h)
	}
	var stateRows int
	st.SQL().QueryRow(`SELECT COUNT(*) FROM probe_states`).Scan(&stateRows)
	if stateRows != 0 {
		t.Errorf("an aborted run updated detection state")
	}
}

// Account-level enforcement is not a per-request verdict: it opens no
// policy event, and the abuse metric pages on it.
func TestAbuseBlockMetricNoEvent(t *testing.T) {
	dir := t.TempDir()
	h := newDaemon(t, writeCfg(t, dir, `
database: %DB%
schedule: "@every 10m"
targets:
  - name: a
    provider: sim
    model: m
    sim: {abuse_from_run: 3}
`))
	for i := 0; i < 4; i++ {
		h.tick(t, 10*time.Minute)
	}
	if err := testutil.GatherAndCompare(h.d.Registry(), strings.NewReader(`
# HELP driftprobe_abuse_blocks Probes answered with account-level enforcement (abuse_block) in the target's latest finished run (an interrupted run's count when it is larger; none while its latest run predates a disable).
# TYPE driftprobe_abuse_blocks gauge
driftprobe_abuse_blocks{target="a"} 62
`), metrics.AbuseBlocks); err != nil {
		t.Error(err)
	}
	if got := nonzeroSeries(t, h.d.Registry(), metrics.EventsTotal); len(got) != 0 {
		t.Errorf("events after abuse blocks: %v, want none", got)
	}
}

// A reload during a run does not wait for the run (the serve loop would
// stop answering SIGTERM until the run ended): the new config is in force
// at once, the run in progress keeps its own, and shutdown still aborts it.
func TestReloadDuringRunDoesNotWait(t *testing.T) {
	dir := t.TempDir()
	d := startBlockedRun(t, dir, blockedRunCfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	writeCfg(t, dir, blockedRunCfg+"  - {name: b, provider: sim, model: m}\n")
	reloaded := make(chan error, 1)
	go func() { reloaded <- d.Reload() }()
	select {
	case err := <-reloaded:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("reload waited for the run in progress")
	}
	if n := len(d.Config().Targets); n != 2 {
		t.Fatalf("config in force has %d targets, want 2", n)
	}
	if err := d.Shutdown(); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(context.Background(), filepath.Join(dir, "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if run, err := st.Run(context.Background(), 1); err != nil || run.Status != storage.RunAborted {
		t.Fatalf("run %+v %v, want aborted", run, err)
	}
}

// blockedRunCfg is a daemon config whose run sits in its first retry wait:
// every first attempt gets a 503.
const blockedRunCfg = `
database: %DB%
schedule: "@every 10m"
targets:
  - name: a
    provider: sim
    model: m
    sim: {error_status: 503, fail_first: 1}
`

// startBlockedRun starts a daemon on body (written in dir) and returns once
// its first scheduled run is in progress, blocked in a retry wait that
// ends only when the run's context does (shutdown).
func startBlockedRun(t *testing.T, dir, body string) *app.Daemon {
	d, _ := startBlockedRunCtx(t, dir, body)
	return d
}

// startBlockedRunCtx is startBlockedRun also returning the blocked run's
// context.
func startBlockedRunCtx(t *testing.T, dir, body string) (*app.Daemon, context.Context) {
	t.Helper()
	cfgPath := writeCfg(t, dir, body)
	clock := clockwork.NewFakeClock()
	waiting := make(chan context.Context, 1000)
	d, err := app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: cfgPath, Clock: clock,
		Sleep: func(ctx context.Context, _ time.Duration) error {
			waiting <- ctx
			<-ctx.Done()
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	startAndTick(t, d, clock)
	select {
	case runCtx := <-waiting:
		return d, runCtx
	case <-time.After(30 * time.Second):
		t.Fatal("run never started")
	}
	return nil, nil
}

// startAndTick starts d and, once its scheduler waits on clock, advances
// clock to the first tick of blockedRunCfg's @every 10m schedule.
func startAndTick(t *testing.T, d *app.Daemon, clock *clockwork.FakeClock) {
	t.Helper()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Minute)
}

// A reload that changes the schedule (gocron replaces the job, ending its
// job context) does not abort the run in progress.
func TestScheduleReloadKeepsTheRun(t *testing.T) {
	dir := t.TempDir()
	d, runCtx := startBlockedRunCtx(t, dir, blockedRunCfg)
	writeCfg(t, dir, strings.Replace(blockedRunCfg, "@every 10m", "@every 20m", 1))
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	if d.Config().Schedule != "@every 20m" {
		t.Fatalf("schedule %q", d.Config().Schedule)
	}
	if runCtx.Err() != nil {
		t.Fatal("the reload cancelled the run in progress")
	}
	if err := d.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if runCtx.Err() == nil {
		t.Fatal("shutdown left the run's context alive")
	}
}

// A run still ending when the scheduler's stop timeout passes (its final
// writes waiting on another writer's lock, say) is waited for, and the
// shutdown is still a clean one: SIGTERM to serve then exits 0, not 3
// with "gocron: timed out waiting for jobs to finish" (a stopped systemd
// unit shown failed). The log says what Shutdown waits for.
func TestShutdownWaitsPastTheSchedulerStopTimeout(t *testing.T) {
	defer app.SetSchedulerStopTimeout(time.Millisecond)()
	dir := t.TempDir()
	cfgPath := writeCfg(t, dir, blockedRunCfg)
	clock := clockwork.NewFakeClock()
	waiting := make(chan struct{}, 1000)
	release := make(chan struct{})
	logs := &notifyWriter{want: "still ending", seen: make(chan struct{})}
	d, err := app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: cfgPath, Clock: clock,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Sleep: func(ctx context.Context, _ time.Duration) error {
			waiting <- struct{}{}
			<-ctx.Done()
			<-release // the run ends slowly, past the scheduler's stop timeout
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	startAndTick(t, d, clock)
	select {
	case <-waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("run never started")
	}
	done := make(chan error, 1)
	go func() { done <- d.Shutdown() }()
	select {
	case <-logs.seen:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatalf("Shutdown never said it waits for the run in progress; logs:\n%s (Shutdown: %v)", logs.String(), <-done)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v, want a clean shutdown", err)
	}
	st, err := storage.Open(context.Background(), filepath.Join(dir, "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != storage.RunAborted {
		t.Errorf("run status %s, want aborted", run.Status)
	}
	if h, _ := st.LockHolder(context.Background()); h != nil {
		t.Errorf("lease still held after shutdown: %+v", h)
	}
}

// notifyWriter collects log output and closes seen once it holds want.
type notifyWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
