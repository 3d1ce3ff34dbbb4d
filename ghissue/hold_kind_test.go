package ghissue_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
)

// TestHoldWordingFollowsItsKind (on-call): a wait is "GitHub asked
// driftprobe to wait" only when GitHub did (a rate limit). A 5xx, or a
// connection GitHub accepted but answered nothing on in time, is GitHub
// failing (an outage); a transport failure where no HTTP answer came (a
// refused connection, no connection in time; DNS and TLS alike) is
// GitHub unreachable, named with the host and the error, and says that
// waiting does not fix a wrong base_url or blocked egress. The hold
// (Holds: Kind), the pass that meets it (Result.HeldKind, its error), and
// the log say which; the backoff is the same.
func TestHoldWordingFollowsItsKind(t *testing.T) {
	const asked = "GitHub asked driftprobe to wait"
	const hint = "waiting does not fix a wrong github.base_url or blocked egress"
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, f *fakeGitHub) (baseURL string, o ghissue.Options)
		kind   string
		scope  string
		phrase string   // how the deferral is worded
		reason []string // what the hold's reason says
	}{
		{"connection refused", func(t *testing.T, f *fakeGitHub) (string, ghissue.Options) {
			return "http://127.0.0.1:1/", ghissue.Options{}
		}, "unreachable", "host", "driftprobe backs off after GitHub could not be reached",
			[]string{"GitHub unreachable from ", "no HTTP answer from http://127.0.0.1:1", "connection refused", hint}},
		{"no connection in time", func(t *testing.T, f *fakeGitHub) (string, ghissue.Options) {
			dial := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				<-ctx.Done() // a firewall dropping the SYN
				return nil, ctx.Err()
			}}
			return f.BaseURL(), ghissue.Options{HTTPClient: &http.Client{Transport: dial}, Timeout: 100 * time.Millisecond}
		}, "unreachable", "host", "driftprobe backs off after GitHub could not be reached",
			[]string{"GitHub unreachable from ", "no connection to http://127.0.0.1:", "within 100ms", hint}},
		{"503", func(t *testing.T, f *fakeGitHub) (string, ghissue.Options) {
			f.addFault(outage(503))
			return f.BaseURL(), ghissue.Options{}
		}, "outage", "host", "driftprobe backs off from a GitHub outage", []string{"GitHub unavailable (503"}},
		{"connected, no answer in time", func(t *testing.T, f *fakeGitHub) (string, ghissue.Options) {
			hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
			t.Cleanup(hang.Close)
			return hang.URL + "/", ghissue.Options{Timeout: 100 * time.Millisecond}
		}, "outage", "host", "driftprobe backs off from a GitHub outage", []string{"GitHub call timed out (limit 100ms)", "connected to"}},
		{"secondary rate limit", func(t *testing.T, f *fakeGitHub) (string, ghissue.Options) {
			f.addFault(secondaryRateLimit(429, 90))
			return f.BaseURL(), ghissue.Options{}
		}, "rate_limit", "credential", asked, []string{"GitHub secondary rate limit (429)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			base, o := tc.setup(t, f)
			s := fixture(t, base)
			c := newClock()
			var logs bytes.Buffer
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			if res := deliver(t, s, c, o); res.Failed != 1 {
				t.Fatalf("first pass: %+v", res)
			}
			hs, err := ghissue.Holds(context.Background(), s.st)
			if err != nil || len(hs) != 1 {
				t.Fatalf("holds: %+v, %v", hs, err)
			}
			h := hs[0]
			if h.Kind != tc.kind || h.Scope != tc.scope {
				t.Errorf("hold kind %q scope %q, want %q %q (%s)", h.Kind, h.Scope, tc.kind, tc.scope, h.Reason)
			}
			for _, w := range tc.reason {
				if !strings.Contains(h.Reason, w) {
					t.Errorf("hold reason %q, want it to say %q", h.Reason, w)
				}
			}
			if tc.kind != "rate_limit" && strings.Contains(h.Reason, "asked") {
				t.Errorf("hold reason %q says GitHub asked", h.Reason)
			}

			// A row due while the hold lasts: the pass sends nothing and
			// says why in the hold's words.
			if _, err := s.st.SQL().Exec(`UPDATE outbox SET next_attempt_at = '' WHERE sent_at = ''`); err != nil {
				t.Fatal(err)
			}
			logs.Reset()
			res := deliver(t, s, c, o)
			if res.HeldByGitHub == 0 || res.HeldUntil == nil || !res.HeldUntil.Equal(h.Until) || res.HeldKind != tc.kind || len(res.Errors) != 1 {
				t.Fatalf("pass inside the hold: %+v", res)
			}
			if !strings.HasPrefix(res.Errors[0], tc.phrase+": no request before ") {
				t.Errorf("error %q, want it to start %q", res.Errors[0], tc.phrase+": no request before ")
			}
			if !strings.Contains(logs.String(), "github delivery deferred: "+tc.phrase) || !strings.Contains(logs.String(), "kind="+tc.kind) {
				t.Errorf("log, want %q and kind=%s:\n%s", "github delivery deferred: "+tc.phrase, tc.kind, logs.String())
			}
			if tc.kind != "rate_limit" {
				for _, text := range append([]string{logs.String()}, append(res.Errors, res.Notes...)...) {
					if strings.Contains(text, asked) {
						t.Errorf("GitHub never asked to wait, but: %s", text)
					}
				}
			}
		})
	}
}
