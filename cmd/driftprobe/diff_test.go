package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// diff names a run that does not exist, or that did not probe the target,
// instead of reporting that nothing differs.
func TestDiffMissingRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	both, onlyA := filepath.Join(dir, "both.yaml"), filepath.Join(dir, "a.yaml")
	os.WriteFile(both, []byte(twoSims), 0o644)
	os.WriteFile(onlyA, []byte("targets:\n  - {name: sim-a, provider: sim, model: sim-large}\n"), 0o644)
	for _, cfg := range []string{both, onlyA, both} {
		if _, stderr, code := runIn(t, "run", "--config", cfg, "--db", db, "--no-progress"); code != 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--target", "sim-a", "--from", "99"}, 2, "diff: run 99: not found"},
		{[]string{"--target", "sim-a", "--from", "1", "--to", "99"}, 2, "diff: run 99: not found"},
		{[]string{"--target", "sim-a", "--from", "-1"}, 2, "diff: run -1: not found"},
		{[]string{"--target", "sim-b", "--from", "1", "--to", "2"}, 2, "diff: run 2 did not probe target sim-b"},
		{[]string{"--target", "sim-b", "--from", "1", "--to", "3"}, 0, "sim-b: run 1 → run 3: 0 probe(s) differ"},
		{[]string{"--target", "sim-a"}, 0, "sim-a: run 2 → run 3: 0 probe(s) differ"},
	} {
		stdout, stderr, code := runIn(t, append([]string{"diff", "--config", both, "--db", db}, c.args...)...)
		if code != c.code || !strings.Contains(stdout+stderr, c.msg) {
			t.Errorf("diff %v: exit %d (want %d): %s%s", c.args, code, c.code, stdout, stderr)
		}
	}
}

// Changing a target's parameters changes its request bytes: the run says
// the baselines restart (text and --json), instead of resetting them
// silently.
func TestRunSaysBaselinesRestart(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	os.WriteFile(a, []byte("targets:\n  - {name: sim-a, provider: sim, model: sim-large}\n"), 0o644)
	os.WriteFile(b, []byte("targets:\n  - {name: sim-a, provider: sim, model: sim-large, max_tokens: 32}\n"), 0o644)
	if stdout, stderr, code := runIn(t, "run", "--config", a, "--db", db, "--no-progress"); code != 0 || strings.Contains(stdout, "baselines restart") {
		t.Fatalf("first run: exit %d: %s%s", code, stdout, stderr)
	}
	stdout, stderr, code := runIn(t, "run", "--config", b, "--db", db, "--no-progress")
	if code != 0 || !strings.Contains(stdout, "sim-a: 62 probe(s) sent other request bytes than their baseline") {
		t.Errorf("run after max_tokens changed: exit %d: %s%s", code, stdout, stderr)
	}
	stdout, _, _ = runIn(t, "run", "--json", "--config", b, "--db", db, "--no-progress")
	if !strings.Contains(stdout, `"input_changes": 0`) {
		t.Errorf("the next run changes nothing: %s", stdout)
	}
}
