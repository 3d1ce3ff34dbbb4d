package ghissue_test

// Tests of the fixes for the QA findings (qa_github_test.go): the other
// side of each rule.

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/probes"
)

// deliverOpensOnly delivers the open rows alone (the other rows held back
// by a far wait), then makes the others due again.
func deliverOpensOnly(t *testing.T, s *sys, c *clock) {
	t.Helper()
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = '2999-01-01T00:00:00Z' WHERE action != 'open'`); err != nil {
		t.Fatal(err)
	}
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 2 || res.Failed != 0 {
		t.Fatalf("opens: %+v", res)
	}
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = '' WHERE sent_at = ''`); err != nil {
		t.Fatal(err)
	}
}

// TestMappingOnAnotherHostWithItsMarkerIsKept: a repository moved to
// another GitHub with its issues (numbers and bodies kept, as GitHub's
// importer does): the mapping names the old host, but the issue of that
// number here carries the event's marker, so it is the event's issue. The
// updates go to it, no second issue is opened, and the mapping is
// rewritten to this host (so the next pass trusts it as it is).
func TestMappingOnAnotherHostWithItsMarkerIsKept(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	deliverOpensOnly(t, s, c)
	if _, err := s.st.SQL().Exec(`UPDATE events SET issue_url = 'https://ghe.old-corp.example/acme/llm-drift/issues/' || issue_number`); err != nil {
		t.Fatal(err)
	}
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 2 || res.Failed != 0 {
		t.Fatalf("%+v", res)
	}
	if n := len(f.issueList()); n != 2 {
		t.Errorf("%d issues, want 2", n)
	}
	if n := len(f.commentsOf(1)); n != 2 {
		t.Errorf("%d comments on event 1's issue, want 2", n)
	}
	// Event 1 had rows to deliver (event 2 has none left: its mapping is
	// not looked at).
	if ev := events(t, s)[0]; ev.IssueURL != f.BaseURL()+"acme/llm-drift/issues/1" {
		t.Errorf("event 1: mapping %q, want it rewritten to this host's", ev.IssueURL)
	}
	// A mapping on this host is trusted as it is: no lookup at all.
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET sent_at = '' WHERE action = 'revert'`); err != nil {
		t.Fatal(err)
	}
	n := len(f.requests())
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 1 {
		t.Fatalf("%+v", res)
	}
	for _, r := range f.requests()[n:] {
		if r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/issues") {
			t.Errorf("a mapping on this host was looked up again: %s %s?%s", r.Method, r.Path, r.Query)
		}
		if r.Method == http.MethodPost {
			t.Errorf("redelivery posted %s", r.Path)
		}
	}
}

// TestMappingOnAnotherHostFindsTheIssueByMarker: a mapping to another host
// whose number here is a stranger's issue is dropped, and the event's
// issue, which exists here under another number, is found by its marker:
// nothing is opened, the stranger's issue is not touched.
func TestMappingOnAnotherHostFindsTheIssueByMarker(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	deliverOpensOnly(t, s, c) // issues #1 and #2, the events'
	// On the old host, event 1's issue was #2: here that is event 2's
	// issue, whose marker is not event 1's.
	if _, err := s.st.SQL().Exec(`UPDATE events SET issue_number = 2, issue_url = 'https://ghe.old-corp.example/acme/llm-drift/issues/2' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	n := len(f.requests())
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 2 || res.Failed != 0 {
		t.Fatalf("%+v", res)
	}
	checkDelivered(t, s, f)
	for _, r := range f.requests()[n:] {
		if r.Method != http.MethodGet && strings.Contains(r.Path, "/issues/2") {
			t.Errorf("event 2's issue was changed: %s %s", r.Method, r.Path)
		}
	}
}

