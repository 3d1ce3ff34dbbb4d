package diff_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/runner"
)

// QA (scale): compare's warnings list every newer run of a side by id. A
// candidate evaluated on an older corpus version, compared after months of
// hourly runs of the current target on the new version, or a target whose
// runs have been degraded for weeks, gets one warning line naming thousands
// of runs: a year of hourly runs is ~8,760 ids, and the Markdown meant for a
// PR comment passes GitHub's 65,536-character comment limit. The newer runs
// here are synthesized (rows copied from the candidate's real run 3 with
// new ids), 2,000 of them: about 12 weeks of hourly runs. The warnings
// name runs that follow one another as a range, and past a few items
// count them and name the latest; the JSON lists the latest MaxNewerRuns
// with the total beside them.
func TestQAScaleCompareWarningsBounded(t *testing.T) {
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
	const n = 2000
	db := e.Store.SQL()
	for i := int64(4); i < 4+n; i++ {
		if _, err := db.Exec(`INSERT INTO runs (id, started_at, finished_at, status, corpus_name, corpus_version, corpus_hash, config_hash, host, version, note, pruned, detected)
			SELECT ?, started_at, finished_at, status, corpus_name, corpus_version, corpus_hash, config_hash, host, version, note, '', 1 FROM runs WHERE id = 3`, i); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO run_targets (run_id, target_id, status, observations, verdicts, transient, client_errors, unavailable, breaker_opened, requests, retries, requests_sha256, tokens_in, tokens_out, cost_usd, duration_ms, origin, model)
			SELECT ?, target_id, status, observations, verdicts, transient, client_errors, unavailable, breaker_opened, requests, retries, requests_sha256, tokens_in, tokens_out, cost_usd, duration_ms, origin, model FROM run_targets WHERE run_id = 3`, i); err != nil {
			t.Fatal(err)
		}
	}
	// bounded checks what a comparison says of cand's newer runs: every
	// warning short, JSON newer_runs capped at the latest MaxNewerRuns
	// with the total beside them, and each warning holding want.
	bounded := func(want ...string) {
		t.Helper()
		c, err := diff.Compare(context.Background(), e.Store, e.Corpus, "cur", "cand", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		nr := c.ToSide.NewerRuns
		if c.ToSide.NewerRunsTotal != n+1 || len(nr) != diff.MaxNewerRuns || nr[0].Run != n+3-diff.MaxNewerRuns+1 || nr[len(nr)-1].Run != n+3 {
			t.Errorf("cand's newer runs: %d listed (%d to %d), total %d; want the latest %d (%d to %d) of %d",
				len(nr), nr[0].Run, nr[len(nr)-1].Run, c.ToSide.NewerRunsTotal, diff.MaxNewerRuns, n+3-diff.MaxNewerRuns+1, n+3, n+1)
		}
		if c.FromSide.NewerRunsTotal != 0 || len(c.FromSide.NewerRuns) != 0 {
			t.Errorf("cur's newer runs: %+v (total %d), want none", c.FromSide.NewerRuns, c.FromSide.NewerRunsTotal)
		}
		b, err := json.Marshal(c)
		if err != nil || !strings.Contains(string(b), fmt.Sprintf(`"newer_runs_total":%d`, n+1)) || len(b) > 64<<10 {
			t.Errorf("JSON: %d bytes, %v", len(b), err)
		}
		total := 0
		for _, w := range c.Warnings {
			total += len(w)
			if len(w) > 500 {
				t.Errorf("a warning of %d characters (%d newer runs; the first 200: %.200q)", len(w), n+1, w)
			}
		}
		if len(c.Warnings) != len(want) {
			t.Fatalf("warnings %q, want %d", c.Warnings, len(want))
		}
		for i, w := range want {
			if !strings.Contains(c.Warnings[i], w) {
				t.Errorf("warning %d:\n%s\nwant …%s…", i, c.Warnings[i], w)
			}
		}
		t.Logf("%d warnings, %d characters in all: %q", len(c.Warnings), total, c.Warnings)
	}
	// Every newer run complete on the other corpus version: one range.
	bounded("cand has newer complete runs that were not compared: runs 3–2003 on corpus 2026.12.9, on which cur has no complete run; this compares cand's older run 2 on corpus 2026.11.1")
	// Every other one degraded: no two runs of a kind follow one another,
	// so nothing collapses into a range; counts and the latest few.
	if _, err := db.Exec(`UPDATE run_targets SET status = 'degraded' WHERE run_id >= 4 AND run_id % 2 = 0`); err != nil {
		t.Fatal(err)
	}
	bounded("cand has newer complete runs that were not compared: 1001 runs between 3 and 2003 (the latest: 1995, 1997, 1999, 2001, 2003) on corpus 2026.12.9",
		"cand's 1000 newer runs between 4 and 2002 (1000 degraded; the latest: 1994 (degraded), 1996 (degraded), 1998 (degraded), 2000 (degraded), 2002 (degraded)) did not answer the whole corpus and were not compared; this compares its run 2")
}
