package runner_test

import (
	"context"
	"fmt"
	"net/http/httptest"
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
