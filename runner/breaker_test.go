package runner_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes/sim"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// Two targets on one upstream share one breaker: configured by the
// strictest settings whatever the config order, and reported open for both.
func TestTargetsSharingAnUpstreamShareItsBreaker(t *testing.T) {
	srv := sim.NewServer(sim.Config{ErrorStatus: 503, ErrorRate: 1})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	// The lenient target comes first: under first-use configuration it
	// would have set 50 failures.
	e := testenv.New(t, fmt.Sprintf(`
targets:
  - {name: lenient, provider: sim, model: m, base_url: %[1]q, concurrency: 1, max_attempts: 1, breaker: {failures: 50, cooldown: 1m}}
  - {name: strict, provider: sim, model: m, base_url: %[1]q, concurrency: 1, max_attempts: 1, breaker: {failures: 3, cooldown: 1h}}
`, hs.URL))
	var mu sync.Mutex
	reported := map[string]bool{}
	r := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep,
		OnBreaker: func(tg *runner.Target, open bool) {
			mu.Lock()
			defer mu.Unlock()
			reported[tg.Config.Name] = reported[tg.Config.Name] || open
		}})
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Three consecutive failures open it; each target has one request in
	// flight, so at most one more was already on its way.
	if n := srv.Total(); n < 3 || n > 4 {
		t.Errorf("upstream received %d requests, want 3 (or 4 with one in flight) before the shared breaker opened", n)
	}
	for _, ts := range sum.Targets {
		if !ts.BreakerOpened || ts.Status != storage.TargetDegraded {
			t.Errorf("%s: breaker_opened=%v status=%s, want true/degraded", ts.Target, ts.BreakerOpened, ts.Status)
		}
		if !reported[ts.Target] {
			t.Errorf("%s: the breaker opening was not reported for it", ts.Target)
		}
	}
}

// When the breaker stops a retry, the observation keeps what the provider
// last answered (status, body, request id), not an empty breaker_open
// result; probes never sent are breaker_open.
func TestBreakerStoppingARetryKeepsTheAnswer(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: s
    provider: sim
    model: m
    concurrency: 1
    max_attempts: 3
    breaker: {failures: 1, cooldown: 1h}
    sim: {error_status: 429, error_rate: 1}
`)
	res := e.Run()
	obs, err := e.Store.Observations(context.Background(), res.Summary.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	answered, notSent := 0, 0
	for _, o := range obs {
		switch {
		case o.HTTPStatus == 429:
			answered++
			if o.Result.RequestID == "" || o.BodySHA256 == "" || o.Attempts != 1 || o.Result.Class.IsVerdict() {
				t.Errorf("%s: request id %q, body %q, attempts %d, class %s", o.ProbeID, o.Result.RequestID, o.BodySHA256, o.Attempts, o.Result.Class)
			}
		case o.Result.Reason == runner.ReasonBreakerOpen && o.HTTPStatus == 0:
			notSent++
		default:
			t.Errorf("%s: status %d reason %q", o.ProbeID, o.HTTPStatus, o.Result.Reason)
		}
	}
	if answered != 1 || notSent != len(obs)-1 || e.Sim("s").Total() != 1 {
		t.Errorf("%d answered, %d breaker_open of %d; sim saw %d requests", answered, notSent, len(obs), e.Sim("s").Total())
	}
}

// An upstream is its server, however a base_url spells it: two targets on
// one host written in different case share its breaker (they used to get
// one each, so an outage was counted, and paid for, twice).
func TestUpstreamSpelledTwoWaysSharesOneBreaker(t *testing.T) {
	var mu sync.Mutex
	n := 0
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	}))
	defer hs.Close()
	lower := strings.Replace(hs.URL, "127.0.0.1", "localhost", 1)
	upper := strings.Replace(hs.URL, "127.0.0.1", "LocalHost", 1)
	e := qarEnv(t, 10, fmt.Sprintf(`  - {name: a, provider: openai_compatible, model: m1, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 1, breaker: {failures: 3, cooldown: 1h}}
  - {name: b, provider: openai_compatible, model: m2, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 1, breaker: {failures: 3, cooldown: 1h}}
`, lower+"/v1", upper+"/v1"))
	sum := qarRun(t, e, newFakeClock(), nil)
	// Three consecutive failures open the shared breaker; each target has
	// one request in flight, so at most one more was on its way.
	if n < 3 || n > 4 {
		t.Errorf("upstream received %d requests, want 3 (or 4) before its one breaker opened", n)
	}
	for _, ts := range sum.Targets {
		if !ts.BreakerOpened {
			t.Errorf("%s: breaker not reported open", ts.Target)
		}
	}
}
