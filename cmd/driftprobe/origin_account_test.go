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

// An OpenAI target's organization and project (options organization and
// project, sent as the OpenAI-Organization and OpenAI-Project headers,
// which the request fingerprint leaves out) choose the account it speaks
// for at the endpoint, and account-level policy and enforcement differ
// per organization and project: switching a target to another one is a
// reconfiguration of the target, like moving its base_url, never a
// provider policy change. The organization and project are part of the
// target's origin: a switch moves the target (its baselines restart, or
// resume when it was there before) and confirms no flip; the key never
// enters the origin. Here one server answers for three accounts, with
// the strict policy for org-b and for org-a's project proj-2.
func TestAccountSwitchIsAMoveNotAFlip(t *testing.T) {
	const keyVar, key = "DRIFTPROBE_TEST_ACCOUNT_KEY", "sk-test-account-switch-0123456789"
	t.Setenv(keyVar, key)
	accounts := map[string]http.Handler{
		"org-a|":       sim.NewServer(sim.Config{}),
		"org-b|":       sim.NewServer(strictSim(1)),
		"org-a|proj-2": sim.NewServer(strictSim(1)),
		"|":            sim.NewServer(sim.Config{}),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := accounts[r.Header.Get("OpenAI-Organization")+"|"+r.Header.Get("OpenAI-Project")]
		if h == nil || r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"no such account","type":"invalid_request_error","code":"unknown_account"}}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := probes.URLOrigin(srv.URL)
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "x.db")
	run := func(options string) app.RunJSON {
		t.Helper()
		out := accountRun(t, cfg, db, srv.URL, keyVar, options)
		if o := out.Targets[0].Origin; strings.Contains(o, key) || strings.Contains(o, "sk-") {
			t.Fatalf("run %d: the key is in the origin %q", out.RunID, o)
		}
		return out
	}
	blocked := func(tg app.TargetJSON) int { return tg.Verdicts["blocked_input"] + tg.Verdicts["blocked_output"] }
	// at runs the target under options n times: the first run there moves
	// it (from the origin from; resumed when it was there before), the
	// others do not, and none makes an event.
	at := func(options, origin, from string, resumed bool, n int) int {
		t.Helper()
		b := 0
		for i := range n {
			out := run(options)
			tg := out.Targets[0]
			b = blocked(tg)
			if tg.Origin != origin {
				t.Errorf("run %d (%s): origin %q, want %q", out.RunID, options, tg.Origin, origin)
			}
			switch oc := tg.OriginChange; {
			case i == 0 && from != "":
				if oc == nil || oc.From != from || oc.To != origin || oc.Resumed != resumed {
					t.Errorf("run %d, the first with %s: origin change %+v, want %q → %q (resumed %v)", out.RunID, options, oc, from, origin, resumed)
				}
			case oc != nil:
				t.Errorf("run %d (%s): origin change %+v, want none", out.RunID, options, oc)
			}
			if len(out.Events) != 0 {
				t.Errorf("run %d (%s): the account switch made events: %+v", out.RunID, options, out.Events)
			}
		}
		return b
	}
	orgA, orgB, proj2 := host+" organization=org-a", host+" organization=org-b", host+" organization=org-a project=proj-2"
	loose := at("organization: org-a", orgA, "", false, 3)
	if strict := at("organization: org-b", orgB, orgA, false, 3); strict <= loose {
		t.Fatalf("org-b blocks %d probes, org-a %d: the switch would show nothing", strict, loose)
	}
	at("organization: org-a", orgA, orgB, true, 3)
	at("organization: org-a, project: proj-2", proj2, orgA, false, 3)
	// No account named: the endpoint's origin alone, as before.
	at("", host, proj2, false, 1)
}

