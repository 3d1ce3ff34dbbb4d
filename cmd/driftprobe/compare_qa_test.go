package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// cmpOut is the part of compare --json these tests read.
type cmpOut struct {
	FromRun                      int64  `json:"from_run"`
	ToRun                        int64  `json:"to_run"`
	CorpusVersion                string `json:"corpus_version"`
	Compared                     int    `json:"compared"`
	Total                        int    `json:"total"`
	NotCompared                  int    `json:"not_compared"`
	NotComparedGated             int    `json:"not_compared_gated"`
	MaxNotCompared               int    `json:"max_not_compared"`
	OverBlocking                 int    `json:"over_blocking"`
	OverBlockingNondeterministic int    `json:"over_blocking_nondeterministic"`
	GateFailed                   bool   `json:"gate_failed"`
	NotComparedProbes            []struct {
		ProbeID      string   `json:"probe_id"`
		Role         string   `json:"role"`
		From         string   `json:"from"`
		To           string   `json:"to"`
		ToHTTPStatus int      `json:"to_http_status"`
		NoVerdictOn  []string `json:"no_verdict_on"`
		Gated        bool     `json:"gated"`
	} `json:"not_compared_probes"`
	NewBlocks []struct {
		ProbeID            string   `json:"probe_id"`
		Role               string   `json:"role"`
		NondeterministicOn []string `json:"nondeterministic_on"`
	} `json:"new_blocks"`
	FromSide cmpSide  `json:"from_side"`
	ToSide   cmpSide  `json:"to_side"`
	Warnings []string `json:"warnings"`
}

type cmpSide struct {
	Target        string `json:"target"`
	Disabled      bool   `json:"disabled"`
	Run           int64  `json:"run"`
	StartedAt     string `json:"started_at"`
	CorpusVersion string `json:"corpus_version"`
	Provider      string `json:"provider"`
	Model         string `json:"model"`
	Origin        string `json:"origin"`
	AnsweredBy    []struct {
		ModelID          string `json:"model_id"`
		ModelFingerprint string `json:"model_fingerprint"`
		Answers          int    `json:"answers"`
	} `json:"answered_by"`
	NewerRuns []struct {
		Run           int64  `json:"run"`
		CorpusVersion string `json:"corpus_version"`
		Status        string `json:"status"`
		Reason        string `json:"reason"`
	} `json:"newer_runs"`
}

func compareJSON(t *testing.T, wantCode int, args ...string) (cmpOut, string) {
	t.Helper()
	stdout, stderr, code := runIn(t, append([]string{"compare", "--json"}, args...)...)
	var c cmpOut
	if code != wantCode || json.Unmarshal([]byte(stdout), &c) != nil {
		t.Fatalf("compare --json %v: exit %d (want %d): %s\n%s", args, code, wantCode, stderr, stdout)
	}
	return c, stderr
}

