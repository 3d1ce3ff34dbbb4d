package ghissue_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/storage"
)

// eventRows returns the outbox rows of event, in order: its open row and
// the later ones.
func eventRows(t *testing.T, s *sys, event int64) (open int64, later []int64) {
	t.Helper()
	rows, err := s.st.SQL().Query(`SELECT id, action FROM outbox WHERE event_id = ? ORDER BY id`, event)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var action string
		if err := rows.Scan(&id, &action); err != nil {
			t.Fatal(err)
		}
		if action == ghissue.ActionOpen {
			open = id
		} else {
			later = append(later, id)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if open == 0 || len(later) < 2 || slices.Min(later) < open {
		t.Fatalf("scenario changed: event %d has open row %d, later rows %v", event, open, later)
	}
	return open, later
}

// issuesWithMarker returns the fake GitHub's issues carrying ev's marker.
func issuesWithMarker(f *fakeGitHub, ev *diff.Event) []fakeIssue {
	var out []fakeIssue
	for _, iss := range f.issueList() {
		if strings.Contains(iss.Body, ghissue.EventMarker(ev.Fingerprint)) {
			out = append(out, iss)
		}
	}
	return out
}

// checkCommentOrder fails unless the comments on ev's issue are its
// updates' (the opening aside), each once, in the order they were
// recorded.
func checkCommentOrder(t *testing.T, f *fakeGitHub, ev *diff.Event) {
	t.Helper()
	iss := issuesWithMarker(f, ev)
	if len(iss) != 1 {
		t.Fatalf("event %d: %d issues, want 1", ev.ID, len(iss))
	}
	var want, got []int64
	for _, u := range ev.Updates {
		if u.Change != diff.ChangeOpened {
			want = append(want, u.ID)
		}
	}
	slices.Sort(want)
	for _, c := range f.commentsOf(iss[0].Number) {
		for _, u := range ev.Updates {
			if strings.Contains(c.Body, ghissue.UpdateMarker(ev, u)) {
				got = append(got, u.ID)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("event %d: comments for updates %v, want %v (each once, in order)", ev.ID, got, want)
	}
}

// TestUnskipOpenRowOpensTheIssueOnceAndCommentsFollow: the operator skips
// event 1's open row by mistake; the next pass records the event's later
// rows skipped too (no issue of the event), files event 2. --unskip of
// the open row makes it pending again with exactly those later rows (as
// they were: no attempt counted, due at once), and the next pass, through
// the real go-github client against the fake GitHub, opens event 1's issue
// once and posts its comments, each once, in order, and closes it on the
// revert. Nothing is sent again afterwards, and unskipping the delivered
// row is refused.
func TestUnskipOpenRowOpensTheIssueOnceAndCommentsFollow(t *testing.T) {
	ctx := context.Background()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	open, later := eventRows(t, s, 1)
	if done, err := ghissue.Skip(ctx, s.st, []int64{open}); err != nil || len(done) != 1 {
		t.Fatalf("skip: %v %v", done, err)
	}
	if res := deliver(t, s, c, ghissue.Options{}); res.Skipped != len(later) || res.Sent != 1 || res.Failed != 0 {
		t.Fatalf("pass after the skip: %+v", res)
	}
	ev1 := events(t, s)[0]
	if n := len(issuesWithMarker(f, ev1)); n != 0 {
		t.Fatalf("event 1's open row skipped, yet %d issue(s)", n)
	}
	if p := pending(t, s); len(p) != 0 {
		t.Fatalf("pending after the skip: %+v", p)
	}

	done, not, err := ghissue.Unskip(ctx, s.st, []int64{open})
	if err != nil {
		t.Fatal(err)
	}
	if len(not) != 0 || len(done) != 1 || done[0].ID != open || done[0].EventID != 1 || done[0].Action != ghissue.ActionOpen || !slices.Equal(done[0].Later, later) {
		t.Fatalf("unskip %d: done %+v, not %+v; want it with its later rows %v", open, done, not, later)
	}
	p := pending(t, s)
	var ids []int64
	for _, r := range p {
		ids = append(ids, r.ID)
		if r.Attempts != 0 || r.NextAttemptAt != nil || r.LastError != ghissue.UnskipNote {
			t.Errorf("row %d after --unskip: attempts %d, next attempt %v, last_error %q: want it as before the skip, noted", r.ID, r.Attempts, r.NextAttemptAt, r.LastError)
		}
	}
	if want := append([]int64{open}, later...); !slices.Equal(ids, want) {
		t.Fatalf("pending after --unskip: %v, want %v", ids, want)
	}
	if !strings.HasPrefix(p[0].Reason, "queued again: "+ghissue.UnskipNote) {
		t.Errorf("open row's reason %q", p[0].Reason)
	}
	for _, r := range p[1:] {
		if !strings.HasPrefix(r.Reason, "held back until outbox row "+itoa(open)+" ") || strings.Contains(r.Reason, "the event's issue was skipped") {
			t.Errorf("later row %d's reason %q: want it held behind the open row, with no word of a skipped issue", r.ID, r.Reason)
		}
	}

	c.Advance(time.Minute)
	res := deliver(t, s, c, ghissue.Options{})
	if res.Sent != 1+len(later) || res.Failed != 0 || res.Skipped != 0 || res.Deferred != 0 {
		t.Fatalf("pass after --unskip: %+v", res)
	}
	checkDelivered(t, s, f) // one issue per event, every update's comment once, the reverted event's issue closed
	checkCommentOrder(t, f, events(t, s)[0])

	n := len(f.requests())
	c.Advance(time.Hour)
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 0 || res.Skipped != 0 {
		t.Errorf("a pass after delivery: %+v", res)
	}
	for _, r := range f.requests()[n:] {
		if r.Method != http.MethodGet {
			t.Errorf("a pass with nothing pending sent %s %s", r.Method, r.Path)
		}
	}
	done, not, err = ghissue.Unskip(ctx, s.st, []int64{open})
	if err != nil || len(done) != 0 || len(not) != 1 || !strings.Contains(not[0].Reason, "delivered") {
		t.Errorf("unskip of the delivered open row: done %+v, not %+v, %v", done, not, err)
	}
}

// TestUnskipRefusesWhatWasNotSkipped: --unskip undoes only --skip. An
// unknown id, a pending row and a delivered row are refused with their
// reason and left as they were; so is a row recorded skipped because its
// event's open row was, while that open row is still skipped (the reason
// names the open row to unskip). Named with its open row (in any order,
// ids repeated), it comes back with it, once, and is not refused.
func TestUnskipRefusesWhatWasNotSkipped(t *testing.T) {
	ctx := context.Background()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	open, later := eventRows(t, s, 1)
	ev2open, _, err := openRowOf(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	done, not, err := ghissue.Unskip(ctx, s.st, []int64{ev2open})
	if err != nil || len(done) != 0 || len(not) != 1 || not[0].ID != ev2open || !strings.HasPrefix(not[0].Reason, "pending, not skipped") {
		t.Fatalf("unskip of a pending row: done %+v, not %+v, %v", done, not, err)
	}
	if _, err := ghissue.Skip(ctx, s.st, []int64{open}); err != nil {
		t.Fatal(err)
	}
	if res := deliver(t, s, c, ghissue.Options{}); res.Skipped != len(later) || res.Sent != 1 {
		t.Fatalf("pass after the skip: %+v", res)
	}
	before := map[int64]outboxRow{}
	for _, id := range append([]int64{open, ev2open}, later...) {
		before[id] = readRow(t, s, id)
	}

	done, not, err = ghissue.Unskip(ctx, s.st, []int64{999999, ev2open, later[0]})
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 0 || len(not) != 3 {
		t.Fatalf("done %+v, not %+v: want all three refused", done, not)
	}
	for i, want := range []string{"unknown", "delivered to GitHub, not skipped", "recorded skipped because its event's open row " + itoa(open) + " was skipped"} {
		if !strings.HasPrefix(not[i].Reason, want) {
			t.Errorf("refusal %d (row %d): %q, want it to start %q", i, not[i].ID, not[i].Reason, want)
		}
	}
	if !strings.Contains(not[2].Reason, "unskip row "+itoa(open)) {
		t.Errorf("refusal of a later row %q: want it to name the open row to unskip", not[2].Reason)
	}
	for id, r := range before {
		if got := readRow(t, s, id); got != r {
			t.Errorf("row %d changed by a refused unskip: %+v, was %+v", id, got, r)
		}
	}

	ids := append(slices.Clone(later), open, later[0], open)
	slices.Reverse(ids[:len(later)])
	done, not, err = ghissue.Unskip(ctx, s.st, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(not) != 0 || len(done) != 1 || done[0].ID != open || !slices.Equal(done[0].Later, later) {
		t.Fatalf("unskip %v: done %+v, not %+v; want the open row back with %v, nothing refused", ids, done, not, later)
	}
	if p := pending(t, s); len(p) != 1+len(later) {
		t.Errorf("pending: %d rows, want %d", len(p), 1+len(later))
	}
}

// TestUnskipLaterRowWhoseOpenRowIsNoLongerSkipped: a row recorded skipped
// because its open row was, whose open row is pending or delivered
// again, is what --unskip brings back on its own: nothing keeps it done.
func TestUnskipLaterRowWhoseOpenRowIsNoLongerSkipped(t *testing.T) {
	ctx := context.Background()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	open, later := eventRows(t, s, 1)
	if _, err := ghissue.Skip(ctx, s.st, []int64{open}); err != nil {
		t.Fatal(err)
	}
	deliver(t, s, c, ghissue.Options{})
	// An older driftprobe's pass could record a later row skipped after
	// the open row was made pending again; here, by hand.
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET sent_at = '', last_error = ? WHERE id = ?`, ghissue.UnskipNote, open); err != nil {
		t.Fatal(err)
	}
	done, not, err := ghissue.Unskip(ctx, s.st, []int64{later[1]})
	if err != nil || len(not) != 0 || len(done) != 1 || done[0].ID != later[1] || len(done[0].Later) != 0 {
		t.Fatalf("done %+v, not %+v, %v; want row %d back", done, not, err, later[1])
	}
	if r := readRow(t, s, later[1]); r.sentAt != "" || r.lastError != ghissue.UnskipNote {
		t.Errorf("row %d: %+v", later[1], r)
	}
}

// TestUnskipWhileAPassDeliversTheEvent races --unskip against a delivery
// pass that read the outbox before it, each step at the moment it can
// happen, and wants event 1's issue opened once and its comments in order
// every time:
//   - the pass claimed event 1's first later row, its open row still
//     skipped, and --unskip lands while the pass looks for the issue: the
//     row is held back (released, not sent, not recorded skipped) and the
//     event's next row too; the next pass opens the issue and comments;
//   - --unskip lands after the pass read the outbox but before it claims
//     the later row: the row is never claimed (an earlier row of its event
//     is pending) and goes out after the open row on the next pass.
func TestUnskipWhileAPassDeliversTheEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		// unskipOn selects the request during which --unskip lands.
		unskipOn func(s *sys, r *http.Request, later int64) bool
		// claimed: the pass had claimed event 1's first later row then.
		claimed bool
	}{
		{"after the claim", func(s *sys, r *http.Request, later int64) bool {
			return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/issues") && readRowNext(s, later) != ""
		}, true},
		{"before the claim", func(s *sys, r *http.Request, later int64) bool {
			return isCreate(r) // event 2's issue, delivered first in the pass
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := fixture(t, f.BaseURL())
			c := newClock()
			open, later := eventRows(t, s, 1)
			ev2open, _, err := openRowOf(s, 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ghissue.Skip(ctx, s.st, []int64{open}); err != nil {
				t.Fatal(err)
			}
			if !tc.claimed {
				// Event 2's open goes before event 1's later rows.
				if ev2open > later[0] {
					t.Fatalf("scenario changed: event 2's open row %d after event 1's row %d", ev2open, later[0])
				}
			} else if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = '2999-01-01T00:00:00Z' WHERE id = ?`, ev2open); err != nil {
				t.Fatal(err) // event 1's later row is the pass's first
			}
			unskipped := false
			hook := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
				if unskipped || !tc.unskipOn(s, r, later[0]) {
					return nil
				}
				unskipped = true
				if done, not, err := ghissue.Unskip(ctx, s.st, []int64{open}); err != nil || len(done) != 1 || len(not) != 0 || len(done[0].Later) != 0 {
					t.Errorf("unskip during the pass: done %+v, not %+v, %v; want the open row alone back (its later rows are still pending)", done, not, err)
				}
				return nil
			}}
			res := deliver(t, s, c, ghissue.Options{HTTPClient: &http.Client{Transport: hook}})
			if !unskipped {
				t.Fatal("the pass made no request during which to unskip")
			}
			deferred := len(later) // event 1's later rows
			if tc.claimed {
				deferred++ // and event 2's open, put off
			}
			if res.Skipped != 0 || res.Failed != 0 || res.Deferred != deferred {
				t.Errorf("the racing pass: %+v; want %d rows deferred (event 1's later rows), none skipped", res, deferred)
			}
			heldNote := slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "held back: outbox row "+itoa(open)) })
			if heldNote != tc.claimed {
				t.Errorf("notes %q: held-back note %v, want %v", res.Notes, heldNote, tc.claimed)
			}
			if r := readRow(t, s, later[0]); r.sentAt != "" || r.attempts != 0 || (r.next == "") == tc.claimed {
				t.Errorf("event 1's first later row after the racing pass: %+v (claimed in the pass: %v)", r, tc.claimed)
			}
			if n := len(issuesWithMarker(f, events(t, s)[0])); n != 0 {
				t.Errorf("the racing pass opened %d issue(s) for event 1 from a later row", n)
			}
			if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = '' WHERE id = ? AND sent_at = ''`, ev2open); err != nil {
				t.Fatal(err)
			}
			c.Advance(time.Minute)
			if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 || res.Skipped != 0 || res.Deferred != 0 {
				t.Fatalf("the next pass: %+v", res)
			}
			checkDelivered(t, s, f)
			checkCommentOrder(t, f, events(t, s)[0])
		})
	}
}

// TestMarkSkippedOnlyWhileTheOpenRowIsSkipped: a pass that found event
// 1's open row skipped records the later row it holds skipped only if the
// open row is still skipped when it writes: --unskip may land between its
// read and its write (there is no GitHub call between them to race it
// in), and the row must then stay pending (the pass releases it), never
// recorded skipped once Unskip has looked for such rows.
func TestMarkSkippedOnlyWhileTheOpenRowIsSkipped(t *testing.T) {
	ctx := context.Background()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	open, later := eventRows(t, s, 1)
	const claim = "2030-01-01T00:00:00Z"
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = ? WHERE id IN (?, ?)`, claim, later[0], later[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := ghissue.Skip(ctx, s.st, []int64{open}); err != nil {
		t.Fatal(err)
	}
	// Still skipped: recorded.
	if ok, err := ghissue.MarkSkippedUnderClaim(ctx, s.st, later[0], 1, claim, open); err != nil || !ok {
		t.Fatalf("open row skipped: recorded %v, %v", ok, err)
	}
	if done, _, err := ghissue.Unskip(ctx, s.st, []int64{open}); err != nil || len(done) != 1 || !slices.Equal(done[0].Later, later[:1]) {
		t.Fatalf("unskip: %+v %v", done, err)
	}
	// Unskipped between the pass's read and its write: not recorded.
	if ok, err := ghissue.MarkSkippedUnderClaim(ctx, s.st, later[1], 1, claim, open); err != nil || ok {
		t.Errorf("open row pending again: recorded %v, %v; want the row left pending", ok, err)
	}
	if r := readRow(t, s, later[1]); r.sentAt != "" || r.next != claim {
		t.Errorf("row %d: %+v, want it pending under the pass's claim", later[1], r)
	}
}

