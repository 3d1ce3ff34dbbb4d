package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes/wire"
)

func serve(t *testing.T, s *Server, method, path string, body []byte, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// openAIError decodes an OpenAI-style error body and fails unless it has a
// non-empty message, a type and a code.
func openAIError(t *testing.T, rec *httptest.ResponseRecorder) (msg, typ, code string) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("status %d: body is not JSON: %v: %s", rec.Code, err, rec.Body)
	}
	if e.Error.Message == "" || e.Error.Type == "" || e.Error.Code == "" {
		t.Errorf("status %d: error without message, type or code: %s", rec.Code, rec.Body)
	}
	return e.Error.Message, e.Error.Type, e.Error.Code
}

// A body over the 4 MiB limit is refused whole with a 413, never scored on
// its first 4 MiB: before, a valid request padded past the limit was
// answered 200 on a prefix of its bytes, and any other oversized body got
// "'messages' is a required property".
func TestOversizedBodyIs413(t *testing.T) {
	s := NewServer(Config{})
	small := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	padded := []byte(small + strings.Repeat(" ", MaxBody))
	rec := serve(t, s, http.MethodPost, "/v1/chat/completions", padded, nil)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("padded valid body over the limit: status %d, want 413: %.200s", rec.Code, rec.Body)
	}
	if _, _, code := openAIError(t, rec); code != "request_too_large" {
		t.Errorf("code %q, want request_too_large", code)
	}
	huge := []byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("a", MaxBody) + `"}]}`)
	if rec := serve(t, s, http.MethodPost, "/v1/chat/completions", huge, nil); rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("huge body: status %d, want 413", rec.Code)
	}
	// Exactly at the limit is still read and answered.
	exact := []byte(small + strings.Repeat(" ", MaxBody-len(small)))
	if rec := serve(t, s, http.MethodPost, "/v1/chat/completions", exact, nil); rec.Code != http.StatusOK {
		t.Fatalf("body of exactly %d bytes: status %d, want 200: %.200s", MaxBody, rec.Code, rec.Body)
	}
}

// Over real HTTP, an oversized upload gets the 413 answer (not a reset or
// a hang) and the server keeps serving.
func TestOversizedBodyOverHTTP(t *testing.T) {
	ts := httptest.NewServer(NewServer(Config{}))
	defer ts.Close()
	c := &http.Client{Timeout: 20 * time.Second}
	big := bytes.Repeat([]byte(" "), 8<<20)
	resp, err := c.Post(ts.URL+"/v1/chat/completions", "application/json", bytes.NewReader(big))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
	}
	// err != nil (the server closed while the client still wrote) is
	// acceptable on some platforms; what matters is the next request.
	resp, err = c.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after an oversized request: status %d, want 200", resp.StatusCode)
	}
}

// Malformed requests get well-formed OpenAI-style errors that say what is
// wrong: invalid JSON is not reported as missing messages.
func TestMalformedRequests(t *testing.T) {
	s := NewServer(Config{})
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"invalid json", "POST", "/v1/chat/completions", `{bad`, 400, "invalid_json"},
		{"messages not a list", "POST", "/v1/chat/completions", `{"messages":"hi"}`, 400, "invalid_json"},
		{"empty body", "POST", "/v1/chat/completions", ``, 400, "invalid_json"},
		{"empty messages", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, "invalid_body"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"m"}`, 400, "invalid_body"},
		{"null", "POST", "/v1/chat/completions", `null`, 400, "invalid_body"},
		{"GET", "GET", "/v1/chat/completions", ``, 404, "unknown_url"},
		{"wrong path", "POST", "/v1/completions", `{}`, 404, "unknown_url"},
	} {
		rec := serve(t, s, c.method, c.path, []byte(c.body), nil)
		if rec.Code != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, rec.Code, c.status, rec.Body)
			continue
		}
		if _, _, code := openAIError(t, rec); code != c.code {
			t.Errorf("%s: code %q, want %q", c.name, code, c.code)
		}
	}
}

// Scripted failures carry a message whatever the status (Go has no text
// for 529, so the body's message was empty), and Retry-After is whole
// seconds as RFC 9110 requires, with the exact wait in retry-after-ms.
func TestScriptedFailureBodiesAndRetryAfter(t *testing.T) {
	body := []byte(`{"messages":[{"role":"user","content":"hi"}]}`)
	for _, c := range []struct {
		status    int
		after     float64
		header    string
		ms        string
		wait      time.Duration
		wantType  string
		wantInMsg string
	}{
		{529, 0.5, "1", "500", 500 * time.Millisecond, "server_error", "Overloaded"},
		{429, 3, "3", "3000", 3 * time.Second, "rate_limit_error", "Too Many Requests"},
		{503, 2.25, "3", "2250", 2250 * time.Millisecond, "server_error", "Service Unavailable"},
		{599, 0, "", "", 0, "server_error", "599"},
	} {
		s := NewServer(Config{ErrorStatus: c.status, FailFirst: 1, RetryAfter: c.after})
		rec := serve(t, s, http.MethodPost, "/v1/chat/completions", body, nil)
		if rec.Code != c.status {
			t.Fatalf("%d: status %d", c.status, rec.Code)
		}
		msg, typ, _ := openAIError(t, rec)
		if typ != c.wantType || !strings.Contains(msg, c.wantInMsg) {
			t.Errorf("%d: type %q message %q, want %q containing %q", c.status, typ, msg, c.wantType, c.wantInMsg)
		}
		if got := rec.Header().Get("Retry-After"); got != c.header {
			t.Errorf("%d: Retry-After %q, want %q", c.status, got, c.header)
		}
		if got := rec.Header().Get("retry-after-ms"); got != c.ms {
			t.Errorf("%d: retry-after-ms %q, want %q", c.status, got, c.ms)
		}
		if got := wire.RetryAfter(rec.Header(), time.Time{}); got != c.wait {
			t.Errorf("%d: the client reads a wait of %s, want %s", c.status, got, c.wait)
		}
	}
	if errs := (&Config{ErrorStatus: 429, FailFirst: 1, RetryAfter: 1e300}).Validate(); len(errs) != 1 || errs[0][0] != "retry_after" {
		t.Errorf("retry_after 1e300: %v, want one retry_after problem", errs)
	}
}
