package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/storage"
)

// outbox --send exits 3 only when the pass met a failure or a GitHub wait
// in force kept it from sending rows that were due; rows not due yet (here
// raised to the end of the wait an earlier pass recorded) are no failure,
// whether the wait is GitHub's or the row's own backoff. The summary and
// the exit message name only the causes that applied.
func TestOutboxSendExitStatus(t *testing.T) {
	_, db, withGH, _ := outboxConfigs(t)
	for i := 0; i < 4; i++ {
		// Delivery fails (nothing listens on port 1).
		runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	}
	if n := queryIntIn(t, db, `SELECT COUNT(*) FROM outbox WHERE sent_at = ''`); n != 1 {
		t.Fatalf("scenario changed: %d pending rows", n)
	}
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		st, err := storage.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.SQL().ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// A secondary rate limit recorded by an earlier pass, half an hour
	// left; the row waits for its end, as that pass left it.
	until := time.Now().UTC().Add(30 * time.Minute).Truncate(time.Second)
	const reason = "GitHub secondary rate limit (429): You have exceeded a secondary rate limit"
	exec(`DELETE FROM github_holds`)
	exec(`INSERT INTO github_holds (api, credential, until, failures, reason, at) VALUES ('http://127.0.0.1:1', 'token $GITHUB_TOKEN', ?, 1, ?, ?)`,
		until.Format(time.RFC3339Nano), reason, time.Now().UTC().Format(time.RFC3339Nano))
	exec(`UPDATE outbox SET next_attempt_at = ?, last_error = ? WHERE sent_at = ''`, until.Format(time.RFC3339Nano), "not attempted: "+reason)

	stdout, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--send")
	if code != 0 || !strings.Contains(stdout, "sent 0, failed 0, deferred 1 (1 not due yet)") ||
		!strings.Contains(stdout, "GitHub asked driftprobe to wait: no request before "+until.Format(time.RFC3339)) || strings.Contains(stderr, "incomplete") {
		t.Errorf("--send, nothing due inside GitHub's wait: exit %d, want 0 with the wait noted\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--send", "--json")
	var res struct {
		Deferred     int             `json:"deferred"`
		NotDue       *int            `json:"not_due"`
		HeldByGitHub *int            `json:"held_by_github"`
		HeldUntil    *time.Time      `json:"held_until"`
		Errors       []string        `json:"errors"`
		Notes        []string        `json:"notes"`
		Pending      json.RawMessage `json:"pending"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || res.Deferred != 1 || res.NotDue == nil || *res.NotDue != 1 ||
		res.HeldByGitHub == nil || *res.HeldByGitHub != 0 || res.HeldUntil == nil || res.Errors == nil || len(res.Errors) != 0 || len(res.Notes) != 1 {
		t.Errorf("--send --json, nothing due inside GitHub's wait: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}

	// The row due (queued since the wait was recorded): GitHub's wait
	// keeps it from going out, and only that is named.
	exec(`UPDATE outbox SET attempts = 0, next_attempt_at = '', last_error = '' WHERE sent_at = ''`)
	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--send")
	want := "GitHub delivery incomplete: 1 due row(s) not sent while GitHub asked driftprobe to wait (no request before " + until.Format(time.RFC3339Nano) + "); 1 row(s) stay queued"
	if code != 3 || !strings.Contains(stderr, want) || !strings.Contains(stdout, "sent 0, failed 0, deferred 1 (1 due but not sent while GitHub asked driftprobe to wait)") {
		t.Errorf("--send, a due row inside GitHub's wait: exit %d, want 3 and %q\n%s%s", code, want, stdout, stderr)
	}
	for _, other := range []string{"not due yet", "held back", "stopped the pass", "failed and"} {
		if strings.Contains(stderr, other) {
			t.Errorf("--send, a due row inside GitHub's wait: the message names %q, which did not apply: %s", other, stderr)
		}
	}

	// The wait deleted (the row is due again): the attempt fails (nothing
	// listens on port 1), and only the failure is named.
	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--clear-holds", "--send")
	if code != 3 || !strings.Contains(stderr, "GitHub delivery incomplete: 1 row(s) failed; 1 row(s) stay queued") {
		t.Errorf("--send, a failed attempt: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, other := range []string{"not due yet", "held back", "stopped the pass", "asked driftprobe to wait"} {
		if strings.Contains(stderr, other) {
			t.Errorf("--send, a failed attempt: the message names %q, which did not apply: %s", other, stderr)
		}
	}

	// The row now backs off on its own failure (and GitHub's outage wait
	// holds it too): nothing due, exit 0.
	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--send")
	if code != 0 || !strings.Contains(stdout, "deferred 1 (1 not due yet)") || strings.Contains(stderr, "incomplete") {
		t.Errorf("--send, the row backing off: exit %d, want 0\n%s%s", code, stdout, stderr)
	}
}
