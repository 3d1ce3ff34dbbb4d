package anthropic

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// FuzzClassify fuzzes the Messages API reader through the prober, once as
// given (with no Content-Type, as replay reads stored bodies, a body that
// opens like an event stream reaches the SSE rebuilder) and once with the
// body declared an event stream.
//
//	go test ./probes/anthropic -run '^$' -fuzz '^FuzzClassify$' -fuzztime 30s
func FuzzClassify(f *testing.F) {
	pr, err := New(probes.Target{Name: "anthropic-fuzz", Provider: "anthropic", Model: "claude-sonnet-4-5", APIKey: probestest.FuzzKey, MaxTokens: 64})
	if err != nil {
		f.Fatal(err)
	}
	p := pr.(*Prober)
	p.now = func() time.Time { return probestest.FuzzNow }
	asStream := func(resp *probes.Response) *probes.Response {
		c := *resp
		c.Header = http.Header{}
		for k, v := range resp.Header {
			c.Header[k] = v
		}
		c.Header.Set("Content-Type", "text/event-stream")
		return &c
	}
	// Documented rule: a complete, uncut 2xx Messages stream is read like
	// the message it describes, when declared text/event-stream or, with
	// no Content-Type at all, when the body opens like a stream.
	streamVerdict := func(resp *probes.Response, _ probes.Result) bool {
		return resp.Status >= 200 && resp.Status < 300 && !resp.Truncated && isEventStream(resp.Header, resp.Body) &&
			bytes.Contains(resp.Body, []byte("message_start")) && bytes.Contains(resp.Body, []byte("message_stop"))
	}
	probestest.Fuzz(f, []probestest.FuzzTarget{
		{Name: "chat", Classify: func(resp *probes.Response) probes.Result { return p.Classify(nil, resp) }, AllowVerdict: streamVerdict},
		{Name: "chat_event_stream", Classify: func(resp *probes.Response) probes.Result { return p.Classify(nil, asStream(resp)) },
			AllowVerdict: func(resp *probes.Response, r probes.Result) bool { return streamVerdict(asStream(resp), r) }},
	}, "testdata")
}
