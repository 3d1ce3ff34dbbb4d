package dashboards

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReviewMetricsDownOneOfTwoInstances: two driftprobe serves are scraped
// (two jobs, or two instances of one job: staging and production, or two
// teams' monitors). Instance a's /metrics starts answering HTTP 500 at 30m
// (Prometheus marks its series stale), instance b keeps exporting.
// DriftprobeMetricsDown is meant to ticket exactly this ("serve's /metrics
// fails"), but absent(driftprobe_build_info) is empty as long as any
// instance exports build_info, so it never fires: instance a's pages and
// tickets are blind with no word.
func TestReviewMetricsDownOneOfTwoInstances(t *testing.T) {
	promtool := requirePromtool(t)
	rules, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	test := `rule_files:
  - ` + rules + `
evaluation_interval: 1m
tests:
  - name: one of two instances' metrics gone
    interval: 1m
    input_series:
      - series: 'driftprobe_build_info{job="driftprobe",instance="a:9090",version="v1",goversion="go1.26.8"}'
        values: '1+0x30 stale _x40'
      - series: 'driftprobe_build_info{job="driftprobe",instance="b:9090",version="v1",goversion="go1.26.8"}'
        values: '1+0x70'
    alert_rule_test:
      - eval_time: 45m
        alertname: DriftprobeMetricsDown
        exp_alerts:
          - exp_labels:
              severity: ticket
              job: driftprobe
              instance: "a:9090"
            exp_annotations:
              summary: "driftprobe's metrics are gone"
              description: "Prometheus has had no driftprobe series for 10m after seeing them: serve's /metrics fails (HTTP 500 on a failed collection: the serve log's ` + "`metrics collection failed`" + ` line names the error; run ` + "`driftprobe db check`" + `), serve is down, or its metrics are no longer collected (scrape config, textfile collector, Pushgateway). Every other driftprobe alert is blind meanwhile, pages included."
              runbook_url: "https://github.com/driftprobe/driftprobe/blob/main/docs/RUNBOOK.md#driftprobemetricsdown"
`
	f := filepath.Join(t.TempDir(), "review_test.yml")
	if err := os.WriteFile(f, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	runTool(t, promtool, "test", "rules", f)
}
