package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/storage"
)

const (
	promQuery      = `sum by (target, category) (increase(llm_blocked_total[1h]))`
	promTotalQuery = `sum by (target) (increase(llm_requests_total[1h]))`
)

// newPromFake replays the query_range fixtures whose hourly samples line
// up with runHourly's runs.
func newPromFake(t *testing.T) *testenv.Prometheus {
	return testenv.NewPrometheus(t, map[string][]byte{
		promQuery:      testenv.PrometheusFixture(t, "e2e_blocked.json"),
		promTotalQuery: testenv.PrometheusFixture(t, "e2e_total.json"),
	})
}

// attrEnv is testenv.AttributionConfig with an attribution block pointing at prom.
func attrEnv(t *testing.T, prom *testenv.Prometheus) *testenv.Env {
	t.Helper()
	e := testenv.New(t, testenv.AttributionConfig+fmt.Sprintf("attribution:\n  prometheus: %s\n  query: %q\n  total_query: %q\n  since: 10h\n  step: 1h\n",
		prom.URL, promQuery, promTotalQuery))
	e.Store.SetClock(func() time.Time { return testenv.AttributionT0.Add(10 * time.Hour) })
	return e
}

// Every run with an attribution block attributes after itself and stores
// the report; the latest is what `attribute` says, on run --json and in
// the metrics.
func TestRunAttributesAfterEveryRun(t *testing.T) {
	prom := newPromFake(t)
	e := attrEnv(t, prom)
	ctx := context.Background()
	results := runHourly(t, e, 10)
	for i, res := range results {
		if a := res.Attribution; a == nil || a.Error != "" || a.ReportID != int64(i+1) {
			t.Fatalf("run %d: attribution %+v", i+1, a)
		}
	}
	// Run 10 started at 09:00: the range ends there, since 10h before.
	if r := prom.Requests(); len(r) != 20 {
		t.Errorf("%d requests, want 2 per run", len(r))
	} else if q := r[19]; q.Get("query") != promTotalQuery || q.Get("start") != "2026-11-19T23:00:00Z" || q.Get("end") != "2026-11-20T09:00:00Z" || q.Get("step") != "3600" {
		t.Errorf("last request %v", q)
	}
	last := results[9]
	want := &app.AttributionSummary{ReportID: 10, Series: 3, Changes: map[string]int{"provider": 1, "traffic": 1, "inconclusive": 0}, Uncovered: 1}
	if got, _ := json.Marshal(last.Attribution); !bytes.Equal(got, mustJSON(t, want)) {
		t.Errorf("summary %s, want %s", got, mustJSON(t, want))
	}
	j := mustJSON(t, last.JSON())
	if !bytes.Contains(j, []byte(`"attribution":{"report_id":10,"series":3,"changes":{"inconclusive":0,"provider":1,"traffic":1},"uncovered_categories":1}`)) {
		t.Errorf("run --json lacks the attribution summary: %s", j)
	}
	var b bytes.Buffer
	app.WriteSummary(&b, last)
	if !strings.Contains(b.String(), "attribution · 3 series · 1 provider, 1 traffic, 0 inconclusive · uncovered categories: 1") {
		t.Errorf("summary:\n%s", b.String())
	}

	// The stored report is the one `driftprobe attribute` prints for the
	// same range.
	latest, ok, err := storage.LatestAttributionReports(ctx, e.Store.SQL())
	if err != nil || latest == nil || latest != ok && latest.ID != ok.ID || latest.RunID != last.Summary.RunID {
		t.Fatalf("latest %+v ok %+v %v", latest, ok, err)
	}
	sess := &app.Session{Config: e.Config, Corpus: e.Corpus, Store: e.Store}
	rep, err := app.Attribute(ctx, sess, app.PrometheusSource(e.Config.Attribution, testenv.AttributionT0.Add(9*time.Hour)), attribution.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(latest.Report, mustJSON(t, rep)) {
		t.Errorf("stored report\n%s\nwant\n%s", latest.Report, mustJSON(t, rep))
	}

	reg, _ := app.NewRegistry(e.Store, false)
	wantMetrics := `# HELP driftprobe_production_changes Production block-rate changes in the latest successful attribution report, by target, normalized category ("all": every block on the target), direction (up, down) and attribution (provider, traffic, inconclusive).
# TYPE driftprobe_production_changes gauge
driftprobe_production_changes{attribution="provider",category="violence",direction="up",target="sim-a"} 1
driftprobe_production_changes{attribution="traffic",category="hate",direction="up",target="sim-a"} 1
# HELP driftprobe_uncovered_categories 1 for each category production blocks on the target that no corpus probe is tagged with (latest successful attribution report).
# TYPE driftprobe_uncovered_categories gauge
driftprobe_uncovered_categories{category="sexual_minors",target="sim-a"} 1
# HELP driftprobe_attribution_success 1 when the latest attribution attempt (after a run) succeeded, 0 when it failed (Prometheus unreachable, bad data).
# TYPE driftprobe_attribution_success gauge
driftprobe_attribution_success %d
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(wantMetrics, 1)), metrics.ProductionChanges, metrics.UncoveredCategories, metrics.AttributionSuccess); err != nil {
		t.Fatal(err)
	}

	// Prometheus failing (503, then gone): each run still completes; the
	// error is recorded with no report, success drops to 0 and the changes
	// of the last good report stay exported.
	prom.SetFailing(true)
	for i, wantErr := range []string{"unavailable (HTTP 503): the TSDB is starting", "attribution: prometheus http://127.0.0.1:"} {
		if i == 1 {
			prom.Close()
		}
		at := testenv.AttributionT0.Add(time.Duration(10+i) * time.Hour)
		res, err := app.RunOnce(ctx, e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Now: func() time.Time { return at }})
		if err != nil || res.Summary.Status != storage.RunComplete {
			t.Fatalf("run with Prometheus failing: %v", err)
		}
		a := res.Attribution
		if a == nil || !strings.Contains(a.Error, wantErr) || a.Changes != nil || a.ReportID == 0 {
			t.Fatalf("attribution %+v, want the error %q", a, wantErr)
		}
		if j := mustJSON(t, res.JSON()); !bytes.Contains(j, []byte(`"attribution":{"report_id":`)) || !bytes.Contains(j, []byte(`"error":"attribution: `)) {
			t.Errorf("run --json: %s", j)
		}
		var isNull bool
		var stored string
		if err := e.Store.SQL().QueryRowContext(ctx, `SELECT report IS NULL, error FROM attribution_reports WHERE id = ?`, a.ReportID).Scan(&isNull, &stored); err != nil || !isNull || stored != a.Error {
			t.Errorf("stored row: null %v error %q (%v)", isNull, stored, err)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(wantMetrics, 0)), metrics.ProductionChanges, metrics.UncoveredCategories, metrics.AttributionSuccess); err != nil {
		t.Fatal(err)
	}

	// A run of a subset of the targets (compare --run) neither attributes
	// nor clears: the metrics are untouched.
	var before int
	count := func() int {
		var n int
		if err := e.Store.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM attribution_reports`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before = count()
	at := testenv.AttributionT0.Add(12 * time.Hour)
	sub := *e.Config
	sub.Targets = sub.Targets[:1]
	if res, err := app.RunOnce(ctx, &sub, e.Corpus, e.Store, e.Targets[:1], app.RunOptions{Sleep: e.Sleep, Now: func() time.Time { return at }, SubsetRun: true}); err != nil || res.Attribution != nil {
		t.Fatalf("subset run: %v, attribution %+v", err, res.Attribution)
	}
	if n := count(); n != before {
		t.Errorf("a subset run changed the stored reports: %d → %d", before, n)
	}
	// The block removed: the next run clears the reports, and the metrics
	// with them (no stale success=0 alert, no stale changes).
	noBlock := *e.Config
	noBlock.Attribution = nil
	if res, err := app.RunOnce(ctx, &noBlock, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Now: func() time.Time { return at.Add(time.Hour) }}); err != nil || res.Attribution != nil {
		t.Fatalf("run without the block: %v", err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d reports left after the block was removed", n)
	}
	if n, err := testutil.GatherAndCount(reg, metrics.ProductionChanges, metrics.UncoveredCategories, metrics.AttributionSuccess, metrics.AttributionTimestamp); err != nil || n != 0 {
		t.Errorf("%d attribution series exported after the block was removed (%v)", n, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// `attribute --stored` prints the report a run stored (the one the metrics
// show) without querying, and says when a later attempt failed.
func TestStoredAttribution(t *testing.T) {
	prom := newPromFake(t)
	e := attrEnv(t, prom)
	ctx := context.Background()
	var w strings.Builder
	if _, err := app.StoredAttribution(ctx, e.Store, &w); !app.IsUsage(err) {
		t.Fatalf("no stored report: %v, want a usage error", err)
	}
	runHourly(t, e, 10)
	requests := len(prom.Requests())
	rep, err := app.StoredAttribution(ctx, e.Store, &w)
	if err != nil {
		t.Fatal(err)
	}
	_, ok, _ := storage.LatestAttributionReports(ctx, e.Store.SQL())
	if !bytes.Equal(mustJSON(t, rep), ok.Report) || !strings.Contains(w.String(), "made after run 10") {
		t.Errorf("stored report %s (%q), want the stored %s", mustJSON(t, rep), w.String(), ok.Report)
	}
	if len(prom.Requests()) != requests {
		t.Error("--stored queried Prometheus")
	}
	prom.SetFailing(true)
	at := testenv.AttributionT0.Add(10 * time.Hour)
	if _, err := app.RunOnce(ctx, e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Now: func() time.Time { return at }}); err != nil {
		t.Fatal(err)
	}
	w.Reset()
	if rep2, err := app.StoredAttribution(ctx, e.Store, &w); err != nil || !bytes.Equal(mustJSON(t, rep2), ok.Report) || !strings.Contains(w.String(), "the latest attempt, after run 11") || !strings.Contains(w.String(), "failed: ") {
		t.Errorf("after a failed attempt: %v %q", err, w.String())
	}
}

// With an attribution block whose every attempt failed, --stored says the
// attempts failed (and why), not that no block is set.
func TestStoredAttributionOnlyFailures(t *testing.T) {
	prom := newPromFake(t)
	prom.SetFailing(true)
	e := attrEnv(t, prom)
	runHourly(t, e, 2)
	var w strings.Builder
	_, err := app.StoredAttribution(context.Background(), e.Store, &w)
	if !app.IsUsage(err) || !strings.Contains(err.Error(), "no successful attribution report stored: the latest attempt, after run 2, failed:") {
		t.Errorf("only failed attempts: %v", err)
	}
}

// An attribution that runs out of its budget (a Prometheus that never
// answers) is still stored as a failed attempt, so the failing alert and
// `attribute --stored` see it.
func TestAttributionOutOfBudgetIsStored(t *testing.T) {
	prom := newPromFake(t)
	e := attrEnv(t, prom)
	runHourly(t, e, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the budget is spent before the first query
	sum := app.AttributeAfterRun(ctx, &app.Session{Config: e.Config, Corpus: e.Corpus, Store: e.Store}, 1, testenv.AttributionT0.Add(10*time.Hour), nil)
	if sum.Error == "" || sum.ReportID == 0 {
		t.Fatalf("summary %+v: want a stored failed attempt", sum)
	}
	var w strings.Builder
	if _, err := app.StoredAttribution(context.Background(), e.Store, &w); err != nil || !strings.Contains(w.String(), "failed") {
		t.Errorf("stored attribution after the spent budget: %v\n%s", err, w.String())
	}
}

// In run --json a failed attribution has report_id and error only: no
// series or uncovered_categories counts beside the error. A report made
// keeps its counts, zeros included.
func TestAttributionSummaryJSON(t *testing.T) {
	prom := newPromFake(t)
	prom.SetFailing(true)
	e := attrEnv(t, prom)
	runHourly(t, e, 1)
	sum := app.AttributeAfterRun(context.Background(), &app.Session{Config: e.Config, Corpus: e.Corpus, Store: e.Store}, 1, testenv.AttributionT0.Add(10*time.Hour), nil)
	var m map[string]any
	if err := json.Unmarshal(mustJSON(t, sum), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["error"]; !ok || len(m) != 2 || m["report_id"] == nil {
		t.Errorf("failed attribution: %s, want report_id and error only", mustJSON(t, sum))
	}
	// Through the pointer run --json holds, too.
	if j := string(mustJSON(t, struct {
		A *app.AttributionSummary `json:"attribution"`
	}{sum})); strings.Contains(j, `"series"`) || strings.Contains(j, `"uncovered_categories"`) {
		t.Errorf("run --json: %s", j)
	}
	ok := &app.AttributionSummary{ReportID: 4, Changes: map[string]int{"provider": 0, "traffic": 0, "inconclusive": 0}}
	if got, want := string(mustJSON(t, ok)), `{"report_id":4,"series":0,"changes":{"inconclusive":0,"provider":0,"traffic":0},"uncovered_categories":0}`; got != want {
		t.Errorf("a report with no series: %s, want %s", got, want)
	}
	// Made but not stored: the counts and the error.
	ok.Series, ok.Error = 2, "database is locked"
	if got, want := string(mustJSON(t, ok)), `{"report_id":4,"series":2,"changes":{"inconclusive":0,"provider":0,"traffic":0},"uncovered_categories":0,"error":"database is locked"}`; got != want {
		t.Errorf("a report not stored: %s, want %s", got, want)
	}
}
