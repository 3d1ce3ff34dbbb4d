package ghissue_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
)

// TestIssuesDisabledKeepsTheMapping: a maintainer disables Issues on the
// repository for a while (GitHub answers 410 "Issues are disabled for this
// repo" on every issue call). The event's issue is not gone: its mapping is
// kept, the rows say what is wrong, and once Issues is enabled again the
// comments go to the same issue. With a token without push access (GitHub
// dropped the driftprobe label) and an issue older than the comment row,
// a dropped mapping would open a second issue.
func TestIssuesDisabledKeepsTheMapping(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	c := newClock()
	f.now, f.dropLabels = c.Now, true
	s := fixture(t, f.BaseURL())
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = '2999-01-01T00:00:00Z' WHERE action != 'open'`); err != nil {
		t.Fatal(err)
	}
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 2 {
		t.Fatalf("opens: %+v", res)
	}
	// A day later the comment rows are queued (later runs).
	c.Advance(24 * time.Hour)
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = '', created_at = ? WHERE sent_at = ''`, c.Now().Format(time.RFC3339Nano)); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.issuesOff = true
	f.mu.Unlock()
	const want = "Issues are disabled on repository acme/llm-drift (GitHub: 410 Issues are disabled for this repo)"
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 0 || res.Failed != 1 {
		t.Fatalf("disabled: %+v", res)
	}
	for _, p := range pending(t, s) {
		if !strings.Contains(p.Reason, want) {
			t.Errorf("row %d: %s, want %q", p.ID, p.Reason, want)
		}
	}
	for _, ev := range events(t, s) {
		if ev.IssueNumber == 0 {
			t.Errorf("event %d: mapping dropped while Issues was disabled", ev.ID)
		}
	}
	f.mu.Lock()
	f.issuesOff = false
	f.mu.Unlock()
	for i := 0; i < 4; i++ {
		c.Advance(2 * time.Hour)
		deliver(t, s, c, ghissue.Options{})
	}
	if n := len(f.issueList()); n != 2 {
		t.Fatalf("%d issues on GitHub for 2 events", n)
	}
	if p := pending(t, s); len(p) != 0 {
		t.Fatalf("pending: %+v", p)
	}
	if n := len(f.commentsOf(1)); n != 2 {
		t.Fatalf("issue #1 has %d comments, want its 2 updates'", n)
	}
}

// TestIssuesDisabledBeforeTheIssueIsOpened: with Issues disabled, opening
// an issue fails for the repository, not for one row: every row says so,
// the pass stops, and once Issues is enabled everything is delivered once.
func TestIssuesDisabledBeforeTheIssueIsOpened(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	f.issuesOff = true
	s := fixture(t, f.BaseURL())
	c := newClock()
	expectAllQueued(t, s, c, ghissue.Options{}, "issues disabled", "Issues are disabled on repository acme/llm-drift (GitHub: 410 Issues are disabled for this repo)")
	if n := len(f.requests()); n != 2 { // the listing, the repository
		t.Errorf("%d requests, want the listing and the repository's: %+v", n, f.requests())
	}
	f.mu.Lock()
	f.issuesOff = false
	f.mu.Unlock()
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 4 {
		t.Fatalf("after Issues is enabled: %+v", res)
	}
	checkDelivered(t, s, f)
}

// TestRenamedRepository: github.repo names the repository's former name
// (renamed on GitHub, the config not yet changed). GitHub redirects: 301
// for the listings and reads, 307 for the create, the comments and the
// edits (repeated with their method and body). Every event gets exactly
// one issue and every update one comment, however often delivery runs.
func TestRenamedRepository(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	f.formerName = "policy-drift"
	s := fixture(t, f.BaseURL())
	s.cfg.GitHub.Repo = "acme/policy-drift"
	c := newClock()
	for i := 0; i < 3; i++ {
		res := deliver(t, s, c, ghissue.Options{})
		t.Logf("pass %d: %+v", i, res)
		c.Advance(2 * time.Hour)
	}
	checkDelivered(t, s, f)
	var r301, r307 int
	for _, r := range f.requests() {
		switch r.Status {
		case 301:
			r301++
		case 307:
			r307++
		}
	}
	if r301 == 0 || r307 == 0 {
		t.Errorf("redirects not exercised: %d 301, %d 307", r301, r307)
	}
	// Forget every delivery: the markers are found through the redirect.
	if _, err := s.st.SQL().Exec(`UPDATE events SET issue_number = 0, issue_url = ''; UPDATE outbox SET sent_at = '', attempts = 0, next_attempt_at = ''`); err != nil {
		t.Fatal(err)
	}
	deliver(t, s, c, ghissue.Options{})
	checkDelivered(t, s, f)
}