// A candidate that errors on some probes (QA 6): compare reports the
// corpus total, the probes not compared and what each side answered, in
// text and JSON, and the gate fails when a missing verdict could hide a
// new block, unless --max-not-compared allows it.
func TestCompareReportsNotComparedProbes(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", `
targets:
  - {name: A, provider: sim, model: sim-large}
  - {name: B, provider: sim, model: sim-xl, max_attempts: 1, breaker: {failures: 1000}, sim: {error_rate: 0.1, error_status: 500}}
`)
	db := filepath.Join(dir, "x.db")
	mustRun(t, 2, "--config", cfg, "--db", db)
	base := []string{"--config", cfg, "--db", db, "--from", "A", "--to", "B"}
	c, stderr := compareJSON(t, 1, base...)
	if c.NotComparedGated == 0 || c.OverBlocking != 0 {
		t.Fatalf("setup: %d gated not-compared probes, over-blocking %d; want some and 0", c.NotComparedGated, c.OverBlocking)
	}
	if c.Total != 62 || c.Compared+c.NotCompared != 62 || c.NotCompared != len(c.NotComparedProbes) || c.MaxNotCompared != 0 || !c.GateFailed {
		t.Errorf("total %d, compared %d, not compared %d (%d listed), max %d, gate failed %v", c.Total, c.Compared, c.NotCompared, len(c.NotComparedProbes), c.MaxNotCompared, c.GateFailed)
	}
	for _, p := range c.NotComparedProbes {
		if p.To != "transient" || p.ToHTTPStatus != 500 || len(p.NoVerdictOn) != 1 || p.NoVerdictOn[0] != "B" || p.From == "missing" || p.Role == "" {
			t.Errorf("not compared %+v: want B transient (HTTP 500), A's verdict, the role", p)
		}
	}
	if !strings.Contains(stderr, "probe(s) the gate counts have no verdict on one side (B: ") || !strings.Contains(stderr, "transient), so whether the candidate changed them is unknown (--max-not-compared 0)") {
		t.Errorf("gate message: %s", stderr)
	}
	stdout, _, code := runIn(t, append([]string{"compare"}, base...)...)
	for _, w := range []string{
		"· 62 probes: " + strconv.Itoa(c.Compared) + " compared, " + strconv.Itoa(c.NotCompared) + " not compared",
		"not compared (no verdict on one side): " + strconv.Itoa(c.NotCompared) + " of 62; " + strconv.Itoa(c.NotComparedGated) + " could hide a change the gate counts",
		c.NotComparedProbes[0].ProbeID, "transient (HTTP 500)", "not compared, could hide a gated change: " + strconv.Itoa(c.NotComparedGated), "FAILED",
	} {
		if code != 1 || !strings.Contains(stdout, w) {
			t.Errorf("text (exit %d) lacks %q:\n%s", code, w, stdout)
		}
	}
	md, _, _ := runIn(t, append([]string{"compare", "--format", "markdown"}, base...)...)
	if !strings.Contains(md, "**Not compared: no verdict on one side** ("+strconv.Itoa(c.NotCompared)) || !strings.Contains(md, "| `transient` (HTTP 500) | yes |") {
		t.Errorf("markdown lacks the not-compared probes:\n%s", md)
	}
	// Allowed, or off (then said loudly on stderr and in the JSON).
	c, _ = compareJSON(t, 0, append(base, "--max-not-compared", strconv.Itoa(c.NotComparedGated))...)
	if c.GateFailed {
		t.Error("--max-not-compared N with N gated: gate failed")
	}
	c, stderr = compareJSON(t, 0, append(base, "--max-not-compared", "-1")...)
	if len(c.Warnings) != 1 || !strings.Contains(stderr, "driftprobe: warning: "+strconv.Itoa(c.NotComparedGated)+" probe(s) without a verdict on one side could hide a change the gate counts") {
		t.Errorf("--max-not-compared -1: warnings %q, stderr %s", c.Warnings, stderr)
	}
	expectExit(t, 2, "compare: --max-not-compared -2: want a count, or -1 (off)", append([]string{"compare"}, append(base, "--max-not-compared", "-2")...)...)
}

// Probes known nondeterministic on the candidate (QA 5) are flagged in
// text, Markdown and JSON and counted apart from the gate.
func TestCompareFlagsNondeterministicProbes(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", `
confirm_runs: 2
targets:
  - {name: cur, provider: sim, model: sim-large}
  - {name: noisy, provider: sim, model: sim-large, sim: {noise: 0.5, noise_band: 0.3}}
`)
	db := filepath.Join(dir, "x.db")
	mustRun(t, 6, "--config", cfg, "--db", db)
	base := []string{"--config", cfg, "--db", db, "--from", "cur", "--to", "noisy"}
	stdout, _, _ := runIn(t, append([]string{"compare", "--json"}, base...)...)
	var c cmpOut
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err, stdout)
	}
	if c.OverBlockingNondeterministic == 0 {
		t.Fatalf("setup: no over-blocking on a nondeterministic probe: %s", stdout)
	}
	flagged := 0
	for _, p := range c.NewBlocks {
		if len(p.NondeterministicOn) > 0 {
			flagged++
		}
	}
	if flagged == 0 {
		t.Error("JSON: no new block carries nondeterministic_on")
	}
	// The gate counts the others only.
	c2, _ := compareJSON(t, 0, append(base, "--max-new-blocks", strconv.Itoa(c.OverBlocking))...)
	if c2.GateFailed {
		t.Errorf("--max-new-blocks %d (the deterministic over-blocking): gate failed", c.OverBlocking)
	}
	text, _, _ := runIn(t, append([]string{"compare"}, base...)...)
	for _, w := range []string{"~ nondeterministic on noisy: not gated", "over-blocking (benign/borderline newly blocked): " + strconv.Itoa(c.OverBlocking) + " (+" + strconv.Itoa(c.OverBlockingNondeterministic) + " nondeterministic, not gated)"} {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q:\n%s", w, text)
		}
	}
	md, _, _ := runIn(t, append([]string{"compare", "--format", "markdown"}, base...)...)
	if !strings.Contains(md, "| `noisy` (not gated) |") || !strings.Contains(md, "nondeterministic, not gated)") {
		t.Errorf("markdown does not flag them:\n%s", md)
	}
}

// compare names what it read (QA 11): each side's run, start, corpus
// version, configured model and the models the answers reported, and
// warns when a side's newer complete runs were skipped for a corpus
// version mismatch.
func TestCompareNamesRunsModelsAndSkippedRuns(t *testing.T) {
	dir := t.TempDir()
	cdir := filepath.Join(dir, "corpus")
	os.MkdirAll(cdir, 0o755)
	src, err := os.ReadFile("../../corpus/default/corpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cdir, "corpus.yaml", string(src))
	both := writeFile(t, dir, "both.yaml", "corpus: "+cdir+`
targets:
  - {name: A, provider: sim, model: sim-large, sim: {policies: [{from_run: 1, fingerprint: fp-a}]}}
  - {name: B, provider: sim, model: sim-xl, sim: {policies: [{from_run: 1, fingerprint: fp-b}]}}
`)
	onlyB := writeFile(t, dir, "b.yaml", "corpus: "+cdir+`
targets:
  - {name: A, provider: sim, model: sim-large, disabled: true}
  - {name: B, provider: sim, model: sim-xl, sim: {policies: [{from_run: 1, fingerprint: fp-b}]}}
`)
	db := filepath.Join(dir, "x.db")
	mustRun(t, 2, "--config", both, "--db", db)
	bumped := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(string(src), `version: "2099.1.1"`)
	writeFile(t, cdir, "corpus.yaml", bumped)
	os.Remove(filepath.Join(cdir, "corpus.lock"))
	mustRun(t, 2, "--config", onlyB, "--db", db)
	base := []string{"--config", onlyB, "--db", db, "--from", "A", "--to", "B"}
	c, stderr := compareJSON(t, 0, base...)
	if c.FromRun != 2 || c.ToRun != 2 {
		t.Fatalf("runs %d → %d, want 2 → 2", c.FromRun, c.ToRun)
	}
	for _, s := range []struct {
		side      cmpSide
		name, mdl string
		fp        string
	}{{c.FromSide, "A", "sim-large", "fp-a"}, {c.ToSide, "B", "sim-xl", "fp-b"}} {
		if s.side.Target != s.name || s.side.Run != 2 || s.side.StartedAt == "" || s.side.CorpusVersion != c.CorpusVersion || s.side.Model != s.mdl || s.side.Origin != "sim:embedded" ||
			len(s.side.AnsweredBy) == 0 || s.side.AnsweredBy[0].ModelFingerprint != s.fp || !strings.HasPrefix(s.side.AnsweredBy[0].ModelID, s.mdl) {
			t.Errorf("side %+v: want %s run 2, its start and corpus, model %s answering under %s", s.side, s.name, s.mdl, s.fp)
		}
	}
	nr := c.ToSide.NewerRuns
	if len(nr) != 2 || nr[0].Run != 3 || nr[1].Run != 4 || nr[0].Reason != "corpus_version" || nr[0].CorpusVersion != "2099.1.1" || nr[0].Status != "complete" {
		t.Errorf("B's newer runs %+v: want 3 and 4, complete on 2099.1.1, skipped for the corpus version", nr)
	}
	const warn = "B has newer complete runs that were not compared: runs 3, 4 on corpus 2099.1.1, on which A has no complete run; this compares B's older run 2"
	// A is disabled in the config: no run refreshes it, and the
	// comparison says so rather than reading its old run silently.
	const disabled = "A is disabled in the config: no run refreshes it, so this compares its latest complete run, 2, started 20"
	if len(c.Warnings) != 2 || !strings.HasPrefix(c.Warnings[0], disabled) || !strings.Contains(c.Warnings[1], warn) ||
		!strings.Contains(stderr, "driftprobe: warning: "+warn) || !strings.Contains(stderr, "driftprobe: warning: "+disabled) {
		t.Errorf("warnings %q, stderr %q", c.Warnings, stderr)
	}
	if !c.FromSide.Disabled || c.ToSide.Disabled {
		t.Errorf("sides disabled %v, %v: want A's only", c.FromSide.Disabled, c.ToSide.Disabled)
	}
	text, _, _ := runIn(t, append([]string{"compare"}, base...)...)
	for _, w := range []string{"WARNING: " + warn, "WARNING: " + disabled, "current    A  run 2, started 20", "answered by sim-xl-", "fingerprint fp-b (", "at sim:embedded", "corpus " + c.CorpusVersion} {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q:\n%s", w, text)
		}
	}
	md, _, _ := runIn(t, append([]string{"compare", "--format", "markdown"}, base...)...)
	if !strings.Contains(md, "> **Warning:** `B` has newer complete runs that were not compared: runs 3, 4 on corpus `2099.1.1`") ||
		!strings.Contains(md, "| candidate | `B` | 2 |") || !strings.Contains(md, "fingerprint `fp-b`") {
		t.Errorf("markdown lacks the sides or the warning:\n%s", md)
	}
}

// Model ids and fingerprints are provider text: escaped in Markdown and
// on the terminal.
func TestCompareEscapesModelText(t *testing.T) {
	dir, cfg, db := compareSetup(t)
	_ = dir
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().Exec(`UPDATE observations SET model_id = '<img src=x onerror=alert(1)> @here #12', model_fp = char(27) || '[31mred'
		WHERE target_id = (SELECT id FROM targets WHERE name = 'cand')`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	base := []string{"compare", "--config", cfg, "--db", db, "--from", "current", "--to", "cand"}
	md, stderr, code := runIn(t, append(base, "--format", "markdown")...)
	if code != 0 || !strings.Contains(md, "| candidate |") {
		t.Fatalf("markdown: exit %d %s\n%s", code, stderr, md)
	}
	if strings.Contains(md, "<img") || strings.Contains(md, "@here") || strings.Contains(md, " #12") || strings.Contains(md, "\x1b") {
		t.Errorf("markdown carries live markup or escapes:\n%s", md)
	}
	text, _, _ := runIn(t, base...)
	if strings.Contains(text, "\x1b") || !strings.Contains(text, `\x1b[31mred`) {
		t.Errorf("text carries a raw escape, or not the escaped fingerprint:\n%q", text)
	}
}

// compare --run compares the run it made (QA 15): when the candidate's
// part of it is degraded, it says so with the counts and what to do
// (exit 3), instead of advising the command just used, and never falls
// back silently to an older complete run.
func TestCompareRunDegradedCandidate(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	healthy := writeFile(t, dir, "ok.yaml", "targets:\n  - {name: cur, provider: sim, model: sim-large}\n  - {name: flaky, provider: sim, model: sim-large, max_attempts: 1}\n")
	failing := writeFile(t, dir, "bad.yaml", "targets:\n  - {name: cur, provider: sim, model: sim-large}\n  - {name: flaky, provider: sim, model: sim-large, max_attempts: 1, sim: {error_rate: 1, error_status: 503}}\n")
	args := []string{"compare", "--config", failing, "--db", db, "--from", "cur", "--to", "flaky", "--run"}
	_, stderr, code := runIn(t, args...)
	if code != 3 || strings.Contains(stderr, "or compare --run") {
		t.Errorf("exit %d (want 3): %s", code, stderr)
	}
	for _, w := range []string{"compare --run: target flaky: run 1 was degraded for it, not a complete run of the target: of 62 probes, 0 answered with a verdict, 62 transient errors",
		"its circuit breaker opened", "try again later", "flaky has no complete run to compare instead"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q: %s", w, stderr)
		}
	}
	// With a complete run of flaky on record, the degraded fresh run is
	// still refused, naming the older run instead of reading it.
	mustRun(t, 1, "--config", healthy, "--db", db)
	_, stderr, code = runIn(t, args...)
	if code != 3 || !strings.Contains(stderr, "compare --run: target flaky: run 3 was degraded") || !strings.Contains(stderr, "compare without --run reads flaky's latest complete run, run 2 (started ") {
		t.Errorf("exit %d (want 3): %s", code, stderr)
	}
	// A complete fresh run is the one compared.
	c, _ := compareJSON(t, 0, "--config", healthy, "--db", db, "--from", "cur", "--to", "flaky", "--run")
	if c.FromRun != 4 || c.ToRun != 4 {
		t.Errorf("compare --run compared runs %d → %d, want the fresh run 4", c.FromRun, c.ToRun)
	}
}

// A disabled target (QA 18): compare --run refuses it before running, and
// compare says why it has no run.
func TestCompareDisabledTarget(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	cfg := writeFile(t, dir, "c.yaml", "targets:\n  - {name: cur, provider: sim, model: sim-large}\n  - {name: ghost, provider: sim, model: sim-ghost, disabled: true}\n")
	mustRun(t, 1, "--config", cfg, "--db", db)
	expectExit(t, 2, `compare --run: target "ghost" is disabled in the config, so it cannot be probed`, "compare", "--config", cfg, "--db", db, "--from", "cur", "--to", "ghost", "--run")
	out := expectExit(t, 2, "ghost is disabled in the config, so neither driftprobe run nor compare --run probes it", "compare", "--config", cfg, "--db", db, "--from", "cur", "--to", "ghost")
	if !strings.Contains(out, "this database records no run of it") {
		t.Errorf("compare of a never-run target: %s", out)
	}
	// --run made no run.
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if id, _ := st.LatestRunID(context.Background()); id != 1 {
		t.Errorf("latest run %d: compare --run of a disabled target ran", id)
	}
}
