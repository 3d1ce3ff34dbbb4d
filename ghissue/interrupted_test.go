package ghissue_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

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
// adopt the issue, not open a second one.
func TestInterruptedCreateWithoutLabelIsAdopted(t *testing.T) {
	for _, tc := range []struct {
		name string
		// interrupt prepares the first pass (ctx is its context, cancel
		// cancels it) and returns the HTTP transport to use.
		interrupt func(t *testing.T, s *sys, cancel context.CancelFunc) http.RoundTripper
		wantErr   func(error) bool
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
			if p[0].Attempts != 0 || p[0].NextAttemptAt == nil || p[0].NextAttemptAt.After(c.Now()) {
				t.Errorf("interrupted row: %+v, want a next attempt at or before now", p[0])
			}
			if !strings.Contains(p[0].Reason, "interrupted") {
				t.Errorf("interrupted row: reason %q", p[0].Reason)
			}
			if _, err := s.st.SQL().Exec(`DROP TRIGGER IF EXISTS test_fail_set_issue`); err != nil {
				t.Fatal(err)
			}

			// The next pass (a new process, nothing waited for).
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
