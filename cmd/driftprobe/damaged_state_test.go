package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

// A target whose detection state does not decode stops that target's
// detection, not the run's: `run` still detects the other target (its
// policy change recorded as an event and queued for GitHub), prints the
// run (--json: the whole document, the damaged target's detection_error
// naming the row and the statement that removes it, as db check says) and
// exits 3 naming the target. Once the row is removed, the target's
// detection resumes: its baselines restart (state_lost, input changes with
// cause state), and the run exits 0.
func TestRunWithDamagedStateDetectsTheOtherTargets(t *testing.T) {
	dir := t.TempDir()
	db, cfg := filepath.Join(dir, "d.db"), filepath.Join(dir, "c.yaml")
	// a's violence threshold drops at run 3: a policy change confirmed at
	// run 4. GitHub is a closed port: delivery fails, the rows stay queued.
	if err := os.WriteFile(cfg, []byte(`targets:
  - {name: a, provider: sim, model: sim-large, sim: {policies: [{from_run: 3, thresholds: {violence: 0.01}}]}}
  - {name: b, provider: sim, model: sim-large}
github: {repo: o/r, base_url: "http://127.0.0.1:1/"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_TOKEN", "test-token")
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runIn(t, append([]string{"run", "--no-progress", "--config", cfg, "--db", db}, args...)...)
	}
	for i := 0; i < 2; i++ {
		if stdout, stderr, code := run(); code != 0 {
			t.Fatalf("run %d: exit %d\n%s%s", i+1, code, stdout, stderr)
		}
	}
	ctx := context.Background()
	sql := func(q string, args ...any) {
		t.Helper()
		st, err := storage.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.SQL().Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := st.TargetByName(ctx, "b")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	sql(`UPDATE probe_states SET states = x'00ff00ff' WHERE target_id = ?`, tb.ID)
	remedy := fmt.Sprintf("DELETE FROM probe_states WHERE target_id = %d", tb.ID)

	stdout, stderr, code := run()
	if code != 3 || !strings.Contains(stderr, "run 3: detection failed for 1 target(s)") || !strings.Contains(stderr, "target b: detection state of target") ||
		!strings.Contains(stderr, remedy) || !strings.Contains(stderr, "db check") {
		t.Errorf("run 3, b's state damaged: exit %d, want 3 naming b and the row to remove:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "b: DETECTION FAILED") || !strings.Contains(stdout, "run 3 complete") {
		t.Errorf("run 3: summary, want the run and b's failed detection:\n%s", stdout)
	}

	stdout, stderr, code = run("--json")
	var out app.RunJSON
	if code != 3 || json.Unmarshal([]byte(stdout), &out) != nil || out.RunID != 4 || out.Status != storage.RunComplete || len(out.Targets) != 2 {
		t.Fatalf("run 4 --json: exit %d, want 3 with the run's document:\n%s\n%s", code, stdout, stderr)
	}
	var failed string
	for _, tj := range out.Targets {
		switch {
		case tj.Target == "b" && tj.DetectionError != nil:
			failed = *tj.DetectionError
		case tj.DetectionError != nil:
			t.Errorf("run 4 --json: %s detection_error %q", tj.Target, *tj.DetectionError)
		}
	}
	if !strings.Contains(failed, remedy) || !strings.Contains(stderr, failed) {
		t.Errorf("run 4 --json: b's detection_error %q, want the row to remove, as stderr says:\n%s", failed, stderr)
	}
	if !strings.Contains(stdout, `"detection_error": null`) {
		t.Errorf("run 4 --json: a's detection_error is not null:\n%s", stdout)
	}
	// a's change was detected, recorded and queued for GitHub.
	if len(out.Events) != 1 || out.Events[0].Kind != "policy_change" || strings.Join(out.Events[0].Targets, ",") != "a" {
		t.Errorf("run 4 --json: events %+v, want a's policy change", out.Events)
	}
	st, err = storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var queued int
	if err := st.SQL().QueryRow(`SELECT COUNT(*) FROM outbox WHERE action = 'open'`).Scan(&queued); err != nil || queued != 1 {
		t.Errorf("outbox: %d issue(s) queued (%v), want a's event's", queued, err)
	}
	st.Close()

	// db check names the same row, with the same remedy.
	stdout, _, code = runIn(t, "db", "check", "--json", "--no-bodies", "--db", db)
	var rep storage.CheckReport
	if code != 1 || json.Unmarshal([]byte(stdout), &rep) != nil || !strings.Contains(strings.Join(rep.Structure, "\n"), failed[:strings.Index(failed, " (")]) {
		t.Errorf("db check: exit %d, structure %q; want b's state named as run named it (%q)", code, rep.Structure, failed)
	}
	// SQLite finds the file sound: the state is driftprobe's finding, and
	// neither the JSON nor the text says SQLite's quick_check failed.
	if !rep.SQLiteCheckOK || len(rep.SQLite) != 0 || rep.OwnFindings() == 0 {
		t.Errorf("db check --json: sqlite_check_ok %v, sqlite %q; want quick_check ok and b's state driftprobe's finding", rep.SQLiteCheckOK, rep.SQLite)
	}
	stdout, stderr, code = runIn(t, "db", "check", "--no-bodies", "--db", db)
	if line := lineWith(stdout, "structure "); code != 1 || strings.Contains(stdout, "DAMAGED") || strings.Contains(stdout, "quick_check failed") ||
		!strings.Contains(line, "SQLite's quick_check ok") || !strings.Contains(line, "driftprobe's own checks found 1 problem(s)") ||
		strings.Contains(stdout, "\nsqlite: ") || !strings.Contains(stdout, "\nstructure: ") || !strings.Contains(stderr, "quick_check ok") {
		t.Errorf("db check, b's state damaged: exit %d; want SQLite's quick_check ok and driftprobe's finding apart, not DAMAGED:\n%s%s", code, stdout, stderr)
	}

	sql(remedy)
	stdout, stderr, code = run("--json")
	out = app.RunJSON{}
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
		t.Fatalf("run 5, b's row removed: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, tj := range out.Targets {
		if tj.DetectionError != nil || tj.StateLost != (tj.Target == "b") || (tj.Target == "b" && tj.InputChanges == 0) {
			t.Errorf("run 5 --json: %s detection_error %v, state_lost %v, input_changes %d; want b's baselines restarted", tj.Target, tj.DetectionError, tj.StateLost, tj.InputChanges)
		}
	}
}

// db prune with a target whose detection state does not decode: it prunes
// the other target as usual, keeps every observation of the damaged one
// and says so (a `kept whole:` line naming the target, the row and the
// DELETE; --json's kept_targets), exit 0. Once the row is removed, the
// next prune prunes that target too (kept_targets: []).
func TestDBPruneKeepsDamagedTargetWhole(t *testing.T) {
	dir := t.TempDir()
	db, cfg := filepath.Join(dir, "d.db"), filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(`targets:
  - {name: a, provider: sim, model: sim-large}
  - {name: b, provider: sim, model: sim-large}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if stdout, stderr, code := runIn(t, "run", "--no-progress", "--config", cfg, "--db", db); code != 0 {
			t.Fatalf("run %d: exit %d\n%s%s", i+1, code, stdout, stderr)
		}
	}
	ctx := context.Background()
	// count is the observations of each target, and those with bodies.
	count := func() map[string][2]int {
		t.Helper()
		st, err := storage.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		rows, err := st.SQL().Query(`SELECT t.name, COUNT(*), SUM(o.body IS NOT NULL) FROM observations o JOIN targets t ON t.id = o.target_id GROUP BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][2]int{}
		for rows.Next() {
			var name string
			var n, bodies int
			if err := rows.Scan(&name, &n, &bodies); err != nil {
				t.Fatal(err)
			}
			out[name] = [2]int{n, bodies}
		}
		return out
	}
	exec := func(q string) {
		t.Helper()
		st, err := storage.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.SQL().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := st.TargetByName(ctx, "b")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	exec(fmt.Sprintf(`UPDATE probe_states SET states = x'00ff00ff' WHERE target_id = %d`, tb.ID))
	remedy := fmt.Sprintf("DELETE FROM probe_states WHERE target_id = %d", tb.ID)
	before := count()

	stdout, stderr, code := runIn(t, "db", "prune", "--bodies", "1ns", "--config", cfg, "--db", db)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("kept whole: target b (id %d), ", tb.ID)) ||
		!strings.Contains(stdout, "detection state does not decode") || !strings.Contains(stdout, remedy) {
		t.Fatalf("db prune --bodies, b's state damaged: exit %d, want b named as kept whole with its row:\n%s%s", code, stdout, stderr)
	}
	after := count()
	if after["b"] != before["b"] || after["a"][0] != before["a"][0] || after["a"][1] >= before["a"][1] {
		t.Errorf("db prune --bodies: observations and bodies %v, before %v; want a's bodies dropped, b's kept", after, before)
	}

	stdout, stderr, code = runIn(t, "db", "prune", "--observations", "1ns", "--json", "--config", cfg, "--db", db)
	var res storage.PruneResult
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || len(res.KeptTargets) != 1 || res.ObservationsDeleted == 0 {
		t.Fatalf("db prune --observations --json: exit %d:\n%s%s", code, stdout, stderr)
	}
	if k := res.KeptTargets[0]; k.Target != "b" || k.TargetID != tb.ID || k.Observations == 0 || !strings.Contains(k.Reason, remedy) {
		t.Errorf("db prune --json: kept_targets %+v, want b with its row", res.KeptTargets)
	}
	if got := count(); got["b"] != before["b"] || got["a"][0] >= before["a"][0] {
		t.Errorf("db prune --observations: %v, before %v; want a's deleted, b's kept", got, before)
	}

	exec(remedy)
	stdout, stderr, code = runIn(t, "db", "prune", "--observations", "1ns", "--json", "--config", cfg, "--db", db)
	if code != 0 || !strings.Contains(stdout, `"kept_targets": []`) {
		t.Fatalf("db prune after the DELETE: exit %d, want kept_targets []:\n%s%s", code, stdout, stderr)
	}
	if got := count(); got["b"][0] >= before["b"][0] {
		t.Errorf("db prune after the DELETE: %v, before %v; want b's observations deleted", got, before)
	}
}
