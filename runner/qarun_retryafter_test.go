package runner_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

// Retry-After end to end over HTTP, on 429 and 503 alike: seconds, an
// HTTP date and retry-after-ms are waited out (at least the backoff); a
// value in the past, negative or unreadable leaves the backoff (0.25–0.75 s
// for the first retry); a wait beyond runner.MaxRetryWait (5 minutes: 10
// days, 1e300 s) is not retried in the run, and 5 minutes exactly is.
func TestRetryAfterFormsOverHTTP(t *testing.T) {
	const httpDateIn40s, httpDate40sAgo = "(an HTTP date 40 s ahead)", "(an HTTP date 40 s ago)"
	backoff := [2]time.Duration{250 * time.Millisecond, 750 * time.Millisecond}
	cases := []struct {
		name, header, value string
		wait                [2]time.Duration // zero: no retry
	}{
		{"seconds", "Retry-After", "20", [2]time.Duration{20 * time.Second, 20 * time.Second}},
		{"http-date", "Retry-After", httpDateIn40s, [2]time.Duration{37 * time.Second, 41 * time.Second}},
		{"past http-date", "Retry-After", httpDate40sAgo, backoff},
		{"retry-after-ms", "retry-after-ms", "1500", [2]time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond}},
		{"negative", "Retry-After", "-5", backoff},
		{"negative ms", "retry-after-ms", "-1", backoff},
		{"unreadable", "Retry-After", "soon", backoff},
		{"five minutes", "Retry-After", "300", [2]time.Duration{5 * time.Minute, 5 * time.Minute}},
		{"beyond five minutes", "Retry-After", "301", [2]time.Duration{}},
		{"ten days", "Retry-After", "864000", [2]time.Duration{}},
		{"absurd", "Retry-After", "1e300", [2]time.Duration{}},
	}
	for _, c := range cases {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			t.Run(fmt.Sprintf("%s/%d", c.name, status), func(t *testing.T) {
				var mu sync.Mutex
				n := 0
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					n++
					k := n
					mu.Unlock()
					if k == 1 {
						// A date is written as the answer is sent, not when the
						// table was built: a slow machine running the subtests
						// before it must not shorten the wait.
						v := c.value
						switch v {
						case httpDateIn40s:
							v = time.Now().Add(40 * time.Second).UTC().Format(http.TimeFormat)
						case httpDate40sAgo:
							v = time.Now().Add(-40 * time.Second).UTC().Format(http.TimeFormat)
						}
						w.Header().Set(c.header, v)
						http.Error(w, `{"error":{"message":"slow down"}}`, status)
						return
					}
					okAnswer(w)
				}))
				defer srv.Close()
				e := qarEnv(t, 1, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 3}\n", srv.URL+"/v1"))
				clk := newFakeClock()
				sum := qarRun(t, e, clk, nil)
				counts, waits := sum.Targets[0].Counts, clk.Sleeps()
				if c.wait == [2]time.Duration{} {
					if n != 1 || len(waits) != 0 || counts[probes.Transient] != 1 {
						t.Fatalf("%d requests, waits %v, counts %v: want one request, no wait, transient", n, waits, counts)
					}
					return
				}
				if n != 2 || len(waits) != 1 || counts[probes.Allowed] != 1 {
					t.Fatalf("%d requests, waits %v, counts %v: want a wait and an answered retry", n, waits, counts)
				}
				if waits[0] < c.wait[0] || waits[0] > c.wait[1] {
					t.Errorf("waited %v, want %v–%v", waits[0], c.wait[0], c.wait[1])
				}
			})
		}
	}
}
