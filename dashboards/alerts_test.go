package dashboards

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const (
	alertsFile  = "prometheus/alerts.yml"
	runbookFile = "../docs/RUNBOOK.md"
	runbookURL  = "https://github.com/driftprobe/driftprobe/blob/main/docs/RUNBOOK.md#"
)

// alertTestFiles are the promtool unit test files for alertsFile.
var alertTestFiles = []string{"prometheus/alerts_test.yml", "prometheus/alerts_days_test.yml", "prometheus/alerts_weeks_test.yml"}

// wantAlerts is the paging policy: composition and account enforcement
// page; volume, the prober's own health and baselines restarted by an
// input change (your own config change or endpoint move) are tickets; a
// production change attributed to the provider warns, one attributed to
// customer traffic informs.
var wantAlerts = map[string]string{
	"DriftprobeNewCategoryActive":     "page",
	"DriftprobeAbuseBlock":            "page",
	"DriftprobePolicyChange":          "page",
	"DriftprobeModelChange":           "page",
	"DriftprobeBlockVolumeShift":      "ticket",
	"DriftprobeNondeterminism":        "ticket",
	"DriftprobeScoreDrift":            "ticket",
	"DriftprobeRunsStale":             "ticket",
	"DriftprobeRunFailed":             "ticket",
	"DriftprobeTargetDegraded":        "ticket",
	"DriftprobeBreakerOpen":           "ticket",
	"DriftprobeClientErrors":          "ticket",
	"DriftprobeUnknownSignals":        "ticket",
	"DriftprobeBaselinesRestarted":    "ticket",
	"DriftprobeOutboxStuck":           "ticket",
	"DriftprobeConfigReloadFailed":    "ticket",
	"DriftprobeMetricsDown":           "ticket",
	"DriftprobeDetectionStateDamaged": "ticket",
	"DriftprobeParkedStateDamaged":    "ticket",

	"DriftprobeProductionShiftProvider": "warning",
	"DriftprobeProductionShiftTraffic":  "info",
	"DriftprobeAttributionFailing":      "ticket",
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	return rf
}

func alertExprs(t *testing.T) []expr {
	t.Helper()
	var out []expr
	for _, g := range loadRules(t).Groups {
		for i, r := range g.Rules {
			out = append(out, expr{fmt.Sprintf("%s rule %d (%s%s)", alertsFile, i, r.Alert, r.Record), r.Expr, false})
		}
	}
	return out
}

// githubAnchor is GitHub's heading anchor: lower case, punctuation other
// than '-' and '_' dropped, spaces to '-'.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestAlertRulesPolicy(t *testing.T) {
	rb, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{1,6}\s+(.+)$`).FindAllStringSubmatch(string(rb), -1) {
		anchors[githubAnchor(m[1])] = true
	}

	seen := map[string]bool{}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			seen[r.Alert] = true
			want, ok := wantAlerts[r.Alert]
			if !ok {
				t.Errorf("alert %s is not in wantAlerts: decide its severity there", r.Alert)
			}
			if sev := r.Labels["severity"]; sev != want {
				t.Errorf("alert %s: severity %q, want %q", r.Alert, sev, want)
			}
			for _, k := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[k]) == "" {
					t.Errorf("alert %s: annotation %s missing", r.Alert, k)
				}
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookURL)
			if !ok || !anchors[anchor] {
				t.Errorf("alert %s: runbook_url %q must be %s<anchor of a heading in docs/RUNBOOK.md>", r.Alert, r.Annotations["runbook_url"], runbookURL)
			}
			if anchor != strings.ToLower(r.Alert) {
				t.Errorf("alert %s: runbook anchor %q, want %q", r.Alert, anchor, strings.ToLower(r.Alert))
			}
		}
	}
	for name := range wantAlerts {
		if !seen[name] {
			t.Errorf("alert %s missing from %s", name, alertsFile)
		}
	}
}

// TestEveryAlertIsUnitTested requires, for every alert, a promtool case in
// which it fires and one in which it must stay silent.
func TestEveryAlertIsUnitTested(t *testing.T) {
	type testFile struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			Name          string `yaml:"name"`
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []struct {
					ExpLabels      map[string]string `yaml:"exp_labels"`
					ExpAnnotations map[string]string `yaml:"exp_annotations"`
				} `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, f := range alertTestFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tf testFile
		if err := yaml.Unmarshal(raw, &tf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(tf.RuleFiles) != 1 || tf.RuleFiles[0] != "alerts.yml" {
			t.Errorf("%s: rule_files = %v, want [alerts.yml]", f, tf.RuleFiles)
		}
		for _, tc := range tf.Tests {
			for _, at := range tc.AlertRuleTest {
				if len(at.ExpAlerts) == 0 {
					silent[at.Alertname] = true
					continue
				}
				fires[at.Alertname] = true
				for _, ea := range at.ExpAlerts {
					if ea.ExpLabels["severity"] != wantAlerts[at.Alertname] {
						t.Errorf("%s %q: %s expected with severity %q", f, tc.Name, at.Alertname, ea.ExpLabels["severity"])
					}
					if ea.ExpAnnotations["summary"] == "" {
						t.Errorf("%s %q: %s: exp_annotations must check the summary", f, tc.Name, at.Alertname)
					}
				}
			}
		}
	}
	for _, name := range sortedKeys(wantAlerts) {
		if !fires[name] {
			t.Errorf("no promtool case where %s fires", name)
		}
		if !silent[name] {
			t.Errorf("no promtool case where %s must stay silent (exp_alerts: [])", name)
		}
	}
}

func TestPromtoolCheckRules(t *testing.T) {
	promtool := requirePromtool(t)
	runTool(t, promtool, "check", "rules", "--lint-fatal", alertsFile)
}

func TestPromtoolTestRules(t *testing.T) {
	promtool := requirePromtool(t)
	for _, f := range alertTestFiles {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			runTool(t, promtool, "test", "rules", f)
		})
	}
}
