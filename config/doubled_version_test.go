package config

import (
	"net/url"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
)

// A base_url ending in the API version segment the adapter appends itself
// (anthropic, gemini, mistral) is a warning at its line naming the doubled
// path the adapter would request and the fix; OpenAI-style roots, whose
// /v1 is the convention (openai, openai_compatible), and azure and
// bedrock, are not warned about.
func TestWarningsDoubledVersion(t *testing.T) {
	c, err := Parse("v.yaml", []byte(`targets:
  - {name: a, provider: anthropic, model: claude-x, base_url: "https://api.anthropic.com/v1"}
  - {name: b, provider: anthropic, model: claude-x, base_url: "https://api.anthropic.com/"}
  - {name: c, provider: gemini, model: gemini-x, base_url: "https://generativelanguage.googleapis.com/v1beta/"}
  - {name: d, provider: gemini, model: gemini-x, base_url: "https://gw.example.com/google"}
  - {name: e, provider: gemini, model: gemini-x, base_url: "https://europe-west4-aiplatform.googleapis.com/v1", options: {api: vertex, project: p, location: europe-west4}}
  - {name: f, provider: mistral, model: mistral-moderation-latest, endpoint: moderation, base_url: "https://api.mistral.ai/v1"}
  - {name: g, provider: openai, model: m, base_url: "https://api.openai.com/v1"}
  - {name: h, provider: openai_compatible, model: m, base_url: "https://vllm.example.com/v1"}
  - {name: i, provider: azure, model: m, base_url: "https://x.openai.azure.com/openai"}
  - {name: j, provider: anthropic, model: claude-x, base_url: "https://proxy.example.com/anthropic/v1", disabled: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Warnings()
	want := []struct {
		target       int
		prefix, path string
	}{
		{0, "v.yaml:2: targets[0].base_url: ends in /v1, but the anthropic adapter appends the API version itself: requests would go to /v1/v1/messages (every probe a 404 client_error); drop the trailing /v1 (base_url is the API root, e.g. https://api.anthropic.com)", "/v1/v1/messages"},
		{2, "v.yaml:4: targets[2].base_url: ends in /v1beta, but the gemini adapter appends the API version itself: requests would go to /v1beta/v1beta/models/gemini-x:generateContent", "/v1beta/v1beta/models/gemini-x:generateContent"},
		{4, "v.yaml:6: targets[4].base_url: ends in /v1, but the gemini (api: vertex) adapter", ""},
		{5, "v.yaml:7: targets[5].base_url: ends in /v1, but the mistral adapter appends the API version itself: requests would go to /v1/v1/moderations", "/v1/v1/moderations"},
	}
	if len(w) != len(want) {
		t.Fatalf("%d warnings, want %d: %q", len(w), len(want), w)
	}
	for i, ww := range want {
		if !strings.HasPrefix(w[i], ww.prefix) {
			t.Errorf("warning %d:\n got %s\nwant %s…", i, w[i], ww.prefix)
		}
		if ww.path == "" {
			continue
		}
		// The path named is the one the adapter renders.
		n := ww.target
		pr, err := probes.New(c.Targets[n].ProbeTarget("k"))
		if err != nil {
			t.Fatal(err)
		}
		req, err := pr.Render(probes.Probe{ID: "p", Messages: []probes.Message{{Role: "user", Content: "hi"}}})
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(req.URL)
		if u.Path != ww.path {
			t.Errorf("%s renders %s, the warning says %s", c.Targets[n].Name, u.Path, ww.path)
		}
	}
}
