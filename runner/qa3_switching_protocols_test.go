package runner_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// switchingServer answers every request with "101 Switching Protocols" and
// then holds the connection open, sending nothing more, until release is
// called (a server, or a proxy, that upgrades the connection and stalls).
// answered receives once per request answered.
func switchingServer(t *testing.T) (base string, answered <-chan struct{}, release func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 64)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(done)
			ln.Close()
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
		})
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
				ch <- struct{}{}
				<-done
			}()
		}
	}()
	t.Cleanup(release)
	return "http://" + ln.Addr().String(), ch, release
}

// A provider's answer is read under the per-request timeout (README:
// "timeout: per-request"; ARCHITECTURE: "per-request timeouts"): a body
// that never ends is cut at `timeout` and the attempt is transient. A
// "101 Switching Protocols" answer escapes it: net/http hands the raw
// connection over as the body, no longer bound to the request's context,
// and readBody reads it until the server closes it — here, forever. One
// such upstream (a base_url pointing at a WebSocket endpoint, a broken
// proxy) hangs the whole run, which keeps renewing its lease.
func TestQA3SwitchingProtocolsAnswerHonoursRequestTimeout(t *testing.T) {
	base, _, release := switchingServer(t)
	e := qa3Env(t, base, "max_attempts: 1, timeout: 1s")
	type result struct {
		res *app.RunResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := app.RunOnce(context.Background(), e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep})
		done <- result{res, err}
	}()
	// Two probes, one at a time, each bounded by a 1 s timeout: the run
	// ends within ~2 s. 30 s is only a safety net.
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("run: %v", r.err)
		}
		for _, s := range qa3Stored(t, e, r.res.Summary.RunID) {
			t.Logf("%s: %s %s status %d", s.o.ProbeID, s.o.Result.Class, s.o.Result.Reason, s.o.HTTPStatus)
		}
	case <-time.After(30 * time.Second):
		release() // let the stuck run finish before the test's cleanup closes its store
		<-done
		t.Fatal("run still waiting on a 101 Switching Protocols answer 30 s into a run whose per-request timeout is 1 s: the timeout does not cover this answer's body")
	}
}

// Cancelling a run (SIGINT/SIGTERM) ends it promptly, recorded aborted
// (README: "SIGTERM/SIGINT cancel a run in progress — it keeps what it
// stored and is recorded aborted"). Not while a request has been answered
// "101 Switching Protocols" and the upstream stalls: the read of that body
// ignores the cancelled context, so the process neither ends nor records
// the run aborted until a supervisor kills it.
func TestQA3SwitchingProtocolsAnswerDoesNotBlockCancel(t *testing.T) {
	base, _, release := switchingServer(t)
	e := qa3Env(t, base, "max_attempts: 1, timeout: 10m")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		res *app.RunResult
		err error
	}
	// The runner's own client, observed: answered receives once the
	// response's header is in and its body is handed to the runner.
	client := runner.DefaultClient()
	answered := make(chan struct{}, 64)
	client.Transport = observed{client.Transport, answered}
	done := make(chan result, 1)
	go func() {
		res, err := app.RunOnce(ctx, e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Client: client})
		done <- result{res, err}
	}()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never answered")
	}
	cancel() // the signal
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("run: %v", r.err)
		}
		if r.res.Summary.Status != storage.RunAborted {
			t.Fatalf("status %s, want aborted", r.res.Summary.Status)
		}
	case <-time.After(30 * time.Second):
		release()
		<-done
		t.Fatal("run still running 30 s after its context was cancelled: a stalled 101 Switching Protocols answer blocks cancellation")
	}
}

// observed is a RoundTripper that reports every response it returns.
type observed struct {
	rt       http.RoundTripper
	answered chan<- struct{}
}

func (o observed) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := o.rt.RoundTrip(r)
	if err == nil {
		o.answered <- struct{}{}
	}
	return resp, err
}
