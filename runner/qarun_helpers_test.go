package runner_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/runner"
)

// qarEnv is a testenv over a corpus of n benign probes; targets is the
// config's targets list (YAML, after "targets:").
func qarEnv(t *testing.T, n int, targets string) *testenv.Env {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("name: qar\nversion: \"1\"\nprobes:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {id: p%02d, prompt: \"What is %d plus %d?\", tags: [], expect: allow, role: benign_control}\n", i, i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("QAR_KEY", "qar-test-key")
	return testenv.New(t, fmt.Sprintf("corpus: %s\ntargets:\n%s", dir, targets))
}

// okAnswer is a complete OpenAI chat answer.
func okAnswer(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"4"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
}

// fakeClock is a virtual clock: Sleep records the wait and moves the clock
// on by it (never sleeping), Now reads it. Meant for one goroutine sleeping
// at a time (concurrency 1).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	if d > 0 {
		c.now = c.now.Add(d)
	}
	c.mu.Unlock()
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func qarRun(t *testing.T, e *testenv.Env, clk *fakeClock, extra func(*runner.Options)) *runner.Summary {
	t.Helper()
	o := runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: clk.Sleep, Now: clk.Now}
	if extra != nil {
		extra(&o)
	}
	sum, err := runner.New(o).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// numberedServer is a loopback server that calls answer with each
// request's number (1, 2, … in arrival order); requests reports how many
// have arrived.
func numberedServer(t *testing.T, answer func(k int, w http.ResponseWriter, r *http.Request)) (srv *httptest.Server, requests func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		answer(k, w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }
}
