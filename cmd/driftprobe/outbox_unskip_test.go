package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/ghissue"
)

// outbox --unskip undoes --skip: the row is pending again, listed with
// why (here it waits as it did before the skip: its delivery had failed,
// nothing listens on the configured GitHub); with --json the note goes to stderr and stdout stays the rows. It
// writes, so it excludes --dry-run; --skip and --unskip of the same row in
// one command is a usage error (exit 2) that changes nothing; an id that
// was not skipped (unknown, pending) is named with its reason and exits
// 3, as --skip does for an id not pending, while the others are undone.
func TestOutboxUnskip(t *testing.T) {
	_, db, withGH, _ := outboxConfigs(t)
	for i := 0; i < 4; i++ {
		runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	}
	type pendingRow struct {
		ID        int64  `json:"id"`
		LastError string `json:"last_error"`
		Reason    string `json:"reason"`
	}
	list := func() []pendingRow {
		t.Helper()
		stdout, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--json")
		var rows []pendingRow
		if err := json.Unmarshal([]byte(stdout), &rows); err != nil || code != 0 {
			t.Fatalf("outbox --json: exit %d, %v\n%s%s", code, err, stdout, stderr)
		}
		return rows
	}
	if rows := list(); len(rows) != 1 || rows[0].ID != 1 {
		t.Fatalf("scenario changed: pending %+v", rows)
	}
	if _, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--skip", "1"); code != 0 {
		t.Fatalf("--skip 1: exit %d: %s", code, stderr)
	}

	if _, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--unskip", "1", "--dry-run"); code != 2 || !strings.Contains(stderr, "--unskip and --dry-run exclude each other") {
		t.Errorf("--unskip --dry-run: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--unskip", "7,1", "--skip", "1"); code != 2 || !strings.Contains(stderr, "--skip and --unskip both name outbox row(s) 1") {
		t.Errorf("--unskip 7,1 --skip 1: exit %d: %s", code, stderr)
	}
	if rows := list(); len(rows) != 0 {
		t.Errorf("a refused command changed the outbox: pending %+v", rows)
	}

	stdout, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--unskip", "1,99", "--unskip", "1", "--json")
	var rows []pendingRow
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 || rows[0].ID != 1 || rows[0].LastError != ghissue.UnskipNote || !strings.Contains(rows[0].Reason, ghissue.UnskipNote) {
		t.Errorf("--unskip 1,99 --json: stdout %s (%v), want row 1 pending again, noted", stdout, err)
	}
	for _, want := range []string{
		"outbox row 1 (event 1, open) is pending again: its skip is undone; delivered in turn",
		"outbox row 99 not unskipped: unknown: no outbox row has this id",
		"--unskip: outbox row(s) 99 were not skipped",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--unskip 1,99 --json: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != 3 {
		t.Errorf("--unskip of an unknown row: exit %d, want 3", code)
	}

	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--unskip", "1")
	if code != 3 || !strings.Contains(stdout, "outbox row 1 not unskipped: pending, not skipped: nothing to undo") || !strings.Contains(stderr, "--unskip: outbox row(s) 1 were not skipped") {
		t.Errorf("--unskip of a pending row: exit %d\n%s%s", code, stdout, stderr)
	}
	if rows := list(); len(rows) != 1 || rows[0].ID != 1 {
		t.Errorf("after --unskip: pending %+v, want row 1", rows)
	}
	if stdout, _, _ := runIn(t, "outbox", "--help"); !strings.Contains(stdout, "--unskip") {
		t.Errorf("outbox --help does not mention --unskip:\n%s", stdout)
	}
}
