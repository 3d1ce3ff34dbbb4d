package dashboards

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/metrics"
)

const metricsDoc = "../docs/METRICS.md"

// exportedFamily is what the binary declares for one metric family.
type exportedFamily struct {
	labels []string // variable and constant label names, sorted
}

// capture records the collectors metrics.New and NewRunFailures register.
type capture struct{ cs []prometheus.Collector }

func (c *capture) Register(col prometheus.Collector) error { c.cs = append(c.cs, col); return nil }
func (c *capture) MustRegister(cs ...prometheus.Collector) { c.cs = append(c.cs, cs...) }
func (c *capture) Unregister(prometheus.Collector) bool    { return false }

var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*, constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)
var constLabelRE = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)="`)

// exportedFamilies reads every family's label names from the descriptors
// the binary's collectors describe (what /metrics, the textfile and the
// Pushgateway carry), not from a list kept by hand.
func exportedFamilies(t *testing.T) map[string]exportedFamily {
	t.Helper()
	var reg capture
	metrics.New(&reg, "test")
	metrics.NewRunFailures(&reg)
	reg.cs = append(reg.cs, metrics.NewDBCollector(nil))
	out := map[string]exportedFamily{}
	for _, c := range reg.cs {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descRE.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read descriptor %s", d)
			}
			var labels []string
			for _, cl := range constLabelRE.FindAllStringSubmatch(m[2], -1) {
				labels = append(labels, cl[1])
			}
			if m[3] != "" {
				for _, vl := range strings.Split(m[3], ",") {
					labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(vl, "c("), ")"))
				}
			}
			sort.Strings(labels)
			out[m[1]] = exportedFamily{labels}
		}
	}
	for _, name := range metrics.Exported {
		if _, ok := out[name]; !ok {
			t.Errorf("%s is in metrics.Exported but no collector describes it", name)
		}
	}
	for name := range out {
		if !slices.Contains(metrics.Exported, name) {
			t.Errorf("%s is described by a collector but not in metrics.Exported", name)
		}
	}
	return out
}

// scrapeLabels are the labels Prometheus (or the Pushgateway's group)
// attaches to every series of a scrape target.
var scrapeLabels = []string{"job", "instance"}

var (
	selectorRE     = regexp.MustCompile(`(driftprobe_[A-Za-z0-9_]+)\s*\{([^}]*)\}`)
	matcherRE      = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
	clauseRE       = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	labelValuesRE  = regexp.MustCompile(`label_values\(\s*(driftprobe_[A-Za-z0-9_]+)[^,]*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)`)
	labelNameRE    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	histogramSufRE = regexp.MustCompile(`^(.*)_(bucket|sum|count)$`)
)

// familyOf maps a series name in an expression to its exported family and
// the extra label its series carry (le for a histogram's buckets).
func familyOf(fams map[string]exportedFamily, name string) (string, []string, bool) {
	if _, ok := fams[name]; ok {
		return name, nil, true
	}
	if m := histogramSufRE.FindStringSubmatch(name); m != nil && slices.Contains(histograms, m[1]) {
		if m[2] == "bucket" {
			return m[1], []string{"le"}, true
		}
		return m[1], nil, true
	}
	return "", nil, false
}

// labelProblems lists the labels an expression selects, groups or matches
// on that its metrics never carry: a selector's matcher must name a label
// of that selector's metric; a by/without/on/ignoring/group_* clause, a
// label of one of the expression's metrics (or job/instance).
func labelProblems(fams map[string]exportedFamily, text string) []string {
	code, err := stripStrings(text)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	union := map[string]bool{}
	for _, l := range scrapeLabels {
		union[l] = true
	}
	for _, name := range metricRE.FindAllString(code, -1) {
		fam, extra, ok := familyOf(fams, name)
		if !ok {
			continue // TestPromQLUsesExportedMetrics reports it
		}
		for _, l := range append(slices.Clone(fams[fam].labels), extra...) {
			union[l] = true
		}
	}
	for _, sel := range selectorRE.FindAllStringSubmatch(code, -1) {
		fam, extra, ok := familyOf(fams, sel[1])
		if !ok {
			continue
		}
		have := append(append(slices.Clone(fams[fam].labels), extra...), scrapeLabels...)
		for _, m := range matcherRE.FindAllStringSubmatch(sel[2], -1) {
			if !slices.Contains(have, m[1]) {
				problems = append(problems, sel[1]+" has no label "+m[1]+" (it has "+strings.Join(fams[fam].labels, ", ")+")")
			}
		}
	}
	for _, cl := range clauseRE.FindAllStringSubmatch(code, -1) {
		for _, l := range labelNameRE.FindAllString(cl[2], -1) {
			if !union[l] {
				problems = append(problems, cl[1]+" ("+cl[2]+"): no metric of the expression has the label "+l)
			}
		}
	}
	for _, lv := range labelValuesRE.FindAllStringSubmatch(code, -1) {
		if fam, _, ok := familyOf(fams, lv[1]); ok && !slices.Contains(fams[fam].labels, lv[2]) {
			problems = append(problems, "label_values: "+lv[1]+" has no label "+lv[2])
		}
	}
	return problems
}

