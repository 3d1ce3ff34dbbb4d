package ghissue_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/storage"
)

// outboxRow is an outbox row as stored.
type outboxRow struct {
	next      string // next_attempt_at, raw
	attempts  int
	lastError string
	sentAt    string
}

func readRow(t *testing.T, s *sys, id int64) outboxRow {
	t.Helper()
	var r outboxRow
	if err := s.st.SQL().QueryRow(`SELECT next_attempt_at, attempts, last_error, sent_at FROM outbox WHERE id = ?`, id).
		Scan(&r.next, &r.attempts, &r.lastError, &r.sentAt); err != nil {
		t.Errorf("outbox %d: %v", id, err)
	}
	return r
}

// checkClaim reports whether row id holds the claim ending at until (and
// no recorded attempt or error).
func checkClaim(t *testing.T, s *sys, id int64, until time.Time, when string) {
	t.Helper()
	r := readRow(t, s, id)
	if !storage.ParseTime(r.next).Equal(until) || r.attempts != 0 || r.lastError != "" || r.sentAt != "" {
		t.Errorf("%s: outbox %d = %+v, want the other process's claim until %s (no attempt, no error)", when, id, r, until.Format(time.RFC3339))
	}
}

// await waits for ch, failing (not hanging) the test when it never comes.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Errorf("timed out waiting for %s", what)
	}
}

// issuesOf counts the issues carrying each event's marker.
func issuesOf(t *testing.T, s *sys, f *fakeGitHub) []int {
	t.Helper()
	var out []int
	for _, ev := range events(t, s) {
		n := 0
		for _, iss := range f.issueList() {
			if strings.Contains(iss.Body, ghissue.EventMarker(ev.Fingerprint)) {
				n++
			}
		}
		out = append(out, n)
	}
	return out
}

// TestLateOutcomeAfterClaimRanOut: process A claims event 1's open and its
// create hangs past the claim (11 minutes for a 10-minute claim); process
// B then claims the row and sends its create. While B's create is in
// flight, A's call ends: it fails (a timeout: never reached GitHub) or A
// is cancelled. A must not record its failure or release over B's claim:
// either would make the row due while B is sending it, and a third pass a
// minute later (C) would open a second issue. A says so in its Result.
func TestLateOutcomeAfterClaimRanOut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel bool
	}{
		{"late failure", false},
		{"late release", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := fixture(t, f.BaseURL())
			c := newClock()
			f.now = c.Now
			s.st.SetClock(c.Now)
			start := c.Now()
			row1 := pending(t, s)[0].ID // event 1's open
			opts := func(rt http.RoundTripper) ghissue.Options {
				o := ghissue.Options{Now: c.Now, Getenv: env}
				if rt != nil {
					o.HTTPClient = &http.Client{Transport: rt}
				}
				return o
			}

			aHung, bInFlight, aDone, bDone := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
			ctxA, cancelA := context.WithCancel(context.Background())
			defer cancelA()
			aCreates := 0
			hookA := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
				if !isCreate(r) {
					return nil
				}
				if aCreates++; aCreates > 1 {
					t.Errorf("process A went on creating after its hung call")
					return nil
				}
				c.Advance(11 * time.Minute) // A's claim runs out while the call hangs
				close(aHung)
				await(t, bInFlight, "B's create")
				if tc.cancel {
					cancelA()
					return context.Canceled
				}
				return &net.OpError{Op: "read", Net: "tcp", Err: netTimeout{}}
			}}

			var resB, resC *ghissue.Result
			var errB, errC error
			bCreates := 0
			hookB := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
				if !isCreate(r) {
					return nil
				}
				if bCreates++; bCreates > 1 {
					return nil
				}
				close(bInFlight)
				await(t, aDone, "process A")
				// A is done; B's create is still in flight and B's claim
				// (taken at start+11m) must stand.
				checkClaim(t, s, row1, start.Add(21*time.Minute), "after A's late outcome")
				// B's call is slow too: a third pass runs a minute later.
				c.Advance(time.Minute)
				resC, errC = ghissue.Deliver(context.Background(), s.st, s.cfg, opts(nil))
				return nil
			}}
			go func() {
				defer close(bDone)
				await(t, aHung, "A's create")
				resB, errB = ghissue.Deliver(context.Background(), s.st, s.cfg, opts(hookB))
			}()

			resA, errA := ghissue.Deliver(ctxA, s.st, s.cfg, opts(hookA))
			close(aDone)
			await(t, bDone, "process B")

			if tc.cancel {
				if !errors.Is(errA, context.Canceled) {
					t.Errorf("A: %v, want context.Canceled", errA)
				}
			} else if errA != nil {
				t.Errorf("A: %v", errA)
			}
			if resA == nil || resA.Lost != 1 || resA.Failed != 0 || resA.Sent != 0 || len(resA.Notes) != 1 || !strings.Contains(resA.Notes[0], "another process took the row over") {
				t.Errorf("A: %+v, want the row reported lost to another process", resA)
			}
			if errB != nil || resB == nil || resB.Sent < 1 || resB.Lost != 0 {
				t.Errorf("B: %+v, %v", resB, errB)
			}
			if errC != nil || resC == nil {
				t.Errorf("C: %+v, %v", resC, errC)
			}
			if n := issuesOf(t, s, f); n[0] != 1 {
				t.Errorf("event 1: %d issues, want 1", n[0])
			}
			// Whatever is left is delivered later, exactly once.
			c.Advance(time.Hour)
			deliver(t, s, c, ghissue.Options{})
			checkDelivered(t, s, f)
		})
	}
}

