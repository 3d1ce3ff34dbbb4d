package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
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
		mustRun(t, 1, "--config", cfg, "--db", db)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--target", "sim-a", "--from", "99"}, 2, "diff: run 99: not found"},
		{[]string{"--target", "sim-a", "--from", "1", "--to", "99"}, 2, "diff: run 99: not found"},
		{[]string{"--target", "sim-a", "--from", "-1"}, 2, "diff: --from -1: want a run id (runs are numbered from 1"},
		{[]string{"--target", "sim-b", "--from", "1", "--to", "2"}, 2, "diff: run 2 did not probe target sim-b"},
		{[]string{"--target", "sim-b", "--from", "1", "--to", "3"}, 0, "sim-b: run 1 → run 3: 0 probes differ (of 62 probes compared)"},
		{[]string{"--target", "sim-a"}, 0, "sim-a: run 2 → run 3: 0 probes differ (of 62 probes compared)"},
		// --to alone: from the target's run before it, not before its latest.
		{[]string{"--target", "sim-a", "--to", "2"}, 0, "sim-a: run 1 → run 2: 0 probes differ (of 62 probes compared)"},
		{[]string{"--target", "sim-b", "--to", "3"}, 0, "sim-b: run 1 → run 3: 0 probes differ (of 62 probes compared)"},
		{[]string{"--target", "sim-a", "--to", "1"}, 2, "no run before run 1"},
		{[]string{"--target", "sim-a", "--from", "1", "--to", "1"}, 2, "nothing to compare"},
		// A run killed outright stored observations but no run_targets row.
		{[]string{"--target", "sim-a", "--from", "2", "--to", "3"}, 0, "sim-a: run 2 → run 3: 0 probes differ (of 62 probes compared)"},
	} {
		if len(c.args) == 6 && c.args[3] == "2" {
			st, err := storage.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.SQL().Exec(`DELETE FROM run_targets WHERE run_id = 3`); err != nil {
				t.Fatal(err)
			}
			st.Close()
		}
		stdout, stderr, code := runIn(t, append([]string{"diff", "--config", both, "--db", db}, c.args...)...)
		if code != c.code || !strings.Contains(stdout+stderr, c.msg) {
			t.Errorf("diff %v: exit %d (want %d): %s%s", c.args, code, c.code, stdout, stderr)
		}
	}
}

// events shows what each kind is about: score drift the scores that moved
// on the unchanged verdict (not every category of the verdicts; its
// headline names only normalized categories, never a raw score key such as
// prompt.privacy), and nondeterminism the two verdicts the probe was
// marked between (never labelled as its latest verdict) and the flip rate.
func TestEventsDisplayByKind(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, sim string
		runs      int
		want      []string
		not       []string
	}{
		{"drift", "{policies: [{from_run: 3, score_shift: {privacy: -0.2}}]}", 5,
			[]string{"[SCORE_DRIFT] loosened (privacy) on s", "SCORES MOVED", "privacy 0.", "prompt.privacy 0.", "→0."}, []string{"harassment", "(privacy, prompt.privacy)"}},
		// A move within score_tolerance is noise: it neither shows nor
		// makes the drift "mixed".
		{"drift-one-way", "{policies: [{from_run: 3, score_shift: {privacy: -0.2, violence: 0.01}}]}", 5,
			[]string{"[SCORE_DRIFT] loosened (privacy) on s"}, []string{"mixed", "violence 0.", "prompt.privacy)"}},
		{"noise", "{noise: 0.5, noise_band: 0.3}", 6,
			[]string{"[NONDETERMINISM]", "MARKED BETWEEN", " ↔ ", "FLIP_RATE", "%"}, []string{"LATEST"}},
	} {
		cfg, db := filepath.Join(dir, c.name+".yaml"), filepath.Join(dir, c.name+".db")
		os.WriteFile(cfg, []byte("targets:\n  - {name: s, provider: sim, model: m, sim: "+c.sim+"}\n"), 0o644)
		mustRun(t, c.runs, "--config", cfg, "--db", db)
		stdout, stderr, code := runIn(t, "events", "--config", cfg, "--db", db)
		if code != 0 {
			t.Fatalf("%s events: exit %d: %s", c.name, code, stderr)
		}
		// The listing opens with its first event, not a blank line (the
		// separator a run's summary puts before its events).
		if !strings.HasPrefix(stdout, "event ") {
			t.Errorf("%s: events do not open with an event line:\n%q", c.name, stdout[:min(len(stdout), 80)])
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: events lack %q:\n%s", c.name, w, stdout)
			}
		}
		for _, w := range c.not {
			if strings.Contains(stdout, w) {
				t.Errorf("%s: events name %q:\n%s", c.name, w, stdout)
			}
		}
	}
}

// A run whose observations retention deleted cannot be diffed: diff says
// so instead of "0 probe(s) differ".
func TestDiffPrunedRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "d.db")
	mustRun(t, 3, "--db", db)
	// 1ns: every run is past the cutoff; the latest complete one is kept.
	if _, stderr, code := runIn(t, "db", "prune", "--db", db, "--observations", "1ns"); code != 0 {
		t.Fatalf("db prune: exit %d: %s", code, stderr)
	}
	_, stderr, code := runIn(t, "diff", "--db", db, "--target", "sim-a", "--from", "1", "--to", "3")
	if code != 2 || !strings.Contains(stderr, "run 1: retention deleted its observations") {
		t.Errorf("diff of a pruned run: exit %d: %s", code, stderr)
	}
}
