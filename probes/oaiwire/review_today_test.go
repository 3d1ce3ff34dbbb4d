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

// A custom_blocklists array keeps its fired entry when another element is
// not an entry; an array of other objects (citations, say) under another
// key is no blocklist signal.
func TestBlocklistArrayShapes(t *testing.T) {
	var r probes.Result
	readFilters(filterSet{"custom_blocklists": []byte(`[{"filtered":true,"id":"names"},"x",7]`)}, &r)
	if len(r.Signals) != 1 || !r.Signals[0].Fired || r.Signals[0].Category != probes.CatOther {
		t.Errorf("mixed array: signals %+v", r.Signals)
	}
	r = probes.Result{}
	readFilters(filterSet{"citations": []byte(`[{"url":"https://example.com","license":"MIT"}]`)}, &r)
	if len(r.Signals) != 0 || len(r.Unknown) != 1 || r.Unknown[0] != "filter_key:citations" {
		t.Errorf("an array of other objects: signals %+v, unknown %v", r.Signals, r.Unknown)
	}
	r = probes.Result{}
	readFilters(filterSet{"custom_blocklists": []byte(`[]`)}, &r)
	if len(r.Signals) != 1 || r.Signals[0].Fired {
		t.Errorf("an empty blocklist array: signals %+v", r.Signals)
	}
}
