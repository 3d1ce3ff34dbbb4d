package runner_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// After its cooldown the breaker is half-open: one trial request goes to
// the upstream, and an answer closes it again, so the rest of the run is
// sent. (The cooldown is set below the config's 1s floor so that the
// breaker's own wall clock has passed it by the next request: no sleep.)
func TestHalfOpenTrialAnsweredClosesBreaker(t *testing.T) {
	srv, requests := numberedServer(t, func(k int, w http.ResponseWriter, r *http.Request) {
		if k <= 2 {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		}
		okAnswer(w)
	})
	const probesN = 6
	e := qarEnv(t, probesN, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 1, breaker: {failures: 2}}\n", srv.URL+"/v1"))
	e.Targets[0].Config.Breaker.Cooldown = config.Duration(time.Nanosecond)
	var states []bool
	sum := qarRun(t, e, newFakeClock(), func(o *runner.Options) {
		o.OnBreaker = func(_ *runner.Target, open bool) { states = append(states, open) }
	})
	ts := sum.Targets[0]
	if n := requests(); n != probesN || ts.Counts[probes.Transient] != 2 || ts.Counts[probes.Allowed] != probesN-2 {
		t.Fatalf("upstream saw %d requests; counts %v: want every probe sent, 2 transient", requests(), ts.Counts)
	}
	if len(states) != 3 || !states[0] || states[1] || states[2] {
		t.Errorf("breaker reports %v, want open, then half-open and closed (not open)", states)
	}
	if !ts.BreakerOpened || ts.Status != storage.TargetDegraded {
		t.Errorf("breaker_opened %v, status %s: a breaker that opened degrades the target-run", ts.BreakerOpened, ts.Status)
	}
}

// While the half-open breaker's one trial is in flight, the other probes
// are not sent: each is recorded transient breaker_open, never a verdict;
// the trial's answer closes it.
func TestHalfOpenRefusesOthersWhileTrialInFlight(t *testing.T) {
	const probesN = 10
	var mu sync.Mutex
	n := 0
	both := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		switch {
		case k <= 2: // both workers' first requests fail together: the breaker opens
			if k == 2 {
				close(both)
			}
			select {
			case <-both:
			case <-time.After(10 * time.Second):
			}
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		default: // the half-open trial: answered once every other probe is recorded
			select {
			case <-release:
			case <-time.After(10 * time.Second):
				t.Error("the other probes were not recorded while the trial was in flight")
			}
			okAnswer(w)
		}
	}))
	defer srv.Close()
	e := qarEnv(t, probesN, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 2, max_attempts: 1, breaker: {failures: 1}}\n", srv.URL+"/v1"))
	e.Targets[0].Config.Breaker.Cooldown = config.Duration(time.Nanosecond)
	sum := qarRun(t, e, newFakeClock(), func(o *runner.Options) {
		o.Progress = func(done, total int) {
			if done == total-1 {
				once.Do(func() { close(release) })
			}
		}
	})
	ts := sum.Targets[0]
	if n != 3 {
		t.Fatalf("upstream saw %d requests, want 3 (two failures, one trial)", n)
	}
	refused := 0
	for _, o := range observations(t, e, sum.RunID) {
		if o.Result.Reason == runner.ReasonBreakerOpen {
			refused++
			if o.Result.Class != probes.Transient || o.HTTPStatus != 0 || o.Attempts != 0 {
				t.Errorf("%s: refused probe stored as %s, status %d, %d attempts", o.ProbeID, o.Result.Class, o.HTTPStatus, o.Attempts)
			}
		}
	}
	if refused != probesN-3 || ts.Counts[probes.Allowed] != 1 || ts.Counts[probes.Transient] != probesN-1 {
		t.Errorf("%d breaker_open, counts %v", refused, ts.Counts)
	}
}
