package oaiwire

import (
	"bytes"
	"slices"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// TestProviderWordingInputBlocks pins the input blocks OpenAI-compatible
// providers state only in words (xAI's safety check, DeepSeek's "Content
// Exists Risk"), their anchoring, and that account enforcement and other
// statuses keep their reading.
func TestProviderWordingInputBlocks(t *testing.T) {
	const xai = `{"code":"The caller does not have permission to execute the specified operation","error":"Content violates usage guidelines. Team: t-1, API key ID: k-1, Model: grok-4-0709, Failed check: SAFETY_CHECK_TYPE_%s"}`
	x := func(check string) string { return string(bytes.ReplaceAll([]byte(xai), []byte("%s"), []byte(check))) }
	cases := []struct {
		name    string
		status  int
		body    string
		class   probes.Class
		reason  string
		cats    []string
		unknown string
	}{
		{"xai_bio", 403, x("BIO"), probes.BlockedInput, "safety_check", []string{probes.CatWeapons}, ""},
		{"xai_csam", 403, x("CSAM"), probes.BlockedInput, "safety_check", []string{probes.CatSexualMinors}, ""},
		{"xai_new_check", 403, x("NEW_THING"), probes.BlockedInput, "safety_check", []string{probes.CatOther}, "category:SAFETY_CHECK_TYPE_NEW_THING"},
		{"xai_no_check_named", 403, `{"code":"The caller does not have permission to execute the specified operation","error":"Content violates usage guidelines."}`, probes.BlockedInput, "safety_check", nil, ""},
		{"xai_via_gateway_400", 400, `{"error":{"message":"litellm.BadRequestError: XaiException - Content violates usage guidelines. Failed check: SAFETY_CHECK_TYPE_BIO","type":null,"code":"400"}}`, probes.BlockedInput, "safety_check", []string{probes.CatWeapons}, ""},
		// Quoted inside another message, it is not xAI's block.
		{"xai_words_quoted", 400, `{"error":{"message":"Invalid value for 'stop': 'Content violates usage guidelines'","type":"invalid_request_error","code":null}}`, probes.ClientError, "", nil, ""},
		// Not a rejection of the request's content under other statuses.
		{"xai_words_404", 404, x("BIO"), probes.ClientError, "", nil, ""},
		{"xai_words_503", 503, x("BIO"), probes.Transient, "", nil, ""},
		// Account enforcement in the same body still wins.
		{"xai_with_suspension", 403, `{"error":"Content violates usage guidelines. Your account has been suspended."}`, probes.AbuseBlock, "", nil, ""},

		{"deepseek", 400, `{"error":{"message":"Content Exists Risk","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`, probes.BlockedInput, "content_exists_risk", nil, ""},
		{"deepseek_detail", 400, `{"detail":"Content Exists Risk"}`, probes.BlockedInput, "content_exists_risk", nil, ""},
		{"deepseek_top_level", 400, `{"code":"invalid_request_error","message":"Content Exists Risk","param":null,"type":"invalid_request_error"}`, probes.BlockedInput, "content_exists_risk", nil, ""},
		// The whole message, not words in a longer one.
		{"deepseek_words_in_sentence", 400, `{"error":{"message":"Content Exists Risk assessment service unreachable","type":"invalid_request_error"}}`, probes.ClientError, "", nil, ""},
		{"deepseek_429", 429, `{"error":{"message":"Content Exists Risk","type":"invalid_request_error"}}`, probes.Transient, "", nil, ""},

		// OpenAI's safety invalid prompt, forwarded without its code.
		{"openai_safety_forwarded", 400, `{"error":{"message":"litellm.BadRequestError: OpenAIException - Invalid prompt: we've limited access to this content for safety reasons. This type of information may be used to benefit or to harm people.","type":null,"param":null,"code":"400"}}`, probes.BlockedInput, "invalid_prompt", nil, ""},
		// Groq's account restriction.
		{"groq_restricted", 400, `{"error":{"message":"Organization has been restricted. Please reach out to support if you believe this was in error.","type":"invalid_request_error","param":"","code":"organization_restricted"}}`, probes.AbuseBlock, "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := &probes.Response{Status: c.status, Body: []byte(c.body)}
			if _, diff := errFastSlowDiff(resp); diff != "" {
				t.Fatal(diff)
			}
			r := ClassifyError(resp, probestest.FuzzNow)
			if r.Class != c.class {
				t.Fatalf("class %s (reason %q), want %s", r.Class, r.Reason, c.class)
			}
			if c.reason != "" && r.Reason != c.reason {
				t.Errorf("reason %q, want %q", r.Reason, c.reason)
			}
			if r.Class == probes.BlockedInput && r.Stage != probes.StageInput {
				t.Errorf("stage %q", r.Stage)
			}
			if r.Class == probes.AbuseBlock && r.Stage != probes.StageAccount {
				t.Errorf("stage %q", r.Stage)
			}
			if !slices.Equal(r.Categories, c.cats) {
				t.Errorf("categories %v, want %v", r.Categories, c.cats)
			}
			if c.unknown != "" && !slices.Contains(r.Unknown, c.unknown) {
				t.Errorf("unknown %v, want %q in it", r.Unknown, c.unknown)
			}
			// A 2xx chat answer carrying only such an error reads alike
			// for the blocks (the error rules apply to 2xx error bodies).
			if c.class == probes.BlockedInput && c.status == 400 {
				if got := ClassifyChat(&probes.Response{Status: 200, Body: []byte(c.body)}, probestest.FuzzNow); got.Class != probes.BlockedInput {
					t.Errorf("as a 200: %s (%q)", got.Class, got.Reason)
				}
			}
		})
	}
}
