package runner_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// holdServer answers each request with answer(k) (k counts requests from
// 1); answer returning false holds the request instead, announcing it on
// held, until the client gives up on it or the test ends.
func holdServer(t *testing.T, answer func(k int, w http.ResponseWriter) bool) (srv *httptest.Server, received func() int, held <-chan int) {
	t.Helper()
	var n atomic.Int32
	ch := make(chan int, 64)
	release := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := int(n.Add(1))
		if answer(k, w) {
			return
		}
		ch <- k
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv, func() int { return int(n.Load()) }, ch
}

// runUntilHeld runs o, cancelling the run once want requests are held by
// the server.
func runUntilHeld(t *testing.T, o runner.Options, held <-chan int, want int) *runner.Summary {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		sum *runner.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := runner.New(o).Run(ctx)
		done <- result{sum, err}
	}()
	for i := 0; i < want; i++ {
		select {
		case <-held:
		case r := <-done:
			t.Fatalf("run ended (%v) with %d of %d requests held", r.err, i, want)
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d requests held", i, want)
		}
	}
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("run did not end after cancel")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.sum.Status != storage.RunAborted {
		t.Fatalf("status %s, want aborted", r.sum.Status)
	}
	return r.sum
}

// checkRequests asserts the run's summary and its stored run_targets row
// count requests and retries as given.
func checkRequests(t *testing.T, sum *runner.Summary, store *storage.DB, requests, retries int) runner.TargetSummary {
	t.Helper()
	ts := *sum.Targets[0]
	if ts.Requests != requests || ts.Retries != retries {
		t.Errorf("summary: requests %d, retries %d; want %d, %d", ts.Requests, ts.Retries, requests, retries)
	}
	rts, err := store.RunTargets(context.Background(), sum.RunID)
	if err != nil || len(rts) != 1 {
		t.Fatalf("run_targets %+v, %v", rts, err)
	}
	if rts[0].Requests != requests || rts[0].Retries != retries {
		t.Errorf("run_targets: requests %d, retries %d; want %d, %d", rts[0].Requests, rts[0].Retries, requests, retries)
	}
	return ts
}

// A run stopped (SIGINT/SIGTERM) while requests are in flight counts
// them: they were sent and a provider may bill them. None is an
// observation.
func TestInterruptedRequestsCounted(t *testing.T) {
	srv, received, held := holdServer(t, func(int, http.ResponseWriter) bool { return false })
	e := qarEnv(t, 8, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 3, max_attempts: 1, timeout: 1m}\n", srv.URL+"/v1"))
	o := runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep}
	sum := runUntilHeld(t, o, held, 3)
	if got := received(); got != 3 {
		t.Fatalf("server received %d requests, want 3", got)
	}
	checkRequests(t, sum, e.Store, 3, 0)
	if obs := observations(t, e, sum.RunID); len(obs) != 0 {
		t.Errorf("%d observations of interrupted requests stored", len(obs))
	}
}

// A send whose first attempt was answered (503) and whose retry the stop
// interrupted sent two requests, one a retry.
func TestInterruptedRetryCounted(t *testing.T) {
	srv, received, held := holdServer(t, func(k int, w http.ResponseWriter) bool {
		if k == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	e := qarEnv(t, 1, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 3, timeout: 1m, breaker: {failures: 100}}\n", srv.URL+"/v1"))
	clk := newFakeClock()
	o := runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: clk.Sleep, Now: clk.Now}
	sum := runUntilHeld(t, o, held, 1)
	if got := received(); got != 2 {
		t.Fatalf("server received %d requests, want 2", got)
	}
	checkRequests(t, sum, e.Store, 2, 1)
}

// The tokens of an answer that was billed and retried (a 2xx without
// usable content) count in the cost when the retry is interrupted, as
// they do when it is answered; tokens_in/tokens_out stay the recorded
// answers' own usage (none here).
func TestInterruptedRetryBilled(t *testing.T) {
	srv, _, held := holdServer(t, func(k int, w http.ResponseWriter) bool {
		if k == 1 {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"x1","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant"}}],"usage":{"prompt_tokens":100,"completion_tokens":40}}`)
			return true
		}
		return false
	})
	e := qarEnv(t, 1, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 3, timeout: 1m, breaker: {failures: 100}, price: {input_per_mtok: 1000000, output_per_mtok: 2000000}}\n", srv.URL+"/v1"))
	clk := newFakeClock()
	o := runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: clk.Sleep, Now: clk.Now}
	sum := runUntilHeld(t, o, held, 1)
	ts := checkRequests(t, sum, e.Store, 2, 1)
	// 100·1 + 40·2 dollars at these prices.
	if want := 180.0; math.Abs(ts.CostUSD-want) > 1e-9 {
		t.Errorf("cost %v, want %v (the answered attempt was billed)", ts.CostUSD, want)
	}
	if ts.TokensIn != 0 || ts.TokensOut != 0 {
		t.Errorf("tokens %d/%d, want 0/0 (no answer recorded)", ts.TokensIn, ts.TokensOut)
	}
}

// An extra sample (Resample) the stop interrupted was sent too.
func TestInterruptedResampleCounted(t *testing.T) {
	srv, received, held := holdServer(t, func(k int, w http.ResponseWriter) bool {
		if k == 1 {
			okAnswer(w)
			return true
		}
		return false
	})
	e := qarEnv(t, 1, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 3, timeout: 1m}\n", srv.URL+"/v1"))
	o := runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep,
		Resample: func(*runner.Target, string, string, probes.Result) int { return 2 }}
	sum := runUntilHeld(t, o, held, 1)
	if got := received(); got != 2 {
		t.Fatalf("server received %d requests, want 2", got)
	}
	checkRequests(t, sum, e.Store, 2, 0)
	if obs := observations(t, e, sum.RunID); len(obs) != 1 {
		t.Errorf("%d observations stored, want the first sample's only", len(obs))
	}
}

// A request the stop caught waiting for the rate limit was never sent:
// it is not counted.
func TestInterruptedBeforeSendNotCounted(t *testing.T) {
	srv, received, _ := holdServer(t, func(_ int, w http.ResponseWriter) bool { okAnswer(w); return true })
	e := qarEnv(t, 3, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 1, timeout: 1m, rate_limit_rpm: 60}\n", srv.URL+"/v1"))
	clk := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var waits []time.Duration
	o := runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Now: clk.Now,
		// The first wait is the rate limit holding the second request:
		// the run is stopped then.
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			cancel()
			return ctx.Err()
		}}
	sum, err := runner.New(o).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != storage.RunAborted {
		t.Fatalf("status %s, want aborted", sum.Status)
	}
	// (A probe already handed to the worker may wait once more.)
	if len(waits) == 0 || waits[0] <= 0 {
		t.Fatalf("waits %v, want the rate limit's", waits)
	}
	if got := received(); got != 1 {
		t.Fatalf("server received %d requests, want 1", got)
	}
	checkRequests(t, sum, e.Store, 1, 0)
}
