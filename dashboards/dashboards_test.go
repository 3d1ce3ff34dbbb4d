package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/driftprobe/driftprobe/metrics"
)

const (
	dashboardFile    = "grafana/driftprobe.json"
	provisioningFile = "grafana/provisioning/dashboards.yaml"
	dashboardUID     = "driftprobe-overview"
	dsRef            = "${datasource}"
)

// targetVariableQuery feeds the $target variable: driftprobe_events_total
// is exported for every configured target (at 0 for every kind and
// direction) whether or not it ever answered with a verdict.
const targetVariableQuery = "label_values(" + metrics.EventsTotal + ", target)"

// histograms are the exported families that also expose _bucket, _sum and
// _count series.
var histograms = []string{metrics.RunDuration, metrics.RecordedRunDuration}

// loadDashboard decodes the dashboard into generic maps: Grafana's schema is
// large and version-dependent, so the test checks the properties that
// matter for provisioning rather than decoding into a closed struct.
func loadDashboard(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var d map[string]any
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dec.More() {
		t.Fatalf("%s: trailing data after the dashboard object", dashboardFile)
	}
	return d
}

// allPanels returns the dashboard's panels, including those nested in rows.
func allPanels(d map[string]any) []map[string]any {
	var out []map[string]any
	var walk func(v any)
	walk = func(v any) {
		list, _ := v.([]any)
		for _, p := range list {
			m, ok := p.(map[string]any)
			if !ok {
				continue
			}
			out = append(out, m)
			walk(m["panels"])
		}
	}
	walk(d["panels"])
	return out
}

func num(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

func TestDashboardProvisionable(t *testing.T) {
	d := loadDashboard(t)
	if d["uid"] != dashboardUID {
		t.Errorf("uid = %v, want %q (a fixed uid keeps links and provisioning stable)", d["uid"], dashboardUID)
	}
	if id, ok := d["id"]; !ok || id != nil {
		t.Errorf("id = %v (present: %v), want null: provisioning assigns ids", id, ok)
	}
	if _, ok := d["__inputs"]; ok {
		t.Error("__inputs only works through the UI import flow; file provisioning leaves ${DS_...} unresolved")
	}
	if title, _ := d["title"].(string); title == "" {
		t.Error("dashboard has no title")
	}
	if sv, ok := num(d["schemaVersion"]); !ok || sv < 36 || sv > 42 {
		t.Errorf("schemaVersion = %v, want 36..42", d["schemaVersion"])
	}
	raw, _ := os.ReadFile(dashboardFile)
	if bytes.Contains(raw, []byte("DS_")) {
		t.Error("dashboard mentions a DS_ import placeholder; use the ${datasource} variable")
	}

	// Templating: the datasource variable, then a target variable fed by it.
	tl, _ := d["templating"].(map[string]any)
	vars, _ := tl["list"].([]any)
	byName := map[string]map[string]any{}
	for _, v := range vars {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		byName[name] = m
	}
	ds := byName["datasource"]
	if ds == nil || ds["type"] != "datasource" || ds["query"] != "prometheus" {
		t.Errorf(`templating needs {"name":"datasource","type":"datasource","query":"prometheus"}, got %v`, ds)
	}
	tv := byName["target"]
	switch {
	case tv == nil:
		t.Error("templating has no target variable")
	default:
		if tv["type"] != "query" || tv["multi"] != true || tv["includeAll"] != true {
			t.Errorf("target variable must be a multi-value query variable with All: %v", tv)
		}
		checkDatasource(t, "variable target", tv["datasource"])
		// From a metric every configured target has from the start:
		// driftprobe_probe_verdicts has no series for a target whose
		// probes all got client errors (no verdict), which then could not
		// be picked.
		if q := variableQuery(tv); q != targetVariableQuery {
			t.Errorf("target variable query = %q, want %s", q, targetVariableQuery)
		}
		if def, _ := tv["definition"].(string); def != targetVariableQuery {
			t.Errorf("target variable definition = %q, want %s", def, targetVariableQuery)
		}
	}

	panels := allPanels(d)
	if len(panels) < 10 {
		t.Fatalf("only %d panels", len(panels))
	}
	ids := map[string]string{}
	type rect struct {
		title      string
		x, y, w, h float64
	}
	var rects []rect
	for i, p := range panels {
		title, _ := p["title"].(string)
		where := fmt.Sprintf("panel %d (%q)", i, title)
		if title == "" {
			t.Errorf("%s has no title", where)
		}
		if id, ok := p["id"].(json.Number); !ok {
			t.Errorf("%s has no numeric id", where)
		} else if prev, dup := ids[id.String()]; dup {
			t.Errorf("%s reuses id %s of %q", where, id, prev)
		} else {
			ids[id.String()] = title
		}
		gp, _ := p["gridPos"].(map[string]any)
		x, okx := num(gp["x"])
		y, oky := num(gp["y"])
		w, okw := num(gp["w"])
		h, okh := num(gp["h"])
		if !okx || !oky || !okw || !okh || w <= 0 || h <= 0 || x < 0 || y < 0 || x+w > 24 {
			t.Errorf("%s: bad gridPos %v", where, p["gridPos"])
		} else {
			rects = append(rects, rect{title, x, y, w, h})
		}
		if p["type"] == "row" {
			continue
		}
		checkDatasource(t, where, p["datasource"])
		targets, _ := p["targets"].([]any)
		if len(targets) == 0 {
			t.Errorf("%s has no queries", where)
		}
		for j, tg := range targets {
			m, _ := tg.(map[string]any)
			checkDatasource(t, fmt.Sprintf("%s target %d", where, j), m["datasource"])
			if e, _ := m["expr"].(string); strings.TrimSpace(e) == "" {
				t.Errorf("%s target %d has no expr", where, j)
			}
		}
	}
	for i := range rects {
		for j := i + 1; j < len(rects); j++ {
			a, b := rects[i], rects[j]
			if a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
				t.Errorf("panels %q and %q overlap", a.title, b.title)
			}
		}
	}

	// Annotation queries use the variable too (the built-in Grafana one
	// excepted).
	an, _ := d["annotations"].(map[string]any)
	list, _ := an["list"].([]any)
	for i, a := range list {
		m, _ := a.(map[string]any)
		if m["builtIn"] != nil {
			continue
		}
		checkDatasource(t, fmt.Sprintf("annotation %d", i), m["datasource"])
	}
}

