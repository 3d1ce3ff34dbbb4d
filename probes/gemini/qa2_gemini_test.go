package gemini

// QA pass 2 on the provider adapters: each test fails on the code as it
// stands, for the reason its comment gives.

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// streamGenerateContent without alt=sse answers with a JSON array of
// GenerateContentResponse chunks (Google's default streaming encoding);
// only the last chunk carries finishReason and the blocking ratings. A
// proxy that streams although driftprobe did not ask is read when it
// uses SSE (merged; a stream without a finishReason is transient
// incomplete_stream), but decode() takes any 2xx JSON array to be an
// array-wrapped error and keeps element 0 only: the first chunk of the
// answer, with its first words and no finishReason. An output block
// (finishReason SAFETY on the last chunk) is then read as allowed, a fake
// loosening that confirms like a real one.
func TestQA2JSONArrayStreamLastChunkSafetyBlock(t *testing.T) {
	body := `[{"candidates":[{"content":{"parts":[{"text":"Sure, here is how"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.0-flash"},
{"candidates":[{"content":{"parts":[{"text":" you"}],"role":"model"},"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":5},"modelVersion":"gemini-2.0-flash"}]`
	srv := probestest.NewReplay(t, probestest.Case{Body: body})
	_, r := probestest.Do(t, newTestProber(t, srv.URL, nil, nil), userOnly())
	if r.Class == probes.Allowed {
		t.Fatalf("a streamed answer whose last chunk is finishReason SAFETY read as allowed (reason %q, unknown %v)", r.Reason, r.Unknown)
	}
	if r.Class != probes.BlockedOutput {
		t.Errorf("got %s (reason %q), want blocked_output (or at least no verdict)", r.Class, r.Reason)
	}
}
