package runner_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

// A 429 or 503 whose headers arrived whole but whose body was cut (the
// connection closed short of its Content-Length) still asked for a wait:
// its Retry-After is honoured like a whole answer's. It was read as a bare
// transport failure and retried after the backoff (~0.5 s) however long
// the provider had asked to wait, an hour included.
func TestRetryAfterOfACutAnswerHonoured(t *testing.T) {
	for _, c := range []struct {
		retryAfter string
		status     int
		wait       time.Duration // 0: not retried in the run
	}{
		{"3600", http.StatusTooManyRequests, 0},
		{"20", http.StatusTooManyRequests, 20 * time.Second},
		{"20", http.StatusServiceUnavailable, 20 * time.Second},
	} {
		t.Run(fmt.Sprintf("%d/%s", c.status, c.retryAfter), func(t *testing.T) {
			srv, requests := numberedServer(t, func(k int, w http.ResponseWriter, r *http.Request) {
				if k > 1 {
					okAnswer(w)
					return
				}
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				io.WriteString(buf, fmt.Sprintf("HTTP/1.1 %d %s\r\nRetry-After: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"error\":{\"message\":\"slow", c.status, http.StatusText(c.status), c.retryAfter))
				buf.Flush()
			})
			e := qarEnv(t, 1, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 3}\n", srv.URL+"/v1"))
			clk := newFakeClock()
			sum := qarRun(t, e, clk, nil)
			counts, waits, n := sum.Targets[0].Counts, clk.Sleeps(), requests()
			if c.wait == 0 {
				if n != 1 || len(waits) != 0 || counts[probes.Transient] != 1 {
					t.Fatalf("%d requests, waits %v, counts %v: want one request, no wait, transient", n, waits, counts)
				}
				return
			}
			if n != 2 || len(waits) != 1 || waits[0] != c.wait || counts[probes.Allowed] != 1 {
				t.Fatalf("%d requests, waits %v, counts %v: want a wait of %v and an answered retry", n, waits, counts, c.wait)
			}
		})
	}
}
