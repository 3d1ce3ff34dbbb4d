package anthropic

// QA pass 2 on the provider adapters: each test fails on the code as it
// stands, for the reason its comment gives.

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// A UTF-8 byte order mark before a JSON answer (RFC 8259 §8.1 lets a
// parser ignore it) makes the refusal below transient malformed_response
// (retried, a breaker failure, never a verdict) and the output filter's
// 400 a client_error (no verdict, not retried, run not degraded). The
// adapter already skips a BOM before an event stream
// (opensLikeEventStream); a JSON body gets no such treatment.
func TestQA2BOMBeforeJSONBody(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	cases := []probestest.Case{
		{
			Name: "refusal_200",
			Body: bom + `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":"refusal","stop_sequence":null,"stop_details":{"type":"refusal","category":"cyber","explanation":"Declined."},"usage":{"input_tokens":10,"output_tokens":1}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Categories: []string{probes.CatIllicit}, Reason: "refusal"},
		},
		{
			Name: "output_blocked_400", Status: 400,
			Body: bom + `{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput},
		},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober {
		pr, err := New(probes.Target{Name: "qa2", Provider: "anthropic", Model: "claude-sonnet-4-6", BaseURL: base, APIKey: "sk-ant-api03-QA2PROV0123456789", MaxTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}, probestest.Probe, cases)
}
