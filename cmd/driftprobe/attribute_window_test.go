package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// violenceJSONL writes violence points for target every step from
// testenv.AttributionT0 for span: 10 blocked per 1000 requests before
// AttributionT0+at, 30 from it on.
func violenceJSONL(t *testing.T, dir, target string, span, step, at time.Duration) string {
	t.Helper()
	var b strings.Builder
	for d := time.Duration(0); d < span; d += step {
		v := 10
		if d >= at {
			v = 30
		}
		fmt.Fprintf(&b, `{"time":%q,"target":%q,"category":"violence","blocked":%d,"total":1000}`+"\n", testenv.AttributionT0.Add(d).Format(time.RFC3339), target, v)
	}
	prod := filepath.Join(dir, "prod.jsonl")
	if err := os.WriteFile(prod, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return prod
}

// eventProbes is `events --json`, with what this file checks.
type eventProbes []struct {
	ID     int64  `json:"id"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	Probes []struct {
		ProbeID       string `json:"probe_id"`
		FirstRun      int64  `json:"first_run"`
		LastRunBefore int64  `json:"last_run_before"`
		Withdrawn     bool   `json:"withdrawn"`
	} `json:"probes"`
}

func listEvents(t *testing.T, cfg, db string) eventProbes {
	t.Helper()
	out, stderr, code := runIn(t, "events", "--json", "--config", cfg, "--db", db)
	var evs eventProbes
	if code != 0 || json.Unmarshal([]byte(out), &evs) != nil {
		t.Fatalf("events: exit %d %s\n%s", code, stderr, out)
	}
	return evs
}

// The QA case: a violence probe answered a 503 in run 3 (the target still
// complete), then blocked from run 4 on, the provider having tightened
// violence. Production rose at 01:30, between run 2 (the probe's last
// "allowed") and run 3. The flip's window opens at run 2, where the probe
// last answered its old verdict, so the rise is the provider's — it was
// called traffic ("the probes held still") when the window opened at
// run 3, in which the probe had no verdict.
func TestAttributeFlipAfterATransientIsProvider(t *testing.T) {
	up := sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 4, Thresholds: map[string]float64{"violence": 0.3}}}})
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(sim.RunHeader) == "3" && bytes.Contains(body, []byte("kill a Linux process")) {
			http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		up.ServeHTTP(w, r)
	}))
	defer gw.Close()
	dir, cfg, db := hourlyRuns(t, "targets:\n  - {name: gw, provider: sim, model: sim-large, base_url: \""+gw.URL+"\", max_attempts: 1}\n", 8, nil)
	// The setup: the probe's flip, first seen in run 4, last answered
	// allowed in run 2.
	var event int64
	for _, e := range listEvents(t, cfg, db) {
		for _, p := range e.Probes {
			if p.ProbeID == "violence-borderline-kill-process" && p.FirstRun == 4 && p.LastRunBefore == 2 {
				event = e.ID
			}
		}
	}
	if event == 0 {
		t.Fatalf("no event flips violence-borderline-kill-process in run 4 with its last old verdict in run 2: %+v", listEvents(t, cfg, db))
	}
	// Every 10 minutes (tolerance 20m): the other probes' flips, seen in
	// run 3 with the old verdict, open their windows at 01:40.
	prod := violenceJSONL(t, dir, "gw", 8*time.Hour, 10*time.Minute, 90*time.Minute)
	stdout, stderr, code := runIn(t, "attribute", "--config", cfg, "--db", db, "--production", prod, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := attrJSON(t, stdout)
	if len(r.Changes) != 1 {
		t.Fatalf("changes %+v", r.Changes)
	}
	ch := r.Changes[0]
	if !ch.ChangeAt.Equal(testenv.AttributionT0.Add(90*time.Minute)) || ch.Tolerance != "20m" || ch.RunsBefore != 2 {
		t.Fatalf("change at %v, tolerance %s, runs before %d", ch.ChangeAt, ch.Tolerance, ch.RunsBefore)
	}
	if ch.Attribution != "provider" || len(ch.Events) != 1 || ch.Events[0] != event ||
		!strings.Contains(ch.Reason, fmt.Sprintf("event %d (policy_change, tightened) flipped ", event)) ||
		!strings.Contains(ch.Reason, "last seen with the old verdict in run 2, started 2026-11-20T01:00:00Z") {
		t.Fatalf("%s %v: %s", ch.Attribution, ch.Events, ch.Reason)
	}
}

// The QA case: violence moves 0.5/0.5/0.3/0.5/0.3/0.3/0.5/0.3… on a sim
// target. Detection opens a policy_change (runs 5→6), then marks the
// probes nondeterministic and withdraws every flip of it (the event is
// reverted). Production rising at run 5 is not the provider's on the
// strength of withdrawn flips: the probes flip at random, so it is
// inconclusive, naming the nondeterminism event.
func TestAttributeWithdrawnFlipsAreNoEvidence(t *testing.T) {
	dir, cfg, db := hourlyRuns(t, `targets:
  - name: t
    provider: sim
    model: sim-large
    sim:
      policies:
        - {from_run: 1, thresholds: {violence: 0.5}, fingerprint: fp-a}
        - {from_run: 3, thresholds: {violence: 0.3}}
        - {from_run: 4, thresholds: {violence: 0.5}}
        - {from_run: 5, thresholds: {violence: 0.3}}
        - {from_run: 7, thresholds: {violence: 0.5}}
        - {from_run: 8, thresholds: {violence: 0.3}}
`, 10, nil)
	var policy, nondet int64
	for _, e := range listEvents(t, cfg, db) {
		switch e.Kind {
		case "policy_change":
			for _, p := range e.Probes {
				if !p.Withdrawn {
					t.Fatalf("event %d: %s not withdrawn: the test needs every flip withdrawn", e.ID, p.ProbeID)
				}
			}
			if e.Status != "reverted" || len(e.Probes) == 0 || policy != 0 {
				t.Fatalf("event %d: %s with %d probes", e.ID, e.Status, len(e.Probes))
			}
			policy = e.ID
		case "nondeterminism":
			nondet = e.ID
		default:
			t.Fatalf("event %d: %s", e.ID, e.Kind)
		}
	}
	if policy == 0 || nondet == 0 {
		t.Fatalf("events %+v: the test needs a withdrawn policy_change and a nondeterminism event", listEvents(t, cfg, db))
	}
	prod := violenceJSONL(t, dir, "t", 10*time.Hour, time.Hour, 4*time.Hour)
	stdout, stderr, code := runIn(t, "attribute", "--config", cfg, "--db", db, "--production", prod, "--json", "--fail-on", "provider")
	if code != 0 {
		t.Fatalf("exit %d (--fail-on provider): %s\n%s", code, stderr, stdout)
	}
	r := attrJSON(t, stdout)
	if len(r.Changes) != 1 {
		t.Fatalf("changes %+v", r.Changes)
	}
	ch := r.Changes[0]
	if ch.Attribution != "inconclusive" || len(ch.Events) != 1 || ch.Events[0] != nondet ||
		!strings.Contains(ch.Reason, "the violence probes on t did not hold still in the runs around the change") ||
		!strings.Contains(ch.Reason, fmt.Sprintf("marked nondeterministic (event %d: ", nondet)) {
		t.Fatalf("%s %v: %s", ch.Attribution, ch.Events, ch.Reason)
	}
}
