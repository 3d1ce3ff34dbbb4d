package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

// `replay` re-reads stored answers offline: a clean run reads as recorded
// (exit 0); a tampered verdict and a tampered body hash are each reported
// (exit 1).
func TestReplay(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	if _, stderr, code := runIn(t, "run", "--db", db, "--no-progress"); code != 0 {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	stdout, stderr, code := runIn(t, "replay", "--json", "--db", db)
	if code != 0 {
		t.Fatalf("replay of an untouched run: exit %d: %s\n%s", code, stderr, stdout)
	}
	var rep app.ReplayReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.RunID != 1 || rep.Replayed != 62 || rep.Same != 62 || len(rep.Diffs) != 0 {
		t.Fatalf("report: %+v", rep)
	}

	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var blocked, other int64
	if err := st.SQL().QueryRowContext(ctx, `SELECT id FROM observations WHERE class = 'blocked_output' ORDER BY id LIMIT 1`).Scan(&blocked); err != nil {
		t.Fatal(err)
	}
	if err := st.SQL().QueryRowContext(ctx, `SELECT id FROM observations WHERE class = 'allowed' ORDER BY id LIMIT 1`).Scan(&other); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().ExecContext(ctx, `UPDATE observations SET class = 'allowed', categories = '' WHERE id = ?`, blocked); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().ExecContext(ctx, `UPDATE observations SET body_sha256 = 'deadbeef' WHERE id = ?`, other); err != nil {
		t.Fatal(err)
	}
	st.Close()

	stdout, _, code = runIn(t, "replay", "--json", "--db", db, "--run", "1")
	if code != 1 {
		t.Fatalf("replay of a tampered run: exit %d, want 1\n%s", code, stdout)
	}
	rep = app.ReplayReport{}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Diffs) != 2 || rep.Same != 60 {
		t.Fatalf("diffs: %+v", rep)
	}
	for _, d := range rep.Diffs {
		switch d.ObservationID {
		case blocked:
			if d.Stored.Verdict != "allowed" || d.Replayed.Verdict != "blocked_output" || !d.BodyIntact {
				t.Errorf("tampered verdict: %+v", d)
			}
		case other:
			if d.BodyIntact || d.Stored.Verdict != d.Replayed.Verdict {
				t.Errorf("tampered hash: %+v", d)
			}
		default:
			t.Errorf("unexpected diff %+v", d)
		}
	}
	text, _, _ := runIn(t, "replay", "--db", db, "--target", "sim-a")
	if !strings.Contains(text, "2 differ") || !strings.Contains(text, "blocked_output") {
		t.Errorf("text report:\n%s", text)
	}
	if _, _, code := runIn(t, "replay", "--db", db, "--target", "nope"); code != 2 {
		t.Errorf("unknown target: exit %d, want 2", code)
	}
}
