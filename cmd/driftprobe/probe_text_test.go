package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// The text tables of compare, diff, replay and events print probe ids
// (and roles, targets, categories) read from the database escaped, as
// plan does: a corpus refuses such ids, but a database is evidence that
// may come from elsewhere (an incident review opens a copy), and an id
// holding an escape sequence or a tab must neither drive the terminal nor
// shift the table's columns. Valid ids print as they are.
func TestTextTablesEscapeProbeIDs(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	cfg := writeFile(t, dir, "c.yaml", `
targets:
  - name: cur
    provider: sim
    model: sim-large
    sim: {policies: [{from_run: 3, thresholds: {violence: 0.2}}]}
  - name: cand
    provider: sim
    model: sim-xl
    sim: {policies: [{from_run: 1, thresholds: {harassment: 0.2}}]}
`)
	mustRun(t, 4, "--config", cfg, "--db", db)
	const evil = "evil\x1b[2J\tx"
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		// A probe cur flipped on in run 3 (an event since run 4), which
		// cand still allows.
		`UPDATE observations SET probe_id = '` + evil + `' WHERE probe_id = 'violence-borderline-kill-process'`,
		`UPDATE event_probes SET probe_id = '` + evil + `' WHERE probe_id = 'violence-borderline-kill-process'`,
		// A stored verdict its bytes no longer read as: listed by replay.
		`UPDATE observations SET class = 'allowed', stage = '', categories = '' WHERE id = (SELECT o.id FROM observations o JOIN targets t ON t.id = o.target_id
			WHERE t.name = 'cur' AND o.run_id = 3 AND o.sample = 0 AND o.probe_id = '` + evil + `')`,
	} {
		if _, err := st.SQL().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st.Close()
	for _, args := range [][]string{
		{"compare", "--from", "cur", "--to", "cand", "--max-new-blocks", "100"},
		{"diff", "--target", "cur", "--from", "3", "--to", "4"},
		{"replay", "--run", "3"},
		{"events"},
	} {
		stdout, stderr, code := runIn(t, append(args, "--config", cfg, "--db", db)...)
		if code != 0 && code != 1 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if strings.ContainsAny(stdout, "\x1b\t") {
			t.Errorf("%v: a raw escape or tab reaches the terminal:\n%q", args, stdout)
		}
		if !strings.Contains(stdout, `evil\x1b[2J\tx`) {
			t.Errorf("%v: the id is not shown escaped:\n%s", args, stdout)
		}
	}
}
