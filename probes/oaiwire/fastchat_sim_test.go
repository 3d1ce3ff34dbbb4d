package oaiwire_test

import (
	"bytes"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/oaiwire"
	"github.com/driftprobe/driftprobe/probes/probestest"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// TestFastChatSimBodies sends every probe of the default corpus to the
// simulator under a few configurations (default thresholds, a drifted
// policy with a new model and fingerprint, noise, injected errors) and
// compares the fast and the reference reader on every answer. Every 2xx
// answer the simulator sends must be read by the fast path.
func TestFastChatSimBodies(t *testing.T) {
	cp, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	configs := []sim.Config{
		{},
		{Policies: []sim.Policy{{FromRun: 2, Thresholds: map[string]float64{"violence": 0.3, "jailbreak": 0.2}, Fingerprint: "fp_drift", Model: "sim-next", ScoreShift: map[string]float64{"hate": 0.2}}}},
		{Noise: 0.5, Seed: 3},
		{ErrorStatus: 503, ErrorRate: 0.3, RetryAfter: 2},
	}
	seed := int64(7)
	target := probes.Target{Model: "sim-large", MaxTokens: 64, Seed: &seed}
	answers, classes := 0, map[probes.Class]int{}
	for ci, cfg := range configs {
		srv := sim.NewServer(cfg)
		for run := 1; run <= 2; run++ {
			for _, p := range cp.Probes {
				req, err := oaiwire.Render("http://sim.invalid", "/v1/chat/completions", oaiwire.NewChatRequest(target, p.Wire(), true))
				if err != nil {
					t.Fatal(err)
				}
				hr := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(req.Body))
				hr.Header.Set(sim.RunHeader, strconv.Itoa(run))
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, hr)
				for _, withHeader := range []bool{true, false} {
					resp := &probes.Response{Status: w.Code, Body: w.Body.Bytes()}
					if withHeader {
						resp.Header = w.Header()
					}
					ok, diff := oaiwire.FastSlowDiff(resp)
					if diff != "" {
						t.Errorf("config %d run %d %s: %s", ci, run, p.ID, diff)
					}
					if w.Code/100 == 2 {
						answers++
						if !ok {
							t.Errorf("config %d run %d %s: the fast path declined the sim's answer %s", ci, run, p.ID, w.Body.Bytes())
						}
						if withHeader {
							classes[oaiwire.ClassifyChat(resp, probestest.FuzzNow).Class]++
						}
					}
				}
			}
		}
	}
	// The answers cover every class the sim sends with a 2xx.
	for _, c := range []probes.Class{probes.Allowed, probes.BlockedOutput, probes.ModelRefusal} {
		if classes[c] == 0 {
			t.Errorf("no %s among %d sim answers: %v", c, answers, classes)
		}
	}
}
