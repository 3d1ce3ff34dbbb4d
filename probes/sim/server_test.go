package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// A long-lived simulator keeps attempt counts for its latest keepRuns runs
// only: its memory stays flat over runs (it grew ~80 KB a run in serve),
// while a recent run's counts still read through Requests.
func TestServerKeepsRecentRunCounts(t *testing.T) {
	s := NewServer(Config{})
	body := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	send := func(run int) {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set(RunHeader, strconv.Itoa(run))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("run %d: %d %s", run, rec.Code, rec.Body)
		}
	}
	for run := 1; run <= 100; run++ {
		send(run)
		send(run)
	}
	s.mu.Lock()
	n := len(s.counts)
	s.mu.Unlock()
	if n > keepRuns {
		t.Errorf("%d runs' counts kept after 100 runs, want at most %d", n, keepRuns)
	}
	sha := sha256hex(body)
	if got := s.Requests(100, sha); got != 2 {
		t.Errorf("Requests(100) = %d, want 2", got)
	}
	if got := s.Requests(100-keepRuns+1, sha); got != 2 {
		t.Errorf("Requests of the oldest run kept = %d, want 2", got)
	}
	if got := s.Requests(1, sha); got != 0 {
		t.Errorf("Requests(1) = %d after 100 runs, want 0 (dropped)", got)
	}
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
