package runner_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes/sim"
	"github.com/driftprobe/driftprobe/runner"
)

// connCounter counts a server's open connections and signals when the
// count drops to zero.
type connCounter struct {
	mu     sync.Mutex
	open   int
	opened int
	zero   chan struct{}
}

func (c *connCounter) hook(_ net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateNew:
		c.open++
		c.opened++
	case http.StateClosed, http.StateHijacked:
		c.open--
		if c.open == 0 && c.zero != nil {
			close(c.zero)
			c.zero = nil
		}
	}
}

// waitClosed returns when every connection is closed, or fails after d
// (an upper bound for a close to travel over loopback, not a timing).
func (c *connCounter) waitClosed(t *testing.T, d time.Duration) {
	t.Helper()
	c.mu.Lock()
	if c.open == 0 {
		c.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	c.zero = ch
	open := c.open
	c.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%d keep-alive connection(s) still open after the run ended", open)
	}
}

// A runner that made its own HTTP client closes its idle keep-alive
// connections when a run ends: serve builds a runner per run, and each
// run's pool used to linger until the transport's 90-second idle timeout
// (a 2-second schedule held ~750 sockets open).
func TestRunClosesItsIdleConnections(t *testing.T) {
	var cc connCounter
	e := countedSim(t, &cc, 4)
	for i := 0; i < 2; i++ {
		r := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep})
		if _, err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		cc.waitClosed(t, 10*time.Second)
	}
	cc.mu.Lock()
	opened := cc.opened
	cc.mu.Unlock()
	if opened == 0 {
		t.Fatal("the server saw no connection")
	}

	// A caller's own client is the caller's to manage: its connections stay.
	var kept connCounter
	e2 := countedSim(t, &kept, 1)
	client := runner.DefaultClient()
	defer client.CloseIdleConnections()
	if _, err := runner.New(runner.Options{Config: e2.Config, Corpus: e2.Corpus, Store: e2.Store, Targets: e2.Targets, Sleep: e2.Sleep, Client: client}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	kept.mu.Lock()
	open := kept.open
	kept.mu.Unlock()
	if open == 0 {
		t.Error("the caller's client lost its keep-alive connection: the runner closed what it does not own")
	}
}

// countedSim starts a loopback sim server whose connections cc counts and
// returns an environment with one target on it at concurrency c.
func countedSim(t *testing.T, cc *connCounter, c int) *testenv.Env {
	t.Helper()
	hs := httptest.NewUnstartedServer(sim.NewServer(sim.Config{}))
	hs.Config.ConnState = cc.hook
	hs.Start()
	t.Cleanup(hs.Close)
	return testenv.New(t, fmt.Sprintf(`
targets:
  - {name: s, provider: sim, model: m, base_url: %q, concurrency: %d}
`, hs.URL, c))
}
