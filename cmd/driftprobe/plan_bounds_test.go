package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// worstCase is a config whose runs take every kind of extra request plan
// must bound: screening samples while baselines are established and
// after a policy change (run 3 moves most verdicts), confirm_samples on
// new bytes, retries (the sim fails the first two attempts of each
// request), all with breakers that never open. max_tokens is above the
// most the sim ever reports for one answer (it does not cap completions
// at max_tokens), and input is free, so cost_usd is output cost only.
const worstCase = `
confirm_runs: 2
targets:
  - name: screened
    provider: sim
    model: sim-large
    max_tokens: 128
    max_attempts: 1
    price: {input_per_mtok: 0, output_per_mtok: 10}
    sim: &policy
      policies:
        - {from_run: 1, thresholds: {violence: 0.5, hate: 0.5, harassment: 0.5, self_harm: 0.5}}
        - {from_run: 3, thresholds: {violence: 0.05, hate: 0.05, harassment: 0.05, self_harm: 0.05, illicit: 0.05}}
  - name: confirming
    provider: sim
    model: sim-large
    max_tokens: 128
    max_attempts: 1
    confirm_samples: 3
    price: {input_per_mtok: 0, output_per_mtok: 10}
    sim: *policy
  - name: retried
    provider: sim
    model: sim-small
    max_tokens: 128
    rate_limit_rpm: 60000
    breaker: {failures: 100000}
    price: {input_per_mtok: 0, output_per_mtok: 4}
    sim:
      error_status: 503
      fail_first: 2
      policies:
        - {from_run: 1, thresholds: {violence: 0.5, hate: 0.5, harassment: 0.5, self_harm: 0.5}}
        - {from_run: 3, thresholds: {violence: 0.05, hate: 0.05, harassment: 0.05, self_harm: 0.05, illicit: 0.05}}
`

// plan's ceilings are upper bounds on what real runs send and are billed
// (requests, output tokens, output cost), its likely requests and min
// duration lower bounds, in a worst case: screening on, confirm_samples,
// retries on every request, a policy change making probes differ from
// their baselines. Where a run samples every probe without retries, it
// reaches the request ceiling exactly: the samples factor is the
// runner's true maximum, not a guess.
func TestPlanCeilingsHoldInWorstCase(t *testing.T) {
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "d.db")
	if err := os.WriteFile(cfg, []byte(worstCase), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runIn(t, "plan", "--json", "--config", cfg)
	if code != 0 {
		t.Fatalf("plan exit %d: %s", code, stderr)
	}
	var plan planOutput
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, stdout)
	}
	plans := map[string]planTarget{}
	for _, p := range plan.Targets {
		plans[p.Target] = p
	}

	ctx := context.Background()
	sess, targets := openRunSession(t, cfg, db)
	// Waits (backoff, Retry-After, the rate limit's pacing) are not
	// slept: they advance a virtual clock, which the runs also read, so
	// each target's duration includes them and is checked against plan's
	// min_duration_sec without the test waiting them out.
	var slept atomic.Int64
	noSleep := func(ctx context.Context, d time.Duration) error {
		slept.Add(int64(d))
		return ctx.Err()
	}
	now := func() time.Time { return time.Now().Add(time.Duration(slept.Load())) }
	reached := map[string]bool{}
	for run := 1; run <= 4; run++ {
		res, err := app.RunOnce(ctx, sess.Config, sess.Corpus, sess.Store, targets, app.RunOptions{Sleep: noSleep, Now: now})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		durations := map[string]time.Duration{}
		for _, s := range res.Summary.Targets {
			durations[s.Target] = s.Duration
		}
		for _, rt := range res.JSON().Targets {
			p := plans[rt.Target]
			t.Logf("run %d %s: %d requests (likely %d, max %d), %d output tokens (max %d), $%.4f (max $%.4f), %s", run, rt.Target,
				rt.Requests, p.LikelyRequests, p.MaxRequests, rt.TokensOut, p.MaxOutputToks, rt.CostUSD, p.MaxOutputUSD, durations[rt.Target])
			if rt.Requests > p.MaxRequests || rt.Requests < p.LikelyRequests {
				t.Errorf("run %d %s: %d requests, plan said %d to %d", run, rt.Target, rt.Requests, p.LikelyRequests, p.MaxRequests)
			}
			if rt.TokensOut > p.MaxOutputToks {
				t.Errorf("run %d %s: %d output tokens, plan's ceiling %d", run, rt.Target, rt.TokensOut, p.MaxOutputToks)
			}
			if rt.CostUSD > p.MaxOutputUSD*(1+1e-9) {
				t.Errorf("run %d %s: cost $%v, plan's ceiling $%v", run, rt.Target, rt.CostUSD, p.MaxOutputUSD)
			}
			if d := durations[rt.Target].Seconds(); p.RateLimitRPM > 0 && d < p.MinDurationSec {
				t.Errorf("run %d %s: took %.3fs, plan's min_duration_sec %.3f", run, rt.Target, d, p.MinDurationSec)
			}
			reached[rt.Target] = reached[rt.Target] || rt.Requests == p.MaxRequests
			// What plan used to promise: probes × max_attempts requests,
			// probes × max_tokens output tokens.
			if rt.Requests > p.Probes*p.MaxAttempts || rt.TokensOut > p.Probes*p.MaxTokens {
				reached["old ceiling exceeded"] = true
			}
		}
	}
	for _, name := range []string{"screened", "confirming"} {
		if !reached[name] {
			t.Errorf("%s: no run reached max_requests %d: the worst case was not exercised, or the ceiling is loose", name, plans[name].MaxRequests)
		}
	}
	if !reached["old ceiling exceeded"] {
		t.Error("no run exceeded probes × max_attempts requests or probes × max_tokens output tokens: not a worst case")
	}
}

