package ghissue_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
)

// rfc is how the listing writes a time.
func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// pendingRow returns the pending row id (failing when it is not pending).
func pendingRow(t *testing.T, s *sys, id int64) ghissue.PendingRow {
	t.Helper()
	for _, p := range pending(t, s) {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("outbox %d is not pending", id)
	return ghissue.PendingRow{}
}

// opensOf returns the open rows of events 1 and 2.
func opensOf(t *testing.T, s *sys) (open1, open2 int64) {
	t.Helper()
	for _, p := range pending(t, s) {
		if p.Action != ghissue.ActionOpen {
			continue
		}
		switch p.EventID {
		case 1:
			open1 = p.ID
		case 2:
			open2 = p.ID
		}
	}
	if open1 == 0 || open2 == 0 {
		t.Fatalf("scenario changed: no open rows for events 1 and 2 in %+v", pending(t, s))
	}
	return open1, open2
}

// TestPendingTellsAClaimFromABackoff: two rows whose previous attempt
// failed with the same error, one claimed by a delivery (its call in
// flight; or its deliverer killed: held until the claim runs out), the
// other backing off after that error. The listing must tell them apart:
// "being delivered (claimed until T; its previous attempt failed: E)"
// against "waiting until T: E", and --json says which row is claimed
// (claimed) while last_error stays the previous attempt's error. Once the
// claim has run out with nothing recorded (a killed deliverer), the row
// says it is retried and why.
func TestPendingTellsAClaimFromABackoff(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.now = c.Now
	s.st.SetClock(c.Now)
	start := c.Now()
	open1, open2 := opensOf(t, s)
	const refused = "GitHub refused the request (422 Validation Failed [])"
	// Both opens failed once; event 1's is due again, event 2's waits two
	// more minutes.
	for id, next := range map[int64]time.Time{open1: start.Add(-time.Minute), open2: start.Add(2 * time.Minute)} {
		if _, err := s.st.SQL().Exec(`UPDATE outbox SET attempts = 1, last_error = ?, next_attempt_at = ? WHERE id = ?`, refused, rfc(next), id); err != nil {
			t.Fatal(err)
		}
	}

	checked := false
	hook := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
		if checked {
			return nil
		}
		checked = true
		// The pass has claimed event 1's open (its first row) and is on
		// its way to GitHub with it.
		claimEnd := start.Add(10 * time.Minute)
		p1, p2 := pendingRow(t, s, open1), pendingRow(t, s, open2)
		if want := "being delivered (claimed until " + rfc(claimEnd) + "; its previous attempt failed: " + refused + ")"; p1.Reason != want {
			t.Errorf("claimed row: reason %q, want %q", p1.Reason, want)
		}
		if !p1.Claimed || p1.LastError != refused || p1.NextAttemptAt == nil || !p1.NextAttemptAt.Equal(claimEnd) {
			t.Errorf("claimed row: claimed %v, last_error %q, next attempt %v; want claimed until %s, the previous error", p1.Claimed, p1.LastError, p1.NextAttemptAt, rfc(claimEnd))
		}
		if want := "waiting until " + rfc(start.Add(2*time.Minute)) + ": " + refused; p2.Reason != want || p2.Claimed || p2.LastError != refused {
			t.Errorf("backing-off row: reason %q, claimed %v, last_error %q; want %q, not claimed", p2.Reason, p2.Claimed, p2.LastError, want)
		}
		js, err := json.Marshal([]ghissue.PendingRow{p1, p2})
		if err != nil || strings.Count(string(js), `"claimed":true`) != 1 || strings.Contains(string(js), `"claimed":false`) {
			t.Errorf("--json rows: %s (%v): want \"claimed\":true on the claimed row only", js, err)
		}
		// Its deliverer killed, nothing recorded: once the claim has run
		// out the row is due again and says so.
		c.Advance(11 * time.Minute)
		p1 = pendingRow(t, s, open1)
		if p1.Claimed || p1.LastError != refused ||
			!strings.HasPrefix(p1.Reason, "retried on the next delivery: an earlier delivery was interrupted before its outcome was recorded") ||
			!strings.Contains(p1.Reason, "its previous attempt failed: "+refused) {
			t.Errorf("claim run out: reason %q, claimed %v, last_error %q", p1.Reason, p1.Claimed, p1.LastError)
		}
		return nil
	}}
	res := deliver(t, s, c, ghissue.Options{HTTPClient: &http.Client{Transport: hook}})
	if !checked {
		t.Fatalf("no call to GitHub: %+v", res)
	}
	if res.Sent < 1 || res.Failed != 0 || res.Lost != 0 {
		t.Errorf("pass: %+v, want event 1's open delivered", res)
	}
	if r := readRow(t, s, open1); r.sentAt == "" || r.lastError != "" || r.attempts != 2 {
		t.Errorf("event 1's open after delivery: %+v, want sent, no error left, 2 attempts", r)
	}
}

