package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// A target moved to another endpoint under the same name (another Azure
// resource, Bedrock region, gateway or server) sends the same request
// bytes, and the request fingerprint leaves hosts out: the answers there
// restart every baseline, as an input change, and never confirm a flip as
// the provider's policy change. Detection goes on at the new endpoint: a
// change there afterwards is an event as usual.
func TestEndpointMoveIsInputChangeNotFlip(t *testing.T) {
	a := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer a.Close()
	strict := map[string]float64{"violence": 0.05, "hate": 0.05, "harassment": 0.05, "illicit": 0.05, "weapons": 0.05, "self_harm": 0.05, "privacy": 0.05}
	// b is stricter than a from its first answer, and from run 7 on loosens
	// back to a's thresholds: a change of b's own.
	b := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 1, Thresholds: strict}, {FromRun: 7, Thresholds: map[string]float64{
		"violence": sim.DefaultThreshold, "hate": sim.DefaultThreshold, "harassment": sim.DefaultThreshold, "illicit": sim.DefaultThreshold,
		"weapons": sim.DefaultThreshold, "self_harm": sim.DefaultThreshold, "privacy": sim.DefaultThreshold}}}}))
	defer b.Close()
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "x.db")
	run := func(url string) app.RunJSON {
		t.Helper()
		if err := os.WriteFile(cfg, []byte("targets:\n  - {name: gw, provider: sim, model: m, base_url: \""+url+"\"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runIn(t, "run", "--json", "--no-progress", "--config", cfg, "--db", db)
		var out app.RunJSON
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Targets) != 1 {
			t.Fatalf("run at %s: exit %d: %s\n%s", url, code, stderr, stdout)
		}
		return out
	}
	var blockedA int
	for i := 0; i < 3; i++ {
		out := run(a.URL)
		blockedA = out.Targets[0].Verdicts["blocked_input"] + out.Targets[0].Verdicts["blocked_output"]
		if tg := out.Targets[0]; tg.Origin != probes.URLOrigin(a.URL) || tg.OriginChange != nil || tg.InputChanges != 0 {
			t.Fatalf("run %d at a: origin %q (want %q), change %+v, input changes %d", out.RunID, tg.Origin, probes.URLOrigin(a.URL), tg.OriginChange, tg.InputChanges)
		}
	}
	for i := 0; i < 3; i++ {
		out := run(b.URL)
		tg := out.Targets[0]
		if blockedB := tg.Verdicts["blocked_input"] + tg.Verdicts["blocked_output"]; blockedB <= blockedA {
			t.Fatalf("run %d: b blocks %d probes, a %d: the move would show nothing", out.RunID, blockedB, blockedA)
		}
		if tg.Origin != probes.URLOrigin(b.URL) {
			t.Errorf("run %d at b: origin %q", out.RunID, tg.Origin)
		}
		if i == 0 {
			oc := tg.OriginChange
			if oc == nil || oc.From != probes.URLOrigin(a.URL) || oc.To != probes.URLOrigin(b.URL) || oc.FromRun != 3 || tg.InputChanges != 62 {
				t.Errorf("run %d, the first at b: origin change %+v, input changes %d (want a → b after run 3, 62)", out.RunID, oc, tg.InputChanges)
			}
		} else if tg.OriginChange != nil || tg.InputChanges != 0 {
			t.Errorf("run %d, again at b: origin change %+v, input changes %d", out.RunID, tg.OriginChange, tg.InputChanges)
		}
		if len(out.Events) != 0 {
			t.Errorf("run %d at b: the endpoint move made events: %+v", out.RunID, out.Events)
		}
	}
	// A diff across the move says the verdicts moved with the endpoint.
	stdout, stderr, code := runIn(t, "diff", "--json", "--db", db, "--target", "gw", "--from", "3", "--to", "4")
	var d diff.RunDiff
	if code != 0 || json.Unmarshal([]byte(stdout), &d) != nil || !d.OriginMoved || d.FromOrigin != probes.URLOrigin(a.URL) || d.ToOrigin != probes.URLOrigin(b.URL) || len(d.Probes) == 0 {
		t.Errorf("diff across the move: exit %d: %s%s", code, stdout, stderr)
	}
	if stdout, _, _ := runIn(t, "diff", "--db", db, "--target", "gw", "--from", "3", "--to", "4"); !strings.Contains(stdout, "ENDPOINT MOVED: run 3 answered at "+probes.URLOrigin(a.URL)+", run 4 at "+probes.URLOrigin(b.URL)) {
		t.Errorf("diff text across the move does not say so:\n%s", stdout)
	}
	// b loosens from run 7: a change of b's own is an event.
	var evs int
	for i := 0; i < 2; i++ {
		evs += len(run(b.URL).Events)
	}
	stdout, stderr, code = runIn(t, "events", "--json", "--db", db)
	if code != 0 || evs == 0 || !strings.Contains(stdout, `"loosened"`) {
		t.Errorf("b's own loosening after the move: %d events in runs; events: exit %d: %s%s", evs, code, stdout, stderr)
	}
}

// The in-process simulator listens on a new loopback port in every
// process, yet is the same endpoint: its origin is fixed, so consecutive
// runs never see it move.
func TestEmbeddedSimOriginIsStable(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	for i := 0; i < 2; i++ {
		stdout, stderr, code := runIn(t, "run", "--json", "--no-progress", "--db", db)
		var out app.RunJSON
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Targets) == 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
		for _, tg := range out.Targets {
			if tg.Origin != sim.EmbeddedOrigin || tg.OriginChange != nil {
				t.Errorf("run %d, %s: origin %q, change %+v", out.RunID, tg.Target, tg.Origin, tg.OriginChange)
			}
		}
	}
}