// An OpenAI target naming an organization was at the plain origin (the
// endpoint's alone) until driftprobe put the account in the origin. Its
// first run after the upgrade, at the same endpoint and account, now
// named, adopts its detection state and its open event's rows: not a move
// (no baselines restart, no ticket), and the event still reverts there.
func TestUpgradeAdoptsTheUnnamedAccountOrigin(t *testing.T) {
	const keyVar, key = "DRIFTPROBE_TEST_ACCOUNT_KEY", "sk-test-account-upgrade-0123456789"
	t.Setenv(keyVar, key)
	var strict atomic.Bool
	loose, tight := sim.NewServer(sim.Config{}), sim.NewServer(strictSim(1))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("OpenAI-Organization") != "org-a" || r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"no such account","type":"invalid_request_error","code":"unknown_account"}}`, http.StatusUnauthorized)
			return
		}
		if strict.Load() {
			tight.ServeHTTP(w, r)
			return
		}
		loose.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := probes.URLOrigin(srv.URL)
	scoped := host + " organization=org-a"
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "x.db")
	run := func() app.RunJSON {
		t.Helper()
		return accountRun(t, cfg, db, srv.URL, keyVar, "organization: org-a")
	}
	events := func() []*diff.Event {
		t.Helper()
		stdout, stderr, code := runIn(t, "events", "--json", "--db", db)
		var evs []*diff.Event
		if code != 0 || json.Unmarshal([]byte(stdout), &evs) != nil {
			t.Fatalf("events: exit %d: %s", code, stderr)
		}
		return evs
	}
	// Baselines, then a policy change confirmed: one open event.
	for range 3 {
		run()
	}
	strict.Store(true)
	for i := 0; len(events()) == 0; i++ {
		if i == 8 {
			t.Fatal("the stricter policy confirmed no event in 8 runs")
		}
		run()
	}
	if evs := events(); len(evs) != 1 || evs[0].Status != "open" {
		t.Fatalf("events before the upgrade: %+v", evs)
	}

	// The database as the release before wrote it: every origin the
	// plain one, schema 21.
	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE probe_states SET origin = '` + host + `'`,
		`UPDATE run_targets SET origin = '` + host + `'`,
		`UPDATE event_probes SET origin = '` + host + `'`,
		`DROP TABLE origin_scope_unnamed`, `ALTER TABLE run_targets DROP COLUMN detected`, `ALTER TABLE github_holds DROP COLUMN kind`,
		`PRAGMA user_version = 21`,
	} {
		if _, err := sdb.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	sdb.Close()

	out := run()
	if tg := out.Targets[0]; tg.Origin != scoped || tg.OriginChange != nil || len(out.Events) != 0 {
		t.Fatalf("first run after the upgrade: origin %q, change %+v, events %+v; want %q adopted, no move", tg.Origin, tg.OriginChange, out.Events, scoped)
	}
	// Back to the looser policy at the same account: the event reverts.
	strict.Store(false)
	for i := 0; events()[0].Status == "open"; i++ {
		if i == 8 {
			t.Fatalf("the event never reverted after the upgrade: %+v", events()[0])
		}
		if out := run(); out.Targets[0].OriginChange != nil {
			t.Fatalf("run %d moved: %+v", out.RunID, out.Targets[0].OriginChange)
		}
	}
	if ev := events()[0]; ev.Status != "reverted" {
		t.Errorf("event after the looser policy returned: %s, want reverted", ev.Status)
	}
}

// The adoption is once, at the target's first run after the upgrade: a
// target that named no account then and names one later has switched
// accounts (a move), as in TestAccountSwitchIsAMoveNotAFlip.
func TestUpgradeAdoptionIsOnce(t *testing.T) {
	const keyVar, key = "DRIFTPROBE_TEST_ACCOUNT_KEY", "sk-test-account-once-0123456789"
	t.Setenv(keyVar, key)
	srv := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer srv.Close()
	host := probes.URLOrigin(srv.URL)
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "x.db")
	run := func(options string) app.TargetJSON {
		t.Helper()
		return accountRun(t, cfg, db, srv.URL, keyVar, options).Targets[0]
	}
	run("")
	run("")
	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE origin_scope_unnamed`, `ALTER TABLE run_targets DROP COLUMN detected`, `ALTER TABLE github_holds DROP COLUMN kind`, `PRAGMA user_version = 21`} {
		if _, err := sdb.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	sdb.Close()
	if tg := run(""); tg.Origin != host || tg.OriginChange != nil {
		t.Fatalf("first run after the upgrade, no account named: origin %q, change %+v", tg.Origin, tg.OriginChange)
	}
	if tg := run("organization: org-a"); tg.OriginChange == nil || tg.OriginChange.From != host || tg.OriginChange.To != host+" organization=org-a" {
		t.Errorf("an account named after the upgrade's first run: origin %q, change %+v; want a move", tg.Origin, tg.OriginChange)
	}
}

// accountRun runs one OpenAI target named oa at srvURL, with the key in
// keyVar and options (YAML flow mapping content), into db, writing cfg
// first; it fails the test unless the run exits 0 with one target.
func accountRun(t *testing.T, cfg, db, srvURL, keyVar, options string) app.RunJSON {
	t.Helper()
	if err := os.WriteFile(cfg, []byte("targets:\n  - {name: oa, provider: openai, model: sim-large, base_url: \""+srvURL+"/v1\", api_key_env: "+keyVar+", options: {"+options+"}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runIn(t, "run", "--json", "--no-progress", "--config", cfg, "--db", db)
	var out app.RunJSON
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Targets) != 1 {
		t.Fatalf("run with {%s}: exit %d: %s\n%s", options, code, stderr, stdout)
	}
	return out
}
