package ghissue_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/driftprobe/driftprobe/ghissue"
)

// offOrigin is a server on another origin than the GitHub API root that
// records every request it gets, and the Authorization it carried.
type offOrigin struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []string
}

func newOffOrigin(t *testing.T) *offOrigin {
	o := &offOrigin{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.reqs = append(o.reqs, r.Method+" "+r.URL.Path+" Authorization: "+r.Header.Get("Authorization"))
		o.mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *offOrigin) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.reqs...)
}

// TestTokenNotSentAcrossRedirect: a GitHub API root (github.base_url:
// GitHub Enterprise, a proxy, an SSO gateway) that answers with a redirect
// to another origin does not get driftprobe to send the token there.
// net/http drops Authorization on a cross-host redirect only when the
// header was set on the request; go-github's WithAuthToken sets it in the
// transport, on every hop. The origin counts the port too (same host
// name, another port), and the refusal is recorded on the rows as a
// configuration problem that says why.
func TestTokenNotSentAcrossRedirect(t *testing.T) {
	for _, tc := range []struct {
		name string
		host func(u string) string // the redirect target's origin, from the off-origin server's URL
	}{
		// "localhost" is another host name than 127.0.0.1 for
		// net/http's redirect rules (which compare host names).
		{"another host", func(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) }},
		{"another port", func(u string) string { return u }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evil := newOffOrigin(t)
			evilURL := tc.host(evil.srv.URL)
			redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, evilURL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			}))
			defer redir.Close()

			s := fixture(t, redir.URL+"/")
			c := newClock()
			deliver(t, s, c, ghissue.Options{})
			for _, l := range evil.requests() {
				if strings.Contains(l, testToken) {
					t.Fatalf("the GitHub token was sent to another origin after a redirect: %s", l)
				}
			}
			if r := evil.requests(); len(r) != 0 {
				t.Errorf("requests reached the redirect's target: %q", r)
			}
			expectAllQueued(t, s, c, ghissue.Options{}, tc.name, "redirected to "+evilURL)
		})
	}
}

// TestAppCredentialsNotSentAcrossRedirect: with GitHub App auth, neither
// the installation token (on the REST calls) nor the app's JWT (on GET
// /app, which asks which bot posts) follows a redirect to another origin:
// ghinstallation sets Authorization in its transport too.
func TestAppCredentialsNotSentAcrossRedirect(t *testing.T) {
	key, pemText := newAppKey(t)
	o := ghissue.Options{Getenv: keyIs(pemText)}
	f := newFakeGitHub(t, "acme", "llm-drift", "")
	f.enableApp(testAppID, testInstallationID, &key.PublicKey, installToken)
	s := fixture(t, f.BaseURL())
	useApp(t, s)
	c := newClock()
	evil := newOffOrigin(t)
	evilURL := strings.Replace(evil.srv.URL, "127.0.0.1", "localhost", 1)
	redirect := func(method, path string) fault {
		return fault{
			match:  func(r *http.Request) bool { return r.Method == method && r.URL.Path == path },
			status: http.StatusTemporaryRedirect,
			header: map[string]string{"Location": evilURL + path},
		}
	}

	// The issue listing (after the installation token was fetched from
	// the API root) redirects: nothing follows it, every row says why.
	f.addFault(redirect(http.MethodGet, "/api/v3/repos/acme/llm-drift/issues"))
	expectAllQueued(t, s, c, o, "listing redirected", "redirected to "+evilURL)
	if app := f.appState(); app.issued == 0 {
		t.Fatal("no installation token was fetched: the redirect was not reached with one")
	}

	// GET /app (asked with the app's JWT) redirects: the JWT stays home,
	// and delivery goes on without knowing the bot's login.
	f.addFault(redirect(http.MethodGet, "/api/v3/app"))
	if res := deliver(t, s, c, o); res.Sent != 4 {
		t.Fatalf("after the listing answers again: %+v", res)
	}
	checkDelivered(t, s, f)
	asked := false
	for _, r := range f.requests() {
		asked = asked || (r.Method == http.MethodGet && r.Path == "/api/v3/app" && r.Status == http.StatusTemporaryRedirect)
	}
	if !asked {
		t.Fatal("GET /app was not redirected: the JWT's redirect was not tested")
	}
	for _, l := range evil.requests() {
		if strings.Contains(l, installToken) || strings.Contains(l, "Bearer ") || strings.Contains(l, "token ") {
			t.Errorf("a GitHub App credential was sent to another origin after a redirect: %s", l)
		}
	}
	if r := evil.requests(); len(r) != 0 {
		t.Errorf("requests reached the redirect's target: %q", r)
	}
}

// TestSameOriginRedirectIsFollowed: a redirect within the API root's
// origin (GitHub's 301 for a renamed repository, to
// /repositories/ID/...) is followed as before, with the credentials.
func TestSameOriginRedirectIsFollowed(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	loc := map[string]string{}
	f.addFault(fault{
		// The answer sends the client back to the very request, on the
		// same server (the Location is filled in from the request).
		match: func(r *http.Request) bool {
			if r.Method != http.MethodGet || r.URL.Path != "/api/v3/repos/acme/llm-drift/issues" {
				return false
			}
			loc["Location"] = r.URL.RequestURI()
			return true
		},
		status: http.StatusMovedPermanently,
		header: loc,
	})
	s := fixture(t, f.BaseURL())
	if res := deliver(t, s, newClock(), ghissue.Options{}); res.Sent != 4 {
		t.Fatalf("deliver: %+v, pending %+v", res, pending(t, s))
	}
	checkDelivered(t, s, f)
	reqs := f.requests()
	if len(reqs) < 2 || reqs[0].Status != http.StatusMovedPermanently || reqs[1].Path != reqs[0].Path || reqs[1].Auth != "Bearer "+testToken || reqs[1].Status != http.StatusOK {
		t.Fatalf("the redirect was not followed with the token: %+v", reqs[:min(2, len(reqs))])
	}
}
