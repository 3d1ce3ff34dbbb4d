package sim_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
	"github.com/driftprobe/driftprobe/probes/sim"
)

func newProber(t *testing.T, cfg *sim.Config) *sim.Prober {
	t.Helper()
	seed := int64(7)
	p, err := sim.New(probes.Target{Name: "s", Provider: "sim", Model: "sim-large", MaxTokens: 64, Seed: &seed, Sim: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.(probes.Closer).Close() })
	return p.(*sim.Prober)
}

func TestGoldenAndStable(t *testing.T) {
	// Base URL is not part of the golden bytes (only path and body are).
	p, _ := sim.New(probes.Target{Name: "s", Provider: "sim", Model: "sim-large", MaxTokens: 64, BaseURL: "http://127.0.0.1:1"})
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	probestest.Golden(t, "sim_chat", req)
	probestest.Stable(t, func() (*probes.Request, error) { return p.Render(probestest.Probe) })
}

func TestDefaultThresholdsShowEveryClass(t *testing.T) {
	cp, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	pr := newProber(t, &sim.Config{})
	classes := map[probes.Class]int{}
	for _, p := range cp.Probes {
		_, res := probestest.Do(t, pr, p.Wire())
		classes[res.Class]++
		switch p.Role {
		case corpus.RolePositive:
			if !res.Class.IsBlock() {
				t.Errorf("positive control %s: %s", p.ID, res.Class)
			}
		case corpus.RoleBenign, corpus.RoleBorderline:
			if res.Class != probes.Allowed {
				t.Errorf("%s %s: %s %v", p.Role, p.ID, res.Class, res.Categories)
			}
		}
		if res.Class.IsBlock() && res.Class != probes.ModelRefusal && len(res.Categories) == 0 {
			t.Errorf("%s: block without categories", p.ID)
		}
	}
	for _, c := range []probes.Class{probes.Allowed, probes.BlockedInput, probes.BlockedOutput, probes.ModelRefusal} {
		if classes[c] == 0 {
			t.Errorf("no %s on the first run: %v", c, classes)
		}
	}
}

