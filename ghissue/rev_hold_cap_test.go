package ghissue_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
)

// Review: a Retry-After (or x-ratelimit-reset) is trusted without a
// bound: one bogus answer (a proxy, an SSO gateway, a GHE appliance with
// a skewed clock) records a hold years long, and nothing but SQL clears it.
func TestReviewHoldFromBogusRetryAfterIsUncapped(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.addFault(secondaryRateLimit(429, 10*365*24*3600)) // one answer: Retry-After 10 years
	deliver(t, s, c, ghissue.Options{})
	t.Logf("hold recorded until %s (now %s)", holdUntil(t, s, "token $"+tokenEnv), c.Now().Format(time.RFC3339))
	c.Advance(7 * 24 * time.Hour) // a week later GitHub is fine
	n := len(f.requests())
	res := deliver(t, s, c, ghissue.Options{})
	t.Logf("a week later: sent %d, requests %d, held_until %v, errors %q", res.Sent, len(f.requests())-n, res.HeldUntil, res.Errors)
	if res.HeldUntil != nil && res.HeldUntil.After(c.Now().Add(24*time.Hour)) {
		t.Errorf("one Retry-After held all delivery for %s", res.HeldUntil.Sub(c.Now()).Round(time.Hour))
	}
}

// Review: Retry-After past ~292 years overflows time.Duration: the
// "wait" lands in the past, so the row is retried at once on every pass.
func TestReviewRetryAfterOverflow(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.addFault(secondaryRateLimit(429, 9300000000))
	res := deliver(t, s, c, ghissue.Options{})
	t.Logf("first pass: failed %d, errors %q; hold %q", res.Failed, res.Errors, holdUntil(t, s, "token $"+tokenEnv))
	for _, p := range pending(t, s)[:1] {
		t.Logf("row %d next attempt %v", p.ID, p.NextAttemptAt)
		if p.NextAttemptAt != nil && !p.NextAttemptAt.After(c.Now()) {
			t.Errorf("a rate-limited row is due again at once (next attempt %v)", p.NextAttemptAt)
		}
	}
}

// Every stated wait is capped at an hour from the failure, whichever path
// reads it: a reset in milliseconds on a 403 (go-github's RateLimitError),
// on a 429 (the ErrorResponse path), a Retry-After on a 403
// (AbuseRateLimitError); the row's message says the wait was capped.
func TestReviewStatedWaitCappedEveryPath(t *testing.T) {
	msReset := func(status int) fault {
		return fault{status: status, header: map[string]string{
			"X-Ratelimit-Limit":     "5000",
			"X-Ratelimit-Remaining": "0",
			"X-Ratelimit-Reset":     strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10),
			"X-Ratelimit-Resource":  "core",
		}, body: `{"message":"API rate limit exceeded for user ID 12345."}`}
	}
	abuse := secondaryRateLimit(403, 10*365*24*3600)
	for name, ft := range map[string]fault{"403 reset in ms": msReset(403), "429 reset in ms": msReset(429), "403 retry-after 10y": abuse} {
		t.Run(name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := fixture(t, f.BaseURL())
			c := newClock()
			f.addFault(ft)
			res := deliver(t, s, c, ghissue.Options{})
			if res.Failed != 1 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "capped at 1h") {
				t.Fatalf("failed %d, errors %q: want one failure saying the wait was capped", res.Failed, res.Errors)
			}
			until, err := time.Parse(time.RFC3339Nano, holdUntil(t, s, "token $"+tokenEnv))
			if err != nil {
				t.Fatal(err)
			}
			if !until.After(c.Now()) || until.After(c.Now().Add(time.Hour)) {
				t.Errorf("hold until %s, want within an hour of %s", until, c.Now())
			}
			c.Advance(time.Hour + time.Second)
			if res := deliver(t, s, c, ghissue.Options{}); res.HeldUntil != nil || res.Sent == 0 {
				t.Errorf("an hour later: sent %d, held until %v, errors %q", res.Sent, res.HeldUntil, res.Errors)
			}
		})
	}
}

// Review: a rate limit defers every pending row to GitHub's end; a row
// not yet due that waits on its own recorded failure (a locked issue,
// whose message says what to do) only has its next attempt moved: its
// last_error is kept, not replaced by "not attempted: …".
func TestReviewRateLimitKeepsWaitingRowsError(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	p := pending(t, s)
	if len(p) < 3 {
		t.Fatalf("fixture has %d pending rows", len(p))
	}
	waiting := p[len(p)-1].ID
	const locked = "issue #7 is locked (resolved): unlock it, or skip the row: driftprobe outbox --skip 4"
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET last_error = ?, next_attempt_at = ? WHERE id = ?`,
		locked, c.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano), waiting); err != nil {
		t.Fatal(err)
	}
	f.addFault(secondaryRateLimit(429, 600))
	res := deliver(t, s, c, ghissue.Options{})
	if res.Failed != 1 {
		t.Fatalf("failed %d, errors %q: want the first row rate limited", res.Failed, res.Errors)
	}
	until := c.Now().Add(600 * time.Second)
	for _, r := range pending(t, s) {
		switch {
		case r.ID == waiting:
			if r.LastError != locked {
				t.Errorf("row %d: last_error %q, want its own %q kept", r.ID, r.LastError, locked)
			}
			if r.NextAttemptAt == nil || r.NextAttemptAt.Before(until) {
				t.Errorf("row %d: next attempt %v, want GitHub's end %s", r.ID, r.NextAttemptAt, until)
			}
		case r.ID != p[0].ID:
			if !strings.HasPrefix(r.LastError, "not attempted: GitHub secondary rate limit") {
				t.Errorf("row %d: last_error %q, want not attempted", r.ID, r.LastError)
			}
		}
	}
}
