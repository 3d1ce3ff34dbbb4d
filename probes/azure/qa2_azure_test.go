package azure

// QA pass 2 on the provider adapters: each test fails on the code as it
// stands, for the reason its comment gives.

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// A UTF-8 byte order mark before a JSON body (RFC 8259 §8.1: a parser
// "MAY ignore the presence of a byte order mark rather than treating it
// as an error"; .NET-based proxies and APIM policy bodies are known to
// emit one) makes every OpenAI-dialect reader fail: Azure's prompt-filter
// 400 becomes client_error (no verdict, never retried, not even a
// degraded run: an allowed->blocked_input flip is invisible) and an
// output content_filter 200 becomes transient malformed_response
// (retried, counted against the breaker, never a verdict). The same
// package already skips a BOM in front of an event stream (isChatStream,
// sseDataEvents), as the anthropic adapter does (opensLikeEventStream).
func TestQA2BOMBeforeJSONBody(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	probestest.Conformance(t, newProber, probestest.Probe, []probestest.Case{
		{
			Name: "prompt_filtered_400", Status: 400,
			Body: bom + `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"medium"}}}}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Categories: []string{"violence"}},
		},
		{
			Name: "output_content_filter_200",
			Body: bom + `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant","content":null},"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"high"}}}]}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Categories: []string{"violence"}},
		},
	})
}
