package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `plan` reports, without sending or opening the database, the
// requests_sha256 a run then reports, per target, and the run's bounds.
func TestPlanMatchesRun(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(`
targets:
  - {name: sim-a, provider: sim, model: sim-large}
  - {name: sim-b, provider: sim, model: sim-small, max_tokens: 32, seed: 7, rate_limit_rpm: 6000, price: {input_per_mtok: 1, output_per_mtok: 4}}
`), 0o644)
	db := filepath.Join(dir, "d.db")
	stdout, stderr, code := runIn(t, "plan", "--json", "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("plan exit %d: %s", code, stderr)
	}
	var plan planOutput
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, stdout)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("plan created the database: %v", err)
	}
	if len(plan.Targets) != 2 || plan.CorpusVersion == "" || plan.CorpusHash == "" {
		t.Fatalf("plan: %+v", plan)
	}
	b := plan.Targets[1]
	// Ceilings: 62 probes × 3 samples (1 + screen_samples 2) × 3 attempts,
	// each at 32 output tokens; the usual run: 62 requests, whose rate
	// limit (100/s, the first at once) allows no less than 0.61s.
	if b.Target != "sim-b" || b.Probes != 62 || b.RenderErrors != 0 || b.RequestBytes == 0 || b.MaxRequests != 62*3*3 ||
		b.MaxSamplesPerProbe != 3 || b.MaxAttempts != 3 || b.MaxTokens != 32 ||
		b.MinDurationSec != 0.61 || b.MaxOutputToks != 62*3*3*32 || b.MaxOutputUSD != float64(62*3*3*32)*4/1e6 ||
		b.LikelyRequests != 62 || b.LikelyMaxOutputToks != 62*32 || b.LikelyMaxOutputUSD != float64(62*32)*4/1e6 || b.ProbeRequests != nil {
		t.Errorf("sim-b plan: %+v", b)
	}
	stdout, stderr, code = runIn(t, "run", "--json", "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	var run runOut
	if err := json.Unmarshal([]byte(stdout), &run); err != nil {
		t.Fatal(err)
	}
	// One name for the corpus hash in both contracts.
	var hashes struct {
		Plan string `json:"corpus_sha256"`
	}
	var runHash struct {
		Run string `json:"corpus_sha256"`
	}
	planOut, _, _ := runIn(t, "plan", "--json", "--config", cfg)
	json.Unmarshal([]byte(planOut), &hashes)
	json.Unmarshal([]byte(stdout), &runHash)
	if hashes.Plan == "" || hashes.Plan != runHash.Run || hashes.Plan != plan.CorpusHash {
		t.Errorf("plan corpus_sha256 %q, run's %q, plan corpus_hash %q", hashes.Plan, runHash.Run, plan.CorpusHash)
	}
	for i, rt := range run.Targets {
		if rt.Target != plan.Targets[i].Target || rt.RequestsSHA256 != plan.Targets[i].RequestsSHA256 {
			t.Errorf("%s: run requests_sha256 %s, plan said %s", rt.Target, rt.RequestsSHA256, plan.Targets[i].RequestsSHA256)
		}
	}
	// The table names every target and its fingerprint.
	text, _, code := runIn(t, "plan", "--config", cfg, "--db", db)
	if code != 0 || !strings.Contains(text, "sim-a") || !strings.Contains(text, plan.Targets[0].RequestsSHA256) || !strings.Contains(text, "610ms") {
		t.Errorf("plan table (exit %d):\n%s", code, text)
	}
}

