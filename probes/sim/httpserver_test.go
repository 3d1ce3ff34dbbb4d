package sim

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// serveShort serves a simulator through HTTPServer with the timeouts
// shortened to d, on loopback, and returns its address.
func serveShort(t *testing.T, d time.Duration) string {
	return serveShortConfig(t, d, Config{})
}

func serveShortConfig(t *testing.T, d time.Duration, cfg Config) string {
	t.Helper()
	saved := [3]time.Duration{ReadHeaderTimeout, ReadTimeout, IdleTimeout}
	ReadHeaderTimeout, ReadTimeout, IdleTimeout = d, d, d
	srv := HTTPServer(NewServer(cfg))
	ReadHeaderTimeout, ReadTimeout, IdleTimeout = saved[0], saved[1], saved[2]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// closedWithin reports whether the server closes c (a read ends with EOF
// or a reset) before limit, reading and discarding whatever it answers
// first (a 408 or 400 is fine).
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	return true // io.Copy returns nil at EOF; a reset is a close too
}

// A client that sends part of a request and then goes quiet is cut off,
// mid-headers or mid-body: it does not hold a connection and a goroutine
// (the handler's, blocked reading the body) for good.
func TestHTTPServerCutsOffStalledClients(t *testing.T) {
	for _, c := range []struct{ name, sent string }{
		{"headers", "POST /v1/chat/completions HTTP/1.1\r\nHost: sim\r\n"},
		{"body", "POST /v1/chat/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":"},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := serveShort(t, 300*time.Millisecond)
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, c.sent); err != nil {
				t.Fatal(err)
			}
			if !closedWithin(t, conn, 10*time.Second) {
				t.Fatalf("a client stalled mid-%s still holds its connection after 10 s (timeouts 300 ms)", c.name)
			}
		})
	}
}

// An idle keep-alive connection is closed after IdleTimeout, after a
// complete exchange that was answered normally.
func TestHTTPServerClosesIdleConnections(t *testing.T) {
	addr := serveShort(t, 300*time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("the idle connection was not closed within 10 s: %v", err)
	}
}

// An answer held back by the configured latency for longer than the read
// timeout still arrives: the timeout bounds reading the request, never the
// wait before the answer.
func TestHTTPServerLatencyOutlastsReadTimeout(t *testing.T) {
	addr := serveShortConfig(t, 200*time.Millisecond, Config{Latency: 700 * time.Millisecond})
	body := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"choices"`) {
		t.Fatalf("status %d, err %v, body %.200s", resp.StatusCode, err, b)
	}
}

// The limits themselves: bounded, and no write timeout, which would cut
// off an answer the configured latency holds back.
func TestHTTPServerTimeouts(t *testing.T) {
	srv := HTTPServer(NewServer(Config{}))
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Fatalf("unbounded: header %v, read %v, idle %v", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout)
	}
	if srv.WriteTimeout != 0 && srv.WriteTimeout <= MaxLatency {
		t.Fatalf("write timeout %v would cut off an answer held back by up to MaxLatency %v", srv.WriteTimeout, MaxLatency)
	}
}