// TestRenamedRepositoryWithoutPushAccess: as TestRenamedRepository, with
// a token without push access (GitHub drops the driftprobe label) and the
// comments queued a day after the issues were opened, so that neither
// marker lookup (the label listing, the issues created since the row was
// queued) can find the event's issue: the mapping, whose URL names the
// repository by another name than github.repo, is checked by the marker
// of the issue GitHub answers for it (through its redirect), never
// dropped for a second issue. Either way round: the repository renamed
// before the issues were opened, github.repo still its old name (GitHub's
// html_url names the new one); or renamed after, github.repo changed to
// the new name (the mappings name the old one).
func TestRenamedRepositoryWithoutPushAccess(t *testing.T) {
	for _, tc := range []struct {
		name         string
		renamedFirst bool
	}{{"renamed, github.repo not changed", true}, {"renamed later, github.repo changed", false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			c := newClock()
			f.now, f.dropLabels = c.Now, true
			s := fixture(t, f.BaseURL())
			rename := func() {
				f.mu.Lock()
				f.repo, f.formerName = "llm-drift-2", "llm-drift"
				f.mu.Unlock()
			}
			if tc.renamedFirst {
				rename()
			}
			if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = '2999-01-01T00:00:00Z' WHERE action != 'open'`); err != nil {
				t.Fatal(err)
			}
			if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 2 {
				t.Fatalf("opens: %+v", res)
			}
			if !tc.renamedFirst {
				rename()
				s.cfg.GitHub.Repo = "acme/llm-drift-2"
			}
			c.Advance(24 * time.Hour)
			if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = '', created_at = ? WHERE sent_at = ''`, c.Now().Format(time.RFC3339Nano)); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				deliver(t, s, c, ghissue.Options{})
				c.Advance(2 * time.Hour)
			}
			if n := len(f.issueList()); n != 2 {
				t.Fatalf("%d issues on GitHub for 2 events", n)
			}
			if n := len(f.commentsOf(1)); n != 2 {
				t.Fatalf("issue #1 has %d comments, want its 2 updates'", n)
			}
			if p := pending(t, s); len(p) != 0 {
				t.Fatalf("pending: %+v", p)
			}
		})
	}
}

// TestRateLimitOnWhoamiIsObeyed: GitHub's secondary limit answers the
// call that asks which login driftprobe posts as (GET /user, a call whose
// failure delivery otherwise goes on without). The pass stops there and
// waits as GitHub said: its retry-after, else (x-ratelimit-remaining not
// 0) a minute. Before, the pass went on: go-github, remembering the
// limit, refused the next call itself with an answer of its own making,
// without GitHub's headers, and the wait recorded was a minute whatever
// GitHub had said (requests went out inside GitHub's retry-after);
// without a retry-after, go-github's own reading (until
// x-ratelimit-reset) would have replaced the documented minute.
func TestRateLimitOnWhoamiIsObeyed(t *testing.T) {
	reset := time.Now().Add(50 * time.Minute)
	for _, tc := range []struct {
		name string
		ft   fault
		wait time.Duration
	}{
		{"retry-after", secondaryRateLimit(403, 120), 120 * time.Second},
		{"no retry-after", func() fault {
			ft := secondaryRateLimit(403, 0)
			delete(ft.header, "Retry-After")
			ft.header["X-Ratelimit-Reset"] = strconv.FormatInt(reset.Unix(), 10)
			return ft
		}(), time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := fixture(t, f.BaseURL())
			c := newClock()
			tc.ft.match = func(r *http.Request) bool { return r.URL.Path == "/api/v3/user" }
			f.addFault(tc.ft)
			res := deliver(t, s, c, ghissue.Options{})
			if res.Sent != 2 || res.Failed != 1 || res.Stopped != 0 {
				t.Fatalf("%+v", res)
			}
			if last := f.requests()[len(f.requests())-1]; last.Path != "/api/v3/user" {
				t.Errorf("the pass went on after the limit: last request %s %s", last.Method, last.Path)
			}
			for _, p := range pending(t, s) {
				if p.NextAttemptAt == nil || p.NextAttemptAt.Sub(c.Now()) != tc.wait {
					t.Errorf("row %d waits until %v, want %s: %s", p.ID, p.NextAttemptAt, tc.wait, p.Reason)
				}
			}
			n := len(f.requests())
			c.Advance(tc.wait - time.Second)
			deliver(t, s, c, ghissue.Options{})
			if got := f.requests()[n:]; len(got) != 0 {
				t.Errorf("%d requests inside GitHub's wait", len(got))
			}
			c.Advance(time.Second)
			if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 2 {
				t.Fatalf("after the wait: %+v", res)
			}
			checkDelivered(t, s, f)
		})
	}
}

