package app_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

// QA soak: serve delivered the GitHub outbox inside the scheduled tick
// (Daemon.tick called AfterRun, i.e. ghissue.AfterRun, before returning),
// and the job runs in gocron singleton mode (LimitModeReschedule), so
// while a delivery pass was slow no probe run happened at all. Each GitHub
// call is bounded (30 s) but the pass is not: on a live serve ("@every
// 5s") a GitHub answering every call in 6 s blocked probing for 55 s for
// ONE outbox row (open-on-new-host + comment + close = 9 calls), and a
// hanging GitHub blocked it 30 s per pass. A backlog of N rows blocked it
// for N times that. Probing (the monitor's purpose) should not wait on
// the issue tracker.
//
// The test stands in for a slow GitHub with an AfterRun that does not
// return until released, advances the fake clock by whole intervals,
// and expects the next scheduled run to happen meanwhile; delivery stays
// single-flight (no second pass while the first is in progress) and the
// runs finished meanwhile get one pass, with the latest run, once the
// slow one returns.
func TestQASoakSlowGitHubDeliveryDoesNotStopProbing(t *testing.T) {
	dir := t.TempDir()
	entered := make(chan int64, 16)
	release := make(chan struct{})
	var inFlight, maxInFlight atomic.Int32
	h, _, stop := newFaultDaemon(t, writeCfg(t, dir, `
database: %DB%
schedule: "@every 1m"
targets:
  - name: a
    provider: sim
    model: m
`), app.DaemonOptions{AfterRun: func(ctx context.Context, _ *config.Config, _ *storage.DB, res *app.RunResult) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
		}
		entered <- res.Summary.RunID
		if res.Summary.RunID == 1 {
			select { // the first run's delivery pass: a slow GitHub
			case <-release:
			case <-ctx.Done():
			}
		}
	}})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wait := func(what string) {
		t.Helper()
		if err := h.clock.BlockUntilContext(ctx, 1); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	wait("the first tick")
	h.clock.Advance(time.Minute)
	select {
	case id := <-entered:
		if id != 1 {
			t.Fatalf("first delivery pass for run %d", id)
		}
	case <-ctx.Done():
		t.Fatal("no delivery pass for run 1")
	}
	// Run 1's tick ends although its delivery does not.
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatalf("run 1: %v", err)
		}
	case <-time.After(5 * time.Second): // bound only; no timing asserted
		t.Fatal("run 1's tick has not ended while its GitHub delivery pass is in progress: the next scheduled run cannot start (singleton job)")
	}
	// Run 1's delivery is still in progress. Five more intervals pass.
	ran := false
	for i := range 5 {
		wait("the next tick")
		h.clock.Advance(time.Minute)
		select {
		case err := <-h.done:
			if err != nil {
				t.Fatalf("run during delivery: %v", err)
			}
			t.Logf("run 2 happened %d interval(s) into run 1's delivery", i+1)
			ran = true
		case <-time.After(2 * time.Second): // bound only; no timing asserted
		}
		if ran {
			break
		}
	}
	if !ran {
		t.Fatalf("no probe run in 5 scheduled intervals while a GitHub delivery pass was in progress (runs finished: %d)", h.d.Runs())
	}
	select {
	case id := <-entered:
		t.Fatalf("a delivery pass for run %d started while run 1's was in progress", id)
	default:
	}
	// The slow pass returns: the run finished meanwhile gets one pass.
	close(release)
	select {
	case id := <-entered:
		if id != 2 {
			t.Fatalf("delivery after the slow pass for run %d, want 2 (the latest)", id)
		}
	case <-ctx.Done():
		t.Fatal("no delivery pass for run 2 after run 1's returned")
	}
	if m := maxInFlight.Load(); m != 1 {
		t.Errorf("%d delivery passes at once, want 1", m)
	}
	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// TestDaemonShutdownCancelsAHangingDelivery: SIGTERM (Shutdown) while a
// delivery pass hangs on GitHub ends it through its context and returns;
// the store is closed only after the pass has returned.
func TestDaemonShutdownCancelsAHangingDelivery(t *testing.T) {
	dir := t.TempDir()
	entered := make(chan struct{})
	var storeOpen atomic.Bool
	h, _, stop := newFaultDaemon(t, writeCfg(t, dir, `
database: %DB%
schedule: "@every 1m"
targets:
  - name: a
    provider: sim
    model: m
`), app.DaemonOptions{AfterRun: func(ctx context.Context, _ *config.Config, st *storage.DB, _ *app.RunResult) {
		close(entered)
		<-ctx.Done() // a GitHub that never answers
		// The store is still open: what a cancelled pass records
		// (releasing its claim) reaches the database.
		_, err := st.SchemaVersion(context.Background())
		storeOpen.Store(err == nil)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := h.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Minute)
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("no delivery pass")
	}
	done := make(chan error, 1)
	go func() { done <- stop() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("shutdown waited on a hanging delivery pass")
	}
	if !storeOpen.Load() {
		t.Error("the store was closed before the cancelled delivery pass returned")
	}
}
