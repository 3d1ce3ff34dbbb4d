package ghissue_test

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/storage"
)

// QA soak: a secondary rate limit (403/429 + Retry-After) or an exhausted
// primary limit applies to the token, not to one outbox row. Deliver
// defers the rows left in the failing pass (noteAll), but noteAll skipped
// a row whose next_attempt_at was already in the future, even when that
// was before the limit ends; that row was then tried at its own time, in
// the window GitHub told driftprobe to stay away. Seen live
// (serve, fake GitHub answering secondary limits with Retry-After: 120):
// outbox 5 failed at 23:32:43 "secondary rate limit until 23:34:43", and
// outbox 7 (another event, its own retry at 23:33:49) was sent at
// 23:33:52. Likewise during the primary-limit window (reset 23:30:47),
// outbox 5 was sent at 23:29:38 and outbox 7 at 23:30:14.
// GitHub: "If you continue to make requests while you are rate limited,
// your integration may be banned".
//
// Now the limit is recorded per GitHub host and credential (github_holds)
// and every pass checks it before its first request; every pending row
// waits for its end too.
func TestQASoakSecondaryRateLimitHoldsEveryRow(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	rows := pending(t, s)
	if len(rows) < 2 {
		t.Fatalf("fixture: %d rows", len(rows))
	}
	first := rows[0]
	var other *ghissue.PendingRow
	for i := range rows {
		if rows[i].EventID != first.EventID {
			other = &rows[i]
			break
		}
	}
	if other == nil {
		t.Fatal("fixture: no second event")
	}
	// The other event's row failed on its own earlier (an outage): its
	// next attempt is a minute away.
	due := c.Now().Add(time.Minute)
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET attempts = 1, next_attempt_at = ?, last_error = 'GitHub unavailable (503)' WHERE id = ?`,
		due.UTC().Format(time.RFC3339Nano), other.ID); err != nil {
		t.Fatal(err)
	}
	// Now GitHub answers the first row with a secondary limit: 15 minutes.
	ft := secondaryRateLimit(403, 900)
	f.addFault(ft)
	res := deliver(t, s, c, ghissue.Options{})
	if res.Failed != 1 {
		t.Fatalf("first pass: %+v", res)
	}
	end := c.Now().Add(15 * time.Minute)
	// Every pending row waits for the limit's end, the one that was
	// waiting for less included; that one keeps its own error (only its
	// next attempt moves: review, a locked issue's advice is not lost).
	for _, p := range pending(t, s) {
		why := "secondary rate limit"
		if p.ID == other.ID {
			why = "GitHub unavailable (503)"
		}
		if p.NextAttemptAt == nil || p.NextAttemptAt.Before(end) || !strings.Contains(p.Reason, why) {
			t.Errorf("row %d (event %d): next attempt %v, reason %q; want not before %s, the limit's", p.ID, p.EventID, p.NextAttemptAt, p.Reason, end)
		}
	}
	// A row queued since (a new event's, never attempted) is held too.
	fresh := rows[len(rows)-1].ID
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET attempts = 0, next_attempt_at = '', last_error = '' WHERE id = ?`, fresh); err != nil {
		t.Fatal(err)
	}
	// Two minutes later: well inside GitHub's Retry-After.
	c.Advance(2 * time.Minute)
	n := len(f.requests())
	res = deliver(t, s, c, ghissue.Options{})
	if sent := f.requests()[n:]; len(sent) != 0 {
		var what []string
		for _, r := range sent {
			what = append(what, r.Method+" "+r.Path)
		}
		t.Fatalf("%d request(s) sent 2 minutes into a 15-minute secondary rate limit (outbox %d, event %d, had its own retry time): %v; result %+v",
			len(sent), other.ID, other.EventID, what, res)
	}
	// The pass says it is deferred, and until when: in a note, not an
	// error, since the wait kept nothing due from going out (the row
	// queued since is behind an earlier row of its event, which waits for
	// the limit's end anyway).
	if res.HeldUntil == nil || !res.HeldUntil.Equal(end) || res.Deferred != len(rows) || res.Sent+res.Failed != 0 ||
		len(res.Errors) != 0 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "no request before "+end.UTC().Format(time.RFC3339)) {
		t.Fatalf("pass inside the limit: %+v; want every row deferred, held until %s", res, end)
	}
	if r := readRow(t, s, fresh); !storage.ParseTime(r.next).Equal(end) || !strings.Contains(r.lastError, "secondary rate limit") {
		t.Errorf("row queued since: %+v, want it held until %s", r, end)
	}
	// A second before the end, still nothing; at the end, everything,
	// each issue and comment once.
	c.Advance(13*time.Minute - time.Second)
	if res := deliver(t, s, c, ghissue.Options{}); len(f.requests()) != n || res.HeldUntil == nil {
		t.Fatalf("a second before the limit's end: %+v, %d request(s)", res, len(f.requests())-n)
	}
	c.Advance(time.Second)
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != len(rows) || res.HeldUntil != nil || len(res.Errors) != 0 {
		t.Fatalf("at the limit's end: %+v", res)
	}
	checkDelivered(t, s, f)
	if n := holds(t, s); n != 0 {
		t.Errorf("%d hold(s) left after GitHub answered again", n)
	}
}

