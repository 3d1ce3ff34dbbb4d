package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/storage"
)

// A provider echoing the key (in its body and in headers the result
// records) never gets it stored, from the shortest key redacted (4
// characters) up; the adapters and the runner agree on that length.
func TestEchoedKeyRedactedFromBodyAndResult(t *testing.T) {
	for _, key := range []string{"k9Zq", "k9Zq7", "sk-QA-SECRET-123"} {
		t.Run(key, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				k := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				w.Header().Set("x-request-id", "req-"+k)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"%s"}}`, k, k)
			}))
			defer srv.Close()
			for _, ob := range echoRun(t, key, srv.URL) {
				o, body := ob.o, ob.body
				r := o.Result
				if bytes.Contains(body, []byte(key)) || strings.Contains(fmt.Sprint(r.Message, r.Reason, r.RequestID, r.Unknown), key) {
					t.Fatalf("%s: key stored: body %s, result %+v", o.ProbeID, body, r)
				}
				if !bytes.Contains(body, []byte("[REDACTED]")) {
					t.Fatalf("%s: body %s", o.ProbeID, body)
				}
			}
		})
	}
}

// A key echoed in a JSON message with escapes (PHP escapes every "/";
// some servers escape more) is redacted as well, in every spelling.
func TestEchoedKeyRedactedWhenJSONEscaped(t *testing.T) {
	const key = "sk-QA/SECRET/0123456789abcdef"
	escapes := map[string]func(string) string{
		"slashes": func(k string) string { return strings.ReplaceAll(k, "/", `\/`) },
		"dash":    func(k string) string { return strings.ReplaceAll(k, "-", `\u002d`) },
		"every": func(k string) string {
			var b strings.Builder
			for _, r := range k {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
			return b.String()
		},
	}
	for name, esc := range escapes {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				k := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error"}}`, esc(k))
			}))
			defer srv.Close()
			for _, ob := range echoRun(t, key, srv.URL) {
				o, body := ob.o, ob.body
				var decoded struct {
					Error struct{ Message string }
				}
				if err := json.Unmarshal(body, &decoded); err != nil {
					t.Fatalf("%s: stored body is no longer JSON: %v: %s", o.ProbeID, err, body)
				}
				if strings.Contains(decoded.Error.Message, key) || strings.Contains(o.Result.Message, key) {
					t.Fatalf("%s: key stored: body %s, message %q", o.ProbeID, body, o.Result.Message)
				}
				if !bytes.Contains(body, []byte("[REDACTED]")) {
					t.Fatalf("%s: body %s", o.ProbeID, body)
				}
			}
		})
	}
}

type storedObs struct {
	o    *storage.Observation
	body []byte
}

// echoRun runs the default corpus once against srv (an OpenAI-compatible
// server) with key in QA_KEY, and returns what was stored.
func echoRun(t *testing.T, key, srv string) []storedObs {
	t.Helper()
	t.Setenv("QA_KEY", key)
	e := testenv.New(t, fmt.Sprintf(`
targets:
  - {name: c, provider: openai_compatible, model: m, api_key_env: QA_KEY, base_url: %q, concurrency: 2}
`, srv+"/v1"))
	res := e.Run()
	obs, err := e.Store.Observations(context.Background(), res.Summary.RunID, 0)
	if err != nil || len(obs) == 0 {
		t.Fatal(err)
	}
	var out []storedObs
	for _, o := range obs {
		_, body, err := e.Store.ObservationBodies(context.Background(), o.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, storedObs{o, body})
	}
	return out
}
