package config

import (
	"net/url"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
)

// checkWarnings parses yaml and checks its warnings, in order, against want:
// each warning starts with its prefix and, when path is set, names the path
// the target's adapter renders (built by the adapter, not by the test).
func checkWarnings(t *testing.T, yaml string, want []baseURLWant) {
	t.Helper()
	c, err := Parse("v.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Warnings()
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
		if !strings.Contains(w[i], "requests would go to "+ww.path+" ") {
			t.Errorf("warning %d does not name %s: %s", i, ww.path, w[i])
		}
		tg := c.Targets[ww.target]
		pr, err := probes.New(tg.ProbeTarget("k"))
		if err != nil {
			t.Fatal(err)
		}
		req, err := pr.Render(probes.Probe{ID: "p", Messages: []probes.Message{{Role: "user", Content: "hi"}}})
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(req.URL)
		if u.Path != ww.path {
			t.Errorf("%s renders %s, the warning says %s", tg.Name, u.Path, ww.path)
		}
	}
}

type baseURLWant struct {
	target       int
	prefix, path string
}

// A full endpoint pasted as base_url, for every provider whose adapter
// appends its own path, is a warning at its line naming the path the
// adapter would request and what to drop; a base_url at the API root is
// not.
func TestWarningsPastedEndpoint(t *testing.T) {
	checkWarnings(t, `targets:
  - {name: a, provider: anthropic, model: claude-x, base_url: "https://api.anthropic.com/v1/messages"}
  - {name: b, provider: anthropic, model: claude-x, base_url: "https://proxy.example.com/anthropic/messages/"}
  - {name: c, provider: gemini, model: gemini-x, base_url: "https://generativelanguage.googleapis.com/v1beta/models/gemini-x:generateContent"}
  - {name: d, provider: gemini, model: gemini-x, base_url: "https://europe-west4-aiplatform.googleapis.com/v1/projects/p/locations/europe-west4/publishers/google/models/gemini-x:generateContent", options: {api: vertex, project: p, location: europe-west4}}
  - {name: e, provider: mistral, model: mistral-moderation-latest, base_url: "https://api.mistral.ai/v1/chat/completions"}
  - {name: f, provider: mistral, model: mistral-moderation-latest, endpoint: moderation, base_url: "https://api.mistral.ai/v1/moderations"}
  - {name: g, provider: openai, model: m, base_url: "https://api.openai.com/v1/chat/completions"}
  - {name: h, provider: openai, model: omni-moderation-latest, endpoint: moderation, base_url: "https://api.openai.com/v1/moderations"}
  - {name: i, provider: openai_compatible, model: m, base_url: "http://vllm.example.com:8000/v1/chat/completions"}
  - {name: j, provider: azure, model: m, base_url: "https://r.openai.azure.com/openai/deployments/m/chat/completions"}
  - {name: k, provider: azure, model: m, base_url: "https://r.openai.azure.com/openai/v1/chat/completions"}
  - {name: l, provider: anthropic, model: claude-x, base_url: "https://proxy.example.com/anthropic"}
  - {name: m, provider: gemini, model: gemini-x, base_url: "https://generativelanguage.googleapis.com"}
  - {name: n, provider: openai_compatible, model: m, base_url: "http://vllm.example.com:8000/v1"}
  - {name: o, provider: azure, model: m, base_url: "https://r.openai.azure.com/openai"}
  - {name: p, provider: mistral, model: mistral-moderation-latest, base_url: "https://api.mistral.ai"}
  - {name: q, provider: bedrock, model: anthropic.claude-x, base_url: "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-x/converse", options: {region: us-east-1}}
  - {name: r, provider: bedrock, endpoint: guardrail, model: guard, base_url: "https://bedrock-runtime.us-east-1.amazonaws.com/guardrail/abc123/version/1/apply/", options: {region: us-east-1, guardrail_id: abc123, guardrail_version: "1"}}
  - {name: s, provider: bedrock, model: anthropic.claude-x, base_url: "https://bedrock-runtime.us-east-1.amazonaws.com", options: {region: us-east-1}}
`, []baseURLWant{
		{0, "v.yaml:2: targets[0].base_url: ends in /v1/messages, an endpoint, but base_url is the API root the anthropic adapter appends /v1/messages to: requests would go to /v1/messages/v1/messages (every probe a 404 client_error); drop the trailing /v1/messages (e.g. https://api.anthropic.com)", "/v1/messages/v1/messages"},
		{1, "v.yaml:3: targets[1].base_url: ends in /messages, an endpoint", "/anthropic/messages/v1/messages"},
		{2, "v.yaml:4: targets[2].base_url: ends in /v1beta/models/gemini-x:generateContent, an endpoint, but base_url is the API root the gemini adapter appends", "/v1beta/models/gemini-x:generateContent/v1beta/models/gemini-x:generateContent"},
		{3, "v.yaml:5: targets[3].base_url: ends in /v1/projects/p/locations/europe-west4/publishers/google/models/gemini-x:generateContent, an endpoint, but base_url is the API root the gemini (api: vertex) adapter appends", "/v1/projects/p/locations/europe-west4/publishers/google/models/gemini-x:generateContent/v1/projects/p/locations/europe-west4/publishers/google/models/gemini-x:generateContent"},
		{4, "v.yaml:6: targets[4].base_url: ends in /v1/chat/completions, an endpoint, but base_url is the API root the mistral adapter appends /v1/chat/moderations to", "/v1/chat/completions/v1/chat/moderations"},
		{5, "v.yaml:7: targets[5].base_url: ends in /v1/moderations, an endpoint", "/v1/moderations/v1/moderations"},
		{6, "v.yaml:8: targets[6].base_url: ends in /chat/completions, an endpoint, but base_url is the API root the openai adapter appends /chat/completions to: requests would go to /v1/chat/completions/chat/completions (every probe a 404 client_error); drop the trailing /chat/completions", "/v1/chat/completions/chat/completions"},
		{7, "v.yaml:9: targets[7].base_url: ends in /moderations, an endpoint", "/v1/moderations/moderations"},
		{8, "v.yaml:10: targets[8].base_url: ends in /chat/completions, an endpoint, but base_url is the API root the openai_compatible adapter", "/v1/chat/completions/chat/completions"},
		{9, "v.yaml:11: targets[9].base_url: ends in /openai/deployments/m/chat/completions, an endpoint, but base_url is the API root the azure adapter", "/openai/deployments/m/chat/completions/openai/deployments/m/chat/completions"},
		{10, "v.yaml:12: targets[10].base_url: ends in /chat/completions, an endpoint", "/openai/v1/chat/completions/openai/deployments/m/chat/completions"},
		{16, "v.yaml:18: targets[16].base_url: ends in /model/anthropic.claude-x/converse, an endpoint, but base_url is the API root the bedrock adapter appends /model/anthropic.claude-x/converse to", "/model/anthropic.claude-x/converse/model/anthropic.claude-x/converse"},
		{17, "v.yaml:19: targets[17].base_url: ends in /guardrail/abc123/version/1/apply, an endpoint", "/guardrail/abc123/version/1/apply/guardrail/abc123/version/1/apply"},
	})
}

