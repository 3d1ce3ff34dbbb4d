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
	"github.com/driftprobe/driftprobe/storage"
)

// TestHoldWordingFollowsItsKind (on-call): a wait is "GitHub asked
// driftprobe to wait" only when GitHub did (a rate limit). A 5xx, or a
// connection GitHub accepted but answered nothing on in time, is GitHub
// failing (an outage); a transport failure where no HTTP answer came (a
// refused connection, no connection in time; DNS and TLS alike) is
// GitHub unreachable, named with the host and the error, and says that
// waiting does not fix a wrong base_url or blocked egress; so is a 5xx
// that did not come from GitHub (no X-GitHub-Request-Id: a proxy or load
// balancer on the way answered with its own page), named with what
// answered and its status, never as GitHub's outage. The hold
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
			f.addFault(outage(503)) // GitHub's own: its request id
			return f.BaseURL(), ghissue.Options{}
		}, "outage", "host", "driftprobe backs off from a GitHub outage", []string{"GitHub unavailable (503"}},
		{"502 from a proxy", func(t *testing.T, f *fakeGitHub) (string, ghissue.Options) {
			f.addFault(proxyError(502)) // no GitHub request id
			return f.BaseURL(), ghissue.Options{}
		}, "unreachable", "host", "driftprobe backs off after GitHub could not be reached",
			[]string{"no answer from GitHub: 127.0.0.1:", " answered 502 Bad Gateway without GitHub's request id (a proxy or load balancer on the way?)", "; called from ", hint}},
		{"504 from a load balancer", func(t *testing.T, f *fakeGitHub) (string, ghissue.Options) {
			f.addFault(proxyError(504))
			return f.BaseURL(), ghissue.Options{}
		}, "unreachable", "host", "driftprobe backs off after GitHub could not be reached",
			[]string{"no answer from GitHub: ", " answered 504 Gateway Timeout without GitHub's request id (a proxy or load balancer on the way?)", hint}},
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
			if tc.kind == "unreachable" && (strings.Contains(h.Reason, "GitHub unavailable") || strings.Contains(h.Reason, "<")) {
				t.Errorf("hold reason %q: GitHub not reached, worded as its outage or quoting the proxy's page", h.Reason)
			}
			if p := pending(t, s); len(p) == 0 || p[0].LastError != h.Reason {
				t.Errorf("the failed row's last_error, want the hold's reason %q: %+v", h.Reason, p)
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

// TestHoldKindIsRecordedNotReadFromItsReason: a hold's kind is the one its
// failure was classified with, recorded beside the reason (github_holds
// .kind), not read back from the reason's words: a proxy's 5xx is worded
// "no answer from GitHub …" and still reads as unreachable, in this
// process and in another one reading the database (a second store).
// Only a row an older driftprobe recorded, with no kind, is read as that
// release read it: by its credential and its reason's first words.
func TestHoldKindIsRecordedNotReadFromItsReason(t *testing.T) {
	ctx := context.Background()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.addFault(proxyError(502))
	if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 1 {
		t.Fatalf("pass: %+v", res)
	}
	var kind, reason string
	if err := s.st.SQL().QueryRow(`SELECT kind, reason FROM github_holds WHERE credential = ''`).Scan(&kind, &reason); err != nil {
		t.Fatal(err)
	}
	if kind != ghissue.HoldUnreachable || !strings.HasPrefix(reason, "no answer from GitHub: ") {
		t.Errorf("recorded hold: kind %q, reason %q; want kind unreachable with the proxy's wording", kind, reason)
	}
	other, err := storage.Open(ctx, s.cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetClock(c.Now)
	if hs, err := ghissue.Holds(ctx, other); err != nil || len(hs) != 1 || hs[0].Kind != ghissue.HoldUnreachable || hs[0].Scope != "host" {
		t.Errorf("holds read by another store: %+v, %v", hs, err)
	}

	// Rows an older driftprobe recorded: no kind.
	at := c.Now().Add(time.Hour).Format(time.RFC3339Nano)
	for _, r := range []struct{ api, cred, reason, kind string }{
		{"https://old-a.example", "", "GitHub unreachable (dial tcp: lookup old-a.example: no such host)", ""},
		{"https://old-b.example", "", "GitHub unavailable (502 Bad Gateway)", ""},
		{"https://old-c.example", "token $GITHUB_TOKEN", "GitHub secondary rate limit (429) until …", ""},
		// The kind recorded decides, whatever the reason says.
		{"https://new-d.example", "", "GitHub unreachable, says a reason worded so", ghissue.HoldOutage},
	} {
		if _, err := s.st.SQL().Exec(`INSERT INTO github_holds (api, credential, until, failures, reason, at, kind) VALUES (?, ?, ?, 1, ?, ?, ?)`,
			r.api, r.cred, at, r.reason, at, r.kind); err != nil {
			t.Fatal(err)
		}
	}
	hs, err := ghissue.Holds(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"https://old-a.example": "unreachable", "https://old-b.example": "outage", "https://old-c.example": "rate_limit", "https://new-d.example": "outage"}
	for _, h := range hs {
		if w, ok := want[h.API]; ok && h.Kind != w {
			t.Errorf("hold of %s (%q, kind recorded %v): read as %q, want %q", h.API, h.Reason, h.API == "https://new-d.example", h.Kind, w)
		}
	}
}

// TestProxyAnswerToTheInstallationTokenRequest: with a GitHub App, a 5xx
// without GitHub's request id on the installation token request is no
// GitHub outage either: GitHub was not reached (unreachable, the host's
// wait), worded as such with what the call was for.
func TestProxyAnswerToTheInstallationTokenRequest(t *testing.T) {
	key, pemText := newAppKey(t)
	f := newFakeGitHub(t, "acme", "llm-drift", "")
	f.enableApp(testAppID, testInstallationID, &key.PublicKey, installToken)
	s := fixture(t, f.BaseURL())
	useApp(t, s)
	c := newClock()
	for _, tc := range []struct {
		ft         fault
		kind, want string
	}{
		{proxyError(503), ghissue.HoldUnreachable, "answered 503 Service Unavailable without GitHub's request id (a proxy or load balancer on the way?) while fetching the installation token of GitHub App installation 678"},
		{outage(503), ghissue.HoldOutage, "GitHub unavailable (503) while fetching the installation token of GitHub App installation 678"},
	} {
		if _, err := ghissue.ClearHolds(context.Background(), s.st); err != nil {
			t.Fatal(err)
		}
		ft := tc.ft
		ft.match = func(r *http.Request) bool { return r.URL.Path == accessTokensPath }
		f.addFault(ft)
		res := deliver(t, s, c, ghissue.Options{Getenv: keyIs(pemText)})
		if res.Sent != 0 || res.Failed != 1 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], tc.want) {
			t.Errorf("pass (%d from the token request): %+v; want its error to say %q", ft.status, res, tc.want)
		}
		hs, err := ghissue.Holds(context.Background(), s.st)
		if err != nil || len(hs) != 1 || hs[0].Kind != tc.kind || hs[0].Scope != "host" {
			t.Errorf("holds after %d from the token request: %+v, %v; want one %s hold of the host", ft.status, hs, err, tc.kind)
		}
	}
}
