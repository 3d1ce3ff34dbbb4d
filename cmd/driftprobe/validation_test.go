package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/yamlx"
)

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// expectExit runs the CLI in this process and checks the exit code and a
// fragment of its output.
func expectExit(t *testing.T, code int, want string, args ...string) string {
	t.Helper()
	stdout, stderr, got := runIn(t, args...)
	if got != code || !strings.Contains(stdout+stderr, want) {
		t.Errorf("%v: exit %d (want %d), output %q (want %q)", args, got, code, stdout+stderr, want)
	}
	return stdout + stderr
}

// --log-level takes debug, info, warn or error; anything else is a usage
// error naming them, before the command runs.
func TestLogLevelValidated(t *testing.T) {
	expectExit(t, 2, `invalid argument "bogus" for "--log-level" flag: want debug, info, warn, error`, "--log-level", "bogus", "config", "check")
	expectExit(t, 2, `"--log-level" flag: want debug, info, warn, error`, "version", "--log-level", "verbose")
	for _, l := range []string{"debug", "info", "warn", "error", "INFO"} {
		expectExit(t, 0, "ok", "config", "check", "--log-level", l)
	}
}

// Numeric bounds reach the CLI as FILE:LINE: FIELD: problem, exit 2.
func TestConfigCheckNumericBounds(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ extra, want string }{
		{"    timeout: -5s\n", "c.yaml:5: targets[0].timeout: -5s: must be at least 1s"},
		{"    max_tokens: -1\n", "c.yaml:5: targets[0].max_tokens: -1: must be at least 1"},
		{"    max_attempts: 100000\n", "c.yaml:5: targets[0].max_attempts: 100000: must be at most 10"},
		{"    breaker: {failures: 5, cooldown: 0s}\n", "c.yaml:5: targets[0].breaker.cooldown: 0s: must be at least 1s"},
		{"    seed: -1\n", "c.yaml:5: targets[0].seed: -1: must be between 0 and 2147483647"},
	} {
		cfg := writeFile(t, dir, "c.yaml", "targets:\n  - name: s\n    provider: sim\n    model: m\n"+tt.extra)
		expectExit(t, 2, tt.want, "config", "check", "--config", cfg)
	}
}

// A config whose every target is disabled is refused like one without
// targets: it would run nothing and report success.
func TestAllTargetsDisabled(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", "targets:\n  - {name: a, provider: sim, model: m, disabled: true}\n  - {name: b, provider: sim, model: m, disabled: true}\n")
	const want = "c.yaml:1: targets: every target is disabled: at least one must be enabled"
	expectExit(t, 2, want, "config", "check", "--config", cfg)
	db := filepath.Join(dir, "x.db")
	expectExit(t, 2, want, "run", "--config", cfg, "--db", db)
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run created the database: %v", err)
	}
	// One enabled target is enough.
	cfg = writeFile(t, dir, "c.yaml", "targets:\n  - {name: a, provider: sim, model: m, disabled: true}\n  - {name: b, provider: sim, model: m}\n")
	// The disabled one is counted apart, not left out of the count.
	expectExit(t, 0, "ok (1 target, 1 disabled, corpus ", "config", "check", "--config", cfg)
}

// compareSetup records one run of two targets; it returns the config and
// the database.
func compareSetup(t *testing.T) (dir, cfg, db string) {
	t.Helper()
	dir = t.TempDir()
	cfg = writeFile(t, dir, "c.yaml", "targets:\n  - {name: current, provider: sim, model: m}\n  - {name: cand, provider: sim, model: m2}\n")
	db = filepath.Join(dir, "x.db")
	if _, stderr, code := runIn(t, "run", "--config", cfg, "--db", db); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	return dir, cfg, db
}

func TestCompareFlagsValidated(t *testing.T) {
	dir, cfg, db := compareSetup(t)
	base := []string{"compare", "--config", cfg, "--db", db}
	args := func(a ...string) []string { return append(append([]string(nil), base...), a...) }
	expectExit(t, 2, `compare: --from and --to are the same target "current"`, args("--from", "current", "--to", "current")...)
	expectExit(t, 2, "compare: --max-new-blocks -1: must be at least 0", args("--from", "current", "--to", "cand", "--max-new-blocks", "-1")...)
	expectExit(t, 2, "compare: --json and --format markdown: choose one", args("--from", "current", "--to", "cand", "--format", "markdown", "--json")...)
	expectExit(t, 2, `compare: target "nope" is not in the config (nor in the database)`, args("--from", "nope", "--to", "cand")...)
	expectExit(t, 2, `compare: target "nope" is not in the config (nor in the database)`, args("--from", "current", "--to", "nope")...)
	// Still accepted: --json with --format json, and the plain forms.
	out := expectExit(t, 0, `"over_blocking"`, args("--from", "current", "--to", "cand", "--format", "json", "--json")...)
	if !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("--format json --json: not JSON: %q", out)
	}
	expectExit(t, 0, "| category |", args("--from", "current", "--to", "cand", "--format", "markdown")...)
	// A target removed from the config keeps its history: its latest
	// complete run can still be compared.
	one := writeFile(t, dir, "one.yaml", "targets:\n  - {name: current, provider: sim, model: m}\n")
	expectExit(t, 0, "compare current (run 1) → cand (run 1)", "compare", "--config", one, "--db", db, "--from", "current", "--to", "cand")
	// ... but --run needs it in the config.
	expectExit(t, 2, `compare: target "cand" is not in the config`, "compare", "--config", one, "--db", db, "--from", "current", "--to", "cand", "--run")
}

