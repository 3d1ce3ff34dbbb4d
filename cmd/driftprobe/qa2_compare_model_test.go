package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// QA2: compare labels the side it read with the model the target is
// configured with now, not the model the compared run sent. Here the
// candidate ran twice as sim-large; the config was then switched to
// sim-large-2 (the upgrade being evaluated) and that run degraded, so
// compare reads run 2 — whose requests all said "model":"sim-large" — and
// reports to_side.model "sim-large-2". A CI gate on the upgrade thus
// prints a PASS labelled with the new model, computed from the old
// model's answers.
func TestQA2CompareSideModelIsTheComparedRunsModel(t *testing.T) {
	dir := t.TempDir()
	c1, c2, db := filepath.Join(dir, "c1.yaml"), filepath.Join(dir, "c2.yaml"), filepath.Join(dir, "x.db")
	os.WriteFile(c1, []byte("targets:\n  - {name: cur, provider: sim, model: sim-large}\n  - {name: cand, provider: sim, model: sim-large}\n"), 0o644)
	os.WriteFile(c2, []byte("targets:\n  - {name: cur, provider: sim, model: sim-large}\n  - {name: cand, provider: sim, model: sim-large-2, base_url: \"http://127.0.0.1:9/v1\", max_attempts: 1}\n"), 0o644)
	for i := 0; i < 2; i++ {
		if _, stderr, code := runIn(t, "run", "--config", c1, "--db", db, "--no-progress"); code != 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
	}
	// The upgraded candidate's first run: its provider unreachable (degraded).
	runIn(t, "run", "--config", c2, "--db", db, "--no-progress")

	stdout, stderr, code := runIn(t, "compare", "--config", c2, "--db", db, "--from", "cur", "--to", "cand", "--json")
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, stderr)
	}
	var c struct {
		ToSide struct {
			Run   int64  `json:"run"`
			Model string `json:"model"`
		} `json:"to_side"`
	}
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	// What the compared run actually sent.
	sq, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	var body []byte
	if err := sq.QueryRow(`SELECT o.request_body FROM observations o JOIN targets t ON t.id = o.target_id WHERE t.name = 'cand' AND o.run_id = ? AND o.sample = 0 LIMIT 1`, c.ToSide.Run).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"model":"sim-large"`) {
		t.Fatalf("setup: run %d's request body: %s", c.ToSide.Run, body)
	}
	if c.ToSide.Model != "sim-large" {
		t.Errorf("to_side: run %d, whose requests sent \"model\":\"sim-large\", is labelled model %q (the target's current config)", c.ToSide.Run, c.ToSide.Model)
	}
}
