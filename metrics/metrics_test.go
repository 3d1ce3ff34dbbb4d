package metrics_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/storage"
)

const attrHelp = `# HELP driftprobe_attribution_success 1 when the latest attribution attempt (after a run) succeeded, 0 when it failed (Prometheus unreachable, bad data).
# TYPE driftprobe_attribution_success gauge
# HELP driftprobe_attribution_timestamp_seconds Time the latest successful attribution report was stored.
# TYPE driftprobe_attribution_timestamp_seconds gauge
# HELP driftprobe_production_changes Production block-rate changes in the latest successful attribution report, by target, normalized category ("all": every block on the target), direction (up, down) and attribution (provider, traffic, inconclusive).
# TYPE driftprobe_production_changes gauge
# HELP driftprobe_uncovered_categories 1 for each category production blocks on the target that no corpus probe is tagged with (latest successful attribution report).
# TYPE driftprobe_uncovered_categories gauge
`

var attrNames = []string{metrics.AttributionSuccess, metrics.AttributionTimestamp, metrics.ProductionChanges, metrics.UncoveredCategories}

// The attribution metrics come from the latest stored reports: changes
// and uncovered categories from the latest successful one, success from
// the latest attempt. Only configured targets (known to the database),
// normalized categories and documented directions and attributions become
// label values.
func TestAttributionMetrics(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDBCollector(st.SQL()))
	if n, err := testutil.GatherAndCount(reg, attrNames...); err != nil || n != 0 {
		t.Fatalf("without reports: %d series (%v), want none", n, err)
	}

	runID, err := st.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"sim-a", "sim-b"} {
		if _, err := st.EnsureTarget(ctx, storage.TargetRow{Name: n, Provider: "sim"}); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	st.SetClock(func() time.Time { return at })
	report := `{"series":6,"changes":[
 {"target":"sim-a","category":"violence","direction":"up","attribution":"provider"},
 {"target":"sim-a","category":"","direction":"down","attribution":"traffic"},
 {"target":"sim-b","category":"hate","direction":"up","attribution":"inconclusive"},
 {"target":"prod-x","category":"hate","direction":"up","attribution":"provider"},
 {"target":"sim-a","category":"Violence\u202e","direction":"up","attribution":"provider"},
 {"target":"sim-a","category":"hate","direction":"sideways","attribution":"provider"},
 {"target":"sim-a","category":"hate","direction":"up","attribution":"maybe"}],
 "uncovered_categories":[{"target":"sim-a","category":"sexual_minors","blocked":20},{"target":"nope","category":"other","blocked":1}],
 "skipped_series":[],"warnings":[]}`
	if _, err := st.SaveAttributionReport(ctx, storage.AttributionReport{RunID: runID, Report: []byte(report)}, storage.AttributionReportsKept); err != nil {
		t.Fatal(err)
	}
	series := `driftprobe_production_changes{attribution="inconclusive",category="hate",direction="up",target="sim-b"} 1
driftprobe_production_changes{attribution="provider",category="violence",direction="up",target="sim-a"} 1
driftprobe_production_changes{attribution="traffic",category="all",direction="down",target="sim-a"} 1
driftprobe_uncovered_categories{category="sexual_minors",target="sim-a"} 1
driftprobe_attribution_timestamp_seconds 1.7951688e+09
`
	want := attrHelp + "driftprobe_attribution_success 1\n" + series
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), attrNames...); err != nil {
		t.Fatal(err)
	}

	// A failed attempt: success drops to 0; the last good report stays.
	at = at.Add(time.Hour)
	if _, err := st.SaveAttributionReport(ctx, storage.AttributionReport{RunID: runID, Error: "prometheus down"}, storage.AttributionReportsKept); err != nil {
		t.Fatal(err)
	}
	want = attrHelp + "driftprobe_attribution_success 0\n" + series
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), attrNames...); err != nil {
		t.Fatal(err)
	}

	// A stored report that cannot be read exports no changes, and breaks
	// nothing else: a textfile export of the whole registry still works.
	at = at.Add(time.Hour)
	if _, err := st.SaveAttributionReport(ctx, storage.AttributionReport{RunID: runID, Report: []byte(`{"changes":"x"}`)}, storage.AttributionReportsKept); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, metrics.ProductionChanges, metrics.UncoveredCategories); err != nil || n != 0 {
		t.Errorf("undecodable report: %d change series (%v), want none", n, err)
	}
	if n, err := testutil.GatherAndCount(reg, metrics.AttributionSuccess, metrics.AttributionTimestamp); err != nil || n != 2 {
		t.Errorf("undecodable report: %d success/timestamp series (%v), want both", n, err)
	}
	if err := prometheus.WriteToTextfile(filepath.Join(t.TempDir(), "m.prom"), reg); err != nil {
		t.Errorf("textfile export with an undecodable report: %v", err)
	}
}

// The last-run gauge is the latest instant per status, also within one
// second, where stored times ("…:05Z", "…:05.5Z") do not sort as text;
// a compare --run of some targets, later still, is not the schedule's run
// and does not count.
func TestLastRunTimestamp(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 11, 20, 10, 0, 5, 0, time.UTC)
	for _, f := range []struct {
		status string
		end    time.Duration
		note   string
	}{{storage.RunComplete, 0, ""}, {storage.RunComplete, 500 * time.Millisecond, ""}, {storage.RunAborted, 2 * time.Second, ""}, {storage.RunAborted, time.Second, ""},
		{storage.RunComplete, time.Hour, metrics.SubsetRunNote}} {
		st.SetClock(func() time.Time { return at })
		id, err := st.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1", Note: f.note})
		if err != nil {
			t.Fatal(err)
		}
		st.SetClock(func() time.Time { return at.Add(f.end) })
		if err := st.FinishRun(ctx, id, f.status, nil); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDBCollector(st.SQL()))
	want := `# HELP driftprobe_last_run_timestamp_seconds End time of the latest run with this status (compare --run runs of some targets not counted: they are not the schedule's).
# TYPE driftprobe_last_run_timestamp_seconds gauge
driftprobe_last_run_timestamp_seconds{status="aborted"} 1.795168807e+09
driftprobe_last_run_timestamp_seconds{status="complete"} 1.7951688055e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.LastRunTimestamp); err != nil {
		t.Error(err)
	}
}
