package app_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/internal/app"
)

// A Pushgateway (or the proxy in front of it) that refuses the push and
// quotes the Authorization header it got: the error driftprobe logs
// ("metrics not exported; ...") masks the user:password of the URL, raw
// and escaped, and also the Basic credential the push client actually
// sent, which is the password base64-encoded.
func TestPushErrorMasksEchoedBasicAuth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte("invalid credentials: Authorization: " + r.Header.Get("Authorization")))
	}))
	defer srv.Close()
	const user, pass = "prober", "PGSECRETpass-0123456789"
	u := strings.Replace(srv.URL, "http://", "http://"+user+":"+pass+"@", 1)
	err := app.ExportMetricsAs(context.Background(), prometheus.NewRegistry(), "", u, "qa")
	if err == nil {
		t.Fatal("push to a refusing gateway succeeded")
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	if strings.Contains(err.Error(), b64) || strings.Contains(err.Error(), pass) {
		t.Fatalf("the Pushgateway credential reaches the logged error: %s", err)
	}
}

// The Basic credential is masked in the other spellings a proxy may quote
// it in too: unpadded, URL-safe, JSON-escaped; the URL's own user
// information still reads xxxxx.
func TestPushErrorMasksBasicAuthSpellings(t *testing.T) {
	const user, pass = "prober", "PG/SECRET+pass~0123456789"
	basic := []byte(user + ":" + pass)
	std := base64.StdEncoding.EncodeToString(basic)
	spellings := []string{std, base64.RawStdEncoding.EncodeToString(basic), base64.URLEncoding.EncodeToString(basic), strings.ReplaceAll(std, "/", `\/`)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"bad auth ` + strings.Join(spellings, " ") + `"}`))
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://"+user+":"+strings.ReplaceAll(pass, "/", "%2F")+"@", 1)
	err := app.ExportMetricsAs(context.Background(), prometheus.NewRegistry(), "", u, "qa")
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "xxxxx@") {
		t.Fatalf("push to a refusing gateway: %v", err)
	}
	for _, leak := range []string{"PG/SECRET", "PG%2FSECRET", "0123456789", std[:12], spellings[2][:12], user} {
		if strings.Contains(err.Error(), leak) {
			t.Fatalf("%q reaches the logged error: %s", leak, err)
		}
	}
}