// TestLateDeliveryAfterClaimRanOut: A's create reaches GitHub but its
// answer comes back after A's claim ran out; meanwhile B claimed the row.
// A records the delivery anyway (it happened) and says so; B, finding the
// issue by its marker, must not record the row a second time over A's
// record (sent_at moved, attempts counted twice).
func TestLateDeliveryAfterClaimRanOut(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.now = c.Now
	s.st.SetClock(c.Now)
	start := c.Now()
	row1 := pending(t, s)[0].ID
	opts := func(rt http.RoundTripper) ghissue.Options {
		return ghissue.Options{Now: c.Now, Getenv: env, HTTPClient: &http.Client{Transport: rt}}
	}

	aHung, bInFlight, aDone, bDone := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	aCreates := 0
	rtA := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if !isCreate(r) {
			return resp, err
		}
		if aCreates++; aCreates == 1 {
			// GitHub opened the issue; the answer is slow.
			c.Advance(11 * time.Minute)
			close(aHung)
			await(t, bInFlight, "B's listing")
			checkClaim(t, s, row1, start.Add(21*time.Minute), "while A's answer is in flight")
		}
		return resp, err
	})
	bLists := 0
	hookB := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/issues") {
			return nil
		}
		if bLists++; bLists == 1 {
			close(bInFlight)
			await(t, aDone, "process A")
			c.Advance(time.Minute) // B's listing is slow
		}
		return nil
	}}
	var resB *ghissue.Result
	var errB error
	go func() {
		defer close(bDone)
		await(t, aHung, "A's create")
		resB, errB = ghissue.Deliver(context.Background(), s.st, s.cfg, opts(hookB))
	}()
	resA, errA := ghissue.Deliver(context.Background(), s.st, s.cfg, opts(rtA))
	close(aDone)
	await(t, bDone, "process B")

	if errA != nil || resA.Sent != 4 || resA.Lost != 1 || len(resA.Notes) != 1 || !strings.Contains(resA.Notes[0], "the delivery is recorded") {
		t.Errorf("A: %+v, %v; want 4 sent, event 1's open delivered over B's claim", resA, errA)
	}
	if errB != nil || resB == nil || resB.Sent != 1 || resB.Lost != 1 || len(resB.Notes) != 1 || !strings.Contains(resB.Notes[0], "already recorded") {
		t.Errorf("B: %+v, %v; want event 1's open found by its marker, A's record kept", resB, errB)
	}
	r := readRow(t, s, row1)
	if r.attempts != 1 || !storage.ParseTime(r.sentAt).Equal(start.Add(11*time.Minute)) || r.next != "" || r.lastError != "" {
		t.Errorf("event 1's open: %+v, want A's record (sent at start+11m, 1 attempt)", r)
	}
	checkDelivered(t, s, f)
}

