package main

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// An OpenAI target with an organization whose baselines were
// recorded before the upgrade adopts its state at the scoped origin (no
// move). A provider change it then confirms cites a pre-upgrade baseline
// answer (run_targets.origin plain) and a post-upgrade one (scoped):
// evidence must not call that "answered at different endpoints", the
// event's last_run_before must still be found, and the first run after
// the upgrade screens its changed answers against the adopted baselines.
func TestAdoptedTargetEvidenceAfterUpgrade(t *testing.T) {
	const keyVar, key = "DRIFTPROBE_TEST_ACCOUNT_KEY", "sk-test-account-review-0123456789"
	t.Setenv(keyVar, key)
	var strict atomic.Bool
	loose, tight := sim.NewServer(sim.Config{}), sim.NewServer(strictSim(1))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strict.Load() {
			tight.ServeHTTP(w, r)
			return
		}
		loose.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := probes.URLOrigin(srv.URL)
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "x.db")
	if err := os.WriteFile(cfg, []byte("targets:\n  - {name: oa, provider: openai, model: sim-large, base_url: \""+srv.URL+"/v1\", api_key_env: "+keyVar+", options: {organization: org-a}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() app.RunJSON {
		t.Helper()
		stdout, stderr, code := runIn(t, "run", "--json", "--no-progress", "--config", cfg, "--db", db)
		var out app.RunJSON
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Targets) != 1 {
			t.Fatalf("run: exit %d: %s\n%s", code, stderr, stdout)
		}
		return out
	}
	events := func() []*diff.Event {
		t.Helper()
		stdout, stderr, code := runIn(t, "events", "--json", "--db", db, "--config", cfg)
		var evs []*diff.Event
		if code != 0 || json.Unmarshal([]byte(stdout), &evs) != nil {
			t.Fatalf("events: exit %d: %s", code, stderr)
		}
		return evs
	}
	for range 3 { // baselines, before the upgrade
		run()
	}
	// The database as the release before wrote it.
	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE probe_states SET origin = '` + host + `'`,
		`UPDATE run_targets SET origin = '` + host + `'`,
		`DROP TABLE origin_scope_unnamed`, `ALTER TABLE run_targets DROP COLUMN detected`, `ALTER TABLE github_holds DROP COLUMN kind`,
		`PRAGMA user_version = 21`,
	} {
		if _, err := sdb.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	sdb.Close()
	// After the upgrade the provider tightens its policy.
	strict.Store(true)
	for i := 0; i == 0 || len(events()) == 0; i++ {
		if i == 8 {
			t.Fatal("no event in 8 runs")
		}
		out := run()
		if out.Targets[0].OriginChange != nil {
			t.Fatalf("run %d moved: %+v", out.RunID, out.Targets[0].OriginChange)
		}
		if i == 0 {
			// Its answers that differ from their baselines are screened
			// (extra samples), as in any run: the baselines are the
			// state's, recorded before the upgrade.
			sdb, err := sql.Open("sqlite", db)
			if err != nil {
				t.Fatal(err)
			}
			var extra int
			err = sdb.QueryRow(`SELECT COUNT(*) FROM observations WHERE run_id = ? AND sample > 0`, out.RunID).Scan(&extra)
			sdb.Close()
			if err != nil || extra == 0 {
				t.Errorf("the first run after the upgrade took %d screening samples (%v): its baselines were not found", extra, err)
			}
		}
	}
	ev := events()[0]
	for _, p := range ev.Probes {
		if p.LastRunBefore == 0 {
			t.Errorf("probe %s: last_run_before lost (before_run %d, first_run %d): the pre-upgrade runs at the plain origin no longer count", p.ProbeID, p.BeforeRun, p.FirstRun)
			break
		}
	}
	stdout, stderr, code := runIn(t, "evidence", "1", "--db", db, "--config", cfg)
	if code != 0 || strings.Contains(stdout+stderr, "different endpoints") {
		first, _, _ := strings.Cut(stderr, ";")
		t.Errorf("evidence of a provider change confirmed after the upgrade: exit %d: %s", code, first)
	}
}
