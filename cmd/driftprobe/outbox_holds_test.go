package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/storage"
)

// A GitHub wait recorded wrong (a bogus Retry-After recorded before waits
// were capped: until 2036) keeps every delivery from sending anything.
// `driftprobe outbox` shows the waits in force (until, scope, reason; on
// stderr with --json, whose array stays the rows); `outbox --clear-holds`
// deletes every wait, says which, and makes the rows they deferred due
// again; --send --json carries the waits in force as holds.
func TestOutboxClearHolds(t *testing.T) {
	_, db, withGH, _ := outboxConfigs(t)
	for i := 0; i < 4; i++ {
		// Delivery fails (nothing listens on port 1): an outage's wait.
		runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	}
	const bogus = "2036-11-28T00:58:55Z"
	const reason = "GitHub secondary rate limit (429) until " + bogus + ": You have exceeded a secondary rate limit"
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO github_holds (api, credential, until, failures, reason, at) VALUES ('http://127.0.0.1:1', 'token $GITHUB_TOKEN', ?, 1, ?, ?)`, []any{bogus, reason, now}},
		{`UPDATE outbox SET next_attempt_at = ?, last_error = ? WHERE sent_at = ''`, []any{bogus, "not attempted: " + reason}},
	} {
		if _, err := st.SQL().ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	stdout, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db)
	if code != 0 || !strings.Contains(stdout, "GitHub asked driftprobe to wait") || !strings.Contains(stdout, "until "+bogus) ||
		!strings.Contains(stdout, "token $GITHUB_TOKEN on http://127.0.0.1:1 (rate limit): "+reason) || !strings.Contains(stdout, "driftprobe outbox --clear-holds") {
		t.Errorf("outbox: exit %d, want the wait in force listed\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--json")
	var rows []struct {
		ID   int64      `json:"id"`
		Next *time.Time `json:"next_attempt_at"`
	}
	if err := json.Unmarshal([]byte(stdout), &rows); code != 0 || err != nil || len(rows) == 0 || !strings.Contains(stderr, "until "+bogus) {
		t.Errorf("outbox --json: exit %d, %v: want the rows' array on stdout, the wait on stderr\n%s%s", code, err, stdout, stderr)
	}

	if _, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--clear-holds", "--dry-run"); code != 2 || !strings.Contains(stderr, "--clear-holds and --dry-run exclude each other") {
		t.Errorf("--clear-holds --dry-run: exit %d: %s", code, stderr)
	}
	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--clear-holds")
	if code != 0 || !strings.Contains(stdout, "GitHub wait(s); the rows they deferred are due again") || !strings.Contains(stdout, "until "+bogus) || strings.Contains(stdout, "GitHub asked driftprobe to wait") {
		t.Errorf("--clear-holds: exit %d, want the cleared wait named and none left\n%s%s", code, stdout, stderr)
	}
	if n := queryIntIn(t, db, `SELECT COUNT(*) FROM github_holds`); n != 0 {
		t.Errorf("--clear-holds left %d hold(s)", n)
	}
	stdout, stderr, _ = runIn(t, "outbox", "--config", withGH, "--db", db, "--json")
	rows = nil
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) == 0 || strings.Contains(stderr, "GitHub asked driftprobe to wait") {
		t.Fatalf("after --clear-holds: %v\n%s%s", err, stdout, stderr)
	}
	for _, r := range rows {
		if r.Next != nil && r.Next.After(time.Now()) {
			t.Errorf("row %d still deferred to %s after --clear-holds", r.ID, r.Next)
		}
	}
	if stdout, _, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--clear-holds"); code != 0 || !strings.Contains(stdout, "no GitHub wait recorded: nothing cleared") {
		t.Errorf("--clear-holds with none: exit %d\n%s", code, stdout)
	}

	// GitHub's real wait is recorded again by the next request it
	// refuses (an outage here), at most an hour away, and --send --json
	// reports it; "holds" is added next to the existing fields.
	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--send", "--json")
	var sent struct {
		HeldUntil *time.Time      `json:"held_until"`
		Pending   json.RawMessage `json:"pending"`
		Holds     []struct {
			Scope  string    `json:"scope"`
			Until  time.Time `json:"until"`
			Reason string    `json:"reason"`
		} `json:"holds"`
	}
	if err := json.Unmarshal([]byte(stdout), &sent); code != 3 || err != nil || len(sent.Holds) != 1 || sent.Holds[0].Scope != "host" ||
		sent.Holds[0].Until.After(time.Now().Add(time.Hour)) || !strings.Contains(sent.Holds[0].Reason, "GitHub unreachable") || len(sent.Pending) == 0 {
		t.Errorf("--send --json after --clear-holds: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
}
