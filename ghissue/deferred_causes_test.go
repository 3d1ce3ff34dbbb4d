package ghissue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
)

// deferredCounts is what a Result says of the rows it left.
type deferredCounts struct {
	failed, deferred, notDue, claimed, heldBack, stopped, heldByGitHub int
	incomplete                                                         bool
}

func countsOf(res *ghissue.Result) deferredCounts {
	return deferredCounts{res.Failed, res.Deferred, res.NotDue, res.ClaimedElsewhere, res.HeldBack, res.Stopped, res.HeldByGitHub, res.Incomplete()}
}

// TestDeferredRowsSayWhy: a pass counts the rows it leaves by why, the
// counts adding up to Deferred, and it is incomplete (outbox --send exits
// 3) only when an attempt failed, a failure stopped it before rows that
// were due, or a GitHub wait in force kept it from sending rows that were
// due. Rows not due yet (backing off on their own failure, or raised to
// the end of a GitHub wait an earlier pass recorded), claimed by another
// delivery, or held back behind such a row of their event are left as
// scheduled: that is no failure, and GitHub's wait is then a note, not an
// error.
func TestDeferredRowsSayWhy(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.now = c.Now
	s.st.SetClock(c.Now)
	start := c.Now()
	rows := pending(t, s)
	open1, open2 := opensOf(t, s)
	if len(rows) != 4 || rows[0].ID != open1 || rows[1].ID != open2 || rows[2].EventID != 1 || rows[3].EventID != 1 {
		t.Fatalf("scenario changed: %+v", rows)
	}
	check := func(when string, res *ghissue.Result, want deferredCounts) {
		t.Helper()
		got := countsOf(res)
		if got != want {
			t.Errorf("%s: %+v, want %+v (result %+v)", when, got, want, res)
		}
		if sum := res.NotDue + res.ClaimedElsewhere + res.HeldBack + res.Stopped + res.HeldByGitHub; sum != res.Deferred {
			t.Errorf("%s: the causes add up to %d, deferred %d", when, sum, res.Deferred)
		}
	}

	// A 15-minute secondary rate limit on event 1's open stops the pass:
	// event 2's open, due, is not attempted; event 1's later rows are
	// held back behind its open.
	f.addFault(func() fault { ft := secondaryRateLimit(429, 900); ft.match = isCreate; return ft }())
	res := deliver(t, s, c, ghissue.Options{})
	check("rate limited", res, deferredCounts{failed: 1, deferred: 3, heldBack: 2, stopped: 1, incomplete: true})
	end := start.Add(15 * time.Minute)

	// Two minutes in: every row waits for the limit's end, as the failing
	// pass recorded; none is due, so GitHub's wait defers nothing that
	// could have gone out: a note, not an error.
	c.Advance(2 * time.Minute)
	res = deliver(t, s, c, ghissue.Options{})
	check("inside the limit", res, deferredCounts{deferred: 4, notDue: 2, heldBack: 2})
	if res.HeldUntil == nil || !res.HeldUntil.Equal(end) || len(res.Errors) != 0 || len(res.Notes) != 1 ||
		!strings.Contains(res.Notes[0], "GitHub asked driftprobe to wait: no request before "+rfc(end)) {
		t.Errorf("inside the limit: held until %v, errors %q, notes %q; want the wait noted, no error", res.HeldUntil, res.Errors, res.Notes)
	}

	// A row queued since (never attempted: due) is kept from going out by
	// GitHub's wait: that pass is incomplete.
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET attempts = 0, next_attempt_at = '', last_error = '' WHERE id = ?`, open2); err != nil {
		t.Fatal(err)
	}
	res = deliver(t, s, c, ghissue.Options{})
	check("a due row inside the limit", res, deferredCounts{deferred: 4, notDue: 1, heldBack: 2, heldByGitHub: 1, incomplete: true})
	if res.HeldUntil == nil || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "GitHub asked driftprobe to wait: no request before "+rfc(end)) {
		t.Errorf("a due row inside the limit: held until %v, errors %q; want the wait as the error", res.HeldUntil, res.Errors)
	}

	// After the limit: a 422 on event 1's open (its own backoff), while
	// another delivery has event 2's open claimed.
	c.Advance(end.Sub(c.Now()) + time.Minute)
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = ?, last_error = '' WHERE id = ?`, rfc(c.Now().Add(10*time.Minute)), open2); err != nil {
		t.Fatal(err)
	}
	f.addFault(fault{match: isCreate, status: 422, body: `{"message":"Validation Failed","errors":[{"resource":"Issue","code":"invalid","field":"labels"}]}`})
	res = deliver(t, s, c, ghissue.Options{})
	check("422", res, deferredCounts{failed: 1, deferred: 3, claimed: 1, heldBack: 2, incomplete: true})

	// Half a minute later nothing has failed: event 1's open backs off,
	// event 2's is still claimed. Nothing is incomplete.
	c.Advance(30 * time.Second)
	res = deliver(t, s, c, ghissue.Options{})
	check("backing off", res, deferredCounts{deferred: 4, notDue: 1, claimed: 1, heldBack: 2})
	if len(res.Errors) != 0 || res.HeldUntil != nil {
		t.Errorf("backing off: errors %q, held until %v", res.Errors, res.HeldUntil)
	}
}
