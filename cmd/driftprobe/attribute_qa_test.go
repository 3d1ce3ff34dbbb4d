package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/testenv"
)

// hateJumps writes n hourly points for target/hate from AttributionT0,
// 50 blocked per 10000 requests before hour jump and 200 from it on.
func hateJumps(t *testing.T, dir, target string, n, jump int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		v := 50
		if i >= jump {
			v = 200
		}
		fmt.Fprintf(&b, `{"time":%q,"target":%q,"category":"hate","blocked":%d,"total":10000}`+"\n", testenv.AttributionT0.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), target, v)
	}
	prod := filepath.Join(dir, "prod.jsonl")
	if err := os.WriteFile(prod, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return prod
}

// The QA case: the hate probes flip at random (sim noise near the
// threshold) and most are marked nondeterministic by an open event, yet
// attribute said TRAFFIC ("the probes held still"). Random probes cannot
// show that the provider held still: inconclusive, naming the
// nondeterminism event. The same story with a quiet sim is traffic, so the
// setup itself is not what makes the answer inconclusive.
func TestAttributeNoisyProbesAreNotTraffic(t *testing.T) {
	for _, c := range []struct {
		noise string
		attr  string
		want  []string
	}{
		{"{noise: 0.5, noise_band: 0.3}", "inconclusive", []string{"the hate probes on noisy did not hold still in the runs around the change", "marked nondeterministic (event ",
			"whose verdict changed on identical request bytes with no confirmed flip to explain it"}},
		{"{noise: 0}", "traffic", []string{"held still on noisy: 4 complete run(s) before and 4 after the change, no event in the window, ",
			"probe(s) with identical verdicts on identical request bytes before and after it"}},
	} {
		t.Run(c.attr, func(t *testing.T) {
			dir, cfg, db := hourlyRuns(t, "targets: [{name: noisy, provider: sim, model: sim-large, sim: "+c.noise+"}]\n", 8, nil)
			prod := hateJumps(t, dir, "noisy", 9, 4)
			stdout, stderr, code := runIn(t, "attribute", "--config", cfg, "--db", db, "--production", prod, "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r := attrJSON(t, stdout)
			if len(r.Changes) != 1 {
				t.Fatalf("changes %+v", r.Changes)
			}
			ch := r.Changes[0]
			if ch.Attribution != c.attr || ch.RunsBefore != 4 || ch.RunsAfter != 4 {
				t.Fatalf("%s %d/%d: %s", ch.Attribution, ch.RunsBefore, ch.RunsAfter, ch.Reason)
			}
			for _, w := range c.want {
				if !strings.Contains(ch.Reason, w) {
					t.Errorf("reason %q\nlacks %q", ch.Reason, w)
				}
			}
			events := eventKinds(t, cfg, db)
			if c.attr == "inconclusive" {
				// The events named are the nondeterminism ones in the way.
				if len(ch.Events) == 0 {
					t.Errorf("no events named: %+v", ch)
				}
				for _, id := range ch.Events {
					if events[id] != "nondeterminism" {
						t.Errorf("event %d is %q, want nondeterminism (events %v)", id, events[id], events)
					}
				}
			} else if len(events) != 0 || len(ch.Events) != 0 {
				t.Errorf("a quiet sim made events %v; change %+v", events, ch)
			}
		})
	}
}

// eventKinds returns the database's events: id → kind.
func eventKinds(t *testing.T, cfg, db string) map[int64]string {
	t.Helper()
	out, stderr, code := runIn(t, "events", "--json", "--config", cfg, "--db", db)
	var evs []struct {
		ID   int64  `json:"id"`
		Kind string `json:"kind"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &evs) != nil {
		t.Fatalf("events: exit %d %s\n%s", code, stderr, out)
	}
	m := map[int64]string{}
	for _, e := range evs {
		m[e.ID] = e.Kind
	}
	return m
}

// A verdict that changed and came back without any event (a one-run blip:
// not confirmed, not yet nondeterministic) is read from the stored
// observations: the probes did not hold still, so not traffic.
func TestAttributeVerdictBlipIsNotTraffic(t *testing.T) {
	config := `targets:
  - name: blip
    provider: sim
    model: sim-large
    sim:
      policies:
        - {from_run: 3, thresholds: {hate: 0.01}}
        - {from_run: 4, thresholds: {hate: 0.5}}
`
	dir, cfg, db := hourlyRuns(t, config, 10, nil)
	if evs := eventKinds(t, cfg, db); len(evs) != 0 {
		t.Fatalf("the blip made events %v: the test needs none", evs)
	}
	prod := hateJumps(t, dir, "blip", 10, 6)
	stdout, stderr, code := runIn(t, "attribute", "--config", cfg, "--db", db, "--production", prod, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := attrJSON(t, stdout)
	if len(r.Changes) != 1 {
		t.Fatalf("changes %+v", r.Changes)
	}
	ch := r.Changes[0]
	if ch.Attribution != "inconclusive" || len(ch.Events) != 0 || !strings.Contains(ch.Reason, "the hate probes on blip did not hold still") ||
		!strings.Contains(ch.Reason, "in run 2, blocked_") || !strings.Contains(ch.Reason, "in run 3") || strings.Contains(ch.Reason, "nondeterministic") {
		t.Fatalf("%s %v: %s", ch.Attribution, ch.Events, ch.Reason)
	}
	// Production moving after the blip's runs only (runs 4–10 compared):
	// the probes held still there, so traffic.
	var b strings.Builder
	for i := 3; i < 10; i++ {
		v := 50
		if i >= 6 {
			v = 200
		}
		fmt.Fprintf(&b, `{"time":%q,"target":"blip","category":"hate","blocked":%d,"total":10000}`+"\n", testenv.AttributionT0.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), v)
	}
	late := filepath.Join(dir, "late.jsonl")
	if err := os.WriteFile(late, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runIn(t, "attribute", "--config", cfg, "--db", db, "--production", late, "--json")
	if r := attrJSON(t, stdout); code != 0 || len(r.Changes) != 1 || r.Changes[0].Attribution != "traffic" {
		t.Fatalf("after the blip: exit %d %s: %+v", code, stderr, r.Changes)
	}
}

// A Prometheus query that matches nothing (a mistyped metric name) is
// not silent: a warning names the query on stderr and in --json; and a
// --fail-on gate over no series exits 2 instead of passing.
func TestAttributePrometheusNoSeries(t *testing.T) {
	_, cfg, db := attrSetup(t)
	const typo = `sum by (target, category) (increase(llm_blokced_total[1h]))`
	srv := testenv.NewPrometheus(t, map[string][]byte{
		typo: []byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`),
		q:    testenv.PrometheusFixture(t, "e2e_blocked.json"),
	})
	base := []string{"attribute", "--config", cfg, "--db", db, "--prometheus", srv.URL, "--since", "10h", "--step", "1h", "--end", "2026-11-20T10:20:00Z"}
	warn := `prometheus: the query "` + typo + `" matched no series between 2026-11-20T00:00:00Z and 2026-11-20T10:00:00Z`

	stdout, stderr, code := runIn(t, append(base, "--query", typo, "--json")...)
	r := attrJSON(t, stdout)
	if code != 0 || r.Series != 0 || len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], warn) {
		t.Fatalf("--json: exit %d %s: %+v", code, stderr, r)
	}
	if !strings.Contains(stderr, "driftprobe: warning: "+warn) {
		t.Errorf("stderr %q", stderr)
	}
	stdout, stderr, code = runIn(t, append(base, "--query", typo)...)
	if code != 0 || !strings.Contains(stdout, "attribute · 0 series · 0 change(s)") || !strings.Contains(stderr, warn) {
		t.Errorf("table: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, gate := range []string{"provider", "traffic", "any-change"} {
		stdout, stderr, code = runIn(t, append(base, "--query", typo, "--json", "--fail-on", gate)...)
		if code != 2 || !strings.Contains(stderr, "attribute: --fail-on "+gate+": no series matched, so nothing was checked") || !strings.Contains(stderr, warn) {
			t.Errorf("--fail-on %s: exit %d\n%s", gate, code, stderr)
		}
		if r := attrJSON(t, stdout); r.Series != 0 || len(r.Warnings) != 1 {
			t.Errorf("--fail-on %s still prints the report: %s", gate, stdout)
		}
	}
	// A query that matches: the gate judges the changes, no warning.
	stdout, stderr, code = runIn(t, append(base, "--query", q, "--json", "--fail-on", "traffic")...)
	if r := attrJSON(t, stdout); code != 1 || r.Series == 0 || strings.Contains(stderr, "matched no series") {
		t.Errorf("matching query: exit %d %s: %+v", code, stderr, r)
	}
}

// An input file that cannot be read is exit 2, said once: a directory
// (which os.Open opens) like a missing file.
func TestAttributeProductionUnreadable(t *testing.T) {
	dir, cfg, db := attrSetup(t)
	for _, c := range []struct {
		path, want string
	}{
		{dir, dir + ": --production: is a directory (want a JSONL file, or - for standard input)"},
		{filepath.Join(dir, "none.jsonl"), filepath.Join(dir, "none.jsonl") + ": --production: no such file or directory"},
	} {
		stdout, stderr, code := runIn(t, "attribute", "--config", cfg, "--db", db, "--production", c.path, "--json")
		if code != 2 || strings.TrimSpace(stderr) != c.want || stdout != "" {
			t.Errorf("%s: exit %d\nstderr %q\nwant   %q\nstdout %q", c.path, code, stderr, c.want, stdout)
		}
	}
}
