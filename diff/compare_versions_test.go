package diff_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/runner"
)

// compare warned once per corpus version a side's newer complete runs
// were on, uncapped: a long-lived database whose corpus was bumped every
// week floods the text, stderr and the Markdown meant for a PR comment
// with one warning per version. Past maxRunItems (ten) versions, the older
// ones are counted in one warning ("and N more", as runs are) and the
// latest latestRunItems (five) are warned about one each; the JSON keeps
// the count of every version (newer_corpus_versions) beside
// newer_runs_total. The newer runs are synthesized from the candidate's
// real run 3 (rows copied with new ids), each on a version of its own.
func TestCompareCorpusVersionWarningsCapped(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: cur, provider: sim, model: sim-large}
  - {name: cand, provider: sim, model: sim-xl}
`)
	e.Runs(2)
	e.Corpus = writeCorpus(t, func(s string) string { return editProbeLines(s, nil, "2026.12.9", nil) })
	cand := e.Target("cand")
	sub := *e.Config
	sub.Targets = []*config.Target{cand.Config}
	if _, err := app.RunOnce(context.Background(), &sub, e.Corpus, e.Store, []*runner.Target{cand}, app.RunOptions{Sleep: e.Sleep, SubsetRun: true, FullConfig: e.Config}); err != nil {
		t.Fatal(err)
	}
	db := e.Store.SQL()
	// setVersions gives cand's runs 4 to 3+n a corpus version each
	// (v4, v5, …), with run 3 on 2026.12.9: n+1 versions.
	setVersions := func(n int64) {
		t.Helper()
		if _, err := db.Exec(`DELETE FROM run_targets WHERE run_id > 3`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`DELETE FROM runs WHERE id > 3`); err != nil {
			t.Fatal(err)
		}
		for i := int64(4); i < 4+n; i++ {
			if _, err := db.Exec(`INSERT INTO runs (id, started_at, finished_at, status, corpus_name, corpus_version, corpus_hash, config_hash, host, version, note, pruned, detected)
				SELECT ?, started_at, finished_at, status, corpus_name, 'v' || ?, corpus_hash, config_hash, host, version, note, '', 1 FROM runs WHERE id = 3`, i, i); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO run_targets (run_id, target_id, status, observations, verdicts, transient, client_errors, unavailable, breaker_opened, requests, retries, requests_sha256, tokens_in, tokens_out, cost_usd, duration_ms, origin, model)
				SELECT ?, target_id, status, observations, verdicts, transient, client_errors, unavailable, breaker_opened, requests, retries, requests_sha256, tokens_in, tokens_out, cost_usd, duration_ms, origin, model FROM run_targets WHERE run_id = 3`, i); err != nil {
				t.Fatal(err)
			}
		}
	}
	compare := func() *diff.Comparison {
		t.Helper()
		c, err := diff.Compare(context.Background(), e.Store, e.Corpus, "cur", "cand", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if c.FromRun != 2 || c.ToRun != 2 {
			t.Fatalf("compared runs %d and %d, want 2 and 2", c.FromRun, c.ToRun)
		}
		return c
	}
	const one = "cand has newer complete runs that were not compared: run %d on corpus %s, on which cur has no complete run; this compares cand's older run 2 on corpus 2026.11.1 (run both on one corpus version, e.g. with compare --run, to compare the newest data)"

	// Ten versions: one warning each, as before.
	setVersions(9)
	c := compare()
	if len(c.Warnings) != 10 || c.Warnings[0] != fmt.Sprintf(one, 3, "2026.12.9") || c.Warnings[9] != fmt.Sprintf(one, 12, "v12") {
		t.Errorf("ten versions: warnings %q, want one per version", c.Warnings)
	}
	if c.ToSide.NewerCorpusVersions != 10 {
		t.Errorf("newer_corpus_versions %d, want 10", c.ToSide.NewerCorpusVersions)
	}

	// 300 versions: the latest five one warning each, the 295 older ones
	// counted in one.
	const n = 299
	setVersions(n)
	c = compare()
	if len(c.Warnings) != 6 {
		t.Fatalf("%d warnings for %d corpus versions, want 6 (the older ones counted in one, the latest five each):\n%s", len(c.Warnings), n+1, strings.Join(c.Warnings, "\n"))
	}
	const summary = "cand has newer complete runs that were not compared on 295 other corpus versions (before the latest five, named one by one), on which cur has no complete run: runs 3–297 on corpus 2026.12.9, v4, v5, v6, v7 and 290 more; this compares cand's older run 2 on corpus 2026.11.1 (run both on one corpus version, e.g. with compare --run, to compare the newest data)"
	if c.Warnings[0] != summary {
		t.Errorf("warning 0:\n%s\nwant\n%s", c.Warnings[0], summary)
	}
	for i, run := range []int{298, 299, 300, 301, 302} {
		if want := fmt.Sprintf(one, run, fmt.Sprintf("v%d", run)); c.Warnings[1+i] != want {
			t.Errorf("warning %d:\n%s\nwant\n%s", 1+i, c.Warnings[1+i], want)
		}
	}
	for _, w := range c.Warnings {
		if len(w) > 500 {
			t.Errorf("a warning of %d characters: %.200q", len(w), w)
		}
	}
	// The JSON counts every version and every run.
	if c.ToSide.NewerCorpusVersions != n+1 || c.ToSide.NewerRunsTotal != n+1 || len(c.ToSide.NewerRuns) != diff.MaxNewerRuns {
		t.Errorf("newer_corpus_versions %d, newer_runs_total %d, %d newer runs listed; want %d, %d, %d",
			c.ToSide.NewerCorpusVersions, c.ToSide.NewerRunsTotal, len(c.ToSide.NewerRuns), n+1, n+1, diff.MaxNewerRuns)
	}
	b, err := json.Marshal(c)
	if err != nil || !strings.Contains(string(b), fmt.Sprintf(`"newer_corpus_versions":%d`, n+1)) || !strings.Contains(string(b), `"newer_corpus_versions":0`) {
		t.Errorf("JSON lacks newer_corpus_versions on both sides (%v): %.300s", err, b)
	}
}

