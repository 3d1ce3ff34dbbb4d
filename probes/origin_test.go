package probes

import "testing"

func TestURLOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://myres.openai.azure.com":                           "https://myres.openai.azure.com",
		"https://MyRes.OpenAI.Azure.com:443/":                      "https://myres.openai.azure.com",
		"HTTP://127.0.0.1:8080/v1/":                                "http://127.0.0.1:8080/v1",
		"http://127.0.0.1:018101/":                                 "http://127.0.0.1:18101",
		"http://127.0.0.1:19111/x/../gwa/":                         "http://127.0.0.1:19111/x/../gwa", // as sent: a gateway may route it elsewhere than /gwa
		"http://localhost:80":                                      "http://localhost",
		"https://bedrock-runtime.eu-west-1.amazonaws.com":          "https://bedrock-runtime.eu-west-1.amazonaws.com",
		"http://[::1]:4000/v1":                                     "http://[::1]:4000/v1",
		"https://user:secret@gw.example.com/v1?key=x#f":            "https://gw.example.com/v1",
		"https://gateway.ai.cloudflare.com/v1/acct/gw-a/anthropic": "https://gateway.ai.cloudflare.com/v1/acct/gw-a/anthropic",
		"/v1/chat/completions":                                     "",
		"::":                                                       "",
	} {
		if got := URLOrigin(in); got != want {
			t.Errorf("URLOrigin(%q) = %q, want %q", in, got, want)
		}
	}
}

// The origin is what the URL holds beyond the fingerprinted path: a
// gateway's path prefix in front of a fixed API path is part of it (moving
// between two gateways on one host is a move), an API path already in the
// fingerprint is not.
func TestRequestOrigin(t *testing.T) {
	for _, c := range []struct{ url, path, want string }{
		{"https://api.openai.com/v1/chat/completions", "/v1/chat/completions", "https://api.openai.com"},
		{"https://gw.example.com/acct/gw-a/anthropic/v1/messages", "/v1/messages", "https://gw.example.com/acct/gw-a/anthropic"},
		{"https://gw.example.com/acct/gw-b/anthropic/v1/messages", "/v1/messages", "https://gw.example.com/acct/gw-b/anthropic"},
		{"https://myres.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21", "/openai/deployments/d/chat/completions?api-version=2024-10-21", "https://myres.openai.azure.com"},
		{"https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse", "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse", "https://bedrock-runtime.us-east-1.amazonaws.com"},
		{"http://127.0.0.1:9999/other/path", "/v1/messages", "http://127.0.0.1:9999/other/path"}, // not a suffix: the whole path counts
	} {
		if got := RequestOrigin(&Request{URL: c.url, Path: c.path}); got != c.want {
			t.Errorf("RequestOrigin(%q, %q) = %q, want %q", c.url, c.path, got, c.want)
		}
	}
}

// An account scope qualifies an origin after a space, which no origin
// holds (URLOrigin escapes the path): an origin without a scope, or an
// unknown origin, is as it was.
func TestScopedOrigin(t *testing.T) {
	for _, c := range []struct{ origin, scope, want string }{
		{"https://api.openai.com", "", "https://api.openai.com"},
		{"https://api.openai.com", "organization=org-1 project=proj_2", "https://api.openai.com organization=org-1 project=proj_2"},
		{"", "organization=org-1", ""},
	} {
		if got := ScopedOrigin(c.origin, c.scope); got != c.want {
			t.Errorf("ScopedOrigin(%q, %q) = %q, want %q", c.origin, c.scope, got, c.want)
		}
	}
	if got := URLOrigin("http://h.example/a b/v1"); got != "http://h.example/a%20b/v1" {
		t.Errorf("URLOrigin with a space in the path = %q: an origin must hold no space", got)
	}
}
