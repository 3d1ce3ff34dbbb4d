package attribution

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// attribution.prometheus may carry basic-auth credentials (the config
// accepts http://user:password@host; error messages print the URL
// redacted). A Prometheus (or the proxy in front of it) that refuses the
// query and quotes the credential it got puts the password, raw or as the
// Basic header, into the error: logged, printed by `attribute`, and stored
// in attribution_reports.error by a run.
func TestPrometheusEchoedCredentialMasked(t *testing.T) {
	const user, pass = "reader", "PROMSECRETpass-0123456789"
	b64 := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"unauthorized","error":"bad credentials ` + r.Header.Get("Authorization") + ` for ` + u + `:` + p + `"}`))
	}))
	defer srv.Close()
	end := time.Now().UTC().Truncate(time.Hour)
	p := &Prometheus{URL: strings.Replace(srv.URL, "http://", "http://"+user+":"+pass+"@", 1), Query: "sum(x)",
		Start: end.Add(-24 * time.Hour), End: end, Step: time.Hour}
	_, err := p.Load(context.Background(), []string{"t"})
	if err == nil {
		t.Fatal("load from a refusing Prometheus succeeded")
	}
	if strings.Contains(err.Error(), pass) || strings.Contains(err.Error(), b64) {
		t.Fatalf("the Prometheus credential reaches the error (logged, printed, stored): %s", err)
	}
}

// Every place the server's text reaches an error or a warning masks the
// credentials the request sent, in the spellings a server or proxy may
// use (raw, percent-escaped, JSON-escaped, the Basic credential in either
// base64 alphabet, a token given as the user name or in the query), and
// before the text is cut: a password straddling the cut would otherwise
// leave its first half behind. The URL itself is named without them.
func TestPrometheusServerTextMasked(t *testing.T) {
	const user, pass = "reader", "PROM/SECRET+pass~0123456789"
	basic := []byte(user + ":" + pass)
	std, urlSafe := base64.StdEncoding.EncodeToString(basic), base64.RawURLEncoding.EncodeToString(basic)
	if !strings.ContainsAny(std, "+/") {
		t.Fatalf("test setup: %s has no +/, the alphabets do not differ", std)
	}
	jsonEsc := strings.ReplaceAll(std, "/", `\/`)
	pad := strings.Repeat("x", 190) // the password straddles the 200-byte cut of a body
	bodies := []struct {
		name   string
		status int
		body   string
	}{
		{"api error", 401, `{"status":"error","errorType":"unauthorized","error":"got Basic ` + jsonEsc + ` and ` + urlSafe + `"}`},
		{"api error type", 401, `{"status":"error","errorType":"` + pass + `","error":"x"}`},
		{"non-2xx body", 403, pad + pass + " Basic " + std},
		{"non-2xx escaped", 403, "denied " + strings.ReplaceAll(pass, "/", "%2F") + " " + strings.ReplaceAll(pass, "/", "%2f")},
		{"not json", 200, "<html>" + pad + pass},
		{"status", 200, `{"status":"` + pass + `"}`},
		{"result type", 200, `{"status":"success","data":{"resultType":"` + pass + `","result":[]}}`},
	}
	leaks := func(s string) bool {
		return strings.Contains(s, pass[:8]) || strings.Contains(s, "0123456789") || strings.Contains(s, std[:12]) || strings.Contains(s, urlSafe[:12]) || strings.Contains(s, user)
	}
	for _, c := range bodies {
		t.Run(c.name, func(t *testing.T) {
			ps := newPromServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			})
			p := testProm(strings.Replace(ps.URL, "http://", "http://"+user+":"+strings.ReplaceAll(pass, "/", "%2F")+"@", 1))
			_, err := p.Load(context.Background(), testTargets)
			if err == nil {
				t.Fatal("no error")
			}
			var ae *APIError // names the query, not the server
			if leaks(err.Error()) || !errors.As(err, &ae) && !strings.Contains(err.Error(), "prometheus http://xxxxx@127.0.0.1:") {
				t.Fatalf("credential in the error, or the server not named: %s", err)
			}
		})
	}
	t.Run("warnings", func(t *testing.T) {
		ps := newPromServer(t, replay([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]},"warnings":["w `+std+`"],"infos":["i `+pad+pass+`"]}`), 200))
		prod, err := testProm(strings.Replace(ps.URL, "http://", "http://"+user+":"+strings.ReplaceAll(pass, "/", "%2F")+"@", 1)).Load(context.Background(), testTargets)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range prod.Warnings {
			if leaks(w) {
				t.Fatalf("credential in a warning: %s", w)
			}
		}
	})
	t.Run("token", func(t *testing.T) {
		ps := newPromServer(t, func(w http.ResponseWriter, r *http.Request) {
			u, _, _ := r.BasicAuth()
			http.Error(w, "bad token "+u+r.URL.Query().Get("token")+" "+r.Header.Get("Authorization"), 401)
		})
		const tok = "PROMTOKEN0123456789"
		for _, raw := range []string{strings.Replace(ps.URL, "http://", "http://"+tok+"@", 1), ps.URL + "/?token=" + tok} {
			_, err := testProm(raw).Load(context.Background(), testTargets)
			if err == nil || strings.Contains(err.Error(), "PROMTOKEN") || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString([]byte(tok + ":"))[:12]) {
				t.Fatalf("token in the error: %v", err)
			}
		}
	})
}

// MaskSecrets leaves text without the secrets alone, and a short secret
// inside a longer one does not break the longer one up before it is found.
func TestMaskSecrets(t *testing.T) {
	if got := MaskSecrets("nothing here", "xxxxx", URLSecrets("http://u:pw@h")); got != "nothing here" {
		t.Fatalf("%q", got)
	}
	if s := URLSecrets("http://h:9090/"); len(s) != 0 {
		t.Fatalf("secrets of a URL without credentials: %q", s)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("abc:abcdefgh"))
	got := MaskSecrets("auth "+b64, "xxxxx", URLSecrets("http://abc:abcdefgh@h"))
	if got != "auth xxxxx" {
		t.Fatalf("%q", got)
	}
}

// A --prometheus URL refused as invalid is not repeated when it may hold a
// credential (user:password@, a query), so the refusal cannot print it.
func TestCheckDoesNotRepeatCredentialURL(t *testing.T) {
	for _, raw := range []string{"ftp://reader:PROMSECRET99@prom:9090", "prom:9090/?token=PROMSECRET99", "://reader:PROMSECRET99@"} {
		p := &Prometheus{URL: raw, Query: "x", Step: time.Minute}
		err := p.Check()
		if err == nil || strings.Contains(err.Error(), "PROMSECRET99") {
			t.Errorf("Check(%q) = %v, want a refusal without the credential", raw, err)
		}
	}
	if err := (&Prometheus{URL: "ftp://prom:9090", Query: "x", Step: time.Minute}).Check(); err == nil || !strings.Contains(err.Error(), `"ftp://prom:9090"`) {
		t.Errorf("a URL without credentials is quoted in its refusal: %v", err)
	}
}