// openRowOf returns event's open row and the number of its later rows.
func openRowOf(s *sys, event int64) (int64, int, error) {
	var open int64
	var n int
	err := s.st.SQL().QueryRow(`SELECT MIN(CASE WHEN action = 'open' THEN id END), COUNT(*) - 1 FROM outbox WHERE event_id = ?`, event).Scan(&open, &n)
	return open, n, err
}

// readRowNext is row id's next_attempt_at ("" also when unreadable).
func readRowNext(s *sys, id int64) string {
	var next string
	s.st.SQL().QueryRow(`SELECT next_attempt_at FROM outbox WHERE id = ?`, id).Scan(&next)
	return next
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

// TestUnskipCommentRowWhileTheNextIsBeingSent: event 1's issue exists; its
// first comment row was skipped (say, by mistake) and the pass delivering
// its next row (the revert) is listing the issue's comments when --unskip
// brings the first back. The revert's comment must not go out first: the
// row is held back (released, nothing posted) and the next pass posts the
// two comments in order, each once.
func TestUnskipCommentRowWhileTheNextIsBeingSent(t *testing.T) {
	ctx := context.Background()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	_, later := eventRows(t, s, 1)
	deliverOpensOnly(t, s, c)
	if _, err := ghissue.Skip(ctx, s.st, later[:1]); err != nil {
		t.Fatal(err)
	}
	unskipped := false
	hook := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
		if unskipped || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/comments") {
			return nil
		}
		unskipped = true
		if done, not, err := ghissue.Unskip(ctx, s.st, later[:1]); err != nil || len(done) != 1 || len(not) != 0 {
			t.Errorf("unskip during the pass: done %+v, not %+v, %v", done, not, err)
		}
		return nil
	}}
	res := deliver(t, s, c, ghissue.Options{HTTPClient: &http.Client{Transport: hook}})
	if !unskipped {
		t.Fatal("the pass listed no comments")
	}
	if res.Sent != 0 || res.Failed != 0 || res.Deferred != len(later)-1 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "held back: outbox row "+itoa(later[0])) {
		t.Errorf("the racing pass: %+v; want the revert held back behind the unskipped comment", res)
	}
	c.Advance(time.Minute)
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != len(later) || res.Failed != 0 || res.Deferred != 0 {
		t.Fatalf("the next pass: %+v", res)
	}
	checkDelivered(t, s, f)
	checkCommentOrder(t, f, events(t, s)[0])
}

