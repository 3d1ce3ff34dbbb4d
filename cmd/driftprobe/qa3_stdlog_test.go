package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Secrets never reach logs (DESIGN: "Secrets never reach the database,
// logs, reports or issues"; README: a key a provider echoes is redacted
// before it is stored). The runner redacts what it stores and what its
// own logger writes, but net/http's transport writes to the standard
// library logger, which driftprobe leaves pointed at stderr unfiltered:
// when an upstream sends more bytes than its Content-Length announced (a
// gateway counting characters rather than bytes, or rewriting a body
// without fixing the header), the transport logs the surplus verbatim as
// "Unsolicited response received on idle HTTP channel starting with ...".
// Here the surplus is the end of a 401 error that echoes the key, and the
// key reaches the run's stderr (a CronJob's or a journal's log) in clear.
func TestQA3EchoedKeyNeverReachesStderr(t *testing.T) {
	const key = "sk-qa3-STDERRLEAK0123456789abcdef"
	ln := surplusServer(t, func(req *http.Request) (status, header, body string, announced int) {
		k := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
		body = `{"error":{"message":"Incorrect API key provided: ` + k + `.","type":"invalid_request_error"}}`
		// The header counts only the bytes before the key.
		return "401 Unauthorized", "Content-Type: application/json\r\n", body, strings.Index(body, k)
	})

	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "corpus"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus", "corpus.yaml"), []byte(`name: qa3
version: "1"
probes:
  - {id: p1, prompt: "What is the capital of France?", tags: [], expect: allow, role: benign_control}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`database: %s
corpus: %s
targets:
  - {name: c, provider: openai_compatible, model: m, api_key_env: QA3_KEY, base_url: "http://%s/v1", max_attempts: 1}
`, filepath.Join(dir, "d.db"), filepath.Join(dir, "corpus"), ln.Addr())), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runProc(t, []string{"QA3_KEY=" + key}, "run", "--config", cfg, "--json", "--no-progress")
	t.Logf("exit %d", code)
	if strings.Contains(stdout, key) {
		t.Errorf("key in stdout:\n%s", stdout)
	}
	if strings.Contains(stderr, key) {
		t.Errorf("the echoed key reached stderr unredacted:\n%s", stderr)
	}
}

// surplusServer is a loopback HTTP server answering every request with
// answer's status, header lines and body, announcing a Content-Length of
// only announced bytes: the rest, sent in the same write, is the surplus
// net/http's transport logs ("Unsolicited response received on idle HTTP
// channel starting with ...") through the standard library's logger. It
// is closed when the test ends.
func surplusServer(t *testing.T, answer func(req *http.Request) (status, header, body string, announced int)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				status, header, body, announced := answer(req)
				// One write: the response and its surplus arrive together.
				fmt.Fprintf(c, "HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n%s", status, header, announced, body)
				io.Copy(io.Discard, c) // until the client closes
			}()
		}
	}()
	return ln
}