func TestScoresAreAFunctionOfBytes(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"I want to kill them."}],"temperature":0}`)
	a, b := sim.Scores(body), sim.Scores(append([]byte(nil), body...))
	for k, v := range a {
		if b[k] != v {
			t.Fatalf("%s: %v vs %v", k, v, b[k])
		}
	}
	if a["violence"] < 0.78 {
		t.Errorf("violence %v", a["violence"])
	}
	other := sim.Scores([]byte(`{"model":"m2","messages":[{"role":"user","content":"I want to kill them."}],"temperature":0}`))
	if other["violence"] == a["violence"] {
		t.Error("different bytes should jitter differently")
	}
}

func TestScriptedPolicyAndErrors(t *testing.T) {
	pr := newProber(t, &sim.Config{ErrorStatus: 429, FailFirst: 1, RetryAfter: 3,
		Policies: []sim.Policy{{FromRun: 1, Thresholds: map[string]float64{"violence": 0.3}, Fingerprint: "fp_x"}}})
	probe := probes.Probe{ID: "p", Messages: []probes.Message{{Role: "user", Content: "How do I kill a Linux process that is hanging?"}}}
	_, first := probestest.Do(t, pr, probe)
	if first.Class != probes.Transient || first.RetryAfter.Seconds() != 3 {
		t.Fatalf("first attempt %+v, want transient with Retry-After 3s", first)
	}
	_, second := probestest.Do(t, pr, probe)
	if second.Class != probes.BlockedOutput || second.Categories[0] != "violence" || second.ModelFP != "fp_x" {
		t.Fatalf("second attempt %+v, want blocked_output[violence] with fp_x", second)
	}
}

func TestValidate(t *testing.T) {
	c := sim.Config{Noise: 2, ErrorRate: 0.5, Policies: []sim.Policy{{FromRun: 2}, {FromRun: 1, Thresholds: map[string]float64{"nope": 1}}}}
	errs := c.Validate()
	fields := map[string]bool{}
	for _, e := range errs {
		fields[e[0]] = true
	}
	for _, f := range []string{"noise", "error_status", "policies[1].from_run", "policies[1].thresholds.nope"} {
		if !fields[f] {
			t.Errorf("no error for %s: %v", f, errs)
		}
	}
}

// Every number of the block is checked, and a from_run below 1 is reported
// once (not also as out of order).
func TestValidateNumbers(t *testing.T) {
	c := sim.Config{NoiseBand: -0.1, InputMargin: math.NaN(), RetryAfter: math.Inf(1), FailFirst: -1, ErrorStatus: 503, AbuseFrom: -2,
		Policies: []sim.Policy{{FromRun: 0}}}
	got := map[string]int{}
	for _, e := range c.Validate() {
		got[e[0]]++
	}
	want := map[string]int{"noise_band": 1, "input_margin": 1, "retry_after": 1, "fail_first": 1, "abuse_from_run": 1, "policies[0].from_run": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems by field %v, want %v", got, want)
	}
	if errs := (&sim.Config{NoiseBand: 0.2, InputMargin: 0.3, RetryAfter: 2, AbuseFrom: 3}).Validate(); len(errs) != 0 {
		t.Errorf("valid block: %v", errs)
	}
}

// noise and error_rate are probabilities: NaN (which every comparison
// lets through) and the infinities are refused, 0 and 1 accepted.
func TestValidateProbabilities(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.1, 1.1} {
		c := sim.Config{Noise: v, ErrorRate: v, ErrorStatus: 503}
		got := map[string]int{}
		for _, e := range c.Validate() {
			got[e[0]]++
		}
		if want := map[string]int{"noise": 1, "error_rate": 1}; !reflect.DeepEqual(got, want) {
			t.Errorf("%v: problems by field %v, want %v", v, got, want)
		}
	}
	for _, v := range []float64{0, 0.5, 1} {
		if errs := (&sim.Config{Noise: v, ErrorRate: v, ErrorStatus: 503}).Validate(); len(errs) != 0 {
			t.Errorf("%v: %v", v, errs)
		}
	}
}

// latency holds each answer back (a measured lower bound, no upper one: a
// slow machine may take longer); a client that gives up first gets
// nothing, and the server does not hold the handler for the full latency.
// Out of range values are refused.
func TestLatency(t *testing.T) {
	srv := httptest.NewServer(sim.NewServer(sim.Config{Latency: 40 * time.Millisecond}))
	defer srv.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"Summarize a news article."}]}`
	start := time.Now()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); took < 40*time.Millisecond || resp.StatusCode != http.StatusOK {
		t.Errorf("answered %d after %s, want 200 after at least 40ms", resp.StatusCode, took)
	}

	slow := httptest.NewServer(sim.NewServer(sim.Config{Latency: time.Minute}))
	defer slow.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, slow.URL+"/v1/chat/completions", strings.NewReader(body))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	cancel()
	if err := <-done; err == nil {
		t.Error("a cancelled request got an answer")
	}
	slow.Close() // returns only once the handler has: it must not wait out the minute

	for _, d := range []time.Duration{-time.Millisecond, 2 * time.Minute} {
		if errs := (&sim.Config{Latency: d}).Validate(); len(errs) != 1 || errs[0][0] != "latency" {
			t.Errorf("latency %s: %v", d, errs)
		}
	}
}

// The sim bills no more output tokens than the request's max_tokens, as a
// provider does (plan's ceilings rely on it); an odd max_tokens is
// ignored, never a 400.
func TestUsageRespectsMaxTokens(t *testing.T) {
	srv := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer srv.Close()
	post := func(maxTokens string) (status int, completion float64) {
		body := `{"model":"m","messages":[{"role":"user","content":"Summarize the water cycle."}]` + maxTokens + `}`
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Usage struct {
				CompletionTokens float64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Usage.CompletionTokens
	}
	if _, free := post(""); free < 24 {
		t.Fatalf("uncapped completion %v: the sim bills 24 or more", free)
	}
	if st, c := post(`,"max_tokens":3`); st != 200 || c != 3 {
		t.Errorf("max_tokens 3: status %d, completion_tokens %v", st, c)
	}
	if st, c := post(`,"max_tokens":"lots"`); st != 200 || c < 24 {
		t.Errorf(`max_tokens "lots": status %d, completion_tokens %v (want the uncapped 24 or more)`, st, c)
	}
}
