package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// outbox --skip gives up a pending row (a comment on an issue kept
// locked): recorded done, never sent, gone from the listing; a row that is
// not pending is named and fails the command; --skip writes, so it
// excludes --dry-run; with --json its note goes to stderr.
func TestOutboxSkip(t *testing.T) {
	_, db, withGH, _ := outboxConfigs(t)
	for i := 0; i < 4; i++ {
		runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	}
	stdout, _, _ := runIn(t, "outbox", "--config", withGH, "--db", db, "--json")
	var rows []struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 || rows[0].ID != 1 {
		t.Fatalf("scenario changed: pending %s", stdout)
	}
	if _, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--skip", "1", "--dry-run"); code != 2 || !strings.Contains(stderr, "--skip and --dry-run exclude each other") {
		t.Errorf("--skip --dry-run: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--skip", "1", "--json")
	if code != 0 || strings.TrimSpace(stdout) != "[]" || !strings.Contains(stderr, "skipped outbox row(s) 1: recorded done, never delivered") {
		t.Errorf("--skip 1 --json: exit %d\n%s\nstderr: %s", code, stdout, stderr)
	}
	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--skip", "1")
	if code == 0 || !strings.Contains(stdout, "outbox row(s) 1 not pending") || !strings.Contains(stderr, "--skip: outbox row(s) 1 are not pending") {
		t.Errorf("--skip of a row no longer pending: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, _, code := runIn(t, "outbox", "--config", withGH, "--db", db); code != 0 || !strings.Contains(stdout, "outbox empty") {
		t.Errorf("after --skip: exit %d\n%s", code, stdout)
	}
}
