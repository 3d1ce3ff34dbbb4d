package oaiwire

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// Review 34284a8: choiceError.UnmarshalJSON accepts ANY non-null JSON
// value, so a complete, normally finished answer whose choice carries a
// falsy or empty "error" member (false, "", {}, 0 — shapes a gateway that
// always emits the member may use for "no error") is read as transient
// choice_error: retried, billed again, and never a verdict (a real
// allowed/refused answer is hidden for as long as the gateway does it).
// Only null is treated as "no error". A failure should need a non-empty
// object (message/code) or a string with text, or a failed finish_reason.
func TestReviewChoiceErrorFalsyValueIsNoFailure(t *testing.T) {
	for _, v := range []string{`false`, `""`, `{}`, `0`, `[]`} {
		body := `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Here is the answer."},"finish_reason":"stop","error":` + v + `}]}`
		resp := &probes.Response{Status: 200, Body: []byte(body)}
		if _, diff := fastSlowDiff(resp); diff != "" {
			t.Fatal(diff)
		}
		if r := ClassifyChat(resp, probestest.FuzzNow); r.Class != probes.Allowed {
			t.Errorf(`"error": %s on a choice that finished "stop" with its content: %s (reason %q), want allowed`, v, r.Class, r.Reason)
		}
	}
}
