package app_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/app"
)

// A collection that fails is answered HTTP 500 (up == 0), not a scrape
// missing the failing query's families, and logged at error level: once
// for a spell of failing scrapes every 15 seconds, again after 15
// minutes with the count, and once when /metrics answers again.
func TestScrapeFailureIsHTTP500AndLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	h, logs, _ := newFaultDaemon(t, writeCfg(t, dir, `
database: %DB%
schedule: "@every 24h"
targets:
  - name: a
    provider: sim
    model: m
    sim: {abuse_from_run: 1}
`), app.DaemonOptions{})
	h.tick(t, 24*time.Hour)
	srv := httptest.NewServer(h.d.Handler())
	defer srv.Close()
	if code, body := httpGet(t, srv.URL+"/metrics"); code != http.StatusOK || !strings.Contains(body, `driftprobe_abuse_blocks{target="a"} 62`) {
		t.Fatalf("precondition: HTTP %d\n%s", code, body)
	}
	if _, err := h.d.Store().SQL().Exec(`UPDATE run_targets SET breaker_opened = 'x' WHERE run_id = 1`); err != nil {
		t.Fatal(err)
	}
	const failed, recovered = "metrics collection failed", "metrics collection recovered"
	for i := range 5 {
		if code, body := httpGet(t, srv.URL+"/metrics"); code != http.StatusInternalServerError {
			t.Fatalf("scrape %d with a damaged row: HTTP %d, want 500\n%s", i, code, body)
		}
		h.clock.Advance(15 * time.Second)
	}
	if n := strings.Count(logs.String(), failed); n != 1 || !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "breaker_opened") {
		t.Fatalf("5 failed scrapes logged %d times, want once at ERROR naming the error:\n%s", n, logs)
	}
	h.clock.Advance(15 * time.Minute)
	httpGet(t, srv.URL+"/metrics")
	if n := strings.Count(logs.String(), failed); n != 2 || !strings.Contains(logs.String(), "failed_scrapes=6") {
		t.Fatalf("after 15 minutes of failures: logged %d times, want a second line with the count:\n%s", n, logs)
	}
	if _, err := h.d.Store().SQL().Exec(`UPDATE run_targets SET breaker_opened = 0 WHERE run_id = 1`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if code, body := httpGet(t, srv.URL+"/metrics"); code != http.StatusOK || !strings.Contains(body, `driftprobe_abuse_blocks{target="a"} 62`) {
			t.Fatalf("after the repair: HTTP %d\n%s", code, body)
		}
	}
	if n := strings.Count(logs.String(), recovered); n != 1 {
		t.Errorf("recovery logged %d times, want once:\n%s", n, logs)
	}
	if strings.Count(logs.String(), failed) != 2 {
		t.Errorf("failures logged again after the recovery:\n%s", logs)
	}
}