// An openai base_url whose path does not end in /v1 is a warning: the
// adapter appends only /chat/completions (or /moderations). The version
// is not checked for openai_compatible, whose servers vary.
func TestWarningsOpenAIWithoutV1(t *testing.T) {
	checkWarnings(t, `targets:
  - {name: a, provider: openai, model: m, base_url: "https://api.openai.com"}
  - {name: b, provider: openai, model: omni-moderation-latest, endpoint: moderation, base_url: "https://proxy.example.com/openai/"}
  - {name: c, provider: openai, model: m, base_url: "https://api.openai.com/v1/"}
  - {name: d, provider: openai, model: m, base_url: "https://r.openai.azure.com/openai/v1"}
  - {name: e, provider: openai_compatible, model: m, base_url: "http://vllm.example.com:8000"}
  - {name: f, provider: openai, model: m}
`, []baseURLWant{
		{0, "v.yaml:2: targets[0].base_url: does not end in /v1, but the openai adapter appends only /chat/completions to base_url: requests would go to /chat/completions (every probe a 404 client_error); end it in /v1", "/chat/completions"},
		{1, "v.yaml:3: targets[1].base_url: does not end in /v1, but the openai adapter appends only /moderations to base_url: requests would go to /openai/moderations", "/openai/moderations"},
	})
}
