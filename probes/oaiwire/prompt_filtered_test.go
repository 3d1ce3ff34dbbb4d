package oaiwire

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// A 2xx answer with no choices whose prompt filter results say the prompt
// was filtered is the input filter's block, not a missing answer: it is
// blocked_input with the fired categories and never retried (a retry
// would send the blocked prompt again). Without a fired prompt filter, no
// choices stays transient "no_choices". Both readers agree.
func TestNoChoicesWithFilteredPrompt(t *testing.T) {
	const filtered = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[],` +
		`"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{` +
		`"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},` +
		`"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"high"}}}]}`
	const notFiltered = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[],` +
		`"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{` +
		`"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"low"}}}]}`
	for _, c := range []struct {
		name, body string
		class      probes.Class
		stage      probes.Stage
		reason     string
		cats       []string
	}{
		{"filtered", filtered, probes.BlockedInput, probes.StageInput, "prompt_filter_no_choices", []string{probes.CatViolence}},
		{"not filtered", notFiltered, probes.Transient, probes.StageNone, "no_choices", nil},
	} {
		resp := &probes.Response{Status: 200, Body: []byte(c.body)}
		r := ClassifyChat(resp, probestest.FuzzNow)
		if r.Class != c.class || r.Stage != c.stage || r.Reason != c.reason || !reflect.DeepEqual(r.Categories, c.cats) {
			t.Errorf("%s: got %s/%s reason %q categories %v, want %s/%s %q %v", c.name, r.Class, r.Stage, r.Reason, r.Categories, c.class, c.stage, c.reason, c.cats)
		}
		if c.class == probes.BlockedInput && r.Class.Retryable() {
			t.Errorf("%s: a filtered prompt's verdict is retryable", c.name)
		}
		if accepted, diff := fastSlowDiff(resp); diff != "" {
			t.Errorf("%s: %s", c.name, diff)
		} else if !accepted {
			t.Errorf("%s: the fast reader declined the body", c.name)
		}
	}
}

// The same answer streamed (a gateway that streams though no stream was
// asked for: one chunk with the fired prompt filter and no choices, then
// "[DONE]") is the same input block, not a transient "incomplete_stream"
// that would be retried, sending the blocked prompt again. A stream cut
// before "[DONE]" may still have had choices to send: it stays
// incomplete; so does a complete stream with no choices and no fired
// prompt filter.
func TestStreamNoChoicesWithFilteredPrompt(t *testing.T) {
	const chunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],` +
		`"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{` +
		`"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"high"}}}]}`
	const quiet = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],` +
		`"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"violence":{"filtered":false,"severity":"low"}}}]}`
	for _, c := range []struct {
		name, body string
		class      probes.Class
		reason     string
		cats       []string
	}{
		{"filtered, done", "data: " + chunk + "\n\ndata: [DONE]\n\n", probes.BlockedInput, "prompt_filter_no_choices", []string{probes.CatViolence}},
		{"filtered, cut", "data: " + chunk + "\n\n", probes.Transient, "incomplete_stream", nil},
		{"not filtered, done", "data: " + quiet + "\n\ndata: [DONE]\n\n", probes.Transient, "incomplete_stream", nil},
	} {
		resp := &probes.Response{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: []byte(c.body)}
		r := ClassifyChat(resp, probestest.FuzzNow)
		if r.Class != c.class || r.Reason != c.reason || !reflect.DeepEqual(r.Categories, c.cats) {
			t.Errorf("%s: got %s/%s reason %q categories %v, want %s %q %v", c.name, r.Class, r.Stage, r.Reason, r.Categories, c.class, c.reason, c.cats)
		}
		// FuzzClassify refuses a verdict read from a body that is not
		// provider JSON unless its AllowVerdict says the reader may.
		if r.Class.IsVerdict() && !chatVerdict(resp, r) {
			t.Errorf("%s: FuzzClassify's chatVerdict does not allow the verdict %s %q of this stream", c.name, r.Class, r.Reason)
		}
	}
}
