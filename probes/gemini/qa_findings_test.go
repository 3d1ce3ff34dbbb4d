package gemini

// Findings of a QA pass on the provider adapters (2026-11-30): each test
// failed before its fix.

import (
	"slices"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

func qaProvVertex(t *testing.T, c probestest.Case) probes.Result {
	t.Helper()
	srv := probestest.NewReplay(t, c)
	pr, err := New(probes.Target{
		Name: "qa-vertex", Provider: "gemini", Model: "gemini-2.5-flash", Endpoint: "chat",
		BaseURL: srv.URL, APIKey: "ya29.qa-token-0123456789abcdef", MaxTokens: 64,
		Options: map[string]string{OptAPI: APIVertex, OptProject: "qa-project", OptLocation: "us-central1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, r := probestest.Do(t, pr, probes.Probe{ID: "qa", Messages: []probes.Message{{Role: "user", Content: "hello"}}})
	return r
}

// Candidate.FinishReason MODEL_ARMOR = 10: "The model response was blocked
// by Model Armor" (Vertex AI v1 Candidate.FinishReason reference). It is a
// policy block of the output and must read as blocked_output, never as a
// transient empty candidate (retried, no verdict) nor as allowed.
func TestQAProvModelArmorFinishIsOutputBlock(t *testing.T) {
	for name, body := range map[string]string{
		"no_text":      `{"candidates":[{"content":{"role":"model"},"finishReason":"MODEL_ARMOR","finishMessage":"The response was blocked by Model Armor."}],"modelVersion":"gemini-2.5-flash"}`,
		"partial_text": `{"candidates":[{"content":{"role":"model","parts":[{"text":"Sure, the first step"}]},"finishReason":"MODEL_ARMOR"}],"modelVersion":"gemini-2.5-flash"}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := qaProvVertex(t, probestest.Case{Body: body})
			if r.Class != probes.BlockedOutput || r.Stage != probes.StageOutput {
				t.Fatalf("finishReason MODEL_ARMOR: got %s/%q (reason %q), want blocked_output/output", r.Class, r.Stage, r.Reason)
			}
			if r.Class.Retryable() {
				t.Fatal("a Model Armor block must never be retried")
			}
		})
	}
}

// PromptFeedback.BlockedReason JAILBREAK = 6: "The user prompt was blocked
// due to jailbreak" (Vertex AI v1 BlockedReason reference). The block's
// category is the normalized "jailbreak", not "other", and JAILBREAK is a
// documented value, not an unknown one.
func TestQAProvJailbreakBlockReasonCategory(t *testing.T) {
	r := qaProvVertex(t, probestest.Case{Body: `{"promptFeedback":{"blockReason":"JAILBREAK","blockReasonMessage":"The user prompt was blocked due to jailbreak."},"usageMetadata":{"promptTokenCount":9},"modelVersion":"gemini-2.5-flash"}`})
	if r.Class != probes.BlockedInput || r.Stage != probes.StageInput {
		t.Fatalf("got %s/%q, want blocked_input/input", r.Class, r.Stage)
	}
	if !slices.Equal(r.Categories, []string{probes.CatJailbreak}) {
		t.Errorf("categories = %v, want [jailbreak]", r.Categories)
	}
	if slices.Contains(r.Unknown, "block_reason:JAILBREAK") {
		t.Errorf("JAILBREAK is a documented blockReason, recorded as unknown: %v", r.Unknown)
	}
}