func checkDatasource(t *testing.T, where string, v any) {
	t.Helper()
	m, _ := v.(map[string]any)
	if m == nil || m["type"] != "prometheus" || m["uid"] != dsRef {
		t.Errorf(`%s: datasource = %v, want {"type":"prometheus","uid":%q}`, where, v, dsRef)
	}
}

// variableQuery returns a query variable's query, which Grafana stores as a
// string or as {"query": "..."}.
func variableQuery(v map[string]any) string {
	switch q := v["query"].(type) {
	case string:
		return q
	case map[string]any:
		s, _ := q["query"].(string)
		return s
	}
	return ""
}

func TestProvisioningFile(t *testing.T) {
	raw, err := os.ReadFile(provisioningFile)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name    string `yaml:"name"`
			Type    string `yaml:"type"`
			Folder  string `yaml:"folder"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.APIVersion != 1 || len(p.Providers) != 1 {
		t.Fatalf("want apiVersion 1 and one provider, got %+v", p)
	}
	pr := p.Providers[0]
	if pr.Type != "file" || pr.Folder != "driftprobe" || pr.Options.Path != "/var/lib/grafana/dashboards/driftprobe" {
		t.Errorf("provider = %+v, want a file provider for /var/lib/grafana/dashboards/driftprobe in folder driftprobe", pr)
	}
}

// expr is one PromQL expression and where it came from.
type expr struct {
	where string
	text  string
	// template: a Grafana expression with $variables.
	template bool
}

func dashboardExprs(t *testing.T) []expr {
	t.Helper()
	d := loadDashboard(t)
	var out []expr
	for _, p := range allPanels(d) {
		targets, _ := p["targets"].([]any)
		for j, tg := range targets {
			m, _ := tg.(map[string]any)
			if e, _ := m["expr"].(string); e != "" {
				out = append(out, expr{fmt.Sprintf("panel %q target %d", p["title"], j), e, true})
			}
		}
	}
	an, _ := d["annotations"].(map[string]any)
	list, _ := an["list"].([]any)
	for i, a := range list {
		m, _ := a.(map[string]any)
		if e, _ := m["expr"].(string); e != "" {
			out = append(out, expr{fmt.Sprintf("annotation %d", i), e, true})
		}
	}
	return out
}

func variableExprs(t *testing.T) []expr {
	t.Helper()
	d := loadDashboard(t)
	tl, _ := d["templating"].(map[string]any)
	vars, _ := tl["list"].([]any)
	var out []expr
	for _, v := range vars {
		m, _ := v.(map[string]any)
		if m["type"] != "query" {
			continue
		}
		out = append(out, expr{fmt.Sprintf("variable %v", m["name"]), variableQuery(m), true})
		if def, _ := m["definition"].(string); def != "" {
			out = append(out, expr{fmt.Sprintf("variable %v definition", m["name"]), def, true})
		}
	}
	return out
}

var metricRE = regexp.MustCompile(`driftprobe_[A-Za-z0-9_:]*`)

// stripStrings blanks string literals ("...", '...', `...`) so that label
// values neither count as metric names nor unbalance brackets. It reports an
// unterminated string.
func stripStrings(s string) (string, error) {
	var b strings.Builder
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case quote == 0:
			if r == '"' || r == '\'' || r == '`' {
				quote = r
				b.WriteRune(r)
				continue
			}
			b.WriteRune(r)
		case escaped:
			escaped = false
			b.WriteRune(' ')
		case r == '\\' && quote != '`':
			escaped = true
			b.WriteRune(' ')
		case r == quote:
			quote = 0
			b.WriteRune(r)
		default:
			b.WriteRune(' ')
		}
	}
	if quote != 0 {
		return "", fmt.Errorf("unterminated %c string", quote)
	}
	return b.String(), nil
}