// events --target names a target of the config or of the database; one
// neither knows is a usage error, as it is for diff.
func TestEventsUnknownTarget(t *testing.T) {
	dir, cfg, db := compareSetup(t)
	expectExit(t, 2, `events: target "nope" is not in the config (nor in the database)`, "events", "--config", cfg, "--db", db, "--target", "nope")
	expectExit(t, 2, `events: target "nope" is not in the config (nor in the database)`, "events", "--config", cfg, "--db", db, "--target", "nope", "--json")
	expectExit(t, 0, "no events", "events", "--config", cfg, "--db", db, "--target", "cand")
	// Removed from the config, still in the database: listable.
	one := writeFile(t, dir, "one.yaml", "targets:\n  - {name: current, provider: sim, model: m}\n")
	expectExit(t, 0, "no events", "events", "--config", one, "--db", db, "--target", "cand")
	// In the config, never run yet: no events, not an error.
	more := writeFile(t, dir, "more.yaml", "targets:\n  - {name: current, provider: sim, model: m}\n  - {name: fresh, provider: sim, model: m}\n")
	expectExit(t, 0, "[]", "events", "--config", more, "--db", db, "--target", "fresh", "--json")
}

func TestDemoRunsValidated(t *testing.T) {
	for _, n := range []string{"0", "-3", "101"} {
		expectExit(t, 2, "demo: --runs "+n+": must be between 1 and 100 (the scripted policy change happens at run 3 and is confirmed at run 4", "demo", "--runs", n)
	}
}

// A bad --pushgateway is refused before anything is sent or stored.
func TestRunPushgatewayValidatedFirst(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"not a url", "ftp://gw:9091", "http://", "pushgateway:9091"} {
		db := filepath.Join(dir, "x.db")
		expectExit(t, 2, "run: --pushgateway "+`"`+u+`": want an http(s) URL`, "run", "--db", db, "--pushgateway", u)
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("--pushgateway %q: the run went ahead (database exists: %v)", u, err)
		}
	}
}

// --sim-config takes the sim block bare or under a single sim: key, and
// reports problems as FILE:LINE: FIELD: problem, one per field.
func TestSimConfigForms(t *testing.T) {
	dir := t.TempDir()
	bare := writeFile(t, dir, "bare.yaml", "noise: 0.1\npolicies:\n  - from_run: 2\n    thresholds: {violence: 0.2}\n")
	wrapped := writeFile(t, dir, "wrapped.yaml", "sim:\n  noise: 0.1\n  policies:\n    - from_run: 2\n      thresholds: {violence: 0.2}\n")
	for _, f := range []string{bare, wrapped} {
		c, err := loadSimConfig(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Noise != 0.1 || len(c.Policies) != 1 || c.Policies[0].FromRun != 2 || c.Policies[0].Thresholds["violence"] != 0.2 {
			t.Errorf("%s: %+v", f, c)
		}
	}
	for _, tt := range []struct{ name, src, want string }{
		{"bare-zero.yaml", "policies:\n  - from_run: 0\n", "bare-zero.yaml:2: policies[0].from_run: 0: run ids start at 1"},
		{"wrapped-zero.yaml", "sim:\n  policies:\n    - from_run: 0\n", "wrapped-zero.yaml:3: sim.policies[0].from_run: 0: run ids start at 1"},
		{"extra.yaml", "sim: {noise: 0.1}\ntargets: []\n", "extra.yaml:2: targets: unknown field"},
		{"unknown.yaml", "noise: 0.1\ncolour: red\n", "unknown.yaml:2: colour: unknown field"},
	} {
		f := writeFile(t, dir, tt.name, tt.src)
		_, err := loadSimConfig(f)
		var l yamlx.List
		if !errors.As(err, &l) || len(l) != 1 || l[0].Error() != filepath.Join(dir, tt.want) {
			t.Errorf("%s: got %v, want exactly %q", tt.name, err, tt.want)
		}
	}
	// Through the command: exit 2 before listening.
	bad := writeFile(t, dir, "bad.yaml", "sim:\n  noise: 2\n")
	expectExit(t, 2, "bad.yaml:2: sim.noise: 2: must be between 0 and 1", "sim", "--listen", "127.0.0.1:0", "--sim-config", bad)
	// A file it cannot read is named first, as a config that cannot be read.
	missing := filepath.Join(dir, "missing.yaml")
	expectExit(t, 2, missing+": cannot read sim config: no such file or directory", "sim", "--listen", "127.0.0.1:0", "--sim-config", missing)
}

// A demo of fewer than 5 runs says that attribution is left out rather
// than dropping the section without a word.
func TestDemoShortSaysAttributionIsLeftOut(t *testing.T) {
	stdout, stderr, code := runIn(t, "demo", "--runs", "2")
	if code != 0 {
		t.Fatalf("demo --runs 2: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "attribution is left out: it needs the change and an hour after it, 5 runs; this demo made 2") {
		t.Errorf("demo --runs 2 does not say attribution is left out:\n%s", stdout)
	}
}
