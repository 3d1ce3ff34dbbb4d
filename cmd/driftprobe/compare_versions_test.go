package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// compare on a long-lived database whose candidate ran on many corpus
// versions the current target never ran: the text, stderr (with --json)
// and the Markdown carry six version warnings (the older versions counted
// in one, the latest five one each), not one per version; the JSON counts
// every version (newer_corpus_versions) and every run (newer_runs_total).
func TestCompareManyCorpusVersionsBounded(t *testing.T) {
	_, cfg, db := compareSetup(t)
	const n = 30
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(2); i < 2+n; i++ {
		if _, err := st.SQL().Exec(`INSERT INTO runs (id, started_at, finished_at, status, corpus_name, corpus_version, corpus_hash, config_hash, host, version, note, pruned, detected)
			SELECT ?, started_at, finished_at, status, corpus_name, 'v' || ?, corpus_hash, config_hash, host, version, note, '', 1 FROM runs WHERE id = 1`, i, i); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SQL().Exec(`INSERT INTO run_targets (run_id, target_id, status, observations, verdicts, transient, client_errors, unavailable, breaker_opened, requests, retries, requests_sha256, tokens_in, tokens_out, cost_usd, duration_ms, origin, model)
			SELECT ?, target_id, status, observations, verdicts, transient, client_errors, unavailable, breaker_opened, requests, retries, requests_sha256, tokens_in, tokens_out, cost_usd, duration_ms, origin, model
			FROM run_targets WHERE run_id = 1 AND target_id = (SELECT id FROM targets WHERE name = 'cand')`, i); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	base := []string{"compare", "--config", cfg, "--db", db, "--from", "current", "--to", "cand"}
	stdout, stderr, code := runIn(t, append(base, "--json")...)
	var c struct {
		FromRun  int64    `json:"from_run"`
		ToRun    int64    `json:"to_run"`
		Warnings []string `json:"warnings"`
		ToSide   struct {
			NewerRunsTotal      int `json:"newer_runs_total"`
			NewerCorpusVersions int `json:"newer_corpus_versions"`
		} `json:"to_side"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &c) != nil || c.FromRun != 1 || c.ToRun != 1 {
		t.Fatalf("compare --json: exit %d: %s\n%.500s", code, stderr, stdout)
	}
	if c.ToSide.NewerCorpusVersions != n || c.ToSide.NewerRunsTotal != n {
		t.Errorf("newer_corpus_versions %d, newer_runs_total %d; want %d and %d", c.ToSide.NewerCorpusVersions, c.ToSide.NewerRunsTotal, n, n)
	}
	if len(c.Warnings) != 6 || !strings.Contains(c.Warnings[0], "on 25 other corpus versions (before the latest five, named one by one)") ||
		!strings.Contains(c.Warnings[0], "runs 2–26 on corpus v2, v3, v4, v5, v6 and 20 more") || !strings.Contains(c.Warnings[5], "run 31 on corpus v31") {
		t.Errorf("JSON warnings %q", c.Warnings)
	}
	if got := strings.Count(stderr, "driftprobe: warning: "); got != 6 {
		t.Errorf("%d warnings on stderr, want 6:\n%s", got, stderr)
	}
	text, _, _ := runIn(t, base...)
	if got := strings.Count(text, "WARNING: "); got != 6 {
		t.Errorf("%d warnings in the text, want 6:\n%s", got, text)
	}
	md, _, _ := runIn(t, append(base, "--format", "markdown")...)
	if got := strings.Count(md, "> **Warning:** "); got != 6 || !strings.Contains(md, "`v2`, `v3`, `v4`, `v5`, `v6` and 20 more") {
		t.Errorf("%d warnings in the Markdown, want 6:\n%s", got, md)
	}
}