// aggregate is requests_sha256 recomputed from per-probe entries.
func aggregate(ps []planProbe) string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.ProbeID + ":" + p.RequestSHA256 + "\n"
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// `plan --probes` lists every probe's request: id, request_sha256 (short
// in the table, whole in JSON, where it is only with --probes), body
// bytes. The entries are what requests_sha256 is made of and what a run
// records for each probe; plan still opens no database and sends nothing.
func TestPlanProbes(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "plan must not send", http.StatusTeapot)
	}))
	defer srv.Close()
	t.Setenv("DRIFTPROBE_TEST_PLAN_PROBES_KEY", "sk-test-0123456789abcdef")
	dir := t.TempDir()
	simTarget := `  - {name: sim-a, provider: sim, model: sim-large, max_tokens: 48, seed: 3}` + "\n"
	cfg, simCfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "sim.yaml"), filepath.Join(dir, "d.db")
	os.WriteFile(cfg, []byte("targets:\n"+simTarget+
		"  - {name: oa, provider: openai, model: gpt-4o-mini, api_key_env: DRIFTPROBE_TEST_PLAN_PROBES_KEY, base_url: "+srv.URL+"/v1}\n"), 0o644)
	os.WriteFile(simCfg, []byte("targets:\n"+simTarget), 0o644)

	stdout, stderr, code := runIn(t, "plan", "--probes", "--json", "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("plan --probes exit %d: %s", code, stderr)
	}
	var plan planOutput
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, stdout)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plan --probes created the database: %v", err)
	}
	cp, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Targets) != 2 {
		t.Fatalf("targets: %+v", plan.Targets)
	}
	for _, pt := range plan.Targets {
		if len(pt.ProbeRequests) != len(cp.Probes) || pt.Probes != len(cp.Probes) {
			t.Fatalf("%s: %d probe entries, corpus has %d", pt.Target, len(pt.ProbeRequests), len(cp.Probes))
		}
		bytes := 0
		for i, p := range pt.ProbeRequests {
			if p.ProbeID != cp.Probes[i].ID || p.ProbeSHA256 != cp.Probes[i].SHA256 || len(p.RequestSHA256) != 64 || p.BodyBytes == 0 || p.RenderError != "" {
				t.Errorf("%s: entry %d: %+v, probe %s %s", pt.Target, i, p, cp.Probes[i].ID, cp.Probes[i].SHA256)
			}
			bytes += p.BodyBytes
		}
		if got := aggregate(pt.ProbeRequests); got != pt.RequestsSHA256 || bytes != pt.RequestBytes {
			t.Errorf("%s: entries hash to %s over %d bytes; requests_sha256 %s, request_bytes %d", pt.Target, got, bytes, pt.RequestsSHA256, pt.RequestBytes)
		}
	}
	if a, b := plan.Targets[0].ProbeRequests[0], plan.Targets[1].ProbeRequests[0]; a.ProbeSHA256 != b.ProbeSHA256 || a.RequestSHA256 == b.RequestSHA256 {
		t.Errorf("one probe on two targets: %+v and %+v", a, b)
	}

	// Without --probes the JSON stays small.
	small, _, code := runIn(t, "plan", "--json", "--config", cfg, "--db", db)
	if code != 0 || strings.Contains(small, "probe_requests") || strings.Contains(small, plan.Targets[0].ProbeRequests[0].RequestSHA256) {
		t.Errorf("plan --json without --probes (exit %d) lists probes:\n%s", code, small)
	}
	// The table: one line per probe, its fingerprint short.
	text, _, code := runIn(t, "plan", "--probes", "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("plan --probes exit %d", code)
	}
	for _, pt := range plan.Targets {
		for _, p := range pt.ProbeRequests {
			line := fmt.Sprintf("%s  %s  %d", p.ProbeID, p.RequestSHA256[:12], p.BodyBytes)
			if !strings.Contains(strings.Join(strings.Fields(text), "  "), line) || strings.Contains(text, p.RequestSHA256) {
				t.Errorf("%s: no line %q with a short fingerprint in:\n%s", pt.Target, line, text)
				break
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("plan sent %d requests", n)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plan created the database: %v", err)
	}

	// A run records, for every probe, the request_sha256 plan listed.
	mustRun(t, 1, "--config", simCfg, "--db", db)
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.SQL().QueryContext(context.Background(), `SELECT probe_id, request_sha256 FROM observations WHERE sample = 0`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	recorded := map[string]string{}
	for rows.Next() {
		var id, sha string
		if err := rows.Scan(&id, &sha); err != nil {
			t.Fatal(err)
		}
		recorded[id] = sha
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(recorded) != len(cp.Probes) {
		t.Errorf("run recorded %d probes, want %d", len(recorded), len(cp.Probes))
	}
	for _, p := range plan.Targets[0].ProbeRequests {
		if recorded[p.ProbeID] != p.RequestSHA256 {
			t.Errorf("%s: run recorded %s, plan listed %s", p.ProbeID, recorded[p.ProbeID], p.RequestSHA256)
		}
	}
}

// failingProber renders like its inner prober, except the probe named
// bad, which it cannot express.
type failingProber struct {
	probes.Prober
	bad string
}

func (f failingProber) Render(p probes.Probe) (*probes.Request, error) {
	if p.ID == f.bad {
		return nil, fmt.Errorf("probe %s: unsupported role %q", p.ID, "tool")
	}
	return f.Prober.Render(p)
}

// A probe the target cannot render sends nothing: plan counts it out of
// every request figure and lists it with its error and the
// "render-error" fingerprint a run records (and requests_sha256 covers).
func TestPlanRenderError(t *testing.T) {
	cfg, err := config.Parse("c.yaml", []byte("targets:\n  - {name: s, provider: sim, model: m, max_tokens: 10, confirm_samples: 4, price: {output_per_mtok: 1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	targets, closeT, err := app.BuildRenderTargets(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT()
	bad := cp.Probes[5].ID
	tg := &runner.Target{Config: targets[0].Config, Prober: failingProber{targets[0].Prober, bad}}
	pt := planFor(cfg, tg.Config, runner.Plan(cp, tg), true)
	n := len(cp.Probes)
	if pt.RenderErrors != 1 || pt.LikelyRequests != n-1 || pt.MaxSamplesPerProbe != 5 || pt.MaxRequests != (n-1)*5*3 ||
		pt.MaxOutputToks != (n-1)*5*3*10 || pt.LikelyMaxOutputToks != (n-1)*10 {
		t.Errorf("plan: %+v", pt)
	}
	e := pt.ProbeRequests[5]
	if e.ProbeID != bad || e.RequestSHA256 != storage.RenderError || e.BodyBytes != 0 || !strings.Contains(e.RenderError, "unsupported role") {
		t.Errorf("render error entry: %+v", e)
	}
	if aggregate(pt.ProbeRequests) != pt.RequestsSHA256 {
		t.Errorf("requests_sha256 %s does not cover the entries", pt.RequestsSHA256)
	}
	var b strings.Builder
	if err := writePlan(&b, cp.Name, cp.Version, n, cp.Hash, []planTarget{pt}, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), bad) || !strings.Contains(b.String(), "render-error") || !strings.Contains(b.String(), `unsupported role "tool"`) {
		t.Errorf("table:\n%s", b.String())
	}
}

// min_duration_sec is a lower bound: the rate limiter lets the first
// request through at once, so n requests need n-1 intervals, not n (two
// probes at 600 rpm: 0.1s, where n/rate said 0.2s, more than a run takes).
func TestPlanMinDurationIsALowerBound(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "corpus"), 0o755)
	os.WriteFile(filepath.Join(dir, "corpus", "corpus.yaml"), []byte(`name: two
version: "1"
probes:
  - {id: a, prompt: "What is the capital of France?", tags: [], expect: allow, role: benign_control}
  - {id: b, prompt: "Name three primary colours.", tags: [], expect: allow, role: benign_control}
`), 0o644)
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "d.db")
	os.WriteFile(cfg, []byte("corpus: "+filepath.Join(dir, "corpus")+"\ntargets:\n  - {name: s, provider: sim, model: m, rate_limit_rpm: 600}\n"), 0o644)
	stdout, stderr, code := runIn(t, "plan", "--json", "--config", cfg)
	if code != 0 {
		t.Fatalf("plan exit %d: %s", code, stderr)
	}
	var plan planOutput
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatal(err)
	}
	p := plan.Targets[0]
	if p.LikelyRequests != 2 || p.MinDurationSec != 0.1 {
		t.Fatalf("plan: likely %d requests, min %vs; want 2, 0.1s", p.LikelyRequests, p.MinDurationSec)
	}
	stdout, stderr, code = runIn(t, "run", "--json", "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	var run struct {
		Duration float64 `json:"duration_seconds"`
		Targets  []struct {
			Requests int `json:"requests"`
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(stdout), &run); err != nil {
		t.Fatal(err)
	}
	if run.Targets[0].Requests < p.LikelyRequests || run.Duration < p.MinDurationSec {
		t.Errorf("run: %d requests in %.3fs; plan's least: %d in %vs", run.Targets[0].Requests, run.Duration, p.LikelyRequests, p.MinDurationSec)
	}
}
