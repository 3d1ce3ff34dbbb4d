package ghissue_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
)

// whoAmI is how a pass of caller names this process on the rows.
func whoAmI(t *testing.T, caller string) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown host"
	}
	return fmt.Sprintf("%s (pid %d on %s)", caller, os.Getpid(), host)
}

// failedUnreachable leaves s's four rows with real errors: GitHub (its
// base_url, port 1 on loopback) refuses the connection, the first row
// records it, the others are noted "not attempted: …"; then the clock
// passes the wait, so every row is due. It returns each row's last_error.
func failedUnreachable(t *testing.T, s *sys, c *clock) map[int64]string {
	t.Helper()
	if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 1 {
		t.Fatalf("pass against a closed port: %+v", res)
	}
	c.Advance(2 * time.Minute)
	before := map[int64]string{}
	for _, p := range pending(t, s) {
		if !strings.Contains(p.LastError, "GitHub unreachable") {
			t.Fatalf("scenario changed: row %d: %q", p.ID, p.LastError)
		}
		before[p.ID] = p.LastError
	}
	if len(before) != 4 {
		t.Fatalf("scenario changed: %d pending rows", len(before))
	}
	return before
}

// The problems of a process's own environment that stop a pass before any
// request: the credential's variable unset, blank, or holding no usable
// key. Another process on the same database (serve, with its own
// environment) need not share them.
var envProblems = []struct {
	name string
	app  bool
	env  func(string) string
	want string
}{
	{"token unset", false, func(string) string { return "" }, "environment variable DRIFTPROBE_TEST_GH_TOKEN (github.token_env) is not set"},
	{"token blank", false, func(string) string { return " \n" }, "environment variable DRIFTPROBE_TEST_GH_TOKEN (github.token_env) holds only white space"},
	{"app key unset", true, keyIs(""), "environment variable DRIFTPROBE_TEST_GH_APP_KEY (github.private_key_env) is not set"},
	{"app key blank", true, keyIs("  "), "environment variable DRIFTPROBE_TEST_GH_APP_KEY (github.private_key_env) holds only white space"},
	{"app key not a PEM", true, keyIs("MIIEnotAPEMbutSECRETlookingBASE64value"), "does not hold a PEM-encoded private key"},
	{"app key not RSA", true, keyIs("-----BEGIN RSA PRIVATE KEY-----\nZ2FyYmFnZVNFQ1JFVGdhcmJhZ2VTRUNSRVQ=\n-----END RSA PRIVATE KEY-----\n"), "is not an RSA private key"},
}

// TestEnvProblemKeepsTheRowsErrors (QA, on-call): a pass whose own
// environment lacks the GitHub credential (serve's or run's: nobody reads
// their Result, the rows and the log are what they leave) stops before
// any request and says so on every due row, naming the process (command,
// pid, host), but never in place of the row's error: that stays, after
// "before:", so `driftprobe outbox` still shows why the row failed when it
// was tried (here GitHub unreachable). A second such pass replaces the
// note, it does not pile notes up.
func TestEnvProblemKeepsTheRowsErrors(t *testing.T) {
	for _, tc := range envProblems {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture(t, "http://127.0.0.1:1/")
			c := newClock()
			before := failedUnreachable(t, s, c)
			if tc.app {
				useApp(t, s)
			}
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			res := deliver(t, s, c, ghissue.Options{Getenv: tc.env, Caller: "driftprobe serve", Logger: log})
			if res.Deferred != 4 || res.Stopped != 2 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], tc.want) || !res.Incomplete() {
				t.Fatalf("pass without a usable credential: %+v", res)
			}
			serve := whoAmI(t, "driftprobe serve")
			for _, p := range pending(t, s) {
				if !strings.HasPrefix(p.LastError, "not attempted by "+serve+", whose environment has no usable GitHub credential: ") ||
					!strings.Contains(p.LastError, tc.want) || !strings.HasSuffix(p.LastError, "; before: "+before[p.ID]) {
					t.Errorf("row %d: last_error %q, want the note naming %s and %q, then before: %q", p.ID, p.LastError, serve, tc.want, before[p.ID])
				}
				if !strings.Contains(p.Reason, "retried on the next delivery: not attempted by "+serve) {
					t.Errorf("row %d: reason %q", p.ID, p.Reason)
				}
			}
			if !strings.Contains(logs.String(), serve) {
				t.Errorf("the log does not name the process: %s", logs.String())
			}

			// Again, from another process: its note replaces the first,
			// the row's own error is still the one kept.
			deliver(t, s, c, ghissue.Options{Getenv: tc.env, Caller: "driftprobe run"})
			run := whoAmI(t, "driftprobe run")
			for _, p := range pending(t, s) {
				if !strings.HasPrefix(p.LastError, "not attempted by "+run+", ") || strings.Count(p.LastError, "not attempted by ") != 1 ||
					strings.Count(p.LastError, "; before: ") != 1 || !strings.HasSuffix(p.LastError, "; before: "+before[p.ID]) {
					t.Errorf("row %d after a second pass: last_error %q, want one note (%s) before %q", p.ID, p.LastError, run, before[p.ID])
				}
			}
		})
	}
}

