package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A one-shot run's textfile (and push) carries the counters every
// configured target and status can have at 0 (increase() cannot see a
// series' first sample: an event counted at 1 in a new series would never
// show), the per-probe verdict counts, and no serve-only failure counter
// (a failed one-shot run exports nothing).
func TestOneShotMetricsAtZero(t *testing.T) {
	dir := t.TempDir()
	tf := filepath.Join(dir, "driftprobe.prom")
	if _, stderr, code := runIn(t, "run", "--db", filepath.Join(dir, "x.db"), "--metrics-textfile", tf); code != 0 {
		t.Fatal(stderr)
	}
	b, err := os.ReadFile(tf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`driftprobe_events_total{direction="tightened",kind="policy_change",target="sim-a"} 0`,
		`driftprobe_events_total{direction="mixed",kind="model_change",target="sim-a"} 0`,
		`driftprobe_runs_total{status="partial"} 0`,
		`driftprobe_runs_total{status="aborted"} 0`,
		`driftprobe_runs_total{status="complete"} 1`,
		`driftprobe_breaker_opened_runs{target="sim-a"} 0`,
	} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("textfile lacks %s", want)
		}
	}
	if n := strings.Count(string(b), `driftprobe_events_total{`); n != 16 {
		t.Errorf("%d events_total series, want 16 (4 kinds x 4 directions of the one target)", n)
	}
	for _, v := range []string{"allowed", "blocked_input", "blocked_output", "model_refusal"} {
		if !strings.Contains(string(b), `driftprobe_probes{target="sim-a",verdict="`+v+`"} `) {
			t.Errorf("textfile lacks driftprobe_probes of verdict %s", v)
		}
	}
	if strings.Contains(string(b), "driftprobe_run_failures_total") {
		t.Error("a one-shot run exports the serve-only failure counter")
	}
}

// Two probers pushing to one Pushgateway each push their own group
// (job="driftprobe", instance=...): a PUT replaces only its own group, so
// neither overwrites the other's metrics. --pushgateway-instance names
// the group; it needs --pushgateway.
func TestPushGroupedByInstance(t *testing.T) {
	var mu sync.Mutex
	groups := map[string]string{} // path -> body
	var methods []string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		groups[r.URL.Path] = string(b)
		methods = append(methods, r.Method)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer gw.Close()
	for _, inst := range []string{"prober-a", "prober-b"} {
		if _, stderr, code := runIn(t, "run", "--db", filepath.Join(t.TempDir(), "x.db"), "--pushgateway", gw.URL, "--pushgateway-instance", inst); code != 0 {
			t.Fatalf("%s: exit %d: %s", inst, code, stderr)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, inst := range []string{"prober-a", "prober-b"} {
		body, ok := groups["/metrics/job/driftprobe/instance/"+inst]
		if !ok || !strings.Contains(body, "driftprobe_runs_total") {
			t.Errorf("no push of %s's group (got paths %v)", inst, pushedPaths(groups))
		}
	}
	if len(groups) != 2 {
		t.Errorf("pushed to %v, want the two groups", pushedPaths(groups))
	}
	for _, m := range methods {
		if m != http.MethodPut {
			t.Errorf("push used %s, want PUT (replace the group)", m)
		}
	}

	if _, stderr, code := runIn(t, "run", "--db", filepath.Join(t.TempDir(), "x.db"), "--pushgateway-instance", "x"); code != 2 || !strings.Contains(stderr, "--pushgateway-instance needs --pushgateway") {
		t.Errorf("--pushgateway-instance alone: exit %d: %s", code, stderr)
	}
}

// In Kubernetes a Job's pod name (its host name) changes every run: a
// push grouped under it would leave a group behind every run, so a push
// there without --pushgateway-instance is warned about.
func TestPushInKubernetesWithoutInstanceWarns(t *testing.T) {
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer gw.Close()
	db := filepath.Join(t.TempDir(), "x.db")
	_, stderr, code := runProc(t, []string{"KUBERNETES_SERVICE_HOST=10.0.0.1"}, "run", "--db", db, "--pushgateway", gw.URL)
	if code != 0 || !strings.Contains(stderr, "--pushgateway-instance") {
		t.Errorf("exit %d, want a warning naming --pushgateway-instance: %s", code, stderr)
	}
	_, stderr, code = runProc(t, []string{"KUBERNETES_SERVICE_HOST=10.0.0.1"}, "run", "--db", db, "--pushgateway", gw.URL, "--pushgateway-instance", "driftprobe")
	if code != 0 || strings.Contains(stderr, "--pushgateway-instance") {
		t.Errorf("with an instance: exit %d, want no warning: %s", code, stderr)
	}
}

func pushedPaths(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