// TestGlobalFailureLeavesAClaimOnARowThatFailedBefore is
// TestGlobalFailureLeavesAClaimItFound for a row whose previous attempt
// had failed: B claims event 2's open, which failed once (503) and is due
// again; while B's create is in flight, A's pass meets a 15-minute
// secondary rate limit and defers the rows it did not reach. B's claim
// must be told from a row waiting on its own failure and left alone, so
// B's outcome (a 502) is recorded on it, not lost.
func TestGlobalFailureLeavesAClaimOnARowThatFailedBefore(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.now = c.Now
	s.st.SetClock(c.Now)
	start := c.Now()
	open1, open2 := opensOf(t, s)
	const unavailable = "GitHub unavailable (503 Service Unavailable)"
	// Event 1's open failed a minute ago and waits one more; event 2's
	// failed earlier and is due.
	for id, next := range map[int64]time.Time{open1: start.Add(time.Minute), open2: start} {
		if _, err := s.st.SQL().Exec(`UPDATE outbox SET attempts = 1, last_error = ?, next_attempt_at = ? WHERE id = ?`, unavailable, rfc(next), id); err != nil {
			t.Fatal(err)
		}
	}
	limit := secondaryRateLimit(429, 900)
	limit.match = isCreate // A's create of event 1's issue
	f.addFault(limit)
	bad := outage(502)
	bad.match = isCreate // then B's create of event 2's issue
	f.addFault(bad)

	bInFlight, aDone, bDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	bCreates := 0
	hookB := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
		if !isCreate(r) {
			return nil
		}
		if bCreates++; bCreates == 1 {
			close(bInFlight)
			await(t, aDone, "process A")
		}
		return nil
	}}
	var resB *ghissue.Result
	var errB error
	go func() {
		defer close(bDone)
		resB, errB = ghissue.Deliver(context.Background(), s.st, s.cfg, ghissue.Options{Now: c.Now, Getenv: env, HTTPClient: &http.Client{Transport: hookB}})
	}()
	await(t, bInFlight, "B's create")
	c.Advance(2 * time.Minute)
	resA, errA := ghissue.Deliver(context.Background(), s.st, s.cfg, ghissue.Options{Now: c.Now, Getenv: env})
	p := pendingRow(t, s, open2)
	if want := "being delivered (claimed until " + rfc(start.Add(10*time.Minute)) + "; its previous attempt failed: " + unavailable + ")"; !p.Claimed || p.Reason != want {
		t.Errorf("after A's global failure: event 2's open: claimed %v, reason %q; want B's claim left as it was: %q", p.Claimed, p.Reason, want)
	}
	close(aDone)
	await(t, bDone, "process B")

	if errA != nil || resA.Failed != 1 || len(resA.Errors) == 0 || !strings.Contains(resA.Errors[0], "secondary rate limit") {
		t.Errorf("A: %+v, %v", resA, errA)
	}
	if errB != nil || resB == nil || resB.Failed != 1 || resB.Lost != 0 {
		t.Errorf("B: %+v, %v; want its failure recorded on its claim", resB, errB)
	}
	if r := readRow(t, s, open2); r.attempts != 2 || !strings.HasPrefix(r.lastError, "GitHub unavailable (502") {
		t.Errorf("event 2's open: %+v, want B's failure recorded (a second attempt, the 502)", r)
	}
	c.Advance(time.Hour)
	deliver(t, s, c, ghissue.Options{})
	checkDelivered(t, s, f)
}