// TestEnvProblemOfAnAttendedPassLeavesTheRows (QA, on-call): an operator's
// `driftprobe outbox --send` in a shell without the prober's token
// (Attended: a person reads its Result) reports the problem (an error,
// exit 3) and leaves every row as it was: its shell's environment says
// nothing of the prober's, and the rows' errors (GitHub unreachable) are
// what the next reader of `driftprobe outbox` must see. A row that never
// failed stays "not attempted yet". GitHub's own answers (a 401 for a
// token that is set) are still recorded on the rows, attended or not.
func TestEnvProblemOfAnAttendedPassLeavesTheRows(t *testing.T) {
	for _, tc := range envProblems {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture(t, "http://127.0.0.1:1/")
			c := newClock()
			before := failedUnreachable(t, s, c)
			if tc.app {
				useApp(t, s)
			}
			// Event 2's open as if queued since: never attempted.
			_, never := opensOf(t, s)
			if _, err := s.st.SQL().Exec(`UPDATE outbox SET attempts = 0, last_error = '', next_attempt_at = '' WHERE id = ?`, never); err != nil {
				t.Fatal(err)
			}
			snapshot := func() map[int64]ghissue.PendingRow {
				m := map[int64]ghissue.PendingRow{}
				for _, p := range pending(t, s) {
					m[p.ID] = p
				}
				return m
			}
			was := snapshot()
			res := deliver(t, s, c, ghissue.Options{Getenv: tc.env, Caller: "driftprobe outbox --send", Attended: true})
			if res.Deferred != 4 || res.Stopped != 2 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], tc.want) || !res.Incomplete() {
				t.Fatalf("attended pass without a usable credential: %+v", res)
			}
			if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "the rows keep what they recorded") || !strings.Contains(res.Notes[0], whoAmI(t, "driftprobe outbox --send")) {
				t.Errorf("notes %q: want one saying the rows were left as they were, naming this process", res.Notes)
			}
			now := snapshot()
			for id, p := range was {
				q := now[id]
				if q.LastError != p.LastError || q.Reason != p.Reason || q.Attempts != p.Attempts || fmt.Sprint(q.NextAttemptAt) != fmt.Sprint(p.NextAttemptAt) {
					t.Errorf("row %d changed by an attended pass without a credential:\n was %+v\n now %+v", id, p, q)
				}
				if id != never && q.LastError != before[id] {
					t.Errorf("row %d: last_error %q, want %q", id, q.LastError, before[id])
				}
			}
			if p := now[never]; p.LastError != "" || !strings.HasPrefix(p.Reason, "queued: not attempted yet") {
				t.Errorf("never attempted row: %+v", p)
			}
		})
	}
}

// TestGitHubAnswersAreStillRecordedOnTheRows: a 401 is GitHub's answer
// about the credential this process sent, not a gap in its environment:
// an attended pass records it on the rows as before.
func TestGitHubAnswersAreStillRecordedOnTheRows(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	expectAllQueued(t, s, c, ghissue.Options{Getenv: func(string) string { return "ghp_wrong" }, Caller: "driftprobe outbox --send", Attended: true},
		"attended, bad token", "rejected the token in $DRIFTPROBE_TEST_GH_TOKEN (401")
}
