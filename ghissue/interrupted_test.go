package ghissue_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
)

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestInterruptedCreateWithoutLabelIsAdopted: the token lacks push access,
// so GitHub drops the labels of the new issue; the create succeeds on
// GitHub, but the process "dies" before recording it: SIGTERM (a CronJob
// deadline) cancels the pass while Issues.Create is in flight, or the
// database refuses the mapping right after. The row was a first attempt
// (attempts 0, no next_attempt_at), and the interrupted pass only releases
// its claim; the next pass must still know the create may have been sent,
// look through the unlabelled issues created since the row was queued and
// adopt the issue, not open a second one. A create cut off in flight
// (the signal) may still be carried out by GitHub: that row waits as after
// a lost answer first (see TestInterruptedCallThatLandsLater); a create
// whose answer came (only its recording failed) is due again at once.
func TestInterruptedCreateWithoutLabelIsAdopted(t *testing.T) {
	for _, tc := range []struct {
		name string
		// interrupt prepares the first pass (ctx is its context, cancel
		// cancels it) and returns the HTTP transport to use.
		interrupt func(t *testing.T, s *sys, cancel context.CancelFunc) http.RoundTripper
		wantErr   func(error) bool
		wait      time.Duration // how long the interrupted row waits
	}{
		{
			name: "cancelled during the create",
			interrupt: func(t *testing.T, s *sys, cancel context.CancelFunc) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if !isCreate(r) {
						return http.DefaultTransport.RoundTrip(r)
					}
					// GitHub gets the request and opens the issue; the
					// signal arrives before the answer is read.
					resp, err := http.DefaultTransport.RoundTrip(r)
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					cancel()
					return nil, context.Canceled
				})
			},
			wantErr: func(err error) bool { return errors.Is(err, context.Canceled) },
			wait:    time.Minute,
		},
		{
			name: "recording the issue fails",
			interrupt: func(t *testing.T, s *sys, cancel context.CancelFunc) http.RoundTripper {
				// The database refuses the mapping (and only it: the
				// outbox row can still be released).
				if _, err := s.st.SQL().Exec(`CREATE TRIGGER test_fail_set_issue BEFORE UPDATE OF issue_number ON events
					BEGIN SELECT RAISE(ABORT, 'test: database is locked'); END`); err != nil {
					t.Fatal(err)
				}
				return http.DefaultTransport
			},
			wantErr: func(err error) bool { return err != nil && strings.Contains(err.Error(), "test: database is locked") },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := fixture(t, f.BaseURL())
			c := newClock()
			f.now, f.dropLabels = c.Now, true
			s.st.SetClock(c.Now)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rt := tc.interrupt(t, s, cancel)
			res, err := ghissue.Deliver(ctx, s.st, s.cfg, ghissue.Options{Now: c.Now, Getenv: env, HTTPClient: &http.Client{Transport: rt}})
			if !tc.wantErr(err) {
				t.Fatalf("interrupted pass: %+v, %v", res, err)
			}
			issues := f.issueList()
			if len(issues) != 1 || len(issues[0].Labels) != 0 {
				t.Fatalf("after the interrupted create: %+v", issues)
			}
			if evs := events(t, s); evs[0].IssueNumber != 0 {
				t.Fatalf("mapping recorded although the pass was interrupted: #%d", evs[0].IssueNumber)
			}
			// The row remembers that it may have reached GitHub.
			p := pending(t, s)
			if p[0].Attempts != 0 || p[0].NextAttemptAt == nil || !p[0].NextAttemptAt.Equal(c.Now().Add(tc.wait)) {
				t.Errorf("interrupted row: %+v, want a next attempt at now + %s", p[0], tc.wait)
			}
			if !strings.Contains(p[0].Reason, "interrupted") {
				t.Errorf("interrupted row: reason %q", p[0].Reason)
			}
			if _, err := s.st.SQL().Exec(`DROP TRIGGER IF EXISTS test_fail_set_issue`); err != nil {
				t.Fatal(err)
			}

			// The next pass (a new process), once the row is due.
			c.Advance(tc.wait)
			n := len(f.requests())
			if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 4 || res.Failed != 0 {
				t.Fatalf("next pass: %+v", res)
			}
			evs := events(t, s)
			if evs[0].IssueNumber != issues[0].Number {
				t.Errorf("event 1 mapped to issue #%d, want #%d (the one the interrupted pass created)", evs[0].IssueNumber, issues[0].Number)
			}
			for _, ev := range evs {
				k := 0
				for _, iss := range f.issueList() {
					if strings.Contains(iss.Body, ghissue.EventMarker(ev.Fingerprint)) {
						k++
					}
				}
				if k != 1 {
					t.Errorf("event %d: %d issues, want 1", ev.ID, k)
				}
			}
			creates := 0
			for _, r := range f.requests()[n:] {
				if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/issues") {
					creates++
				}
			}
			if creates != 1 {
				t.Errorf("next pass created %d issues, want 1 (event 2's)", creates)
			}
			if p := pending(t, s); len(p) != 0 {
				t.Errorf("pending: %+v", p)
			}
		})
	}
}