// `plan --no-keys` renders without the keys (rendering never uses them):
// the fingerprints are the ones a keyed plan, and so a keyed run, reports.
func TestPlanWithoutKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(`
targets:
  - {name: oa, provider: openai, model: gpt-4o-mini, api_key_env: DRIFTPROBE_TEST_PLAN_KEY}
  - {name: an, provider: anthropic, model: claude-x, api_key_env: DRIFTPROBE_TEST_PLAN_KEY}
`), 0o644)
	plan := func(args ...string) planOutput {
		t.Helper()
		stdout, stderr, code := runIn(t, append([]string{"plan", "--json", "--config", cfg}, args...)...)
		if code != 0 {
			t.Fatalf("plan %v: exit %d: %s", args, code, stderr)
		}
		var p planOutput
		if err := json.Unmarshal([]byte(stdout), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("DRIFTPROBE_TEST_PLAN_KEY", "") // set but empty: no key
	if _, _, code := runIn(t, "plan", "--config", cfg); code != 2 {
		t.Errorf("plan without the key and without --no-keys: exit %d, want 2", code)
	}
	bare := plan("--no-keys")
	t.Setenv("DRIFTPROBE_TEST_PLAN_KEY", "sk-test-0123456789abcdef")
	keyed := plan()
	for i := range bare.Targets {
		if bare.Targets[i].RequestsSHA256 != keyed.Targets[i].RequestsSHA256 || bare.Targets[i].RenderErrors != 0 {
			t.Errorf("%s: without keys %+v, with %+v", bare.Targets[i].Target, bare.Targets[i], keyed.Targets[i])
		}
	}
}

// A classification endpoint (OpenAI or Mistral moderation, a Bedrock
// guardrail) generates no output: its requests carry no max_tokens and
// nothing is billed as output, so plan counts no output tokens or output
// cost for it, whatever max_tokens and the output price say. A chat
// endpoint of the same provider still counts them.
func TestPlanCountsNoOutputForClassifiers(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plan.yaml")
	os.WriteFile(cfg, []byte(`
targets:
  - {name: mod, provider: openai, endpoint: moderation, model: omni-moderation-latest, api_key_env: OPENAI_API_KEY, price: {input_per_mtok: 2.5, output_per_mtok: 10}}
  - {name: chat, provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY, price: {input_per_mtok: 2.5, output_per_mtok: 10}}
  - {name: mis, provider: mistral, model: mistral-moderation-latest, api_key_env: MISTRAL_API_KEY, price: {output_per_mtok: 10}}
  - {name: gr, provider: bedrock, endpoint: guardrail, model: guardrail, options: {region: us-east-1, guardrail_id: abc123, guardrail_version: "1"}, price: {output_per_mtok: 10}}
`), 0o644)
	stdout, stderr, code := runIn(t, "plan", "--json", "--no-keys", "--config", cfg)
	var plan planOutput
	if code != 0 || json.Unmarshal([]byte(stdout), &plan) != nil || len(plan.Targets) != 4 {
		t.Fatalf("plan: exit %d %s\n%s", code, stderr, stdout)
	}
	for _, p := range plan.Targets {
		if p.Target == "chat" {
			if !p.GeneratesOutput || p.LikelyMaxOutputToks != 62*p.MaxTokens || p.LikelyMaxOutputToks == 0 || p.MaxOutputUSD == 0 {
				t.Errorf("chat: %+v", p)
			}
			continue
		}
		if p.GeneratesOutput || p.LikelyMaxOutputToks != 0 || p.MaxOutputToks != 0 || p.LikelyMaxOutputUSD != 0 || p.MaxOutputUSD != 0 || p.LikelyRequests != 62 {
			t.Errorf("%s (%s): output counted for an endpoint that generates none: %+v", p.Target, p.Provider, p)
		}
	}
	text, stderr, code := runIn(t, "plan", "--no-keys", "--config", cfg)
	if code != 0 {
		t.Fatalf("plan: exit %d %s", code, stderr)
	}
	seen := false
	for _, l := range strings.Split(text, "\n") {
		seen = seen || strings.HasPrefix(l, "mod ")
		// OUTPUT TOKENS, MAX OUTPUT TOKENS, OUTPUT COST, MAX OUTPUT COST.
		if f := strings.Fields(l); len(f) == 15 && f[0] == "mod" && strings.Join(f[10:14], " ") != "0 0 $0.0000 $0.0000" {
			t.Errorf("text line of the moderation target counts output: %q", l)
		}
	}
	if !seen {
		t.Errorf("no line of the moderation target:\n%s", text)
	}
}
