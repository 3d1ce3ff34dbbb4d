package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// config check warns (stderr, exit 0) about an anthropic base_url ending
// in the /v1 the adapter appends itself, at its line, naming the doubled
// path and the fix; an openai_compatible root ending in /v1 is no warning.
func TestConfigCheckWarnsDoubledVersion(t *testing.T) {
	cfg, stderr, code := configCheck(t, `targets:
  - {name: a, provider: anthropic, model: claude-x, base_url: "https://api.anthropic.com/v1"}
  - {name: v, provider: openai_compatible, model: m, base_url: "https://vllm.example.com/v1"}
`)
	want := "driftprobe: warning: " + cfg + ":2: targets[0].base_url: ends in /v1, but the anthropic adapter appends the API version itself: requests would go to /v1/v1/messages"
	if code != 0 || !strings.Contains(stderr, want) || strings.Count(stderr, "warning:") != 1 {
		t.Errorf("exit %d, stderr:\n%s\nwant %q", code, stderr, want)
	}
}

// configCheck writes yaml to a config file and runs config check --no-keys
// on it, returning the file's path, stderr and the exit code.
func configCheck(t *testing.T, yaml string) (cfg, stderr string, code int) {
	t.Helper()
	cfg = filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runIn(t, "config", "check", "--no-keys", "--config", cfg)
	return cfg, stderr, code
}

// A config whose database names a directory is a FILE:LINE problem of
// config check (exit 2).
func TestConfigCheckDatabaseDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("targets:\n  - {name: s, provider: sim, model: sim-large}\ndatabase: \""+dir+"\"\n"), 0o644)
	_, stderr, code := runIn(t, "config", "check", "--config", cfg)
	want := cfg + ":3: database: " + dir + " is a directory, not a database file"
	if code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant %q", code, stderr, want)
	}
}

// diff --from after --to is a usage error naming both (and the swap);
// --from alone after the target's latest run names that run as --to's
// default.
func TestDiffFromAfterTo(t *testing.T) {
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "d.db")
	os.WriteFile(cfg, []byte("targets:\n  - {name: sim-a, provider: sim, model: sim-large}\n"), 0o644)
	mustRun(t, 3, "--config", cfg, "--db", db)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "3", "--to", "1"}, "diff: --from 3 is after --to 1: --from names the earlier run (swap them: --from 1 --to 3)"},
		{[]string{"--from", "3", "--to", "2", "--json"}, "diff: --from 3 is after --to 2: --from names the earlier run (swap them: --from 2 --to 3)"},
		{[]string{"--from", "3", "--to", "3"}, "nothing to compare"},
	} {
		stdout, stderr, code := runIn(t, append([]string{"diff", "--config", cfg, "--db", db, "--target", "sim-a"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant %q", c.args, code, stdout, stderr, c.want)
		}
	}
	// In order, the same runs diff as usual.
	if stdout, stderr, code := runIn(t, "diff", "--config", cfg, "--db", db, "--target", "sim-a", "--from", "1", "--to", "3"); code != 0 || !strings.Contains(stdout, "sim-a: run 1 → run 3") {
		t.Errorf("exit %d: %s%s", code, stdout, stderr)
	}
}

// attribute --category-label naming a label no series carries warns, in
// the text (stderr) and in the JSON's warnings, listing the labels the
// series do carry.
func TestAttributeCategoryLabelMissing(t *testing.T) {
	_, cfg, db := attrSetup(t)
	srv := promReplay(t)
	args := []string{"attribute", "--config", cfg, "--db", db, "--prometheus", srv.URL, "--query", q, "--total-query", tq,
		"--since", "10h", "--step", "1h", "--end", "2026-11-20T10:20:00Z", "--category-label", "reason"}
	const want = `prometheus: no series of the query carries the category label "reason" (--category-label, attribution.category_label); the series carry the labels "category", "target": every block on a target is counted in one segment`
	_, stderr, code := runIn(t, args...)
	if code != 0 || !strings.Contains(stderr, "driftprobe: warning: "+want) {
		t.Errorf("text: exit %d, stderr:\n%s", code, stderr)
	}
	stdout, stderr, code := runIn(t, append(args, "--json")...)
	if r := attrJSON(t, stdout); code != 0 || !strings.Contains(strings.Join(r.Warnings, "\n"), want) {
		t.Errorf("json: exit %d, warnings %q, stderr %s", code, r.Warnings, stderr)
	}
}

// plan opens no database: a --db given to it is ignored, and says so on
// stderr (exit 0, stdout unchanged); without --db, no warning.
func TestPlanDBIgnoredWarns(t *testing.T) {
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "d.db")
	os.WriteFile(cfg, []byte("targets:\n  - {name: sim-a, provider: sim, model: sim-large}\n"), 0o644)
	const want = "driftprobe: warning: plan: --db is ignored: plan renders the requests a run would send and opens no database (leave --db out)"
	with, stderr, code := runIn(t, "plan", "--json", "--config", cfg, "--db", db)
	if code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("plan --db: exit %d, stderr:\n%s", code, stderr)
	}
	without, stderr, code := runIn(t, "plan", "--json", "--config", cfg)
	if code != 0 || stderr != "" || without != with {
		t.Errorf("plan: exit %d, stderr %q, stdout differs: %v", code, stderr, without != with)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("plan --db created the database: %v", err)
	}
}