// TestRateLimitOnTheLockCheckIsObeyed: GitHub refuses a comment with 403
// and driftprobe asks GitHub whether the issue is locked; that call meets
// GitHub's secondary limit (retry-after: 90). The limit is what the pass
// obeys (every row waits 90s, no request before), not a locked issue
// guessed from the 403's documentation_url.
func TestRateLimitOnTheLockCheckIsObeyed(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	deliverOpensOnly(t, s, c)
	refused := false
	f.addFault(fault{status: 403, body: `{"message":"Unable to create comment because issue is locked.","documentation_url":"https://docs.github.com/articles/locking-conversations/"}`,
		match: func(r *http.Request) bool {
			refused = refused || (r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments"))
			return refused
		}})
	limit := secondaryRateLimit(403, 90)
	limit.match = func(r *http.Request) bool {
		return refused && r.Method == http.MethodGet && r.URL.Path == "/api/v3/repos/acme/llm-drift/issues/1"
	}
	f.addFault(limit)
	res := deliver(t, s, c, ghissue.Options{})
	if res.Failed != 1 || res.HeldKind != "" {
		t.Fatalf("%+v", res)
	}
	for _, p := range pending(t, s) {
		if p.NextAttemptAt == nil || p.NextAttemptAt.Sub(c.Now()) != 90*time.Second || strings.Contains(p.Reason, "is locked on GitHub") {
			t.Errorf("row %d waits until %v, want GitHub's 90s: %s", p.ID, p.NextAttemptAt, p.Reason)
		}
	}
	c.Advance(90 * time.Second)
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 2 {
		t.Fatalf("after the wait: %+v", res)
	}
	checkDelivered(t, s, f)
}

// TestTransferredIssue: a person transfers an event's issue to another
// repository. GitHub answers every call about it at its old address with
// 301 Moved Permanently to the new one, writes included (an edit, a
// comment). A redirected write is repeated verbatim at the new address,
// as GitHub's documentation of redirects asks: never turned into a GET
// (net/http's rule for a 301 after a POST or PATCH), which would read the
// comments instead of posting one, or read the issue and take that for an
// edit done (a close or a retitle silently lost, the row recorded sent).
func TestTransferredIssue(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	deliverOpensOnly(t, s, c)
	to := f.transfer(1)
	for i := 0; i < 3; i++ {
		res := deliver(t, s, c, ghissue.Options{})
		t.Logf("pass %d: %+v", i, res)
		c.Advance(2 * time.Hour)
	}
	if p := pending(t, s); len(p) != 0 {
		t.Fatalf("pending: %+v", p)
	}
	if n := len(f.issueList()); n != 3 {
		t.Fatalf("%d issues: another was opened for the transferred one", n)
	}
	iss := f.issueList()[to-1]
	if n := len(f.commentsOf(to)); n != 2 {
		t.Errorf("the transferred issue #%d has %d comments, want the 2 updates'", to, n)
	}
	if iss.State != "closed" || iss.StateReason != "completed" || !strings.HasSuffix(iss.Title, "[reverted]") {
		t.Errorf("the transferred issue after the revert: %s/%s %q, want closed/completed, its title ending [reverted]", iss.State, iss.StateReason, iss.Title)
	}
	for _, r := range f.requests() {
		if r.Status == 301 && r.Method != http.MethodGet {
			return // a write was redirected, and repeated
		}
	}
	t.Error("no write was redirected: the test did not exercise it")
}

// TestEditOfATransferredIssueIsNotLost: the issue is transferred between
// the revert's comment and the close (a 301 answers the PATCH). Followed
// as net/http follows a 301 after a PATCH, the edit became a GET of the
// issue, answered 200, and was taken for the close done: the row was
// recorded sent and the issue stayed open. It is repeated at the new
// address instead.
func TestEditOfATransferredIssueIsNotLost(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	to := 0
	hc := &http.Client{Transport: &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
		if r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/issues/1") && to == 0 {
			to = f.transfer(1)
		}
		return nil
	}}}
	for i := 0; i < 2; i++ {
		deliver(t, s, c, ghissue.Options{HTTPClient: hc})
		c.Advance(2 * time.Hour)
	}
	if to == 0 {
		t.Fatal("no edit of issue #1: nothing was transferred")
	}
	if p := pending(t, s); len(p) != 0 {
		t.Fatalf("pending: %+v", p)
	}
	iss := f.issueList()[to-1]
	if iss.State != "closed" || iss.StateReason != "completed" || !strings.HasSuffix(iss.Title, "[reverted]") {
		t.Errorf("the transferred issue: %s/%s %q, want closed/completed, its title ending [reverted] (the edit was lost)", iss.State, iss.StateReason, iss.Title)
	}
}
