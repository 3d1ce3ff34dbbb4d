package runner_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A target whose https base_url presents a certificate the machine does not
// trust (a self-signed gateway, a TLS-intercepting proxy, a wrong host)
// fails every request the same way, forever. The runner records each as
// transient "transport_error" and drops the error itself: the observation
// has no message, nothing is logged even at --log-level debug (only
// "retrying ... reason=transport_error"), and `run --json`/stderr only
// count transients ("check the keys, base URLs and network"). The cause
// — "x509: certificate signed by unknown authority" — is nowhere, though
// runner.scrub exists to clean transport errors "before they are stored
// or logged". The user cannot tell a TLS trust problem from a flaky
// network, a wrong port or a reset.
func TestQA3TransportFailureCauseIsRecorded(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("a request reached a server whose certificate is not trusted")
	}))
	defer srv.Close()
	e := qa3Env(t, srv.URL, "max_attempts: 1")
	var logs syncBuf
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	res, err := app.RunOnce(context.Background(), e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range qa3Stored(t, e, res.Summary.RunID) {
		r := s.o.Result
		if r.Class != probes.Transient {
			t.Fatalf("%s: %s, want transient", s.o.ProbeID, r.Class)
		}
		recorded := strings.Join([]string{r.Reason, r.Message, strings.Join(r.Unknown, " ")}, " ")
		if !strings.Contains(recorded, "certificate") && !strings.Contains(logs.String(), "certificate") {
			t.Errorf("%s: the TLS failure's cause is neither stored nor logged: reason %q, message %q, unknown %q; debug log:\n%s",
				s.o.ProbeID, r.Reason, r.Message, r.Unknown, logs.String())
		}
	}
}
