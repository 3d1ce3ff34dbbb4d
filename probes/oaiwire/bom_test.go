package oaiwire

import (
	"reflect"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// TestBOMBeforeJSON: every shared reader skips one leading UTF-8 byte
// order mark and reads what it reads without it, and leaves the response
// it was given (the stored body, and its hash) as received.
func TestBOMBeforeJSON(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	now := probestest.FuzzNow
	readers := map[string]func(*probes.Response) probes.Result{
		"chat":       func(r *probes.Response) probes.Result { return ClassifyChat(r, now) },
		"error":      func(r *probes.Response) probes.Result { return ClassifyError(r, now) },
		"moderation": func(r *probes.Response) probes.Result { return ClassifyModeration(r, now, NormalizeModeration) },
	}
	bodies := []struct {
		status int
		body   string
		class  probes.Class
	}{
		{200, `{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"content_filter","message":{"content":null},"content_filter_results":{"violence":{"filtered":true,"severity":"high"}}}]}`, probes.BlockedOutput},
		{200, `{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"content":"Hello."}}]}`, probes.Allowed},
		{400, `{"error":{"message":"filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"violence":{"filtered":true,"severity":"medium"}}}}}`, probes.BlockedInput},
		{200, `{"id":"modr","model":"omni-moderation-latest","results":[{"flagged":true,"categories":{"violence":true,"hate":false},"category_scores":{"violence":0.9,"hate":0.01}}]}`, probes.BlockedInput},
		{200, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", probes.Allowed},
	}
	for name, read := range readers {
		for i, b := range bodies {
			plain := read(&probes.Response{Status: b.status, Body: []byte(b.body)})
			raw := []byte(bom + b.body)
			resp := &probes.Response{Status: b.status, Body: raw}
			got := read(resp)
			if !reflect.DeepEqual(got, plain) {
				t.Errorf("%s body %d: with a mark %+v, without %+v", name, i, got, plain)
			}
			if string(resp.Body) != bom+b.body {
				t.Errorf("%s body %d: the response's body changed: %q", name, i, resp.Body)
			}
		}
	}
	// The readers the adapters call read the blocks above as blocks.
	for i, b := range bodies[:4] {
		read := readers["chat"]
		if i == 3 {
			read = readers["moderation"]
		}
		if r := read(&probes.Response{Status: b.status, Body: []byte(bom + b.body)}); r.Class != b.class {
			t.Errorf("body %d with a mark: %s (%q), want %s", i, r.Class, r.Reason, b.class)
		}
	}
}

// TestBOMBeforeFixtures: every recorded body of the OpenAI-dialect
// adapters, under every status the error tables use, reads the same with
// a byte order mark before it, and the differential invariants (fast path
// and reference) hold on the marked body.
func TestBOMBeforeFixtures(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	now := probestest.FuzzNow
	eachFixture(t, func(path string, body []byte) {
		marked := append([]byte(bom), body...)
		for _, st := range errStatuses {
			for _, tr := range []bool{false, true} {
				resp := &probes.Response{Status: st, Body: marked, Truncated: tr}
				if _, diff := fastSlowDiff(resp); diff != "" {
					t.Fatalf("%s: %s", path, diff)
				}
				if _, diff := errFastSlowDiff(resp); diff != "" {
					t.Fatalf("%s: %s", path, diff)
				}
				plain := &probes.Response{Status: st, Body: body, Truncated: tr}
				if got, want := ClassifyChat(resp, now), ClassifyChat(plain, now); !reflect.DeepEqual(got, want) {
					t.Errorf("%s status %d truncated=%v: chat with a mark %+v, without %+v", path, st, tr, got, want)
				}
				if got, want := ClassifyModeration(resp, now, NormalizeModeration), ClassifyModeration(plain, now, NormalizeModeration); !reflect.DeepEqual(got, want) {
					t.Errorf("%s status %d truncated=%v: moderation with a mark %+v, without %+v", path, st, tr, got, want)
				}
			}
		}
	})
}
