package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// pendingErrors is `driftprobe outbox --json`'s last_error by row id.
func pendingErrors(t *testing.T, withGH, db string) map[int64]string {
	t.Helper()
	stdout, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--json")
	var rows []struct {
		ID        int64  `json:"id"`
		LastError string `json:"last_error"`
	}
	if err := json.Unmarshal([]byte(stdout), &rows); code != 0 || err != nil {
		t.Fatalf("outbox --json: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	m := map[int64]string{}
	for _, r := range rows {
		m[r.ID] = r.LastError
	}
	return m
}

// QA (on-call): an operator runs `outbox --send` in a shell without the
// token the prober has. The pass stops (exit 3, the missing variable
// named), but the rows keep the errors they recorded (GitHub unreachable
// here): `driftprobe outbox` must not send the next reader after a token
// that is fine in the prober. When the prober's own process lacks it
// (`run` here, serve alike: both deliver through the after-run hook),
// every due row says so, naming the process, and keeps its error after
// "before:".
func TestOutboxSendWithoutTokenKeepsRowErrors(t *testing.T) {
	_, db, withGH, _ := outboxConfigs(t)
	for i := 0; i < 4; i++ {
		// Delivery fails (nothing listens on port 1).
		runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	}
	if _, _, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--clear-holds"); code != 0 {
		t.Fatalf("--clear-holds: exit %d", code)
	}
	before := pendingErrors(t, withGH, db)
	if len(before) == 0 {
		t.Fatal("scenario changed: nothing pending")
	}
	for id, e := range before {
		if !strings.Contains(e, "GitHub unreachable") {
			t.Fatalf("scenario changed: row %d: %q", id, e)
		}
	}

	t.Setenv("GITHUB_TOKEN", "")
	for _, args := range [][]string{{"--send"}, {"--clear-holds", "--send"}} {
		stdout, stderr, code := runIn(t, append([]string{"outbox", "--config", withGH, "--db", db}, args...)...)
		if code != 3 || !strings.Contains(stdout, "GitHub token missing: environment variable GITHUB_TOKEN (github.token_env) is not set") ||
			!strings.Contains(stdout, "the rows keep what they recorded") || !strings.Contains(stderr, "GitHub delivery incomplete") {
			t.Errorf("outbox %v without the token: exit %d, want 3 with the variable named and the rows left\n%s%s", args, code, stdout, stderr)
		}
		after := pendingErrors(t, withGH, db)
		for id, e := range before {
			if after[id] != e {
				t.Errorf("outbox %v without the token: row %d's last_error %q, want it kept: %q", args, id, after[id], e)
			}
		}
	}

	// The prober's own environment without it: the rows say so.
	runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown host"
	}
	who := fmt.Sprintf("not attempted by driftprobe run (pid %d on %s), whose environment has no usable GitHub credential: GitHub token missing: environment variable GITHUB_TOKEN (github.token_env) is not set; before: ", os.Getpid(), host)
	after := pendingErrors(t, withGH, db)
	for id, e := range before {
		if after[id] != who+e {
			t.Errorf("run without the token: row %d's last_error %q, want %q", id, after[id], who+e)
		}
	}
	stdout, _, _ := runIn(t, "outbox", "--config", withGH, "--db", db)
	if !strings.Contains(stdout, "not attempted by driftprobe run (pid") {
		t.Errorf("listing after a run without the token:\n%s", stdout)
	}
}

// On-call: a refused connection to github.base_url is no wait GitHub asked
// for. The listing's waits, `--send`'s summary, notes and exit message say
// GitHub could not be reached (naming the host and the error, and that
// waiting does not fix a wrong base_url or blocked egress), never "GitHub
// asked driftprobe to wait"; --json says the kind.
func TestOutboxUnreachableIsNoWaitGitHubAskedFor(t *testing.T) {
	const asked = "GitHub asked driftprobe to wait"
	const phrase = "driftprobe backs off after GitHub could not be reached"
	const hint = "waiting does not fix a wrong github.base_url or blocked egress"
	_, db, withGH, _ := outboxConfigs(t)
	for i := 0; i < 4; i++ {
		runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	}
	stdout, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db)
	if code != 0 || !strings.Contains(stdout, phrase+": nothing is sent before the end of 1 recorded wait(s)") ||
		!strings.Contains(stdout, "every credential on http://127.0.0.1:1 (unreachable") || !strings.Contains(stdout, "no HTTP answer from http://127.0.0.1:1") ||
		!strings.Contains(stdout, "connection refused") || !strings.Contains(stdout, hint) || strings.Contains(stdout, asked) {
		t.Errorf("outbox: exit %d\n%s%s", code, stdout, stderr)
	}

	// A row due inside the wait (queued since): exit 3, in those words.
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().ExecContext(ctx, `UPDATE outbox SET next_attempt_at = '' WHERE sent_at = ''`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--send")
	if code != 3 || !strings.Contains(stderr, "due row(s) not sent while "+phrase+" (no request before ") || !strings.Contains(stderr, hint) ||
		!strings.Contains(stdout, "due but not sent while "+phrase) || !strings.Contains(stdout, phrase+": no request before ") ||
		strings.Contains(stdout+stderr, asked) {
		t.Errorf("outbox --send inside the wait: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--send", "--json")
	var res struct {
		HeldKind string `json:"held_kind"`
		Holds    []struct {
			Kind   string `json:"kind"`
			Reason string `json:"reason"`
		} `json:"holds"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.HeldKind != "unreachable" || len(res.Holds) != 1 || res.Holds[0].Kind != "unreachable" ||
		strings.Contains(stdout+stderr, asked) {
		t.Errorf("outbox --send --json inside the wait: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
}
