package app_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/internal/app"
)

// blockingCollector holds every collection until release is closed, so a
// test can keep scrapes in flight without sleeping.
type blockingCollector struct {
	desc    *prometheus.Desc
	entered chan struct{}
	release chan struct{}
}

func (c *blockingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *blockingCollector) Collect(ch chan<- prometheus.Metric) {
	c.entered <- struct{}{}
	<-c.release
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}

// scrapeDaemon serves a daemon's Handler with a blockingCollector
// registered, and returns the server, the collector and the daemon's log.
func scrapeDaemon(t *testing.T, o app.DaemonOptions) (*httptest.Server, *blockingCollector, *daemonHarness, *faultLog) {
	t.Helper()
	h, logs, _ := newFaultDaemon(t, writeCfg(t, t.TempDir(), `
database: %DB%
schedule: "@every 24h"
targets:
  - name: a
    provider: sim
    model: m
`), o)
	bc := &blockingCollector{desc: prometheus.NewDesc("qa_block", "blocks", nil, nil), entered: make(chan struct{}, 64), release: make(chan struct{})}
	h.d.Registry().MustRegister(bc)
	srv := httptest.NewServer(h.d.Handler())
	t.Cleanup(srv.Close)
	return srv, bc, h, logs
}

// QA soak: /metrics allowed two scrapes in flight (promhttp
// MaxRequestsInFlight: 2). A third concurrent scrape was refused at once
// with HTTP 503, yet scrapeLog.watch counted every 503 as a timeout and
// logged "metrics scrape timed out: /metrics answered HTTP 503 after 10 s
// (the collection waits on the database: a long write, a slow disk)":
// an operator was sent after a database problem that does not exist.
// Observed on a live serve: 6 concurrent curls -> four 503s in 5-17 ms and
// that WARN line. Now app.MetricsInFlight (4: an HA Prometheus pair, a
// slow scrape and a curl) are served at once; one more is answered 503 at
// once, counted in promhttp_metric_handler_requests_total, and logged as
// refused by the limit (at most once a minute, with the count), never as
// a timeout.
func TestQASoakConcurrencyLimit503IsNotLoggedAsTimeout(t *testing.T) {
	srv, bc, h, logs := scrapeDaemon(t, app.DaemonOptions{})
	held := make(chan int, app.MetricsInFlight)
	for range app.MetricsInFlight {
		go func() {
			resp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				held <- -1
				return
			}
			resp.Body.Close()
			held <- resp.StatusCode
		}()
	}
	for range app.MetricsInFlight {
		<-bc.entered // every held scrape is inside the collection now
	}
	// One more, twice; a minute later (the fake clock), once more. Each
	// is answered while the held scrapes still wait: at once.
	var codes []int
	var body string
	for i := range 3 {
		if i == 2 {
			h.clock.Advance(time.Minute)
		}
		var code int
		code, body = httpGet(t, srv.URL+"/metrics")
		codes = append(codes, code)
	}
	close(bc.release)
	for range app.MetricsInFlight {
		if code := <-held; code != http.StatusOK {
			t.Errorf("a held scrape: HTTP %d, want 200", code)
		}
	}
	for _, code := range codes {
		if code != http.StatusServiceUnavailable {
			t.Fatalf("scrapes beyond %d in flight: HTTP %v, want 503 each\n%s", app.MetricsInFlight, codes, body)
		}
	}
	if !strings.Contains(body, "4 scrapes of /metrics are in flight") {
		t.Errorf("the refusal's body: %q", body)
	}
	log := logs.String()
	if strings.Contains(log, "timed out") {
		t.Errorf("a scrape refused at once by the in-flight limit (%q) was logged as a timeout:\n%s", strings.TrimSpace(body), log)
	}
	const refused = "metrics scrape refused: /metrics answered HTTP 503 at once, 4 scrapes being in flight already (the most it serves at once; not a database problem): scrape it from fewer places at the same moment"
	if n := strings.Count(log, refused); n != 2 || !strings.Contains(log, "refused_scrapes=1\n") || !strings.Contains(log, "refused_scrapes=2\n") {
		t.Errorf("want the refusal logged twice (once, then a minute later with the 2 refused since):\n%s", log)
	}
	_, text := httpGet(t, srv.URL+"/metrics")
	if !strings.Contains(text, `promhttp_metric_handler_requests_total{code="503"} 3`) {
		t.Errorf("refusals not counted as 503s:\n%s", text)
	}
}

// A scrape that outlasts the timeout (a collection waiting on the
// database) is still logged as timed out, naming the timeout, and not as
// refused. The collection blocks until released: the timeout surely
// fires first, however slow the machine.
func TestQASoakScrapeTimeoutIsLoggedAsTimeout(t *testing.T) {
	srv, bc, _, logs := scrapeDaemon(t, app.DaemonOptions{ScrapeTimeout: 50 * time.Millisecond})
	code, body := httpGet(t, srv.URL+"/metrics")
	<-bc.entered
	close(bc.release)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("a scrape held past the timeout: HTTP %d, want 503\n%s", code, body)
	}
	log := logs.String()
	if !strings.Contains(log, "metrics scrape timed out: /metrics answered HTTP 503 after 50ms (the collection waits on the database") || strings.Contains(log, "refused") {
		t.Errorf("log:\n%s", log)
	}
}
