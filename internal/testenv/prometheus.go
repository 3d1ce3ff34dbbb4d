package testenv

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Prometheus is a fake Prometheus HTTP API on loopback for attribution
// tests: GET /api/v1/query_range answers each query in its answers with
// the body given (status 200), any other query with a bad_data error
// (HTTP 400), and every query with an "unavailable" error (HTTP 503) while
// failing. It records every request's query parameters.
type Prometheus struct {
	*httptest.Server
	mu       sync.Mutex
	answers  map[string][]byte
	requests []url.Values
	failing  bool
}

// NewPrometheus starts a fake Prometheus answering query → body; it is
// closed when the test ends.
func NewPrometheus(t testing.TB, answers map[string][]byte) *Prometheus {
	t.Helper()
	p := &Prometheus{answers: answers}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, r.URL.Query())
		failing := p.failing
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		body, ok := p.answers[r.URL.Query().Get("query")]
		switch {
		case r.URL.Path != "/api/v1/query_range":
			w.WriteHeader(http.StatusNotFound)
		case failing:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"status":"error","errorType":"unavailable","error":"the TSDB is starting"}`))
		case ok:
			w.Write(body)
		default:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"1:1: parse error: unexpected identifier \"nonsense\""}`))
		}
	}))
	t.Cleanup(p.Close)
	return p
}

// SetFailing makes every later query fail with HTTP 503 (or not).
func (p *Prometheus) SetFailing(v bool) {
	p.mu.Lock()
	p.failing = v
	p.mu.Unlock()
}

// Requests returns the query parameters of the requests so far.
func (p *Prometheus) Requests() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]url.Values(nil), p.requests...)
}

// Reset forgets the requests so far.
func (p *Prometheus) Reset() {
	p.mu.Lock()
	p.requests = nil
	p.mu.Unlock()
}

// PrometheusFixture returns attribution/testdata/prometheus/name (see the
// README there).
func PrometheusFixture(t testing.TB, name string) []byte {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "attribution", "testdata", "prometheus", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
