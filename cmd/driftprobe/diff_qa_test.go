package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// diff reports each target's own part of the runs beside the runs'
// statuses (QA 23): a run is partial when any target failed, which says
// nothing of this one.
func TestDiffTargetStatus(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	cfg := writeFile(t, dir, "c.yaml", `
targets:
  - {name: sim-a, provider: sim, model: sim-large}
  - {name: flaky, provider: sim, model: sim-large, max_attempts: 1, sim: {error_rate: 1, error_status: 503}}
`)
	mustRun(t, 2, "--config", cfg, "--db", db)
	type out struct {
		FromStatus       string `json:"from_status"`
		ToStatus         string `json:"to_status"`
		FromTargetStatus string `json:"from_target_status"`
		ToTargetStatus   string `json:"to_target_status"`
	}
	for _, c := range []struct {
		target, want string
	}{{"sim-a", "complete"}, {"flaky", "degraded"}} {
		stdout, stderr, code := runIn(t, "diff", "--config", cfg, "--db", db, "--target", c.target, "--from", "1", "--to", "2", "--json")
		var d out
		if code != 0 || json.Unmarshal([]byte(stdout), &d) != nil {
			t.Fatalf("diff --target %s: exit %d: %s%s", c.target, code, stdout, stderr)
		}
		if d != (out{"partial", "partial", c.want, c.want}) {
			t.Errorf("diff --target %s: %+v; want runs partial, the target's part %s", c.target, d, c.want)
		}
		stdout, _, _ = runIn(t, "diff", "--config", cfg, "--db", db, "--target", c.target, "--from", "1", "--to", "2")
		if w := "status: run 1 partial (" + c.target + ": " + c.want + ") → run 2 partial (" + c.target + ": " + c.want + ")"; !strings.Contains(stdout, w) {
			t.Errorf("diff --target %s: text lacks %q:\n%s", c.target, w, stdout)
		}
	}
	// A run that recorded no part of the target (its process was killed).
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().Exec(`DELETE FROM run_targets WHERE run_id = 2`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	stdout, _, _ := runIn(t, "diff", "--config", cfg, "--db", db, "--target", "sim-a", "--from", "1", "--to", "2", "--json")
	var d out
	if json.Unmarshal([]byte(stdout), &d) != nil || d.ToTargetStatus != "unrecorded" || d.FromTargetStatus != "complete" {
		t.Errorf("killed run: %s", stdout)
	}
}

// diff of a target the database never saw explains why (QA 18): disabled
// in the config, configured but never run, or unknown.
func TestDiffTargetNeverRan(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	first := writeFile(t, dir, "a.yaml", "targets:\n  - {name: sim-a, provider: sim, model: sim-large}\n  - {name: ghost, provider: sim, model: sim-ghost, disabled: true}\n")
	mustRun(t, 2, "--config", first, "--db", db)
	cfg := writeFile(t, dir, "b.yaml", "targets:\n  - {name: sim-a, provider: sim, model: sim-large}\n  - {name: ghost, provider: sim, model: sim-ghost, disabled: true}\n  - {name: fresh, provider: sim, model: sim-xl}\n")
	base := []string{"diff", "--config", cfg, "--db", db, "--target"}
	expectExit(t, 2, `diff: target "ghost" is disabled in the config and has never run in this database, so it has no runs to diff: enable it (remove disabled: true)`, append(base, "ghost")...)
	expectExit(t, 2, `diff: target "fresh" is in the config but has never run in this database`, append(base, "fresh")...)
	expectExit(t, 2, `diff: target "nope" is not in the config (nor in the database)`, append(base, "nope")...)
	expectExit(t, 0, "sim-a: run 1 → run 2: 0 probes differ", append(base, "sim-a")...)
	// A target that ran once and was then disabled: the diff error says
	// it will not run again until enabled.
	disabled := writeFile(t, dir, "c.yaml", "targets:\n  - {name: sim-a, provider: sim, model: sim-large}\n  - {name: fresh, provider: sim, model: sim-xl, disabled: true}\n")
	mustRun(t, 1, "--config", cfg, "--db", db)
	expectExit(t, 2, "(target fresh is disabled in the config: it does not run until enabled)", "diff", "--config", disabled, "--db", db, "--target", "fresh")
}
