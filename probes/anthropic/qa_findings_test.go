package anthropic

// Findings of a QA pass on the provider adapters (2026-11-30): each test
// failed before its fix.

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// Anthropic's output content filter arrives, on a streamed answer, as an
// SSE "error" event after HTTP 200 (the form without a status in
// anthropics/claude-code#58367: {"type":"error","error":{"details":null,
// "type":"invalid_request_error","message":"Output blocked by content
// filtering policy"},"request_id":...}). driftprobe never asks for a
// stream, but the adapter reads streams a gateway forces on it. The same
// envelope in a non-streamed 200 or in a 400 is blocked_output; in a
// stream it is read as transient "malformed_response", so the runner
// RETRIES a policy block (DESIGN: "blocked_output ... retried: never") and
// the verdict is lost. The OpenAI-dialect stream reader keeps its block
// "wherever the stream ends"; this one does not.
func TestQAProvStreamErrorOutputBlocked(t *testing.T) {
	const blocked = "event: error\ndata: {\"type\":\"error\",\"error\":{\"details\":null,\"type\":\"invalid_request_error\",\"message\":\"Output blocked by content filtering policy\"},\"request_id\":\"req_011CaxpiP7NSqAVnWCHuZz1v\"}\n\n"
	const started = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-6\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Here is\"}}\n\n"
	for name, body := range map[string]string{"error_only": blocked, "after_text": started + blocked} {
		t.Run(name, func(t *testing.T) {
			srv := probestest.NewReplay(t, probestest.Case{Body: body, Header: map[string]string{"Content-Type": "text/event-stream"}})
			pr, err := New(probes.Target{Name: "qa-anthropic", Provider: "anthropic", Model: "claude-sonnet-4-6", BaseURL: srv.URL, APIKey: "sk-ant-api03-QAPROV0123456789", MaxTokens: 64})
			if err != nil {
				t.Fatal(err)
			}
			_, r := probestest.Do(t, pr, probes.Probe{ID: "qa", Messages: []probes.Message{{Role: "user", Content: "hello"}}})
			if r.Class != probes.BlockedOutput || r.Stage != probes.StageOutput {
				t.Fatalf("got %s/%q (reason %q), want blocked_output/output", r.Class, r.Stage, r.Reason)
			}
			if r.Class.Retryable() {
				t.Fatal("an output block must never be retried")
			}
		})
	}
}