// checkBalanced reports unbalanced (), [] and {} outside string literals.
func checkBalanced(s string) error {
	code, err := stripStrings(s)
	if err != nil {
		return err
	}
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	var stack []rune
	for i, r := range code {
		switch r {
		case '(', '[', '{':
			stack = append(stack, r)
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return fmt.Errorf("unbalanced %q at offset %d", r, i)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed %q", stack[len(stack)-1])
	}
	return nil
}

// metricNames returns the driftprobe_ metric families an expression uses,
// mapping histogram series (_bucket, _sum, _count) to their family. Unknown
// names are returned in unknown.
func metricNames(s string) (known, unknown []string) {
	code, _ := stripStrings(s)
	for _, name := range metricRE.FindAllString(code, -1) {
		if slices.Contains(metrics.Exported, name) {
			known = append(known, name)
			continue
		}
		family := ""
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suf); ok && slices.Contains(histograms, base) {
				family = base
			}
		}
		if family != "" {
			known = append(known, family)
		} else {
			unknown = append(unknown, name)
		}
	}
	return known, unknown
}

func TestPromQLUsesExportedMetrics(t *testing.T) {
	all := append(dashboardExprs(t), variableExprs(t)...)
	all = append(all, alertExprs(t)...)
	if len(all) < 20 {
		t.Fatalf("found only %d expressions", len(all))
	}
	onDashboard := map[string]bool{}
	for _, e := range all {
		if err := checkBalanced(e.text); err != nil {
			t.Errorf("%s: %v in %q", e.where, err, e.text)
		}
		known, unknown := metricNames(e.text)
		for _, u := range unknown {
			t.Errorf("%s: metric %q is not in metrics.Exported", e.where, u)
		}
		if len(known)+len(unknown) == 0 {
			t.Errorf("%s: no driftprobe_ metric in %q", e.where, e.text)
		}
		if e.template {
			for _, k := range known {
				onDashboard[k] = true
			}
		}
	}
	for _, m := range metrics.Exported {
		if !onDashboard[m] {
			t.Errorf("metric %s is exported but not shown on the dashboard: add it to a panel", m)
		}
	}
}

func TestMetricNameExtraction(t *testing.T) {
	known, unknown := metricNames(`histogram_quantile(0.9, sum by (le) (rate(driftprobe_run_duration_seconds_bucket[5m]))) / driftprobe_nope{x="driftprobe_in_a_label"}`)
	if !slices.Equal(known, []string{metrics.RunDuration}) || !slices.Equal(unknown, []string{"driftprobe_nope"}) {
		t.Errorf("known %v unknown %v", known, unknown)
	}
	if _, unknown := metricNames(`driftprobe_probe_verdicts_count`); len(unknown) != 1 {
		t.Error("_count of a gauge must not be accepted")
	}
	for s, ok := range map[string]bool{
		`sum(rate(x{a="(("}[5m]))`: true,
		`sum(rate(x[5m])`:          false,
		`x{a="b"]`:                 false,
		`x{a="b\"}"}`:              true,
		`x{a="b}`:                  false,
	} {
		if err := checkBalanced(s); (err == nil) != ok {
			t.Errorf("checkBalanced(%q) = %v", s, err)
		}
	}
}

// grafanaVars replaces Grafana's variables with values Prometheus accepts.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m",
	"$__interval", "1m",
	"$__range", "1d",
	"${target}", ".*",
	"$target", ".*",
)

