package oaiwire

import (
	"bytes"
	"regexp"
	"slices"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// FuzzClassify fuzzes the shared readers directly: ClassifyChat,
// ClassifyModeration and ClassifyError, each followed by Redact as the
// adapters apply it. It is seeded with oaiwire's testdata (a simulator
// answer) and the fixtures of the adapters built on it.
//
// The chat target is also the differential test of ClassifyChat's fast
// path: on every 2xx input that classifyChatFast accepts, its Result must
// be reflect.DeepEqual to classifyChatSlow's (checkFastSlow panics
// otherwise, which the fuzzing engine records as a failing input). The
// error target is the same for ClassifyError's fast path: on every input
// classifyErrorFast accepts, its Result must equal classifyErrorSlow's
// (checkErrFastSlow).
//
//	go test ./probes/oaiwire -run '^$' -fuzz '^FuzzClassify$' -fuzztime 30s
func FuzzClassify(f *testing.F) {
	key := probestest.FuzzKey
	now := probestest.FuzzNow
	targets := []probestest.FuzzTarget{
		{Name: "chat", AllowVerdict: chatVerdict, Classify: func(resp *probes.Response) probes.Result {
			checkFastSlow(resp)
			return Redact(ClassifyChat(resp, now), key)
		}},
		{Name: "moderation", AllowVerdict: probestest.OpenAIDialectVerdict, Classify: func(resp *probes.Response) probes.Result {
			return Redact(ClassifyModeration(resp, now, NormalizeAzure), key)
		}},
		{Name: "error", AllowVerdict: probestest.OpenAIDialectVerdict, Classify: func(resp *probes.Response) probes.Result {
			checkErrFastSlow(resp)
			return Redact(ClassifyError(resp, now), key)
		}},
	}
	probestest.Fuzz(f, targets, "testdata", "../openai/testdata", "../azure/testdata", "../openaicompat/testdata", "../mistral/testdata")
}

// chatVerdict is the chat target's AllowVerdict: the two rules of
// probestest.OpenAIDialectVerdict, and the event-stream rule of
// classifyChatStream. A 2xx body isChatStream reads (declared
// text/event-stream, or opening with a data: line without a Content-Type)
// is read as the answer it describes, marked StreamMarker, when a chunk
// sets a finish_reason (or, Truncated, when its cut tail spells
// "finish_reason":"content_filter"), or as a 2xx error body when a chunk
// carries only an error.
func chatVerdict(resp *probes.Response, r probes.Result) bool {
	if probestest.OpenAIDialectVerdict(resp, r) {
		return true
	}
	return resp.Status >= 200 && resp.Status < 300 && isChatStream(resp) && slices.Contains(r.Unknown, StreamMarker) &&
		(finishSpelled.Match(resp.Body) || bytes.Contains(resp.Body, []byte(`"error"`)))
}

var finishSpelled = regexp.MustCompile(`"finish_reason"\s*:\s*"[^"]`)
