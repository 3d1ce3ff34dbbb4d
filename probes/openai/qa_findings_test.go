package openai

// Findings of a QA pass on the provider adapters (2026-11-30): each test
// failed before its fix.

import (
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// A project key as OpenAI issues them: "sk-proj-" then long alphanumeric runs.
const qaProvKey = "sk-proj-QAprov0123456789abcdefghijABCDEFGHIJ0123456789klmnop"

func qaProvDo(t *testing.T, endpoint string, c probestest.Case) probes.Result {
	t.Helper()
	srv := probestest.NewReplay(t, c)
	tg := probes.Target{Name: "qa-openai", Provider: "openai", Model: "gpt-4o", Endpoint: endpoint, BaseURL: srv.URL + "/v1", APIKey: qaProvKey, MaxTokens: 64}
	if endpoint == EndpointModeration {
		tg.Model = "omni-moderation-latest"
	}
	pr, err := New(tg)
	if err != nil {
		t.Fatal(err)
	}
	_, r := probestest.Do(t, pr, probes.Probe{ID: "qa", Messages: []probes.Message{{Role: "user", Content: "hello"}}})
	return r
}

// An error message that echoes the bearer key (a gateway dumping the
// request it forwarded, e.g. LiteLLM/proxy debug errors) near the 1 KiB
// Message bound: oaiwire.finish cuts Message to wire.MaxMessage BEFORE
// oaiwire.Redact runs, so the cut prefix of the key no longer matches the
// whole key nor any whole alphanumeric run of it and is kept verbatim in
// Result.Message (stored in the observation). The same holds for azure,
// mistral, openai_compatible and sim (all oaiwire.Redact after finish).
func TestQAProvEchoedKeyNotCutBeforeRedaction(t *testing.T) {
	for _, pad := range []int{960, 971, 980} {
		msg := strings.Repeat("x", pad) + " Authorization: Bearer " + qaProvKey + " (forwarded)"
		r := qaProvDo(t, EndpointChat, probestest.Case{Status: 401, Body: `{"error":{"message":"` + msg + `","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`})
		if r.Class != probes.ClientError {
			t.Fatalf("pad %d: class %s, want client_error", pad, r.Class)
		}
		for i := 0; i+12 <= len(qaProvKey); i++ {
			if strings.Contains(r.Message, qaProvKey[i:i+12]) {
				t.Fatalf("pad %d: Result.Message keeps a 12-byte piece of the API key (%q); tail %q", pad, qaProvKey[i:i+12], r.Message[max(0, len(r.Message)-60):])
			}
		}
	}
}

// Doc mismatch (cosmetic): the package doc and docs/PROVIDERS.md say a moderation
// result "with neither flagged nor categories" is transient
// "malformed_response"; it is reported as "no_categories".
func TestQAProvModerationEmptyResultReason(t *testing.T) {
	r := qaProvDo(t, EndpointModeration, probestest.Case{Body: `{"id":"modr-1","model":"omni-moderation-latest","results":[{}]}`})
	if r.Class != probes.Transient || r.Reason != "malformed_response" {
		t.Fatalf("got %s reason %q, want transient malformed_response (docs/PROVIDERS.md, openai)", r.Class, r.Reason)
	}
}
