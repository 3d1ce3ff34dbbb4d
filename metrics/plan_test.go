package metrics

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// A scrape must cost the same at 50 runs and at 50,000: it holds the
// store's single connection, and run writes wait for it. Every query it
// runs on a table that grows with run history (runs, run_targets,
// observations, and the event tables read with them) is an index search,
// never a scan (SQLite's own plan for the current schema says so), and
// none sorts in a temporary b-tree. The tables scanned are bounded by the
// configuration and the category vocabulary (targets, target_categories,
// github_holds: a row per GitHub API origin and credential).
// (The events queries of driftprobe_events_total, _events_open and
// _last_event_timestamp_seconds read every event: they grow with events,
// a few a month, not with runs. input_changes, which grows with every
// corpus version and endpoint move, is read by rowid ranges only: the
// collector keeps what it read.)
func TestScrapeQueryPlans(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	growing := map[string]bool{"runs": true, "run_targets": true, "observations": true, "events": true, "event_targets": true, "event_probes": true, "event_updates": true, "outbox": true, "input_changes": true}
	scan := regexp.MustCompile(`^SCAN (\w+)(?: AS (\w+))?`)
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"qTargets":           {qTargets, nil},
		"qOutboxPending":     {qOutboxPending, nil},
		"qGitHubHolds":       {qGitHubHolds, nil}, // scans github_holds: a row per GitHub origin and credential
		"qMaxRun":            {qMaxRun, nil},
		"qRunsAfter":         {qRunsAfter, []any{1}},
		"qTargetRunsSum":     {qTargetRunsSum, []any{1, 1, 2}},
		"qRunTargetsOf":      {qRunTargetsOf, []any{1}},
		"qLatestRun":         {qLatestRun, []any{1}},
		"qLatestFinished":    {qLatestFinished, []any{1}},
		"qFinishedBefore":    {qFinishedBefore, []any{1, 9, BreakerRunsCap}},
		"qSkippedBetween":    {qSkippedBetween, []any{1, 5, 1}},
		"qAbuse":             {qAbuse, []any{1, 1}},
		"qNewCategories":     {qNewCategories, nil},
		"qMaxInputChange":    {qMaxInputChange, nil},
		"qInputChangesAfter": {qInputChangesAfter, []any{1}},
		"qRunEnd":            {qRunEnd, []any{1}},
	} {
		rows, err := st.SQL().QueryContext(ctx, "EXPLAIN QUERY PLAN "+q.sql, q.args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		aliases := aliasesOf(q.sql)
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
			if m := scan.FindStringSubmatch(detail); m != nil {
				table := m[1]
				if a, ok := aliases[table]; ok {
					table = a
				}
				if growing[table] {
					t.Errorf("%s scans %s, which grows with history", name, table)
				}
			}
			if strings.Contains(detail, "TEMP B-TREE") && name != "qTargets" {
				t.Errorf("%s sorts in a temporary b-tree: %s", name, detail)
			}
		}
		rows.Close()
		t.Logf("%s:\n  %s", name, strings.Join(plan, "\n  "))
	}
}

// aliasesOf maps the table aliases of a query ("FROM run_targets rt") to
// their tables.
func aliasesOf(q string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?i)(?:FROM|JOIN)\s+(\w+)\s+(?:AS\s+)?(\w+)`).FindAllStringSubmatch(q, -1) {
		if kw := strings.ToUpper(m[2]); kw != "ON" && kw != "WHERE" && kw != "JOIN" && kw != "GROUP" && kw != "ORDER" && kw != "LIMIT" {
			out[m[2]] = m[1]
		}
	}
	return out
}
