package probes

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
)

// legacySHA256 is the fingerprint as it was before headers could be pinned:
// the hex SHA-256 of method, path and body separated by newlines. Every
// request pinning no header present must keep it.
func legacySHA256(method, path string, body []byte) string {
	s := sha256.Sum256([]byte(method + "\n" + path + "\n" + string(body)))
	return hex.EncodeToString(s[:])
}

func TestFingerprintUnpinnedUnchanged(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0}`)
	want := legacySHA256("POST", "/v1/chat/completions?api-version=2024-10-21", body)
	for name, r := range map[string]*Request{
		"no header":      {Method: "POST", Path: "/v1/chat/completions?api-version=2024-10-21", Body: body},
		"headers":        {Method: "POST", Path: "/v1/chat/completions?api-version=2024-10-21", Body: body, Header: http.Header{"Content-Type": {"application/json"}, "Openai-Project": {"p"}}},
		"pinned absent":  {Method: "POST", Path: "/v1/chat/completions?api-version=2024-10-21", Body: body, Header: http.Header{"Content-Type": {"application/json"}}, Pinned: []string{"Anthropic-Version"}},
		"pinned no hdrs": {Method: "POST", Path: "/v1/chat/completions?api-version=2024-10-21", Body: body, Pinned: []string{"Anthropic-Version"}},
	} {
		if got := r.SHA256(); got != want {
			t.Errorf("%s: %s, want the legacy fingerprint %s", name, got, want)
		}
		if r.PinnedHeaders() != "" {
			t.Errorf("%s: pinned text %q", name, r.PinnedHeaders())
		}
	}
	if got := Fingerprint("POST", "/p", body, ""); got != legacySHA256("POST", "/p", body) {
		t.Errorf("Fingerprint without pinned headers = %s", got)
	}
}

func TestFingerprintPinned(t *testing.T) {
	body := []byte(`{"model":"claude","max_tokens":64}`)
	req := func(version string, pinned ...string) *Request {
		h := http.Header{"Content-Type": {"application/json"}}
		h.Set("Anthropic-Version", version)
		return &Request{Method: "POST", Path: "/v1/messages", Body: body, Header: h, Pinned: pinned}
	}
	legacy := legacySHA256("POST", "/v1/messages", body)
	a, b := req("2023-06-01", "Anthropic-Version"), req("2024-01-01", "Anthropic-Version")
	if a.SHA256() == b.SHA256() {
		t.Fatalf("two pinned versions share the fingerprint %s", a.SHA256())
	}
	if a.SHA256() == legacy || b.SHA256() == legacy {
		t.Errorf("a pinned header left the fingerprint unchanged")
	}
	if got := a.PinnedHeaders(); got != "anthropic-version: 2023-06-01\n" {
		t.Errorf("pinned text %q", got)
	}
	if got, want := a.SHA256(), Fingerprint("POST", "/v1/messages", body, a.PinnedHeaders()); got != want {
		t.Errorf("SHA256 %s, Fingerprint %s", got, want)
	}
	// The name's case, its order and repetition in Pinned do not matter.
	for _, pins := range [][]string{{"anthropic-version"}, {"ANTHROPIC-VERSION", "Anthropic-Version"}, {"X-Absent", "anthropic-Version"}} {
		if got := req("2023-06-01", pins...).SHA256(); got != a.SHA256() {
			t.Errorf("Pinned %q: %s, want %s", pins, got, a.SHA256())
		}
	}
	// Unpinned, the header is not part of the fingerprint.
	if got := req("2024-01-01").SHA256(); got != legacy {
		t.Errorf("an unpinned header changed the fingerprint")
	}
	// Two pinned headers: sorted by name, whatever the order in Pinned.
	two := req("2023-06-01", "X-B", "Anthropic-Version")
	two.Header.Set("X-B", "1")
	if got := two.PinnedHeaders(); got != "anthropic-version: 2023-06-01\nx-b: 1\n" {
		t.Errorf("pinned text %q", got)
	}
}