// TestPromQLUsesExportedLabels: every label a panel, variable or alert
// rule selects, groups or joins on is one the metrics it reads carry.
// A misspelt or dropped label selects nothing, silently: an empty panel,
// an alert that can never fire.
func TestPromQLUsesExportedLabels(t *testing.T) {
	fams := exportedFamilies(t)
	all := append(dashboardExprs(t), variableExprs(t)...)
	all = append(all, alertExprs(t)...)
	for _, e := range all {
		for _, p := range labelProblems(fams, e.text) {
			t.Errorf("%s: %s, in %q", e.where, p, e.text)
		}
	}
	// The check must catch what it is for.
	for _, bad := range []string{
		`sum by (target) (driftprobe_abuse_blocks{targt="x"})`,
		`sum by (tenant) (driftprobe_abuse_blocks)`,
		`max by (target) (driftprobe_input_change_probes{reason="request"})`,
		`label_values(driftprobe_events_total, tenant)`,
		`sum by (le) (driftprobe_run_duration_seconds_sum)`,
	} {
		if len(labelProblems(fams, bad)) == 0 {
			t.Errorf("the check misses %s", bad)
		}
	}
	for _, good := range []string{
		`sum by (le) (increase(driftprobe_run_duration_seconds_bucket[1h]))`,
		`max by (job, instance) (driftprobe_build_info{version!=""})`,
	} {
		if p := labelProblems(fams, good); len(p) != 0 {
			t.Errorf("the check refuses %s: %v", good, p)
		}
	}
}

var (
	docRowRE   = regexp.MustCompile("^\\| `(driftprobe_[a-z_]+)`(?:, `\\.\\.\\.(_[a-z_]+)`)? \\| ([^|]+) \\| ([^|]+) \\|")
	docParenRE = regexp.MustCompile(`\([^()]*\)`)
)

// docLabels reads a METRICS.md labels cell: label names separated by
// commas, each perhaps followed by a parenthesised note; "—" for none.
func docLabels(cell string) []string {
	for s := ""; s != cell; {
		s, cell = cell, docParenRE.ReplaceAllString(cell, "")
	}
	var out []string
	for _, f := range strings.Split(cell, ",") {
		f = strings.TrimSpace(f)
		if f == "" || f == "—" || f == "-" {
			continue
		}
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// TestMetricsDocMatchesExport: docs/METRICS.md's table lists every family
// the binary exports, no other, each with the labels its series carry.
func TestMetricsDocMatchesExport(t *testing.T) {
	fams := exportedFamilies(t)
	raw, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		m := docRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		names := []string{m[1]}
		if m[2] != "" { // `a_b_c`, `..._d_e`: the second is the first with its last word replaced
			names = append(names, m[1][:strings.LastIndex(m[1], "_")]+m[2])
		}
		for _, name := range names {
			documented[name] = true
			fam, ok := fams[name]
			if !ok {
				t.Errorf("%s documents %s, which the binary does not export", metricsDoc, name)
				continue
			}
			if got := docLabels(m[4]); !slices.Equal(got, fam.labels) {
				t.Errorf("%s: %s documented with labels %v, exported with %v", metricsDoc, name, got, fam.labels)
			}
		}
	}
	for name := range fams {
		if !documented[name] {
			t.Errorf("%s is exported but not in %s's table", name, metricsDoc)
		}
	}
}
