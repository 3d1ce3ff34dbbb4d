package ghissue_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
)

// lockYAML is QA D1's scenario: sim-a tightens violence at run 3 (event 1
// opens at run 4), then hate at run 5 (confirmed run 6: a comment on event
// 1's issue); sim-b, another target of the provider, loosens sexual and
// hate at run 5 (confirmed run 6: event 2, its own issue). Event 1's
// comment is queued before event 2's issue.
const lockYAML = `database: %s
confirm_runs: 2
targets:
  - name: sim-a
    provider: sim
    model: sim-large
    sim:
      policies:
        - {from_run: 1, fingerprint: fp-a, thresholds: {violence: 0.5, hate: 0.5}}
        - {from_run: 3, thresholds: {violence: 0.01}}
        - {from_run: 5, thresholds: {violence: 0.01, hate: 0.05}}
  - name: sim-b
    provider: sim
    model: sim-large
    sim:
      policies:
        - {from_run: 1, fingerprint: fp-b, thresholds: {violence: 0.5, hate: 0.5, sexual: 0.5}}
        - {from_run: 5, thresholds: {sexual: 0.9, hate: 0.9}}
github:
  repo: acme/llm-drift
  token_env: DRIFTPROBE_TEST_GH_TOKEN
  base_url: %s
`

// TestLockedIssueHoldsBackOnlyItsEvent is QA D1: a maintainer locks event
// 1's issue, and GitHub refuses the comment with 403 ("Unable to create
// comment because issue is locked.", as it answers a caller without write
// access). That is no permission problem of the token: only event 1's
// deliveries wait, with a message naming the locked issue and what to do
// (unlock it, or skip the row), and event 2's issue is filed in the same
// pass. Unlocking it (or skipping the row) lets event 1's deliveries go
// on. A 403 on a comment of an issue that is not locked (a token without
// permission) still stops the pass for every event. GitHub's word decides
// (the issue's locked field; when GitHub does not answer that, the
// error's documentation_url), never the message's text.
func TestLockedIssueHoldsBackOnlyItsEvent(t *testing.T) {
	for _, tc := range []string{"unlocked later", "skipped", "issue unreadable: documentation_url", "no locked field: documentation_url", "not locked: no permission"} {
		t.Run(tc, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := newSysFrom(t, lockYAML, filepath.Join(t.TempDir(), "test.db"), f.BaseURL())
			c := newClock()
			f.now = c.Now
			for run := 1; run <= 4; run++ {
				s.run()
				if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 {
					t.Fatalf("run %d: %+v", run, res)
				}
			}
			if iss := f.issueList(); len(iss) != 1 {
				t.Fatalf("scenario changed: %d issues after run 4", len(iss))
			}
			if tc == "not locked: no permission" {
				f.addFault(fault{match: func(r *http.Request) bool {
					return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments")
				}, status: 403, body: `{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest/issues/comments#create-an-issue-comment"}`})
			} else {
				f.mu.Lock()
				f.issues[0].Locked, f.issues[0].LockReason = true, "resolved"
				f.mu.Unlock()
			}
			f.omitLocked = tc == "no locked field: documentation_url"
			if tc == "issue unreadable: documentation_url" {
				// GitHub does not answer the issue after refusing the
				// comment (the pass reads it once before, for its
				// author): the error's documentation_url decides.
				gets := 0
				f.addFault(fault{match: func(r *http.Request) bool {
					if r.Method == http.MethodGet && issueRe.MatchString(r.URL.Path) {
						gets++
					}
					return gets == 2
				}, status: 502, body: `{"message":"Bad Gateway"}`})
			}
			s.run()
			s.run() // run 6: event 1 gains hate (a comment), event 2 opens
			evs := events(t, s)
			if len(evs) != 2 || evs[1].IssueNumber != 0 {
				t.Fatalf("scenario changed: %d events", len(evs))
			}
			p := pending(t, s)
			if len(p) != 2 || p[0].EventID != evs[0].ID || p[0].Action != ghissue.ActionComment || p[1].EventID != evs[1].ID || p[1].Action != ghissue.ActionOpen {
				t.Fatalf("scenario changed: pending %+v, want event 1's comment, then event 2's issue", p)
			}
			commentRow := p[0].ID
			res := deliver(t, s, c, ghissue.Options{})
			evs = events(t, s)
			p = pending(t, s)

			if tc == "not locked: no permission" {
				// A permission problem is the repository's: the pass
				// stops, event 2 waits too, and the token is named.
				if res.Failed != 1 || res.Sent != 0 || res.Deferred != 1 || evs[1].IssueNumber != 0 {
					t.Fatalf("permission 403: %+v, event 2 issue #%d", res, evs[1].IssueNumber)
				}
				if len(p) != 2 || !strings.Contains(p[0].LastError, "has no permission") || strings.Contains(p[0].LastError, "locked") {
					t.Fatalf("permission 403: pending %+v", p)
				}
				return
			}

			if res.Failed != 1 || res.Sent != 1 {
				t.Fatalf("locked issue: %+v, want event 1's comment failed and event 2's issue sent", res)
			}
			if evs[1].IssueNumber == 0 || len(f.issueList()) != 2 {
				t.Fatalf("event 2 not filed while event 1's issue is locked: %+v", f.issueList())
			}
			if len(p) != 1 || p[0].ID != commentRow {
				t.Fatalf("pending %+v, want only event 1's comment", p)
			}
			msg := p[0].LastError
			for _, want := range []string{"issue #1 of event 1 is locked", "lock reason: resolved", "unlock", "driftprobe outbox --skip " + strconv.FormatInt(commentRow, 10)} {
				if want == "lock reason: resolved" && strings.HasSuffix(tc, "documentation_url") {
					continue
				}
				if !strings.Contains(msg, want) {
					t.Errorf("locked row's message lacks %q: %s", want, msg)
				}
			}
			if strings.Contains(msg, "no permission") || strings.Contains(msg, "needs Issues read and write") {
				t.Errorf("locked row blames the token: %s", msg)
			}
			if p[0].NextAttemptAt == nil || !p[0].NextAttemptAt.Equal(c.Now().Add(time.Minute)) {
				t.Errorf("locked row: next attempt %v, want in 1m (backoff)", p[0].NextAttemptAt)
			}
			if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "is locked") {
				t.Errorf("errors %q", res.Errors)
			}

			switch tc {
			case "unlocked later", "issue unreadable: documentation_url", "no locked field: documentation_url":
				f.mu.Lock()
				f.issues[0].Locked = false
				f.mu.Unlock()
				c.Advance(time.Minute)
				if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 1 || res.Failed != 0 {
					t.Fatalf("after unlocking: %+v", res)
				}
				ev := events(t, s)[0]
				if n := len(updateComments(f, ev.IssueNumber, ev, ev.Updates[len(ev.Updates)-1])); n != 1 {
					t.Errorf("after unlocking: %d comments for the update, want 1", n)
				}
			case "skipped":
				skipped, err := ghissue.Skip(context.Background(), s.st, []int64{commentRow, 999})
				if err != nil || len(skipped) != 1 || skipped[0] != commentRow {
					t.Fatalf("skip: %v %v", skipped, err)
				}
				c.Advance(time.Minute)
				if res := deliver(t, s, c, ghissue.Options{}); res.Sent+res.Failed+res.Deferred != 0 {
					t.Fatalf("after skipping: %+v", res)
				}
				if len(f.commentsOf(1)) != 0 {
					t.Errorf("a skipped comment was posted")
				}
			}
			if p := pending(t, s); len(p) != 0 {
				t.Errorf("pending at the end: %+v", p)
			}
		})
	}
}
