package gemini

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// TestJSONArrayStream: streamGenerateContent without alt=sse answers with
// a JSON array of chunks, read like the SSE stream of the same chunks;
// an array whose first element carries an error is Google's wrapped error,
// read from that element as before.
func TestJSONArrayStream(t *testing.T) {
	const (
		c1     = `{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.0-flash"}`
		c2     = `{"candidates":[{"content":{"parts":[{"text":" world"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":2},"modelVersion":"gemini-2.0-flash","responseId":"r-arr"}`
		safety = `{"candidates":[{"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}]}`
	)
	cases := []probestest.Case{
		{Name: "text_then_stop", Body: "[" + c1 + ",\n" + c2 + "]",
			Want: probestest.Want{Class: probes.Allowed, Reason: "STOP", TokensIn: 4, TokensOut: 2, RequestID: "r-arr", ModelFP: "gemini-2.0-flash"}},
		{Name: "text_then_safety", Body: "[" + c1 + "," + safety + "]",
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SAFETY", Categories: []string{probes.CatIllicit}}},
		{Name: "prompt_block_one_chunk", Body: `[{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}}]`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "SAFETY", Categories: []string{probes.CatHarassment}}},
		// No chunk finished: the stream was cut at a chunk boundary.
		{Name: "no_finish", Body: "[" + c1 + "]",
			Want: probestest.Want{Class: probes.Transient, Reason: "incomplete_stream"}},
		// An error after the first chunk ends the stream as that error.
		{Name: "error_chunk_last", Body: "[" + c1 + `,{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}]`,
			Want: probestest.Want{Class: probes.Transient, Reason: "200:503:UNAVAILABLE"}},
		// A chunk that is not an object: no answer.
		{Name: "bad_chunk", Body: "[" + c1 + `,"x"]`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		{Name: "empty_array", Body: `[]`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		// Google's wrapped errors keep their reading.
		{Name: "wrapped_429", Status: 429, Body: `[{"error":{"code":429,"message":"Resource exhausted. Please try again later.","status":"RESOURCE_EXHAUSTED"}}]`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:RESOURCE_EXHAUSTED"}},
		{Name: "wrapped_error_on_200", Body: `[{"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}]`,
			Want: probestest.Want{Class: probes.Transient, Reason: "200:500:INTERNAL"}},
		{Name: "wrapped_suspension_403", Status: 403, Body: `[{"error":{"code":403,"message":"Permission denied: Consumer 'api_key:x' has been suspended.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"CONSUMER_SUSPENDED"}]}}]`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount, NoCheckCategories: true}},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil, nil) }, probestest.Probe, cases)

	// The array and the SSE stream of the same chunks read alike.
	p := newTestProber(t, "", nil, nil)
	for _, chunks := range [][]string{{c1, c2}, {c1, safety}} {
		arr := p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{}, Body: []byte("[" + chunks[0] + "," + chunks[1] + "]")})
		sse := p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{}, Body: []byte("data: " + chunks[0] + "\n\ndata: " + chunks[1] + "\n\n")})
		if !reflect.DeepEqual(arr, sse) {
			t.Errorf("array %+v, SSE %+v", arr, sse)
		}
	}
}

// TestBOMBeforeJSONBody: a UTF-8 byte order mark before a JSON answer, a
// wrapped error, an array stream or an SSE stream is skipped; the
// response's body stays as received.
func TestBOMBeforeJSONBody(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	p := newTestProber(t, "", nil, nil)
	for _, c := range []struct {
		status int
		body   string
		class  probes.Class
	}{
		{200, `{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}],"modelVersion":"gemini-2.0-flash"}`, probes.BlockedOutput},
		{200, `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}`, probes.BlockedInput},
		{403, `{"error":{"code":403,"message":"Permission denied: Consumer 'api_key:x' has been suspended.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"CONSUMER_SUSPENDED"}]}}`, probes.AbuseBlock},
		{429, `[{"error":{"code":429,"message":"Resource exhausted.","status":"RESOURCE_EXHAUSTED"}}]`, probes.Transient},
		{200, `[{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]},{"candidates":[{"finishReason":"SAFETY"}]}]`, probes.BlockedOutput},
		{200, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]},\"finishReason\":\"STOP\"}]}\n\n", probes.Allowed},
	} {
		plain := p.Classify(nil, &probes.Response{Status: c.status, Header: http.Header{}, Body: []byte(c.body)})
		resp := &probes.Response{Status: c.status, Header: http.Header{}, Body: []byte(bom + c.body)}
		got := p.Classify(nil, resp)
		if got.Class != c.class || !reflect.DeepEqual(got, plain) {
			t.Errorf("%s: with a mark %+v, without %+v, want %s", c.body, got, plain, c.class)
		}
		if string(resp.Body) != bom+c.body {
			t.Errorf("%s: the response's body changed", c.body)
		}
	}
}