// TestUnskipKeepsTheClaimOfADeliveryInFlight: the operator skips event 1's
// open row while a pass's create of its issue is in flight, and undoes the
// skip before GitHub answers. The row is pending again under that pass's
// claim: another pass run meanwhile does not take it (it would open a
// second issue: the first is not created yet), and the first pass's
// outcome is recorded on it as for any claimed row.
func TestUnskipKeepsTheClaimOfADeliveryInFlight(t *testing.T) {
	ctx := context.Background()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	open, _ := eventRows(t, s, 1)
	var other *ghissue.Result
	hook := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
		if other != nil || !isCreate(r) || !strings.Contains(readBody(r), "Provider policy change on sim-prod") {
			return nil
		}
		if _, err := ghissue.Skip(ctx, s.st, []int64{open}); err != nil {
			t.Error(err)
		}
		if done, _, err := ghissue.Unskip(ctx, s.st, []int64{open}); err != nil || len(done) != 1 {
			t.Errorf("unskip: %+v %v", done, err)
		}
		var err error
		if other, err = ghissue.Deliver(ctx, s.st, s.cfg, ghissue.Options{Now: c.Now, Getenv: env}); err != nil {
			t.Errorf("other pass: %v", err)
		}
		return nil
	}}
	deliver(t, s, c, ghissue.Options{HTTPClient: &http.Client{Transport: hook}})
	if other == nil {
		t.Fatal("no create of event 1's issue")
	}
	if r := readRow(t, s, open); r.sentAt == "" || r.attempts != 1 || r.lastError != "" {
		t.Errorf("event 1's open row: %+v, want the in-flight delivery recorded", r)
	}
	if n := len(issuesWithMarker(f, events(t, s)[0])); n != 1 {
		t.Errorf("event 1: %d issues, want 1 (the other pass took the row while its create was in flight)", n)
	}
	c.Advance(time.Hour)
	deliver(t, s, c, ghissue.Options{})
	checkDelivered(t, s, f)
	checkCommentOrder(t, f, events(t, s)[0])
}