// TestQASoakPrimaryRateLimitHoldsRowsQueuedSince: an exhausted primary
// limit (x-ratelimit-remaining: 0) holds every pass until
// x-ratelimit-reset, a row queued after the failure included.
func TestQASoakPrimaryRateLimitHoldsRowsQueuedSince(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	rows := pending(t, s)
	start := c.Now()
	reset := start.Add(20 * time.Minute)
	f.addFault(primaryRateLimit(reset))
	if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 1 || res.Sent != 0 {
		t.Fatalf("first pass: %+v", res)
	}
	// Every row but the first is raised to the reset; the first too (its
	// own failure). Then one looks new: queued after the failure.
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET attempts = 0, next_attempt_at = '', last_error = '' WHERE id = ?`, rows[1].ID); err != nil {
		t.Fatal(err)
	}
	n := len(f.requests())
	for _, at := range []time.Duration{time.Minute, 10 * time.Minute, 20*time.Minute - time.Second} {
		c.Advance(start.Add(at).Sub(c.Now()))
		res := deliver(t, s, c, ghissue.Options{})
		if len(f.requests()) != n || res.HeldUntil == nil || !res.HeldUntil.Equal(reset) {
			t.Fatalf("%s into a primary limit resetting at +20m: %+v, %d request(s)", at, res, len(f.requests())-n)
		}
	}
	c.Advance(time.Second)
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != len(rows) {
		t.Fatalf("after the reset: %+v", res)
	}
	checkDelivered(t, s, f)
}

// TestQASoakOutageOneRequestPerStep: an outage is global too. While
// GitHub answers 5xx, each backoff step sends one request (the first
// due row's first call), not one per row, and the step doubles with the
// outage's failures in a row, not with the attempts of whichever row is
// tried: a row queued during the outage does not restart it at a minute.
// Once GitHub answers, the record is cleared (the next outage starts from
// its first step).
func TestQASoakOutageOneRequestPerStep(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	rows := pending(t, s)
	for range 20 {
		f.addFault(outage(503))
	}
	start := c.Now()
	n := len(f.requests())
	pass := func(want int, what string) *ghissue.Result {
		t.Helper()
		res := deliver(t, s, c, ghissue.Options{})
		if got := len(f.requests()) - n; want >= 0 && got != want {
			t.Fatalf("%s (+%s): %d request(s), want %d; %+v", what, c.Now().Sub(start), got, want, res)
		}
		n = len(f.requests())
		return res
	}
	pass(1, "outage begins")
	// Every row looks never attempted from now on: the steps are the
	// outage's, not a row's.
	reset := func() {
		t.Helper()
		if _, err := s.st.SQL().Exec(`UPDATE outbox SET attempts = 0 WHERE sent_at = ''`); err != nil {
			t.Fatal(err)
		}
	}
	reset()
	c.Advance(30 * time.Second)
	pass(0, "inside the first step")
	c.Advance(30 * time.Second)
	pass(1, "first step over") // failure 2: two minutes
	reset()
	c.Advance(2*time.Minute - time.Second)
	pass(0, "inside the second step")
	c.Advance(time.Second)
	res := pass(1, "second step over") // failure 3: four minutes
	if want := c.Now().Add(4 * time.Minute); res.Failed != 1 || holdUntil(t, s, "") != want.UTC().Format(time.RFC3339Nano) {
		t.Fatalf("third failure: %+v, hold until %s, want %s", res, holdUntil(t, s, ""), want)
	}
	for _, p := range pending(t, s) {
		if p.NextAttemptAt == nil || p.NextAttemptAt.Before(c.Now().Add(4*time.Minute)) {
			t.Errorf("row %d: next attempt %v, want the outage's step", p.ID, p.NextAttemptAt)
		}
	}
	// GitHub is back.
	f.mu.Lock()
	f.faults = nil
	f.mu.Unlock()
	c.Advance(4 * time.Minute)
	if res := pass(-1, "recovery"); res.Sent != len(rows) {
		t.Fatalf("recovery: %+v", res)
	}
	checkDelivered(t, s, f)
	if k := holds(t, s); k != 0 {
		t.Errorf("%d hold(s) left after GitHub answered", k)
	}
}

// TestQASoakHoldScope: a rate limit holds the credential GitHub limited
// (a token's variable, an App installation) on that GitHub; an outage
// holds every credential on the host.
func TestQASoakHoldScope(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.addFault(secondaryRateLimit(429, 900))
	deliver(t, s, c, ghissue.Options{})
	if got := holdUntil(t, s, "token $"+tokenEnv); got != c.Now().Add(15*time.Minute).UTC().Format(time.RFC3339Nano) {
		t.Fatalf("credential hold until %q", got)
	}
	if got := holdUntil(t, s, ""); got != "" {
		t.Fatalf("a rate limit held the host: %q", got)
	}
	// Another credential (every row made due again, as it would be
	// without the limit): not held by the first one's limit.
	dueAll := func() {
		t.Helper()
		if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = '' WHERE sent_at = ''`); err != nil {
			t.Fatal(err)
		}
	}
	dueAll()
	other := "DRIFTPROBE_TEST_GH_TOKEN_2"
	g := *s.cfg.GitHub
	g.TokenEnv = other
	cfg := *s.cfg
	cfg.GitHub = &g
	otherEnv := func(k string) string {
		if k == other {
			return testToken
		}
		return ""
	}
	f.addFault(outage(502))
	c.Advance(time.Minute)
	s.st.SetClock(c.Now)
	n := len(f.requests())
	res, err := ghissue.Deliver(t.Context(), s.st, &cfg, ghissue.Options{Now: c.Now, Getenv: otherEnv})
	if err != nil || len(f.requests()) != n+1 || res.Failed != 1 {
		t.Fatalf("another credential during the first's limit: %+v, %v, %d request(s); want one (met by an outage)", res, err, len(f.requests())-n)
	}
	// The outage holds the first credential as well as the second (its
	// own limit lasts longer); the second waits for the outage alone.
	if got := holdUntil(t, s, ""); got != c.Now().Add(2*time.Minute).UTC().Format(time.RFC3339Nano) { // the row's second failure
		t.Fatalf("host hold until %q (now %s)", got, c.Now())
	}
	dueAll()
	n = len(f.requests())
	if res, err := ghissue.Deliver(t.Context(), s.st, &cfg, ghissue.Options{Now: c.Now, Getenv: otherEnv}); err != nil || len(f.requests()) != n || res.HeldUntil == nil {
		t.Fatalf("another credential during the host's outage: %+v, %v, %d request(s)", res, err, len(f.requests())-n)
	}
}

// holds counts the recorded GitHub holds.
func holds(t *testing.T, s *sys) int {
	t.Helper()
	var n int
	if err := s.st.SQL().QueryRow(`SELECT COUNT(*) FROM github_holds`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// holdUntil is the until of the hold of credential ("" the host's), or
// "" when there is none.
func holdUntil(t *testing.T, s *sys, credential string) string {
	t.Helper()
	var until string
	err := s.st.SQL().QueryRow(`SELECT until FROM github_holds WHERE credential = ?`, credential).Scan(&until)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return until
}
