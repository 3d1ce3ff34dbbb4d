package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// On-call: a 502 Bad Gateway from a proxy or load balancer in front of
// GitHub (its own HTML page, none of GitHub's headers: no
// X-GitHub-Request-Id) is no GitHub outage: `outbox --send` and the
// listing's waits say that no answer came from GitHub, what answered, its
// status, and that waiting does not fix the path to GitHub; the wait is
// the host's, kind unreachable in --json. The same 502 with GitHub's
// request id is GitHub's outage.
func TestOutboxProxyErrorIsNoGitHubOutage(t *testing.T) {
	for _, tc := range []struct {
		name, requestID, kind string
		want                  []string
	}{
		{"proxy", "", "unreachable", []string{"no answer from GitHub: 127.0.0.1:", " answered 502 Bad Gateway without GitHub's request id (a proxy or load balancer on the way?)",
			"driftprobe backs off after GitHub could not be reached", "(unreachable: no answer from GitHub)", "waiting does not fix a wrong github.base_url or blocked egress"}},
		{"GitHub", "0D3A:1BCC6E:B442C:C99F5:6650A1B2", "outage", []string{"GitHub unavailable (502 Server Error)", "driftprobe backs off from a GitHub outage", "(outage)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, db, withGH, _ := outboxConfigs(t)
			for i := 0; i < 4; i++ {
				runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.requestID == "" {
					w.Header().Set("Content-Type", "text/html")
					w.WriteHeader(http.StatusBadGateway)
					w.Write([]byte("<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>\n"))
					return
				}
				w.Header().Set("X-GitHub-Request-Id", tc.requestID)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadGateway)
				w.Write([]byte(`{"message":"Server Error"}`))
			}))
			t.Cleanup(srv.Close)
			fake := filepath.Join(dir, "fake.yaml")
			targets := "targets:\n  - name: sim-a\n    provider: sim\n    model: sim-large\n    sim: {policies: [{from_run: 3, thresholds: {violence: 0.01}}]}\n"
			if err := os.WriteFile(fake, []byte(targets+"github: {repo: o/r, base_url: \""+srv.URL+"/\"}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, _, code := runIn(t, "outbox", "--config", fake, "--db", db, "--clear-holds"); code != 0 {
				t.Fatalf("--clear-holds: exit %d", code)
			}
			stdout, stderr, code := runIn(t, "outbox", "--config", fake, "--db", db, "--send")
			if code != 3 {
				t.Errorf("--send: exit %d, want 3\n%s%s", code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("--send: stdout lacks %q\n%s%s", w, stdout, stderr)
				}
			}
			if tc.kind == "unreachable" && (strings.Contains(stdout, "GitHub unavailable") || strings.Contains(stdout, "outage") || strings.Contains(stdout, "<html")) {
				t.Errorf("--send: a proxy's 502 worded as GitHub's outage, or its page quoted\n%s", stdout)
			}
			stdout, stderr, code = runIn(t, "outbox", "--config", fake, "--db", db, "--send", "--json")
			var res struct {
				Holds []struct {
					Scope  string `json:"scope"`
					Kind   string `json:"kind"`
					Reason string `json:"reason"`
				} `json:"holds"`
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Holds) != 1 || res.Holds[0].Kind != tc.kind || res.Holds[0].Scope != "host" {
				t.Errorf("--send --json: exit %d, %v: want one %s hold of the host\n%s%s", code, err, tc.kind, stdout, stderr)
			}
		})
	}
}