// readBody returns r's body and puts it back.
func readBody(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
}

// TestUnskipOfAClaimedRowKeepsTheClaimMark: process A's create of event
// 1's issue is in flight when the operator, with a store of its own on
// the same database (process B), skips event 1's open row and undoes the
// skip. The row is pending again under A's claim, marked as claimed: B's
// listing says it is being delivered (Claimed, its last_error the unskip
// note), not waiting on that note; and a pass of B that meets a rate
// limit lasting past A's claim, which moves every row waiting for less
// to the limit's end, leaves the claimed row alone, so A's delivery is
// recorded under its own claim (no "lost" outcome, no second issue).
func TestUnskipOfAClaimedRowKeepsTheClaimMark(t *testing.T) {
	ctx := context.Background()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	open, _ := eventRows(t, s, 1)
	b, err := storage.Open(ctx, s.cfg.Database) // the operator's process
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.SetClock(c.Now)

	var claim string
	var resB *ghissue.Result
	hook := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
		if resB != nil || !isCreate(r) || !strings.Contains(readBody(r), ghissue.EventMarker(events(t, s)[0].Fingerprint)) {
			return nil
		}
		claim = readRow(t, s, open).next
		if claim == "" {
			t.Fatal("event 1's open row is not claimed while its create is in flight")
		}
		if done, err := ghissue.Skip(ctx, b, []int64{open}); err != nil || len(done) != 1 {
			t.Errorf("skip: %v %v", done, err)
		}
		done, not, err := ghissue.Unskip(ctx, b, []int64{open})
		if err != nil || len(done) != 1 || len(not) != 0 || done[0].ClaimedUntil == nil || ts(*done[0].ClaimedUntil) != claim {
			t.Errorf("unskip: done %+v, not %+v, %v; want the row back under A's claim until %s", done, not, err, claim)
		}
		if r := readRow(t, s, open); r.next != claim || r.lastError != "[being delivered] "+ghissue.UnskipNote || r.sentAt != "" {
			t.Errorf("row %d after --skip and --unskip: %+v; want it pending under A's claim, marked", open, r)
		}
		p, err := ghissue.Pending(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 || p[0].ID != open || !p[0].Claimed || p[0].LastError != ghissue.UnskipNote ||
			!strings.HasPrefix(p[0].Reason, "being delivered (claimed until ") || strings.Contains(p[0].Reason, "waiting") {
			t.Errorf("B's listing of row %d while A delivers it: %+v; want it claimed, being delivered", open, p)
		}
		// B delivers too, and meets a primary rate limit that ends after
		// A's claim: every row waiting for less moves to its end, but not
		// a row another delivery has claimed.
		limit := primaryRateLimit(c.Now().Add(30 * time.Minute))
		limit.match = isCreate // B's: A's create is not at the server yet
		f.addFault(limit)
		if resB, err = ghissue.Deliver(ctx, b, s.cfg, ghissue.Options{Now: c.Now, Getenv: env}); err != nil {
			t.Errorf("B's pass: %v", err)
		} else if resB.Failed != 1 || resB.Sent != 0 {
			t.Errorf("B's pass: %+v; want its create refused by the rate limit", resB)
		}
		if r := readRow(t, s, open); r.next != claim {
			t.Errorf("row %d after B's rate limit: next attempt %s, want A's claim %s kept", open, r.next, claim)
		}
		return nil
	}}
	resA := deliver(t, s, c, ghissue.Options{HTTPClient: &http.Client{Transport: hook}})
	if resB == nil {
		t.Fatal("A never created event 1's issue")
	}
	if resA.Lost != 0 || resA.Sent < 1 {
		t.Errorf("A's pass: %+v; want its delivery of row %d recorded under its own claim, nothing lost", resA, open)
	}
	if r := readRow(t, s, open); r.sentAt == "" || r.attempts != 1 || r.lastError != "" {
		t.Errorf("row %d after A's pass: %+v, want it delivered", open, r)
	}
	if n := len(issuesWithMarker(f, events(t, s)[0])); n != 1 {
		t.Errorf("event 1: %d issues, want 1", n)
	}
}

