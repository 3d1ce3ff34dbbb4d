package ghissue_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/ghissue"
)

const (
	testAppID          = 12345
	testInstallationID = 678
	appKeyEnv          = "DRIFTPROBE_TEST_GH_APP_KEY"
	installToken       = "ghs_fakeINSTALLATIONtoken0123456789abcdefXYZ"
	accessTokensPath   = "/api/v3/app/installations/678/access_tokens"
)

// newAppKey generates an app private key, PEM-encoded as PKCS#1 like the
// keys GitHub hands out.
func newAppKey(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

// useApp switches the fixture's github block from token to app auth.
func useApp(t *testing.T, s *sys) {
	t.Helper()
	g := s.cfg.GitHub
	g.TokenEnv, g.AppID, g.InstallationID, g.PrivateKeyEnv = "", testAppID, testInstallationID, appKeyEnv
	if err := s.cfg.Validate(false); err != nil {
		t.Fatal(err)
	}
}

// assertNoKey checks that neither the PEM nor its base64 body lines leak.
func assertNoKey(t *testing.T, s *sys, f *fakeGitHub, logs, pemText string) {
	t.Helper()
	assertNoSecrets(t, s, f, logs, keySecrets(pemText))
}

// keySecrets is a PEM and each of its base64 body lines, as secrets.
func keySecrets(pemText string) []secretText {
	out := []secretText{{"private key", pemText}}
	for _, line := range strings.Split(pemText, "\n") {
		if len(line) >= 32 && !strings.HasPrefix(line, "-----") {
			out = append(out, secretText{"private key line", line})
		}
	}
	return out
}

// TestGitHubAppInstallationAuth: with app_id, installation_id and
// private_key_env, driftprobe fetches an installation token with an RS256
// JWT (iss = app id) from the GHES API root and files issues with it; the
// key and the token reach no log, row or issue.
func TestGitHubAppInstallationAuth(t *testing.T) {
	key, pemText := newAppKey(t)
	t.Setenv(appKeyEnv, pemText)
	t.Setenv(tokenEnv, "") // the token is not what authenticates
	f := newFakeGitHub(t, "acme", "llm-drift", "")
	f.enableApp(testAppID, testInstallationID, &key.PublicKey, installToken)
	s := fixture(t, f.BaseURL())
	useApp(t, s)
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	sent, err := ghissue.AfterRun(context.Background(), s.st, s.cfg, log, nil)
	if err != nil || sent != 4 {
		t.Fatalf("AfterRun: sent %d, %v\nlogs:\n%s\npending: %+v", sent, err, logs.String(), pending(t, s))
	}
	checkDelivered(t, s, f)

	app := f.appState()
	if app.issued != 1 || len(app.rejected) != 0 {
		t.Errorf("installation tokens issued %d (want 1), JWTs rejected: %v", app.issued, app.rejected)
	}
	reqs := f.requests()
	if len(reqs) == 0 || reqs[0].Method != http.MethodPost || reqs[0].Path != accessTokensPath {
		t.Fatalf("first request is not the installation token request: %+v", reqs[:min(1, len(reqs))])
	}
	jwt, ok := strings.CutPrefix(reqs[0].Auth, "Bearer ")
	if !ok {
		t.Fatalf("token request Authorization %q, want Bearer JWT", reqs[0].Auth)
	}
	if err := verifyJWT(jwt, &key.PublicKey, testAppID); err != nil {
		t.Errorf("app JWT: %v", err)
	}
	creates := 0
	for _, r := range reqs[1:] {
		if r.Method == http.MethodGet && r.Path == "/api/v3/app" {
			// Which app posts (its bot's login): asked with the JWT.
			if jwt, ok := strings.CutPrefix(r.Auth, "Bearer "); !ok || verifyJWT(jwt, &key.PublicKey, testAppID) != nil {
				t.Errorf("GET /app: Authorization %q, want the app JWT", r.Auth)
			}
			continue
		}
		if r.Auth != "token "+installToken {
			t.Errorf("%s %s: Authorization %q, want the installation token", r.Method, r.Path, r.Auth)
		}
		if r.Status >= 300 {
			t.Errorf("%s %s: status %d", r.Method, r.Path, r.Status)
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/issues") {
			creates++
		}
	}
	if creates != 2 {
		t.Errorf("%d issue creations, want 2", creates)
	}

	// Nothing pending: no further token request.
	n := len(reqs)
	if sent, err := ghissue.AfterRun(context.Background(), s.st, s.cfg, log, nil); sent != 0 || err != nil || len(f.requests()) != n {
		t.Errorf("idle pass: sent %d, %v, %d requests", sent, err, len(f.requests())-n)
	}

	assertNoSecrets(t, s, f, logs.String(), append(keySecrets(pemText),
		secretText{"installation token", installToken}, secretText{"app JWT", jwt}))
}

// TestGitHubAppAuthErrors: a missing or invalid private key, a key of
// another app and an unknown installation are recorded with a clear
// message on every pending row (the run still completes); once fixed,
// everything is delivered exactly once.
func TestGitHubAppAuthErrors(t *testing.T) {
	key, pemText := newAppKey(t)
	_, otherPEM := newAppKey(t)
	f := newFakeGitHub(t, "acme", "llm-drift", "")
	f.enableApp(testAppID, testInstallationID, &key.PublicKey, installToken)
	s := fixture(t, f.BaseURL())
	useApp(t, s)
	c := newClock()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	check := func(name string, o ghissue.Options, want string) {
		t.Helper()
		o.Logger = log
		expectAllQueued(t, s, c, o, name, want)
	}

	n := len(f.requests())
	check("missing key", ghissue.Options{Getenv: keyIs("")},
		"GitHub App private key missing: environment variable DRIFTPROBE_TEST_GH_APP_KEY (github.private_key_env) is not set")
	t.Setenv(appKeyEnv, "")
	if sent, err := ghissue.AfterRun(context.Background(), s.st, s.cfg, log, nil); sent != 0 || err != nil {
		t.Fatalf("AfterRun without a key: %d, %v", sent, err)
	}
	const notPEM = "MIIEnotAPEMbutSECRETlookingBASE64value"
	check("not a PEM", ghissue.Options{Getenv: keyIs(notPEM)},
		"environment variable DRIFTPROBE_TEST_GH_APP_KEY (github.private_key_env) does not hold a PEM-encoded private key")
	const badPEM = "-----BEGIN RSA PRIVATE KEY-----\nZ2FyYmFnZVNFQ1JFVGdhcmJhZ2VTRUNSRVQ=\n-----END RSA PRIVATE KEY-----\n"
	check("bad PEM", ghissue.Options{Getenv: keyIs(badPEM)},
		"the PEM in environment variable DRIFTPROBE_TEST_GH_APP_KEY (github.private_key_env) is not an RSA private key")
	if len(f.requests()) != n {
		t.Fatal("requests sent without a usable key")
	}

	check("another app's key", ghissue.Options{Getenv: keyIs(otherPEM)},
		"GitHub rejected the app's JWT for GitHub App installation 678 (app_id 12345) (401)")
	if app := f.appState(); len(app.rejected) != 1 || !strings.Contains(app.rejected[0], "signature") || app.issued != 0 {
		t.Errorf("wrong key: rejected %v, issued %d", app.rejected, app.issued)
	}

	s.cfg.GitHub.InstallationID = 999
	check("unknown installation", ghissue.Options{Getenv: keyIs(pemText)},
		"GitHub App installation 999 (app_id 12345) not found (404): check github.installation_id")
	s.cfg.GitHub.InstallationID = testInstallationID

	// Fixed, with the key squeezed onto one line (literal \n, as env files
	// and CI secrets often hold it) and base_url naming the API root.
	s.cfg.GitHub.BaseURL = f.srv.URL + "/api/v3"
	oneLine := strings.ReplaceAll(pemText, "\n", `\n`)
	if res := deliver(t, s, c, ghissue.Options{Logger: log, Getenv: keyIs(oneLine)}); res.Sent != 4 {
		t.Fatalf("after the fix: %+v", res)
	}
	checkDelivered(t, s, f)
	if app := f.appState(); app.issued != 1 {
		t.Errorf("installation tokens issued: %d, want 1", app.issued)
	}
	for _, r := range f.requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/issues") && r.Auth != "token "+installToken {
			t.Errorf("issue created with Authorization %q", r.Auth)
		}
	}

	l := logs.String()
	secrets := []secretText{{"not-a-PEM value", notPEM}, {"bad PEM", badPEM}, {"one-line PEM", oneLine}, {"installation token", installToken}}
	secrets = append(secrets, keySecrets(pemText)...)
	assertNoSecrets(t, s, f, l, append(secrets, keySecrets(otherPEM)...))
}

