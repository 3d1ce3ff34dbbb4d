package oaiwire_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/oaiwire"
	"github.com/driftprobe/driftprobe/probes/probestest"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// simRequest is one request sent to the simulator: its path, body, and
// an id naming it in failures.
type simRequest struct {
	path string
	body []byte
	id   string
}

// corpusRequests renders every probe of the default corpus as the sim
// prober does.
func corpusRequests(t *testing.T) []simRequest {
	t.Helper()
	cp, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(7)
	target := probes.Target{Model: "sim-large", MaxTokens: 64, Seed: &seed}
	var out []simRequest
	for _, p := range cp.Probes {
		req, err := oaiwire.Render("http://sim.invalid", "/v1/chat/completions", oaiwire.NewChatRequest(target, p.Wire(), true))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, simRequest{"/v1/chat/completions", req.Body, p.ID})
	}
	return out
}

// serveSim sends every request to a simulator of each configuration, in
// runs 1 and 2, and hands each answer to check with where it came from.
func serveSim(t *testing.T, configs []sim.Config, reqs []simRequest, check func(at string, w *httptest.ResponseRecorder)) {
	t.Helper()
	for ci, cfg := range configs {
		srv := sim.NewServer(cfg)
		for run := 1; run <= 2; run++ {
			for _, rq := range reqs {
				hr := httptest.NewRequest("POST", rq.path, bytes.NewReader(rq.body))
				hr.Header.Set(sim.RunHeader, strconv.Itoa(run))
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, hr)
				check(fmt.Sprintf("config %d run %d %s", ci, run, rq.id), w)
			}
		}
	}
}

// TestFastChatSimBodies sends every probe of the default corpus to the
// simulator under a few configurations (default thresholds, a drifted
// policy with a new model and fingerprint, noise, injected errors) and
// compares the fast and the reference reader on every answer. Every 2xx
// answer the simulator sends must be read by the fast path.
func TestFastChatSimBodies(t *testing.T) {
	configs := []sim.Config{
		{},
		{Policies: []sim.Policy{{FromRun: 2, Thresholds: map[string]float64{"violence": 0.3, "jailbreak": 0.2}, Fingerprint: "fp_drift", Model: "sim-next", ScoreShift: map[string]float64{"hate": 0.2}}}},
		{Noise: 0.5, Seed: 3},
		{ErrorStatus: 503, ErrorRate: 0.3, RetryAfter: 2},
	}
	answers, classes := 0, map[probes.Class]int{}
	serveSim(t, configs, corpusRequests(t), func(at string, w *httptest.ResponseRecorder) {
		for _, withHeader := range []bool{true, false} {
			resp := &probes.Response{Status: w.Code, Body: w.Body.Bytes()}
			if withHeader {
				resp.Header = w.Header()
			}
			ok, diff := oaiwire.FastSlowDiff(resp)
			if diff != "" {
				t.Errorf("%s: %s", at, diff)
			}
			if w.Code/100 == 2 {
				answers++
				if !ok {
					t.Errorf("%s: the fast path declined the sim's answer %s", at, w.Body.Bytes())
				}
				if withHeader {
					classes[oaiwire.ClassifyChat(resp, probestest.FuzzNow).Class]++
				}
			}
		}
	})
	// The answers cover every class the sim sends with a 2xx.
	for _, c := range []probes.Class{probes.Allowed, probes.BlockedOutput, probes.ModelRefusal} {
		if classes[c] == 0 {
			t.Errorf("no %s among %d sim answers: %v", c, answers, classes)
		}
	}
}

// TestFastErrorSimBodies sends every probe of the default corpus to the
// simulator under a few configurations (default thresholds, a drifted and
// stricter policy, a narrow input margin, noise, scripted 429, 503 and 500
// failures, account enforcement from run 2), plus a request to an unknown
// URL and one without messages, and compares the fast and the reference
// reader of ClassifyError on every answer (2xx answers too: they read as
// bodies without an error). Every error answer the simulator sends must be
// read by the fast path.
func TestFastErrorSimBodies(t *testing.T) {
	configs := []sim.Config{
		{},
		{Policies: []sim.Policy{{FromRun: 2, Thresholds: map[string]float64{"violence": 0.3, "jailbreak": 0.2, "hate": 0.25}, Fingerprint: "fp_drift", Model: "sim-next", ScoreShift: map[string]float64{"hate": 0.2, "sexual": 0.3}}}},
		{InputMargin: 0.01, Policies: []sim.Policy{{FromRun: 1, Thresholds: map[string]float64{"self_harm": 0.2, "illicit": 0.2, "weapons": 0.2}}}},
		{Noise: 0.5, Seed: 3},
		{ErrorStatus: 429, ErrorRate: 0.3, RetryAfter: 2},
		{ErrorStatus: 503, ErrorRate: 0.3, RetryAfter: 0.5, Seed: 9},
		{ErrorStatus: 500, FailFirst: 1},
		{AbuseFrom: 2},
	}
	reqs := append(corpusRequests(t), simRequest{"/v1/models/chat", []byte(`{}`), "unknown-url"}, simRequest{"/v1/chat/completions", []byte(`{"messages":[]}`), "no-messages"})
	errors, byStatus := 0, map[int]int{}
	classes := map[probes.Class]int{}
	serveSim(t, configs, reqs, func(at string, w *httptest.ResponseRecorder) {
		for _, h := range []http.Header{w.Header(), nil} {
			resp := &probes.Response{Status: w.Code, Header: h, Body: w.Body.Bytes()}
			ok, diff := oaiwire.ErrFastSlowDiff(resp)
			if diff != "" {
				t.Errorf("%s: %s", at, diff)
			}
			if w.Code/100 == 2 {
				continue
			}
			if !ok {
				t.Errorf("%s: the fast path declined the sim's %d %s", at, w.Code, w.Body.Bytes())
			}
			if h != nil {
				errors++
				byStatus[w.Code]++
				classes[oaiwire.ClassifyError(resp, probestest.FuzzNow).Class]++
			}
		}
	})
	// The answers cover every error the sim sends.
	for _, st := range []int{400, 403, 404, 429, 500, 503} {
		if byStatus[st] == 0 {
			t.Errorf("no %d among %d sim errors: %v", st, errors, byStatus)
		}
	}
	for _, c := range []probes.Class{probes.BlockedInput, probes.AbuseBlock, probes.Transient, probes.ClientError} {
		if classes[c] == 0 {
			t.Errorf("no %s among %d sim errors: %v", c, errors, classes)
		}
	}
	t.Logf("%d sim errors: %v, %v", errors, byStatus, classes)
}
