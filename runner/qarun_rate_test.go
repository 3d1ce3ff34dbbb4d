package runner_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
)

// The per-target rate limit is kept on the run's clock: with an injected
// clock, every request (a retry included) reaches the server at least
// 60/rate_limit_rpm apart on that clock, so no minute holds more than
// rate_limit_rpm of them. It used to wait on the wall clock whatever
// Options.Now and Options.Sleep said: a run could not be paced (or
// tested) on a virtual clock.
func TestRateLimitBoundsRequestsOnTheRunsClock(t *testing.T) {
	clk := newFakeClock()
	var mu sync.Mutex
	var at []time.Time
	seen := map[[32]byte]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		at = append(at, clk.Now())
		h := sha256.Sum256(b)
		first := !seen[h]
		seen[h] = true
		mu.Unlock()
		if first { // every request's first attempt is a 503: retries are paced too
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		}
		okAnswer(w)
	}))
	defer srv.Close()
	const n, rpm = 8, 30
	e := qarEnv(t, n, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, rate_limit_rpm: %d, max_attempts: 2}\n", srv.URL+"/v1", rpm))
	sum := qarRun(t, e, clk, nil)
	if got := sum.Targets[0].Counts[probes.Allowed]; got != n {
		t.Fatalf("%d allowed of %d: %v", got, n, sum.Targets[0].Counts)
	}
	if len(at) != 2*n {
		t.Fatalf("server saw %d requests, want %d", len(at), 2*n)
	}
	gap := time.Minute / rpm
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d < gap-time.Millisecond {
			t.Errorf("requests %d and %d %v apart on the run's clock, want at least %v", i-1, i, d, gap)
		}
	}
	for i := range at {
		in := 0
		for _, b := range at[i:] {
			if b.Sub(at[i]) < time.Minute {
				in++
			}
		}
		if in > rpm {
			t.Errorf("%d requests within a minute from request %d, limit %d", in, i, rpm)
		}
	}
}

// With several workers of one target, each request still gets a slot of
// its own: on a clock that stands still, the waits are one interval, two,
// three… apart, never two requests in the same slot.
func TestRateLimitSlotsAreDistinctAcrossWorkers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { okAnswer(w) }))
	defer srv.Close()
	const n, rpm = 12, 60
	e := qarEnv(t, n, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 4, rate_limit_rpm: %d}\n", srv.URL+"/v1", rpm))
	frozen := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var waits []time.Duration
	sum := qarRun(t, e, newFakeClock(), func(o *runner.Options) {
		o.Now = func() time.Time { return frozen }
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return ctx.Err()
		}
	})
	if got := sum.Targets[0].Counts[probes.Allowed]; got != n {
		t.Fatalf("%d allowed of %d: %v", got, n, sum.Targets[0].Counts)
	}
	// The first request goes at once; the others wait 1, 2, … n-1 intervals.
	got := sortedDurations(waits)
	if len(got) != n-1 {
		t.Fatalf("%d waits, want %d: %v", len(got), n-1, got)
	}
	gap := time.Minute / rpm
	for i, d := range got {
		if want := time.Duration(i+1) * gap; d < want-time.Millisecond || d > want+time.Millisecond {
			t.Errorf("wait %d is %v, want %v: %v", i, d, want, got)
		}
	}
}

func sortedDurations(d []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), d...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Once the breaker is open, a probe not yet sent is recorded breaker_open
// at once: it does not first wait for a rate-limit slot it will not use.
// It used to: with rate_limit_rpm 6 and an upstream down, every one of the
// corpus's remaining probes waited 10 s to be told nothing was sent.
func TestBreakerOpenProbesSpendNoRateLimitWait(t *testing.T) {
	var mu sync.Mutex
	sent := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent++
		mu.Unlock()
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	const n = 10
	e := qarEnv(t, n, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, rate_limit_rpm: 6, max_attempts: 1, breaker: {failures: 2, cooldown: 1h}}\n", srv.URL+"/v1"))
	clk := newFakeClock()
	sum := qarRun(t, e, clk, nil)
	if sent != 2 {
		t.Fatalf("upstream saw %d requests, want 2 before the breaker opened", sent)
	}
	if got := sum.Targets[0].Counts[probes.Transient]; got != n || !sum.Targets[0].BreakerOpened {
		t.Fatalf("counts %v, breaker opened %v", sum.Targets[0].Counts, sum.Targets[0].BreakerOpened)
	}
	// One wait: the second request's slot, 10 s after the first.
	if w := clk.Sleeps(); len(w) != 1 || w[0] != 10*time.Second {
		t.Errorf("waits %v, want just [10s]: probes the breaker refused waited for a slot", w)
	}
}
