package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/app"
)

// Review: the in-flight limit sits outside promhttp's TimeoutHandler, so a
// scrape that timed out frees its slot while its Gather keeps running
// (blocked on the database). Collections pile up past MetricsInFlight.
func TestReviewScrapeLimitDoesNotBoundCollections(t *testing.T) {
	srv, bc, _, _ := scrapeDaemon(t, app.DaemonOptions{ScrapeTimeout: 50 * time.Millisecond})
	const scrapes = 12
	codes := map[int]int{}
	for range scrapes {
		code, _ := httpGet(t, srv.URL+"/metrics")
		codes[code]++
	}
	// Every collection started is still blocked inside Collect.
	inside := 0
	deadline := time.After(2 * time.Second)
loop:
	for {
		select {
		case <-bc.entered:
			inside++
			if inside == scrapes {
				break loop
			}
		case <-deadline:
			break loop
		}
	}
	close(bc.release)
	t.Logf("status codes: %v; collections blocked at once: %d (limit %d)", codes, inside, app.MetricsInFlight)
	if inside > app.MetricsInFlight {
		t.Errorf("%d collections in flight at once, beyond the in-flight limit %d: the limit is released at the timeout, not when the Gather ends", inside, app.MetricsInFlight)
	}
	_ = http.StatusOK
}

// During a database stall the scrapes past the limit are refused at once
// while the timed-out scrapes' collections still hold their slots: the
// refusal says so (not "not a database problem"), the 503s are counted,
// and /metrics answers 200 again as soon as those collections end, with
// no backlog of queued collections behind them.
func TestReviewScrapeStallRefusalsAndRecovery(t *testing.T) {
	srv, bc, _, logs := scrapeDaemon(t, app.DaemonOptions{ScrapeTimeout: 50 * time.Millisecond})
	for i := range 12 {
		if code, body := httpGet(t, srv.URL+"/metrics"); code != http.StatusServiceUnavailable {
			t.Fatalf("scrape %d during the stall: HTTP %d, want 503\n%s", i, code, body)
		}
	}
	close(bc.release)
	deadline := time.Now().Add(5 * time.Second)
	// Until the held collections end, a scrape may still be refused (or
	// time out): each such 503 counts too.
	code, text := httpGet(t, srv.URL+"/metrics")
	want503, after := 12, 1 // after: the scrapes since the release
	for code != http.StatusOK && time.Now().Before(deadline) {
		if code == http.StatusServiceUnavailable {
			want503++
		}
		time.Sleep(10 * time.Millisecond)
		code, text = httpGet(t, srv.URL+"/metrics")
		after++
	}
	if code != http.StatusOK {
		t.Fatalf("after the stall: HTTP %d, want 200\n%s", code, text)
	}
	// The 8 refused during the stall never collect, then or later: at
	// most the 4 held, and one collection per scrape since the release
	// (a retry whose collection outlasted the 50 ms timeout on a slow
	// machine collected too, then answered 503).
	if n := len(bc.entered); n > app.MetricsInFlight+after {
		t.Errorf("%d collections ran, want at most the %d held during the stall and the %d scrape(s) after it", n, app.MetricsInFlight, after)
	}
	if !strings.Contains(text, fmt.Sprintf(`promhttp_metric_handler_requests_total{code="503"} %d`, want503)) {
		t.Errorf("503s not counted:\n%s", text)
	}
	log := logs.String()
	for _, want := range []string{
		"metrics scrape timed out: /metrics answered HTTP 503 after 50ms",
		"metrics scrape refused: /metrics answered HTTP 503 at once, 4 scrapes being in flight already (the most it serves at once), 4 of them collections of scrapes already timed out or given up, still waiting on the database (a long write, a slow disk)",
	} {
		if strings.Count(log, want) != 1 {
			t.Errorf("want once %q in the log:\n%s", want, log)
		}
	}
	if strings.Contains(log, "not a database problem") {
		t.Errorf("a refusal during a database stall said it was none:\n%s", log)
	}
}