// TestEchoedCredentialsAreRedacted: when GitHub's answer echoes the
// credential the request carried, the row and the log show [redacted]:
// with a token, and with app auth for every installation token fetched or
// refreshed and every app JWT signed (the fake hands out a new token
// before each call).
func TestEchoedCredentialsAreRedacted(t *testing.T) {
	for _, mode := range []string{"token", "app"} {
		t.Run(mode, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := fixture(t, f.BaseURL())
			o := ghissue.Options{}
			var pemText string
			if mode == "app" {
				var key *rsa.PrivateKey
				key, pemText = newAppKey(t)
				f.token = ""
				f.enableApp(testAppID, testInstallationID, &key.PublicKey, installToken)
				f.mu.Lock()
				f.app.rotate = true
				f.mu.Unlock()
				useApp(t, s)
				o.Getenv = func(k string) string {
					if k == appKeyEnv {
						return pemText
					}
					return ""
				}
			}
			// A validation error quoting the request's credentials: its
			// Authorization and the app JWT of the latest token request.
			f.addFault(fault{status: 422, match: isCreate,
				bodyFn: func(reqs []fakeReq) string {
					jwt := "none"
					for _, r := range reqs {
						if r.Path == accessTokensPath {
							jwt = strings.TrimPrefix(r.Auth, "Bearer ")
						}
					}
					return fmt.Sprintf(`{"message":"Validation Failed for %s (app JWT %s)","errors":[{"resource":"Issue","code":"custom","message":"credential %s is not allowed here"}]}`,
						reqs[len(reqs)-1].Auth, jwt, reqs[len(reqs)-1].Auth)
				}})
			var logs bytes.Buffer
			o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			res := deliver(t, s, newClock(), o)
			if res.Failed != 1 || len(res.Errors) != 1 {
				t.Fatalf("%+v", res)
			}
			p := pending(t, s)
			if !strings.Contains(p[0].LastError, "Validation Failed for ") || strings.Count(p[0].LastError, "[redacted]") < 2 {
				t.Errorf("last_error %q: want the echo with the credential redacted", p[0].LastError)
			}
			if !strings.Contains(logs.String(), "[redacted]") || !strings.Contains(res.Errors[0], "[redacted]") {
				t.Errorf("no redacted echo in the log or the result: %v\n%s", res.Errors, logs.String())
			}
			secrets := map[string]string{"token": testToken}
			if mode == "app" {
				app := f.appState()
				if app.issued < 2 {
					t.Fatalf("installation tokens issued: %d, want one per call", app.issued)
				}
				for i := 1; i <= app.issued; i++ {
					secrets[fmt.Sprintf("installation token %d", i)] = fmt.Sprintf("%s_%d", installToken, i)
				}
				for i, r := range f.requests() {
					if r.Path == accessTokensPath {
						secrets[fmt.Sprintf("app JWT of request %d", i)] = strings.TrimPrefix(r.Auth, "Bearer ")
					}
				}
			}
			db, reqs := dumpDB(t, s.st), f.requests()
			for what, secret := range secrets {
				for _, r := range reqs {
					if strings.Contains(r.Body, secret) || strings.Contains(r.Query, secret) || strings.Contains(r.Path, secret) {
						t.Errorf("%s in request %s %s", what, r.Method, r.Path)
					}
				}
				if strings.Contains(logs.String(), secret) || strings.Contains(db, secret) || strings.Contains(strings.Join(res.Errors, "\n"), secret) {
					t.Errorf("%s in the log, the database or the result's errors", what)
				}
			}
		})
	}
}

// keyIs is a Getenv holding v in the App's private-key variable and
// nothing else.
func keyIs(v string) func(string) string {
	return func(k string) string {
		if k == appKeyEnv {
			return v
		}
		return ""
	}
}