// TestSkippedOpenRowSkipsTheEventsLaterRows: once an event's open row is
// skipped and no issue of the event exists, its later rows say so while
// pending, and are recorded skipped on delivery (counted, noted, their
// last_error saying why), never sent; the other event is delivered.
func TestSkippedOpenRowSkipsTheEventsLaterRows(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	ctx := context.Background()
	var open int64
	if err := s.st.SQL().QueryRow(`SELECT id FROM outbox WHERE event_id = 1 AND action = 'open'`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if _, err := ghissue.Skip(ctx, s.st, []int64{open}); err != nil {
		t.Fatal(err)
	}
	later := 0
	for _, p := range pending(t, s) {
		if p.EventID == 1 {
			later++
			if !strings.Contains(p.Reason, "the event's issue was skipped") {
				t.Errorf("pending row %d: reason %q", p.ID, p.Reason)
			}
		}
	}
	if later == 0 {
		t.Fatal("scenario: event 1 has no later rows")
	}
	res := deliver(t, s, c, ghissue.Options{})
	if res.Skipped != later || res.Sent != 1 || res.Failed != 0 || len(res.Notes) != later {
		t.Fatalf("%+v", res)
	}
	if len(f.issueList()) != 1 {
		t.Errorf("%d issues, want 1 (event 2's)", len(f.issueList()))
	}
	rows, err := s.st.SQL().Query(`SELECT id, sent_at, last_error, attempts FROM outbox WHERE event_id = 1 AND id != ?`, open)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var sent, lastErr string
		var attempts int
		if err := rows.Scan(&id, &sent, &lastErr, &attempts); err != nil {
			t.Fatal(err)
		}
		if sent == "" || !strings.Contains(lastErr, "the event's issue was skipped") || !strings.Contains(lastErr, strconv.FormatInt(open, 10)) || attempts != 0 {
			t.Errorf("row %d: sent %q, attempts %d, last_error %q", id, sent, attempts, lastErr)
		}
	}
	if p := pending(t, s); len(p) != 0 {
		t.Errorf("pending: %+v", p)
	}
}

// TestSkippedOpenRowWithAnIssueStillUpdatesIt: the open row was skipped
// after its create reached GitHub (the answer lost): the issue exists, so
// the event's later rows update it as usual.
func TestSkippedOpenRowWithAnIssueStillUpdatesIt(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	ctx := context.Background()
	f.addFault(fault{match: isCreate, after: true, status: 502, body: `{"message":"Bad Gateway"}`})
	if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 1 || len(f.issueList()) != 1 {
		t.Fatalf("lost answer: %+v, %d issues", res, len(f.issueList()))
	}
	var open int64
	if err := s.st.SQL().QueryRow(`SELECT id FROM outbox WHERE event_id = 1 AND action = 'open'`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if done, err := ghissue.Skip(ctx, s.st, []int64{open}); err != nil || len(done) != 1 {
		t.Fatalf("skip: %v %v", done, err)
	}
	c.Advance(time.Hour)
	res := deliver(t, s, c, ghissue.Options{})
	if res.Skipped != 0 || res.Sent != 3 || res.Failed != 0 {
		t.Fatalf("%+v", res)
	}
	checkDelivered(t, s, f)
}

// TestRestoreLooksThroughRecentIssuesOncePerPass: after a restore lost
// the mappings of issues GitHub created without labels, one listing of
// the issues created since the rows were queued serves every row of the
// pass.
func TestRestoreLooksThroughRecentIssuesOncePerPass(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	f.dropLabels = true
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.now = c.Now
	db := s.cfg.Database
	backup := filepath.Join(t.TempDir(), "backup.db")
	s.close()
	copyFile(t, db, backup)
	s.open()
	c.Advance(time.Minute)
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 4 {
		t.Fatalf("first delivery: %+v", res)
	}
	s.close()
	copyFile(t, backup, db)
	s.open()
	c.Advance(time.Hour)
	n := len(f.requests())
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 4 || res.Failed != 0 {
		t.Fatalf("after the restore: %+v", res)
	}
	for _, ev := range events(t, s) {
		k := 0
		for _, iss := range f.issueList() {
			if strings.Contains(iss.Body, ghissue.EventMarker(ev.Fingerprint)) {
				k++
			}
		}
		if k != 1 {
			t.Errorf("event %d: %d issues carry its marker, want 1", ev.ID, k)
		}
	}
	first := 0
	for _, r := range f.requests()[n:] {
		if r.Method == http.MethodPost {
			t.Errorf("after the restore: POST %s", r.Path)
		}
		if r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/issues") && !strings.Contains(r.Query, "labels=") && !strings.Contains("&"+r.Query, "&page=") {
			first++
		}
	}
	if first != 1 {
		t.Errorf("%d listings of the recent issues in the pass, want 1", first)
	}
}

