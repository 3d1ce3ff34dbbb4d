package openaicompat

// Findings of a QA pass on the provider adapters (2026-11-30): each test
// failed before its fix.

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// OpenRouter (a gateway this adapter explicitly supports: docs/PROVIDERS.md,
// openai_compatible) answers HTTP 200 once generation started
// and reports a failure during generation in the body: the choice's
// normalized finish_reason is "error" ("error if the model finishes the
// request with an error") and the choice carries error: ErrorResponse
// (openrouter.ai/docs/api-reference/overview NonStreamingChoice;
// openrouter.ai/docs/api-reference/errors: "Otherwise, the returned HTTP
// response status will be 200 and any error occurred while the LLM is
// producing the output will be emitted in the response body"). That is an
// upstream failure, not a provider verdict: it must never be "allowed"
// (after a blocked baseline that is a fake "loosened" flip).
func TestQAProvOpenRouterChoiceErrorIsNotAVerdict(t *testing.T) {
	for name, body := range map[string]string{
		"empty_content":   `{"id":"gen-1744","object":"chat.completion","created":1744000000,"model":"anthropic/claude-3.5-sonnet","provider":"Anthropic","choices":[{"index":0,"logprobs":null,"finish_reason":"error","native_finish_reason":"error","message":{"role":"assistant","content":"","refusal":null},"error":{"code":502,"message":"Provider returned error","metadata":{"provider_name":"Anthropic"}}}],"usage":{"prompt_tokens":12,"completion_tokens":0,"total_tokens":12}}`,
		"partial_content": `{"id":"gen-1745","object":"chat.completion","created":1744000000,"model":"anthropic/claude-3.5-sonnet","provider":"Anthropic","choices":[{"index":0,"logprobs":null,"finish_reason":"error","native_finish_reason":"error","message":{"role":"assistant","content":"Sure, the first","refusal":null},"error":{"code":502,"message":"Provider returned error"}}],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := probestest.NewReplay(t, probestest.Case{Body: body})
			pr, err := New(probes.Target{Name: "qa-or", Provider: "openai_compatible", Model: "anthropic/claude-3.5-sonnet", BaseURL: srv.URL + "/api/v1", APIKey: "sk-or-v1-qa0123456789abcdef", MaxTokens: 64})
			if err != nil {
				t.Fatal(err)
			}
			_, r := probestest.Do(t, pr, probes.Probe{ID: "qa", Messages: []probes.Message{{Role: "user", Content: "hello"}}})
			if r.Class.IsVerdict() {
				t.Fatalf("choice finish_reason=error with a choice error object read as verdict %s (reason %q, unknown %v); want transient", r.Class, r.Reason, r.Unknown)
			}
			if r.Class != probes.Transient {
				t.Fatalf("class %s, want transient", r.Class)
			}
		})
	}
}
