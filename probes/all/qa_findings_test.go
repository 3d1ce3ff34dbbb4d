package all

import (
	"net/http"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
)

// A provider (or gateway) that echoes the key it was sent at the end of a
// long error message: the message is cut to wire.MaxMessage (1024 bytes)
// before the key is redacted, so the part of the key before the cut is
// stored (observations.message), shown by evidence and filed in issues.
func TestQASecTruncatedMessageLeaksKeyPrefix(t *testing.T) {
	const key = "sk-proj-QAsecretAAAABBBBCCCCDDDDEEEEFFFF0123456789"
	const leak = "sk-proj-QAsecret" // 16 bytes of the key
	pad := strings.Repeat("x", 1024-30)
	oai := `{"error":{"message":"` + pad + `Incorrect API key provided: ` + key + `","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	// a pad that puts the key across byte 1024 of the message
	oai = strings.Replace(oai, pad+"Incorrect API key provided: ", pad, 1)
	anth := `{"type":"error","error":{"type":"authentication_error","message":"` + pad + key + `"}}`
	gem := `{"error":{"code":400,"message":"` + pad + key + `","status":"INVALID_ARGUMENT"}}`
	cases := []struct {
		provider, endpoint, base, body string
		opts                           map[string]string
	}{
		{"openai", "chat", "http://127.0.0.1:1/v1", oai, nil},
		{"openai", "moderation", "http://127.0.0.1:1/v1", oai, nil},
		{"azure", "chat", "http://127.0.0.1:1", oai, nil},
		{"mistral", "chat", "http://127.0.0.1:1", oai, nil},
		{"openai_compatible", "chat", "http://127.0.0.1:1/v1", oai, nil},
		{"anthropic", "chat", "http://127.0.0.1:1", anth, nil},
		{"gemini", "chat", "http://127.0.0.1:1", gem, nil},
	}
	for _, c := range cases {
		t.Run(c.provider+"/"+c.endpoint, func(t *testing.T) {
			p, err := probes.New(probes.Target{Name: "t", Provider: c.provider, Model: "m", Endpoint: c.endpoint,
				BaseURL: c.base, APIKey: key, MaxTokens: 16, Options: c.opts})
			if err != nil {
				t.Fatal(err)
			}
			req, err := p.Render(probes.Probe{ID: "p", Messages: []probes.Message{{Role: "user", Content: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, status := range []int{400, 401} {
				r := p.Classify(req, &probes.Response{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(c.body)})
				for what, s := range map[string]string{"message": r.Message, "reason": r.Reason, "request_id": r.RequestID} {
					if strings.Contains(s, leak) {
						t.Errorf("HTTP %d: %s keeps %d bytes of the key (%q…): %q", status, what, len(leak), leak, s[max(0, len(s)-40):])
					}
				}
			}
		})
	}
}

// The same class for fields cut at 200 bytes: a request id read from a
// header (anthropic Request-Id, gemini X-Goog-Request-Id, an OpenAI-dialect
// x-request-id) is cut before the key is redacted.
func TestQASecTruncatedRequestIDLeaksKeyPrefix(t *testing.T) {
	const key = "sk-proj-QAsecretAAAABBBBCCCCDDDDEEEEFFFF0123456789"
	const leak = "sk-proj-QAsecret"
	rid := strings.Repeat("r", 200-30) + key
	cases := []struct{ provider, base, header, body string }{
		{"anthropic", "http://127.0.0.1:1", "Request-Id", `{"type":"error","error":{"type":"overloaded_error","message":"x"}}`},
		{"gemini", "http://127.0.0.1:1", "X-Goog-Request-Id", `{"error":{"code":400,"message":"x","status":"INVALID_ARGUMENT"}}`},
		{"openai", "http://127.0.0.1:1/v1", "X-Request-Id", `{"error":{"message":"x","type":"invalid_request_error","param":null,"code":"x"}}`},
	}
	for _, c := range cases {
		t.Run(c.provider, func(t *testing.T) {
			p, err := probes.New(probes.Target{Name: "t", Provider: c.provider, Model: "m", BaseURL: c.base, APIKey: key, MaxTokens: 16})
			if err != nil {
				t.Fatal(err)
			}
			req, err := p.Render(probes.Probe{ID: "p", Messages: []probes.Message{{Role: "user", Content: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			r := p.Classify(req, &probes.Response{Status: 400, Header: http.Header{"Content-Type": {"application/json"}, c.header: {rid}}, Body: []byte(c.body)})
			if strings.Contains(r.RequestID, leak) {
				t.Errorf("request id keeps %d bytes of the key: %q", len(leak), r.RequestID[len(r.RequestID)-40:])
			}
		})
	}
}