// TestSecondaryLimitBacksOffAsItRecurs: without retry-after, a secondary
// limit waits a minute, then longer when it recurs; with
// x-ratelimit-remaining 0 it waits for x-ratelimit-reset.
func TestSecondaryLimitBacksOffAsItRecurs(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	limit := func(remaining string, reset time.Time) fault {
		return fault{status: 403, match: func(r *http.Request) bool { return r.Method == http.MethodPost }, header: map[string]string{
			"X-Ratelimit-Remaining": remaining,
			"X-Ratelimit-Reset":     strconv.FormatInt(reset.Unix(), 10),
		}, body: `{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`}
	}
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		f.addFault(limit("4990", c.Now().Add(50*time.Minute)))
		if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 1 {
			t.Fatalf("pass %d: %+v", i, res)
		}
		p := pending(t, s)[0]
		if p.NextAttemptAt == nil || !p.NextAttemptAt.Equal(c.Now().Add(want)) {
			t.Fatalf("pass %d: next attempt %v, want %s from now", i, p.NextAttemptAt, want)
		}
		c.Advance(want)
	}
	reset := c.Now().Add(20 * time.Minute).Truncate(time.Second)
	f.addFault(limit("0", reset))
	if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 1 {
		t.Fatalf("%+v", res)
	}
	if p := pending(t, s)[0]; p.NextAttemptAt == nil || !p.NextAttemptAt.Equal(reset) {
		t.Fatalf("remaining 0: next attempt %v, want the reset %v", p.NextAttemptAt, reset)
	}
}

// TestLongTitlesKeepWhatChangedAndTheStatus: the scope gives way before
// what changed and the status: a provider-wide event lists as many
// targets as fit, else only their count; one target's long name is cut.
func TestLongTitlesKeepWhatChangedAndTheStatus(t *testing.T) {
	ev := func(targets ...string) *diff.Event {
		e := &diff.Event{ID: 3, Fingerprint: "0123456789abcdef0123", Target: targets[0], Provider: "azure",
			Kind: diff.KindPolicy, Direction: diff.Tightened, Status: diff.StatusReverted, NewCategories: []string{"self_harm"}}
		if len(targets) > 1 {
			e.Targets = targets
		}
		for _, tg := range targets {
			e.Probes = append(e.Probes, diff.EventProbe{Target: tg, ProbeID: "p", Reverted: true, RevertedRun: 9,
				Before: diff.Verdict{Class: probes.Allowed, Categories: []string{}},
				After:  diff.Verdict{Class: probes.BlockedInput, Categories: []string{"self_harm"}}})
		}
		return e
	}
	var many, huge []string
	for i := 0; i < 8; i++ {
		many = append(many, fmt.Sprintf("azure-gpt4o-region%d-prod", i))
		huge = append(huge, fmt.Sprintf("azure-%d-%s", i, strings.Repeat("x", 240)))
	}
	for name, tc := range map[string]struct {
		ev         *diff.Event
		want, lack []string
	}{
		"fits":       {ev(many[:2]...), []string{"azure (2 targets: azure-gpt4o-region0-prod, azure-gpt4o-region1-prod)"}, nil},
		"some fit":   {ev(many...), []string{"azure (8 targets: azure-gpt4o-region0-prod", "more)"}, []string{"region7"}},
		"none fits":  {ev(huge...), []string{"azure (8 targets):"}, []string{"xxx"}},
		"one target": {ev(huge[0]), []string{"Provider policy change on azure-0-xxx", "…:"}, nil},
	} {
		title := ghissue.Title(tc.ev)
		if utf8.RuneCountInString(title) > ghissue.MaxTitle {
			t.Errorf("%s: %d runes: %s", name, utf8.RuneCountInString(title), title)
		}
		for _, w := range append(tc.want, "now blocked (new: self_harm) [reverted]") {
			if !strings.Contains(title, w) {
				t.Errorf("%s: title lacks %q: %s", name, w, title)
			}
		}
		for _, w := range tc.lack {
			if strings.Contains(title, w) {
				t.Errorf("%s: title has %q: %s", name, w, title)
			}
		}
	}
}