// TestUnskipOfAWaitingRowIsNoClaim: a row skipped while it waited on its
// own failure (no delivery had it) comes back waiting as it did, not as
// claimed: only a claim's mark survives the skip.
func TestUnskipOfAWaitingRowIsNoClaim(t *testing.T) {
	ctx := context.Background()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	s.st.SetClock(c.Now)
	open, _ := eventRows(t, s, 1)
	next := ts(c.Now().Add(5 * time.Minute))
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET attempts = 1, last_error = 'GitHub refused the request (422 Validation Failed [])', next_attempt_at = ? WHERE id = ?`, next, open); err != nil {
		t.Fatal(err)
	}
	if done, err := ghissue.Skip(ctx, s.st, []int64{open}); err != nil || len(done) != 1 {
		t.Fatalf("skip: %v %v", done, err)
	}
	if r := readRow(t, s, open); r.lastError != ghissue.SkipNote {
		t.Errorf("skipped row: %+v, want last_error %q", r, ghissue.SkipNote)
	}
	done, _, err := ghissue.Unskip(ctx, s.st, []int64{open})
	if err != nil || len(done) != 1 || done[0].ClaimedUntil != nil {
		t.Fatalf("unskip: %+v %v; want it back, not claimed", done, err)
	}
	if r := readRow(t, s, open); r.lastError != ghissue.UnskipNote || r.next != next || r.attempts != 1 {
		t.Errorf("row %d after --unskip: %+v", open, r)
	}
	if p := pending(t, s); len(p) == 0 || p[0].ID != open || p[0].Claimed || !strings.HasPrefix(p[0].Reason, "waiting until ") {
		t.Errorf("pending after --unskip: %+v; want row %d waiting, not claimed", p, open)
	}
}

// ts formats t as the outbox stores times.
func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
