package runner_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/probes"
)

// A slow-loris answer — headers at once, then a byte now and then, never
// ending — is bounded by the per-request timeout, reading included: each
// attempt is cut at the timeout, recorded transient, and the connection is
// closed (the server sees its request end).
func TestSlowLorisBodyBoundedByTimeout(t *testing.T) {
	ended := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { ended <- struct{}{} }()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"id":"c1","choices":[`))
		w.(http.Flusher).Flush()
		tick := time.NewTicker(20 * time.Millisecond) // the server's dribble, not the test's timing
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	e := qarEnv(t, 1, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 2, breaker: {failures: 100}}\n", srv.URL+"/v1"))
	e.Targets[0].Config.Timeout = config.Duration(300 * time.Millisecond) // below the config's 1s floor: a fast test
	start := time.Now()
	sum := qarRun(t, e, newFakeClock(), nil)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("run took %v with a 300ms timeout", d)
	}
	o := observations(t, e, sum.RunID)[0]
	if o.Result.Class != probes.Transient || o.Attempts != 2 || o.HTTPStatus != 0 {
		t.Fatalf("stored %s after %d attempts, status %d (%s: %s), want transient after 2, no status", o.Result.Class, o.Attempts, o.HTTPStatus, o.Result.Reason, o.Result.Message)
	}
	// Each handler returns once the client has hung up (bounded: the test
	// fails instead of hanging).
	for i := 0; i < 2; i++ {
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of 2 slow answers ended: the connection was left open", i)
		}
	}
}

// A huge answer is capped: a run reads at most runner.ClassifyLimit of it
// (plus a bounded drain), stores max_body_bytes as evidence with
// body_truncated set, and reads the cut answer as transient
// truncated_response, never a verdict.
func TestHugeBodyCapped(t *testing.T) {
	var mu sync.Mutex
	written := 0
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`))
		for i := 0; i < 1600; i++ { // 100 MiB
			n, err := w.Write(chunk)
			mu.Lock()
			written += n
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	e := qarEnv(t, 1, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 1}\n", srv.URL+"/v1"))
	e.Config.MaxBody = 4096
	sum := qarRun(t, e, newFakeClock(), nil)
	o := observations(t, e, sum.RunID)[0]
	_, body, err := e.Store.ObservationBodies(t.Context(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Result.Class != probes.Transient || o.Result.Reason != "truncated_response" || o.HTTPStatus != http.StatusOK {
		t.Errorf("stored %s (%s), status %d, want transient truncated_response, 200", o.Result.Class, o.Result.Reason, o.HTTPStatus)
	}
	if len(body) != 4096 || !o.BodyTruncated {
		t.Errorf("stored %d bytes, truncated %v: want max_body_bytes (4096), truncated", len(body), o.BodyTruncated)
	}
	mu.Lock()
	defer mu.Unlock()
	// What the server could push: what was read (ClassifyLimit and the
	// 1 MiB drain) and the sockets' buffers; never the 100 MiB.
	if written > 32<<20 {
		t.Errorf("the server wrote %d MiB before the run hung up", written>>20)
	}
}
