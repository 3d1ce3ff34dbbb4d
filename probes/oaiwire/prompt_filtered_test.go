package oaiwire

import (
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