// heldCall is a request the test's transport took from a pass and did not
// send: the pass is interrupted while GitHub "is still working on it", and
// the test lets it land on GitHub later (land).
type heldCall struct {
	req  *http.Request
	body []byte
}

// land sends the held request to GitHub now: the create GitHub finishes
// after the interrupted process gave up on it.
func (h *heldCall) land(t *testing.T) {
	t.Helper()
	r := h.req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(h.body))
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("held call landed with %d", resp.StatusCode)
	}
}

// TestInterruptedCallThatLandsLater is QA D2: SIGINT reaches outbox --send
// while GitHub is still creating the issue (or posting the comment), and
// the operator runs outbox --send again at once. GitHub carries the
// interrupted call out after the second pass's marker lookup. The
// interrupted row must not be due at once: it waits as after a lost
// answer, then finds the issue or comment by its marker and creates
// nothing twice. The other event's delivery is not held up meanwhile.
func TestInterruptedCallThatLandsLater(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match func(r *http.Request) bool
	}{
		{"issue", isCreate},
		{"comment", func(r *http.Request) bool {
			return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := fixture(t, f.BaseURL())
			c := newClock()
			f.now = c.Now
			s.st.SetClock(c.Now)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var held *heldCall
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if held != nil || !tc.match(r) {
					return http.DefaultTransport.RoundTrip(r)
				}
				// GitHub has the request and is still working on it when
				// the signal arrives.
				held = &heldCall{req: r.Clone(context.Background())}
				held.body, _ = io.ReadAll(r.Body)
				cancel()
				return nil, context.Canceled
			})
			_, err := ghissue.Deliver(ctx, s.st, s.cfg, ghissue.Options{Now: c.Now, Getenv: env, HTTPClient: &http.Client{Transport: rt}})
			if !errors.Is(err, context.Canceled) || held == nil {
				t.Fatalf("interrupted pass: %v (held %v)", err, held != nil)
			}

			// The operator runs it again at once: event 1's rows wait,
			// event 2 is filed (by now, if the first pass had not).
			n := len(f.requests())
			res := deliver(t, s, c, ghissue.Options{})
			if res.Failed != 0 {
				t.Fatalf("immediate re-run: %+v", res)
			}
			for _, r := range f.requests()[n:] {
				if r.Method == http.MethodPost && (strings.Contains(r.Body, "driftprobe:event="+events(t, s)[0].Fingerprint) || strings.HasSuffix(r.Path, "/comments")) {
					t.Errorf("immediate re-run sent %s %s for event 1 while its interrupted call may still land", r.Method, r.Path)
				}
			}
			evs := events(t, s)
			if evs[1].IssueNumber == 0 {
				t.Errorf("event 2 not filed while event 1's interrupted row waits")
			}
			p := pending(t, s)
			if len(p) == 0 || p[0].EventID != evs[0].ID || p[0].NextAttemptAt == nil || !p[0].NextAttemptAt.After(c.Now()) || !strings.Contains(p[0].Reason, "interrupted") {
				t.Fatalf("interrupted row: %+v, want it waiting, saying it was interrupted", p)
			}

			held.land(t) // GitHub finishes the interrupted call
			c.Advance(time.Minute)
			for i := 0; i < 3 && len(pending(t, s)) > 0; i++ {
				if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 {
					t.Fatalf("retry: %+v", res)
				}
				c.Advance(time.Hour)
			}
			checkDelivered(t, s, f)
		})
	}
}
