package config

import "testing"

// A base_url ending in the API version segment the adapter appends itself
// (anthropic, gemini, mistral) is a warning at its line naming the doubled
// path the adapter would request and the fix; OpenAI-style roots, whose
// /v1 is the convention (openai, openai_compatible), and azure and
// bedrock, are not warned about.
func TestWarningsDoubledVersion(t *testing.T) {
	checkWarnings(t, `targets:
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
`, []baseURLWant{
		{0, "v.yaml:2: targets[0].base_url: ends in /v1, but the anthropic adapter appends the API version itself: requests would go to /v1/v1/messages (every probe a 404 client_error); drop the trailing /v1 (base_url is the API root, e.g. https://api.anthropic.com)", "/v1/v1/messages"},
		{2, "v.yaml:4: targets[2].base_url: ends in /v1beta, but the gemini adapter appends the API version itself: requests would go to /v1beta/v1beta/models/gemini-x:generateContent", "/v1beta/v1beta/models/gemini-x:generateContent"},
		{4, "v.yaml:6: targets[4].base_url: ends in /v1, but the gemini (api: vertex) adapter", ""},
		{5, "v.yaml:7: targets[5].base_url: ends in /v1, but the mistral adapter appends the API version itself: requests would go to /v1/v1/moderations", "/v1/v1/moderations"},
	})
}
