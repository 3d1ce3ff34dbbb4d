package main

import (
	"strings"
	"testing"
)

// config check warns, at the base_url's line, about a full endpoint pasted
// as base_url and about an openai base_url without /v1, naming the path
// the requests would go to; an Azure v1 API root is neither a warning nor
// a problem.
func TestConfigCheckWarnsBaseURLEndpoint(t *testing.T) {
	cfg, stderr, code := configCheck(t, `targets:
  - {name: a, provider: openai, model: m, base_url: "https://api.openai.com/v1/chat/completions"}
  - {name: b, provider: openai, model: m, base_url: "https://api.openai.com"}
  - {name: c, provider: azure, model: gpt-4o, base_url: "https://r.openai.azure.com/openai/v1/"}
`)
	for _, want := range []string{
		"driftprobe: warning: " + cfg + ":2: targets[0].base_url: ends in /chat/completions, an endpoint, but base_url is the API root the openai adapter appends /chat/completions to: requests would go to /v1/chat/completions/chat/completions",
		"driftprobe: warning: " + cfg + ":3: targets[1].base_url: does not end in /v1, but the openai adapter appends only /chat/completions to base_url: requests would go to /chat/completions",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != 0 || strings.Count(stderr, "warning:") != 2 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
