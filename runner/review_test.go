package runner_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// hangingTransport holds every request until its context ends, and calls
// entered each time one arrives.
type hangingTransport struct{ entered func() }

func (h hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.entered()
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// Cancelling a run interrupts requests in flight: that is nobody's failure.
// It must neither open the breaker nor be recorded as an observation.
func TestCancelIsNoBreakerFailure(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: s, provider: sim, model: m, concurrency: 4, max_attempts: 1, breaker: {failures: 1, cooldown: 1h}}
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	opened := atomic.Bool{}
	r := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep,
		Client: &http.Client{Transport: hangingTransport{entered: func() {
			if n.Add(1) == 4 {
				cancel()
			}
		}}},
		OnBreaker: func(_ *runner.Target, open bool) {
			if open {
				opened.Store(true)
			}
		}})
	sum, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != storage.RunAborted {
		t.Fatalf("status %s, want aborted", sum.Status)
	}
	if opened.Load() || sum.Targets[0].BreakerOpened {
		t.Error("cancelled requests opened the breaker")
	}
	if obs := observations(t, e, sum.RunID); len(obs) != 0 {
		t.Errorf("%d observations of cancelled requests stored (first: %s %s)", len(obs), obs[0].Result.Class, obs[0].Result.Reason)
	}
}

// A run whose observations cannot be stored is recorded aborted, not left
// running.
func TestStoreFailureLeavesNoRunningRun(t *testing.T) {
	e := testenv.New(t, "targets:\n  - {name: s, provider: sim, model: m}\n")
	if _, err := e.Store.SQL().Exec(`CREATE TRIGGER no_obs BEFORE INSERT ON observations BEGIN SELECT RAISE(ABORT, 'disk full'); END`); err != nil {
		t.Fatal(err)
	}
	r := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep})
	if _, err := r.Run(context.Background()); err == nil {
		t.Fatal("run succeeded without storing observations")
	}
	var running int
	if err := e.Store.SQL().QueryRow(`SELECT COUNT(*) FROM runs WHERE status = 'running'`).Scan(&running); err != nil {
		t.Fatal(err)
	}
	if running != 0 {
		t.Errorf("%d run(s) left running", running)
	}
}

// A breaker that opens on the very last probe still marks the target-run
// degraded (it confirms nothing), though no probe was rejected by it.
func TestBreakerOpeningOnLastProbeDegrades(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: s
    provider: sim
    model: m
    concurrency: 1
    max_attempts: 1
    breaker: {failures: 62}
    sim: {error_status: 503, error_rate: 1}
`)
	if len(e.Corpus.Probes) != 62 {
		t.Skip("the breaker threshold assumes the 62-probe default corpus")
	}
	ts := e.Run().Summary.Targets[0]
	for _, o := range observations(t, e, ts.RunID) {
		if o.Result.Reason == runner.ReasonBreakerOpen {
			t.Fatal("a probe was rejected by the breaker: the test no longer opens it on the last probe")
		}
	}
	if !ts.BreakerOpened || ts.Status != storage.TargetDegraded {
		t.Fatalf("breaker opened on the last probe but the target-run says opened=%v status=%s", ts.BreakerOpened, ts.Status)
	}
}

// A provider asking to wait longer than a run waits is not retried in
// this run (rather than retried before the time it asked for).
func TestLongRetryAfterNotRetried(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: s
    provider: sim
    model: m
    max_attempts: 3
    breaker: {failures: 1000}
    sim: {error_status: 429, fail_first: 1, retry_after: 3600}
`)
	res := e.Run()
	if len(e.Sleeps) != 0 {
		t.Fatalf("slept %v despite Retry-After 3600s", e.Sleeps[:1])
	}
	if ts := res.Summary.Targets[0]; ts.Counts[probes.Transient] != len(e.Corpus.Probes) || ts.Requests != len(e.Corpus.Probes) {
		t.Fatalf("counts %v requests %d", ts.Counts, ts.Requests)
	}
}
