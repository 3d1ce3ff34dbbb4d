package ghissue_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
)

// TestTokenFromFileIsTrimmed: a token read from a file (a Kubernetes
// secret made with --from-file) ends in a newline, which no HTTP header
// can carry. It is sent without its surrounding white space, and that
// value as sent is redacted from what GitHub echoes. Only white space is
// as good as no token.
func TestTokenFromFileIsTrimmed(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tokenIs := func(v string) func(string) string {
		return func(k string) string {
			if k == tokenEnv {
				return v
			}
			return ""
		}
	}

	n := len(f.requests())
	expectAllQueued(t, s, c, ghissue.Options{Logger: log, Getenv: tokenIs(" \n\t")}, "white space only",
		"environment variable DRIFTPROBE_TEST_GH_TOKEN (github.token_env) holds only white space")
	if len(f.requests()) != n {
		t.Fatal("requests sent with a blank token")
	}

	// The first create is refused with an echo of the credential.
	f.addFault(fault{status: 422, match: isCreate, bodyFn: func(reqs []fakeReq) string {
		return fmt.Sprintf(`{"message":"Validation Failed for %s"}`, reqs[len(reqs)-1].Auth)
	}})
	o := ghissue.Options{Logger: log, Getenv: tokenIs(testToken + "\n")}
	res := deliver(t, s, c, o)
	if res.Sent != 1 || res.Failed != 1 {
		t.Fatalf("%+v", res)
	}
	if p := pending(t, s); !strings.Contains(p[0].LastError, "Validation Failed for Bearer [redacted]") {
		t.Errorf("last_error %q: want the echoed token redacted", p[0].LastError)
	}
	c.Advance(time.Hour)
	if res := deliver(t, s, c, o); res.Sent != 3 || res.Failed != 0 {
		t.Fatalf("%+v", res)
	}
	checkDelivered(t, s, f)
	for _, r := range f.requests() {
		if r.Auth != "Bearer "+testToken {
			t.Errorf("%s %s: Authorization %q", r.Method, r.Path, r.Auth)
		}
	}
	assertNoToken(t, s, f, logs.String())
}

// TestAppKeyFromFileIsTrimmed: a private key read from a file ends in a
// newline; the key squeezed onto one line with literal \n must still be
// taken for a PEM, and a PEM with blank lines around it works too. Only
// white space is as good as no key.
func TestAppKeyFromFileIsTrimmed(t *testing.T) {
	key, pemText := newAppKey(t)
	oneLine := strings.ReplaceAll(strings.TrimSpace(pemText), "\n", `\n`)
	for name, v := range map[string]string{
		"one line, newline at the end": oneLine + "\n",
		"blank lines around":           "\n\n" + pemText + "\r\n  \n",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", "")
			f.enableApp(testAppID, testInstallationID, &key.PublicKey, installToken)
			s := fixture(t, f.BaseURL())
			useApp(t, s)
			c := newClock()
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			expectAllQueued(t, s, c, ghissue.Options{Logger: log, Getenv: keyIs("\n \n")}, "white space only",
				"environment variable DRIFTPROBE_TEST_GH_APP_KEY (github.private_key_env) holds only white space")
			if res := deliver(t, s, c, ghissue.Options{Logger: log, Getenv: keyIs(v)}); res.Sent != 4 {
				t.Fatalf("%+v\npending: %+v", res, pending(t, s))
			}
			checkDelivered(t, s, f)
			for _, r := range f.requests() {
				if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/issues") && r.Auth != "token "+installToken {
					t.Errorf("issue created with Authorization %q", r.Auth)
				}
			}
			// assertNoKey, with one dump of the database.
			db, l := dumpDB(t, s.st), logs.String()
			for _, secret := range append(strings.Split(pemText, "\n"), oneLine) {
				if len(secret) < 32 || strings.HasPrefix(secret, "-----") {
					continue
				}
				if strings.Contains(db, secret) || strings.Contains(l, secret) {
					t.Errorf("the private key in the database or the logs")
				}
				for _, r := range f.requests() {
					if strings.Contains(r.Body, secret) || strings.Contains(r.Query, secret) {
						t.Errorf("the private key in request %s %s", r.Method, r.Path)
					}
				}
			}
		})
	}
}