// TestGlobalFailureLeavesAnotherProcessesClaim: while B's create of event
// 2's issue is in flight (B holds the row's claim), A's pass, which read
// the row unclaimed, hits a global failure (no permission: no retry time;
// a secondary rate limit: 90s) and defers the rows it did not reach. It
// must leave B's claim alone: writing its snapshot (empty) or the rate
// limit's end over it ends the claim, and a pass once the limit is over
// (C) would open event 2's issue a second time.
func TestGlobalFailureLeavesAnotherProcessesClaim(t *testing.T) {
	for _, tc := range []struct {
		name string
		ft   fault
		wait time.Duration
	}{
		{"no permission", fault{status: 403, body: `{"message":"Resource not accessible by personal access token"}`}, 0},
		{"secondary rate limit", secondaryRateLimit(429, 90), 90 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := fixture(t, f.BaseURL())
			c := newClock()
			f.now = c.Now
			s.st.SetClock(c.Now)
			start := c.Now()
			row2 := pending(t, s)[1].ID // event 2's open
			ft := tc.ft
			ft.match = isCreate // A's create: B's is held back before it reaches GitHub
			f.addFault(ft)
			opts := func(rt http.RoundTripper) ghissue.Options {
				o := ghissue.Options{Now: c.Now, Getenv: env}
				if rt != nil {
					o.HTTPClient = &http.Client{Transport: rt}
				}
				return o
			}

			aStarted, bInFlight, aDone, bDone := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
			aCalls := 0
			hookA := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
				if aCalls++; aCalls == 1 {
					// A has read its snapshot and claimed event 1's open.
					close(aStarted)
					await(t, bInFlight, "B's create")
				}
				return nil
			}}
			var resB, resC *ghissue.Result
			var errB, errC error
			bCreates := 0
			hookB := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
				if !isCreate(r) {
					return nil
				}
				if bCreates++; bCreates > 1 {
					return nil
				}
				checkClaim(t, s, row2, start.Add(10*time.Minute), "B's create in flight")
				close(bInFlight)
				await(t, aDone, "process A")
				checkClaim(t, s, row2, start.Add(10*time.Minute), "after A's global failure")
				c.Advance(tc.wait)
				resC, errC = ghissue.Deliver(context.Background(), s.st, s.cfg, opts(nil))
				return nil
			}}
			go func() {
				defer close(bDone)
				await(t, aStarted, "process A")
				resB, errB = ghissue.Deliver(context.Background(), s.st, s.cfg, opts(hookB))
			}()
			resA, errA := ghissue.Deliver(context.Background(), s.st, s.cfg, opts(hookA))
			close(aDone)
			await(t, bDone, "process B")

			if errA != nil || resA.Failed != 1 || resA.Sent != 0 || resA.Lost != 0 {
				t.Errorf("A: %+v, %v; want event 1's open failed, the rest deferred", resA, errA)
			}
			if errB != nil || resB == nil || resB.Sent < 1 {
				t.Errorf("B: %+v, %v", resB, errB)
			}
			if errC != nil || resC == nil {
				t.Errorf("C: %+v, %v", resC, errC)
			}
			if n := issuesOf(t, s, f); n[1] != 1 {
				t.Errorf("event 2: %d issues, want 1", n[1])
			}
			c.Advance(time.Hour)
			deliver(t, s, c, ghissue.Options{})
			checkDelivered(t, s, f)
		})
	}
}

// TestGlobalFailureLeavesAClaimItFound: B claimed event 2's open before
// A's pass read the outbox, so A finds the row not due and leaves it; a
// global failure in A's pass (a secondary rate limit of 15 minutes, longer
// than B's claim) must not move it either: that would change B's claim
// under it, and B's outcome (here a 502) would no longer be recorded.
func TestGlobalFailureLeavesAClaimItFound(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.now = c.Now
	s.st.SetClock(c.Now)
	start := c.Now()
	p := pending(t, s)
	row1, row2 := p[0].ID, p[1].ID
	// Event 1's open failed a minute ago and waits one more.
	if _, err := s.st.SQL().Exec(`UPDATE outbox SET attempts = 1, last_error = 'GitHub unavailable (503 Server Error)', next_attempt_at = ? WHERE id = ?`,
		start.Add(time.Minute).UTC().Format(time.RFC3339Nano), row1); err != nil {
		t.Fatal(err)
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
	checkClaim(t, s, row2, start.Add(10*time.Minute), "after A's global failure")
	close(aDone)
	await(t, bDone, "process B")

	if errA != nil || resA.Failed != 1 || !strings.Contains(resA.Errors[0], "secondary rate limit") {
		t.Errorf("A: %+v, %v", resA, errA)
	}
	if errB != nil || resB == nil || resB.Failed != 1 || resB.Lost != 0 {
		t.Errorf("B: %+v, %v; want its failure recorded on its claim", resB, errB)
	}
	r := readRow(t, s, row2)
	if r.attempts != 1 || !strings.Contains(r.lastError, "GitHub unavailable (502") || !storage.ParseTime(r.next).Equal(start.Add(3*time.Minute)) {
		t.Errorf("event 2's open: %+v, want B's failure (502, retry a minute after it)", r)
	}
	c.Advance(time.Hour)
	deliver(t, s, c, ghissue.Options{})
	checkDelivered(t, s, f)
}