// TestDashboardPromQLParses feeds every dashboard expression, with its
// Grafana variables substituted, to promtool as a recording rule: a full
// PromQL parse without a Go dependency on Prometheus.
func TestDashboardPromQLParses(t *testing.T) {
	promtool := requirePromtool(t)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, e := range dashboardExprs(t) {
		q := grafanaVars.Replace(e.text)
		if strings.Contains(q, "$") {
			t.Errorf("%s: unknown Grafana variable in %q", e.where, e.text)
			continue
		}
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:expr_%d", i), Expr: q})
	}
	doc := map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "dashboard_rules.yml")
	if err := os.WriteFile(f, out, 0o644); err != nil {
		t.Fatal(err)
	}
	runTool(t, promtool, "check", "rules", f)
}

// requirePromtool returns promtool's path. Without promtool the test is
// skipped, unless DRIFTPROBE_REQUIRE_PROMTOOL is set (CI sets it), when it
// fails.
func requirePromtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("DRIFTPROBE_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("promtool not found on PATH and DRIFTPROBE_REQUIRE_PROMTOOL is set (apt-get install --no-install-recommends prometheus)")
		}
		t.Skip("promtool not on PATH; set DRIFTPROBE_REQUIRE_PROMTOOL=1 to make this a failure")
	}
	return p
}

func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), out)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// verdictValues are the verdict label values each metric with a verdict
// label can have: a selector matching any other value selects nothing
// (driftprobe_probe_verdicts never has abuse_block: account-level
// enforcement is driftprobe_abuse_blocks).
var verdictValues = map[string][]string{
	metrics.ProbeVerdicts: metrics.VerdictClasses,
	metrics.Probes:        metrics.VerdictClasses,
}

var verdictSelectorRE = regexp.MustCompile(`(driftprobe_[a-z_]+)\{([^}]*)\}`)
var verdictMatcherRE = regexp.MustCompile(`\bverdict\s*(=~|=|!~|!=)\s*"([^"]*)"`)

// TestVerdictSelectorsMatchExportedValues: every verdict a panel or rule
// selects on driftprobe_probe_verdicts or driftprobe_probes is one the
// binary exports.
func TestVerdictSelectorsMatchExportedValues(t *testing.T) {
	all := append(dashboardExprs(t), alertExprs(t)...)
	checked := 0
	for _, e := range all {
		for _, sel := range verdictSelectorRE.FindAllStringSubmatch(e.text, -1) {
			valid, ok := verdictValues[sel[1]]
			if !ok {
				continue
			}
			for _, m := range verdictMatcherRE.FindAllStringSubmatch(sel[2], -1) {
				checked++
				for _, v := range strings.Split(m[2], "|") {
					if !slices.Contains(valid, v) {
						t.Errorf("%s: %s selects verdict %q, which it never has (it has %v)", e.where, sel[1], v, valid)
					}
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d verdict matchers found: the check reads nothing", checked)
	}
	for _, bad := range []string{`driftprobe_probe_verdicts{verdict=~"blocked_input|abuse_block"}`} {
		found := false
		for _, sel := range verdictSelectorRE.FindAllStringSubmatch(bad, -1) {
			for _, m := range verdictMatcherRE.FindAllStringSubmatch(sel[2], -1) {
				for _, v := range strings.Split(m[2], "|") {
					found = found || !slices.Contains(verdictValues[sel[1]], v)
				}
			}
		}
		if !found {
			t.Errorf("the check misses %s", bad)
		}
	}
}

// TestSharesCountProbes: a share of probes (a block share) divides counts
// of probes, never driftprobe_probe_verdicts, which counts a probe once
// per category: probes that stay blocked while the provider names more
// categories for them would look like a move in volume.
func TestSharesCountProbes(t *testing.T) {
	shares := 0
	for _, e := range append(dashboardExprs(t), alertExprs(t)...) {
		code, _ := stripStrings(e.text)
		if !strings.Contains(code, metrics.ProbeVerdicts) && !strings.Contains(code, metrics.Probes+"{") {
			continue
		}
		if strings.Contains(code, "/") {
			shares++
			if strings.Contains(code, metrics.ProbeVerdicts) {
				t.Errorf("%s divides %s (a probe counts once per category): use %s", e.where, metrics.ProbeVerdicts, metrics.Probes)
			}
		}
	}
	if shares < 3 {
		t.Errorf("found %d block shares (the dashboard's two panels and DriftprobeBlockVolumeShift), want at least 3", shares)
	}
}