// Each side moved on to a corpus version of its own (the current target's
// latest runs are on one, the candidate's on another: two configurations
// sharing a database), while both have complete runs on an older version.
// compare reads that shared version, warning about each side's newer
// runs, instead of refusing with "no complete runs on the same corpus
// version", which was not so.
func TestCompareFallsBackToTheLatestSharedVersion(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: cur, provider: sim, model: sim-large}
  - {name: cand, provider: sim, model: sim-xl}
`)
	e.Runs(2) // both on 2026.11.1: runs 1 and 2
	subsetRun := func(name, version string) {
		t.Helper()
		e.Corpus = writeCorpus(t, func(s string) string { return editProbeLines(s, nil, version, nil) })
		tg := e.Target(name)
		sub := *e.Config
		sub.Targets = []*config.Target{tg.Config}
		if _, err := app.RunOnce(context.Background(), &sub, e.Corpus, e.Store, []*runner.Target{tg}, app.RunOptions{Sleep: e.Sleep, SubsetRun: true, FullConfig: e.Config}); err != nil {
			t.Fatal(err)
		}
	}
	subsetRun("cur", "2026.12.1")  // run 3
	subsetRun("cand", "2026.12.2") // run 4
	c, err := diff.Compare(context.Background(), e.Store, e.Corpus, "cur", "cand", 0, -1)
	if err != nil {
		t.Fatalf("compare: %v", err)
	}
	if c.FromRun != 2 || c.ToRun != 2 || c.CorpusVersion != "2026.11.1" {
		t.Errorf("compared runs %d and %d on %s, want 2 and 2 on 2026.11.1", c.FromRun, c.ToRun, c.CorpusVersion)
	}
	want := []string{
		"cur has newer complete runs that were not compared: run 3 on corpus 2026.12.1, on which cand has no complete run",
		"cand has newer complete runs that were not compared: run 4 on corpus 2026.12.2, on which cur has no complete run",
	}
	if len(c.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", c.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(c.Warnings[i], w) {
			t.Errorf("warning %d: %q, want it to start %q", i, c.Warnings[i], w)
		}
	}
	// The other way round too.
	r, err := diff.Compare(context.Background(), e.Store, e.Corpus, "cand", "cur", 0, -1)
	if err != nil || r.FromRun != 2 || r.ToRun != 2 {
		t.Errorf("cand → cur: %v, runs %v", err, r)
	}
	// No version in common at all is still refused, naming both latest.
	subsetRun("cur", "2026.12.3") // run 5
	if _, err := e.Store.SQL().Exec(`DELETE FROM run_targets WHERE run_id <= 2 AND target_id = (SELECT id FROM targets WHERE name = 'cand')`); err != nil {
		t.Fatal(err)
	}
	_, err = diff.Compare(context.Background(), e.Store, e.Corpus, "cur", "cand", 0, -1)
	if !errors.Is(err, diff.ErrNoCompleteRun) || !strings.Contains(err.Error(), "cur's latest is on 2026.12.3, cand's on 2026.12.2") {
		t.Errorf("no shared version: %v", err)
	}
}
