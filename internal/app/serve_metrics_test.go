package app_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/storage"
)

// nonzeroSeries returns `name{l="v",...} value` for every series of the
// family in g whose value is not 0, sorted.
func nonzeroSeries(t *testing.T, g prometheus.Gatherer, name string) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			if v == 0 {
				continue
			}
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			out = append(out, name+"{"+strings.Join(ls, ",")+"} "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	slices.Sort(out)
	return out
}

// tickErr advances the fake clock one interval and returns the run's
// error. gocron releases its singleton slot just after a run returns, so
// an advance that lands in that instant is (correctly) skipped as an
// overlap; the harness then advances another interval rather than flake.
func (h *daemonHarness) tickErr(t *testing.T, iv time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if err := h.clock.BlockUntilContext(ctx, 1); err != nil {
			t.Fatalf("scheduler never waited on the clock: %v", err)
		}
		h.clock.Advance(iv)
		select {
		case err := <-h.done:
			return err
		case <-time.After(3 * time.Second):
			// skipped as an overlap: advance again
		case <-ctx.Done():
			t.Fatal("run did not happen after advancing the clock")
		}
	}
}

// A scheduled run that fails (here: every observation's insert fails, as
// on a full disk) counts in driftprobe_run_failures_total,
// which serve exports at 0 from the start (so the first failure is an
// increase from 0); a run that succeeds does not count. A one-shot run's
// registry has no such series: it exports nothing when it fails (its
// Job or unit fails instead).
func TestRunFailuresCounted(t *testing.T) {
	dir := t.TempDir()
	h := newDaemon(t, writeCfg(t, dir, schedCfg))
	count := func() float64 {
		t.Helper()
		n, err := testutil.GatherAndCount(h.d.Registry(), metrics.RunFailuresTotal)
		if err != nil || n != 1 {
			t.Fatalf("%d %s series (%v), want one from the start", n, metrics.RunFailuresTotal, err)
		}
		mfs, _ := h.d.Registry().Gather()
		for _, mf := range mfs {
			if mf.GetName() == metrics.RunFailuresTotal {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return -1
	}
	if got := count(); got != 0 {
		t.Fatalf("before any run: %v", got)
	}
	h.tick(t, 10*time.Minute)
	if got := count(); got != 0 {
		t.Fatalf("after a run that succeeded: %v", got)
	}
	// Every write of an observation fails, as on a full disk.
	if _, err := h.d.Store().SQL().Exec(`CREATE TRIGGER full BEFORE INSERT ON observations BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	err := h.tickErr(t, 10*time.Minute)
	if err == nil || errors.Is(err, storage.ErrLocked) || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("run on a full disk: %v, want it failed", err)
	}
	if got := count(); got != 1 {
		t.Errorf("after a failed run: %v, want 1", got)
	}

	e := testenv.New(t, "targets:\n  - {name: a, provider: sim, model: m}\n")
	reg, _ := app.NewRegistry(e.Store, false)
	if n, err := testutil.GatherAndCount(reg, metrics.RunFailuresTotal); err != nil || n != 0 {
		t.Errorf("a one-shot run's registry has %d %s series (%v), want none", n, metrics.RunFailuresTotal, err)
	}
}

// /readyz says not ready when the database file at the configured path is
// not the one serve opened: removed (serve would go on writing runs into
// the unlinked file, which nothing else reads and which is lost when it
// exits) or replaced by another file (a restore, a copy moved into place).
// SQLite's own handle keeps working, so a ping alone says ready.
func TestReadyzDatabaseFileGoneOrReplaced(t *testing.T) {
	dir := t.TempDir()
	h := newDaemon(t, writeCfg(t, dir, schedCfg))
	srv := httptest.NewServer(h.d.Handler())
	defer srv.Close()
	ready := func() (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := ready(); code != http.StatusOK {
		t.Fatalf("fresh daemon: %d %s", code, body)
	}
	db := filepath.Join(dir, "d.db")
	aside := db + ".aside"
	if err := os.Rename(db, aside); err != nil {
		t.Fatal(err)
	}
	if code, body := ready(); code != http.StatusServiceUnavailable || !strings.Contains(body, "restart") {
		t.Errorf("database file gone: %d %s, want 503 saying to restart", code, body)
	}
	raw, err := os.ReadFile(aside)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := ready(); code != http.StatusServiceUnavailable || !strings.Contains(body, "replaced") {
		t.Errorf("database file replaced by a copy: %d %s, want 503 saying it was replaced", code, body)
	}
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(aside, db); err != nil {
		t.Fatal(err)
	}
	if code, body := ready(); code != http.StatusOK {
		t.Errorf("the opened file back in place: %d %s, want ready", code, body)
	}
}

// Pushes are grouped under job="driftprobe" and an instance: the host
// name unless one is given.
func TestPushGrouping(t *testing.T) {
	paths := make(chan string, 4)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.Method + " " + r.URL.Path
	}))
	defer gw.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "driftprobe_test_total", Help: "x"}))
	if err := app.ExportMetricsAs(context.Background(), reg, "", gw.URL, "prober-7"); err != nil {
		t.Fatal(err)
	}
	if got := <-paths; got != "PUT /metrics/job/driftprobe/instance/prober-7" {
		t.Errorf("pushed to %q", got)
	}
	if err := app.ExportMetrics(context.Background(), reg, "", gw.URL); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if got := <-paths; host == "" || got != "PUT /metrics/job/driftprobe/instance/"+host {
		t.Errorf("pushed to %q, want the host name %q as instance", got, host)
	}
}
