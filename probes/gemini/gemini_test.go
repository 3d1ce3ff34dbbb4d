package gemini

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

const testKey = "AIzaSyTESTSECRETKEY0123456789abcdefgh"

var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var vertexOpts = map[string]string{OptAPI: APIVertex, OptProject: "test-project", OptLocation: "us-central1"}

func newTestProber(t *testing.T, base string, opts map[string]string, seed *int64) *Prober {
	t.Helper()
	pr, err := New(probes.Target{
		Name: "gemini-test", Provider: "gemini", Model: "gemini-2.0-flash", Endpoint: "chat",
		BaseURL: base, APIKey: testKey, MaxTokens: 64, Seed: seed, Options: opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := pr.(*Prober)
	p.now = func() time.Time { return fixedNow }
	return p
}

func userOnly() probes.Probe {
	return probes.Probe{ID: "user-only", Messages: []probes.Message{{Role: "user", Content: "Is <b>\"5 > 3\"</b> & 'true'? こんにちは"}}}
}

// Negligible ratings shared by synthesized bodies.
const negligible = `[{"category":"HARM_CATEGORY_HATE_SPEECH","probability":"NEGLIGIBLE"},{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"NEGLIGIBLE"},{"category":"HARM_CATEGORY_HARASSMENT","probability":"NEGLIGIBLE"},{"category":"HARM_CATEGORY_SEXUALLY_EXPLICIT","probability":"NEGLIGIBLE"}]`

func TestConformanceGeminiAPI(t *testing.T) {
	cases := []probestest.Case{
		// Real fixtures (testdata/*.meta.yaml give status and source).
		{Name: "normal", Fixture: "developer_api_200_normal.json",
			Want: probestest.Want{Class: probes.Allowed, Reason: "STOP", ModelID: "gemini-2.0-flash", ModelFP: "gemini-2.0-flash",
				TokensIn: 7, TokensOut: 22, Severities: map[string]string{"HARM_CATEGORY_HATE_SPEECH": "NEGLIGIBLE", "HARM_CATEGORY_DANGEROUS_CONTENT": "NEGLIGIBLE"}}},
		{Name: "finish_safety_no_flagged_rating", Fixture: "developer_api_200_finish_reason_safety.json",
			// All ratings NEGLIGIBLE, none blocked: a block with no category.
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SAFETY", Categories: nil,
				ModelID: "gemini-2.0-flash", ModelFP: "gemini-2.0-flash", TokensIn: 7, TokensOut: 20}},
		{Name: "finish_other_with_message", Fixture: "developer_api_200_finish_reason_other_with_message.json",
			// "Model failed to generate content due to internal error.": no
			// text and no block, so not a verdict.
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:OTHER"}},
		{Name: "prompt_feedback_message_only", Fixture: "developer_api_200_prompt_feedback_message_only.json",
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "block_reason_missing",
				ModelID: "gemini-2.0-flash", Unknown: []string{"block_reason:<none>"}}},
		{Name: "400_api_key_invalid", Fixture: "developer_api_400_invalid_argument_api_key.json", Status: 400,
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:INVALID_ARGUMENT:API_KEY_INVALID"}},
		{Name: "429_quota", Fixture: "developer_api_429_resource_exhausted_observed.json", Status: 429,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:RESOURCE_EXHAUSTED"}},
		// The variant gemini-cli logged (google-gemini/gemini-cli#8437,
		// quoted in the fixture's notes): a QuotaFailure on the free
		// tier's per-day quota, which holds until the day resets whatever
		// RetryInfo says; and a per-minute one, which a retry outlasts.
		{Name: "429_quota_per_day", Status: 429,
			Body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[` +
				`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-pro"},"quotaValue":"100"}]},` +
				`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "429:RESOURCE_EXHAUSTED:quota_exhausted"}},
		{Name: "429_quota_per_minute", Status: 429,
			Body: `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[` +
				`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"5"}]},` +
				`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:RESOURCE_EXHAUSTED", RetryAfter: 37 * time.Second}},
		{Name: "503_unavailable_retry_after", Fixture: "developer_api_503_unavailable_observed.json", Status: 503,
			Header: map[string]string{"Retry-After": "30"}, // synthesized: the observed report shows no headers
			Want:   probestest.Want{Class: probes.Transient, Reason: "503:UNAVAILABLE", RetryAfter: 30 * time.Second}},
		// A complete SSE stream reads like the answer it merges into.
		{Name: "sse_prompt_blocked", Fixture: "developer_api_stream_prompt_blocked_safety.sse.txt", Header: map[string]string{"Content-Type": "text/event-stream"},
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "SAFETY",
				Categories: []string{probes.CatHate}, Raw: []string{"prompt.HARM_CATEGORY_HATE_SPEECH"}}},
		{Name: "sse_recitation", Fixture: "developer_api_stream_finish_reason_recitation.sse.txt", Header: map[string]string{"Content-Type": "text/event-stream"},
			Want: probestest.Want{Class: probes.Allowed, Reason: "RECITATION", ModelID: "gemini-2.0-flash", TokensIn: 9, TokensOut: 261}},

		// Synthesized from the docs and enum lists (no fixture exists).
		{Name: "block_prohibited_content",
			// Body as quoted in vercel/ai#4235 (observed).
			Body: `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":12559,"totalTokenCount":12559},"modelVersion":"gemini-1.5-flash-002"}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "PROHIBITED_CONTENT",
				Categories: []string{probes.CatOther}, Raw: []string{"blockReason:PROHIBITED_CONTENT"},
				ModelID: "gemini-1.5-flash-002", ModelFP: "gemini-1.5-flash-002", TokensIn: 12559}},
		{Name: "block_other", Body: `{"promptFeedback":{"blockReason":"OTHER","safetyRatings":` + negligible + `},"modelVersion":"gemini-2.0-flash"}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "OTHER",
				Categories: []string{probes.CatOther}, Raw: []string{"blockReason:OTHER"},
				Severities: map[string]string{"prompt.HARM_CATEGORY_HATE_SPEECH": "NEGLIGIBLE"}}},
		{Name: "block_blocklist", Body: `{"promptFeedback":{"blockReason":"BLOCKLIST","blockReasonMessage":"Blocked by a terminology list."}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "BLOCKLIST", Categories: []string{probes.CatOther}}},
		{Name: "block_safety_flagged_rating",
			Body: `{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"MEDIUM","blocked":true},{"category":"HARM_CATEGORY_HATE_SPEECH","probability":"HIGH"}]}}`,
			// blocked:true wins over the probability fallback.
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "SAFETY",
				Categories: []string{probes.CatHarassment}, Raw: []string{"prompt.HARM_CATEGORY_HARASSMENT"}}},
		{Name: "block_unknown_reason", Body: `{"promptFeedback":{"blockReason":"FAKE_NEW_BLOCK_REASON"}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "FAKE_NEW_BLOCK_REASON",
				Categories: []string{probes.CatOther}, Unknown: []string{"block_reason:FAKE_NEW_BLOCK_REASON"}}},
		{Name: "finish_prohibited_content_no_ratings",
			Body: `{"candidates":[{"finishReason":"PROHIBITED_CONTENT"}],"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"resp-pc"}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "PROHIBITED_CONTENT",
				Categories: []string{probes.CatOther}, Raw: []string{"finishReason:PROHIBITED_CONTENT"}, RequestID: "resp-pc", ModelFP: "gemini-2.5-flash"}},
		{Name: "finish_spii", Body: `{"candidates":[{"finishReason":"SPII","safetyRatings":` + negligible + `}],"modelVersion":"gemini-2.0-flash"}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SPII",
				Categories: []string{probes.CatPrivacy}, Raw: []string{"finishReason:SPII"}}},
		{Name: "finish_blocklist", Body: `{"candidates":[{"content":{"parts":[{"text":"partial"}],"role":"model"},"finishReason":"BLOCKLIST"}]}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "BLOCKLIST", Categories: []string{probes.CatOther}}},
		{Name: "finish_image_safety_flagged",
			Body: `{"candidates":[{"finishReason":"IMAGE_SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_IMAGE_SEXUALLY_EXPLICIT","probability":"HIGH","blocked":true}]}]}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "IMAGE_SAFETY",
				Categories: []string{probes.CatSexual}, Raw: []string{"HARM_CATEGORY_IMAGE_SEXUALLY_EXPLICIT"}}},
		{Name: "finish_safety_medium_fallback",
			Body: `{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"MEDIUM"},{"category":"HARM_CATEGORY_HARASSMENT","probability":"LOW"}]}]}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SAFETY",
				Categories: []string{probes.CatIllicit}, Raw: []string{"HARM_CATEGORY_DANGEROUS_CONTENT"}}},
		{Name: "recitation_not_a_block",
			// The non-stream form of the final chunk of the recitation SSE fixture.
			Body: `{"candidates":[{"finishReason":"RECITATION","citationMetadata":{"citationSources":[{"startIndex":793,"endIndex":1341,"uri":"https://www.google.com/"}]}}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":261,"totalTokenCount":270},"modelVersion":"gemini-2.0-flash"}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "RECITATION", TokensIn: 9, TokensOut: 261}},
		{Name: "finish_language", Body: `{"candidates":[{"finishReason":"LANGUAGE"}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:LANGUAGE"}},
		{Name: "finish_malformed_function_call", Body: `{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL"}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:MALFORMED_FUNCTION_CALL"}},
		{Name: "max_tokens_with_thoughts",
			Body: `{"candidates":[{"content":{"parts":[{"text":"thinking…","thought":true},{"text":"A long answer"}],"role":"model"},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":40,"thoughtsTokenCount":24},"modelVersion":"gemini-2.5-flash"}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "MAX_TOKENS", TokensIn: 5, TokensOut: 64}},
		{Name: "unknown_finish_reason_and_fields",
			Body: `{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"NEW_FANCY_REASON","sparkle":1,"safetyRatings":[{"category":"HARM_CATEGORY_NEW_THING","probability":"VERY_HIGH","overwrittenThreshold":"BLOCK_NONE"}]}],"modelStatus":{"stage":"GA"},"modelVersion":"gemini-3-flash"}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "NEW_FANCY_REASON", ModelID: "gemini-3-flash",
				Severities: map[string]string{"HARM_CATEGORY_NEW_THING": "VERY_HIGH"},
				Unknown: []string{"finish_reason:NEW_FANCY_REASON", "field:modelStatus", "candidate.sparkle", "category:HARM_CATEGORY_NEW_THING",
					"probability:VERY_HIGH", "rating.overwrittenThreshold"}}},
		{Name: "plain_text_refusal", Header: map[string]string{"x-goog-request-id": "goog-req-1"},
			Body: `{"candidates":[{"content":{"parts":[{"text":"I'm sorry, but I can't help with that."}],"role":"model"},"finishReason":"STOP","safetyRatings":` + negligible + `}],"responseId":"resp-1","modelVersion":"gemini-2.0-flash"}`,
			Want: probestest.Want{Class: probes.ModelRefusal, Stage: probes.StageOutput, Reason: "refusal_text", Heuristic: true, RequestID: "goog-req-1"}},
		{Name: "response_id_fallback", Body: `{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"finishReason":"STOP"}],"responseId":"resp-xyz","modelVersion":"gemini-2.0-flash"}`,
			Want: probestest.Want{Class: probes.Allowed, RequestID: "resp-xyz"}},
		{Name: "no_candidates_no_feedback", Body: `{"usageMetadata":{"promptTokenCount":3},"modelVersion":"gemini-2.0-flash"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "no_candidates"}},
		{Name: "empty_candidate", Body: `{"candidates":[{}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate"}},
		{Name: "garbage_200", Body: "<!DOCTYPE html><html>oops",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		{Name: "cut_json_200", Body: `{"candidates":[{"content":{"parts":[{"te`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		{Name: "null_200", Body: `null`, Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		{Name: "429_retry_info", Status: 429,
			Body: `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:RESOURCE_EXHAUSTED", RetryAfter: 37 * time.Second}},
		{Name: "429_array_wrapped", Status: 429,
			Body: `[{"error":{"code":429,"message":"Resource exhausted. Please try again later.","status":"RESOURCE_EXHAUSTED"}}]`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:RESOURCE_EXHAUSTED"}},
		{Name: "500_internal", Status: 500,
			Body: `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "500:INTERNAL"}},
		{Name: "400_failed_precondition", Status: 400,
			Body: `{"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION"}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:FAILED_PRECONDITION"}},
		{Name: "404_model_not_found", Status: 404,
			Body: `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta.","status":"NOT_FOUND"}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "404:NOT_FOUND"}},
		{Name: "403_consumer_suspended_abuse", Status: 403,
			// Shape of the body quoted in google/generative-ai-docs#356, key replaced.
			Body: `{"error":{"code":403,"message":"Permission denied: Consumer 'api_key:` + testKey + `' has been suspended.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"CONSUMER_SUSPENDED","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com","consumer":"projects/578829824020"}}]}}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount, Reason: "403:PERMISSION_DENIED:CONSUMER_SUSPENDED"}},
		{Name: "403_project_denied_abuse", Status: 403,
			Body: `{"error":{"code":403,"message":"Your project has been denied access. Please contact support.","status":"PERMISSION_DENIED"}}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount}},
		{Name: "unknown_error_status", Status: 400,
			Body: `{"error":{"code":400,"message":"?","status":"BRAND_NEW_STATUS"}}`,
			Want: probestest.Want{Class: probes.ClientError, Unknown: []string{"error_status:BRAND_NEW_STATUS"}}},
		{Name: "502_html", Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>Bad Gateway</html>",
			Want: probestest.Want{Class: probes.Transient, Reason: "502"}},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil, nil) }, probestest.Probe, cases)
}

func TestConformanceVertex(t *testing.T) {
	cases := []probestest.Case{
		{Name: "normal_with_severity", Fixture: "vertex_200_normal_with_severity_scores.json",
			Want: probestest.Want{Class: probes.Allowed, Reason: "STOP", TokensIn: 11, TokensOut: 592,
				Scores: map[string]float64{
					"HARM_CATEGORY_HATE_SPEECH": 0.062331032, "HARM_CATEGORY_HATE_SPEECH:severity": 0.052134257,
					"HARM_CATEGORY_SEXUALLY_EXPLICIT": 0.39030153, "HARM_CATEGORY_SEXUALLY_EXPLICIT:severity": 0.10650458,
				},
				Severities: map[string]string{"HARM_CATEGORY_HATE_SPEECH": "NEGLIGIBLE", "HARM_CATEGORY_HATE_SPEECH:severity": "HARM_SEVERITY_NEGLIGIBLE"}}},
		{Name: "finish_safety_blocked_rating", Fixture: "vertex_200_finish_reason_safety_blocked_rating.json",
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SAFETY",
				Categories: []string{probes.CatHarassment}, Raw: []string{"HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_HARASSMENT:severity"},
				Scores:     map[string]float64{"HARM_CATEGORY_HARASSMENT": 0.61328125, "HARM_CATEGORY_HARASSMENT:severity": 0.31835938},
				Severities: map[string]string{"HARM_CATEGORY_HARASSMENT": "LOW", "HARM_CATEGORY_HARASSMENT:severity": "HARM_SEVERITY_LOW"},
				ModelID:    "gemini-1.5-flash", ModelFP: "gemini-1.5-flash", TokensIn: 8}},
		{Name: "finish_safety_no_content", Fixture: "vertex_200_finish_reason_safety_no_content.json",
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SAFETY",
				Categories: []string{probes.CatHarassment}, Raw: []string{"HARM_CATEGORY_HARASSMENT"}, ModelFP: "gemini-1.5-flash"}},
		{Name: "prompt_blocked_safety", Fixture: "vertex_200_prompt_blocked_safety.json",
			// No rating flagged blocked: the HIGH hate-speech rating is the cause.
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "SAFETY",
				Categories: []string{probes.CatHate}, Raw: []string{"prompt.HARM_CATEGORY_HATE_SPEECH"},
				Severities: map[string]string{"prompt.HARM_CATEGORY_HATE_SPEECH": "HIGH", "prompt.HARM_CATEGORY_HARASSMENT": "NEGLIGIBLE"}}},
		{Name: "prompt_blocked_safety_with_message", Fixture: "vertex_200_prompt_blocked_safety_with_message.json",
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "SAFETY", Categories: []string{probes.CatHate}}},
		{Name: "400_invalid_argument", Fixture: "vertex_400_invalid_argument.json", Status: 400,
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:INVALID_ARGUMENT"}},
		{Name: "403_iam_permission_denied", Fixture: "vertex_403_permission_denied.json", Status: 403,
			Want: probestest.Want{Class: probes.ClientError, Reason: "403:PERMISSION_DENIED:IAM_PERMISSION_DENIED"}},
		// Its ErrorInfo says quota_limit_value "0": no request under that
		// quota can succeed, so waiting 12s and retrying would not help.
		{Name: "429_quota_limit_zero", Fixture: "vertex_429_resource_exhausted.json", Status: 429, Header: map[string]string{"Retry-After": "12"},
			Want: probestest.Want{Class: probes.ClientError, Reason: "429:RESOURCE_EXHAUSTED:RATE_LIMIT_EXCEEDED:quota_exhausted"}},
		// The same error on a per-minute quota that has room is a rate
		// limit: transient, with the wait asked for.
		{Name: "429_rate_limit", Status: 429, Header: map[string]string{"Retry-After": "12"},
			Body: `{"error":{"code":429,"message":"Quota exceeded for quota metric 'Generate Content API requests per minute'","status":"RESOURCE_EXHAUSTED",` +
				`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","metadata":{"quota_limit_value":"60","quota_limit":"GenerateContentRequestsPerMinutePerProjectPerRegion"}}]}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:RESOURCE_EXHAUSTED:RATE_LIMIT_EXCEEDED", RetryAfter: 12 * time.Second}},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, vertexOpts, nil) }, probestest.Probe, cases)
}

func TestClassifyDetails(t *testing.T) {
	p := newTestProber(t, "", nil, nil)
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	read := func(status int, body string) probes.Result {
		return p.Classify(req, &probes.Response{Status: status, Header: http.Header{}, Body: []byte(body)})
	}
	// Transport errors and cut bodies are transient.
	got := p.Classify(req, &probes.Response{Err: errors.New("context deadline exceeded")})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "timeout"})
	got = p.Classify(req, &probes.Response{Status: 200, Body: []byte(`{"candidates":[`), Truncated: true})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "truncated_response"})

	// blockReasonMessage and finishMessage are kept.
	if got := read(200, `{"promptFeedback":{"blockReason":"SAFETY","blockReasonMessage":"Reasons"}}`); got.Message != "Reasons" {
		t.Errorf("block message = %q", got.Message)
	}
	if got := read(200, `{"candidates":[{"finishReason":"OTHER","finishMessage":"Model failed"}]}`); got.Message != "Model failed" {
		t.Errorf("finish message = %q", got.Message)
	}
	// RECITATION records no Unknown: it is a documented, non-policy reason.
	got = read(200, `{"candidates":[{"finishReason":"RECITATION"}],"modelVersion":"m"}`)
	if got.Class != probes.Allowed || got.Reason != "RECITATION" || len(got.Unknown) != 0 || len(got.Categories) != 0 {
		t.Errorf("recitation = %+v", got)
	}
	// Prompt ratings on an answered request are signals, never categories.
	got = read(200, `{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],"promptFeedback":{"safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"LOW"}]}}`)
	if got.Class != probes.Allowed || len(got.Categories) != 0 || len(got.Signals) != 1 || got.Signals[0].Raw != "prompt.HARM_CATEGORY_HARASSMENT" {
		t.Errorf("allowed with prompt ratings = %+v", got)
	}
	// Keys quoted by Google's suspension errors are redacted.
	got = read(403, `{"error":{"code":403,"message":"Permission denied: Consumer 'api_key:AIzaSyOTHERKEYabcdefghijklmnop' has been suspended. `+testKey+`","status":"PERMISSION_DENIED"}}`)
	if got.Class != probes.AbuseBlock || strings.Contains(got.Message, "AIza") || strings.Contains(got.Message, "TESTSECRET") {
		t.Errorf("suspension = %+v", got)
	}
	// An error envelope in a 200 is not an answer.
	got = read(200, `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`)
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "200:503:UNAVAILABLE"})
	// Every signal's category is in the vocabulary.
	got = read(200, `{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_JAILBREAK","probability":"HIGH","blocked":true},{"category":"HARM_CATEGORY_CIVIC_INTEGRITY","probability":"LOW"},{"category":"X","probability":"LOW"}]}]}`)
	for _, s := range got.Signals {
		if !probes.ValidCategory(s.Category) {
			t.Errorf("signal category %q not in vocabulary", s.Category)
		}
	}
	if strings.Join(got.Categories, ",") != probes.CatJailbreak {
		t.Errorf("categories = %v", got.Categories)
	}
}

func TestRequestOnTheWire(t *testing.T) {
	t.Run("gemini", func(t *testing.T) {
		srv := probestest.NewReplay(t, probestest.Case{Fixture: "developer_api_200_normal.json"})
		p := newTestProber(t, srv.URL+"/", nil, nil)
		req, res := probestest.Do(t, p, probestest.Probe)
		if res.Class != probes.Allowed {
			t.Fatalf("class %s", res.Class)
		}
		last := srv.Last()
		if last.Method != "POST" || last.Path != "/v1beta/models/gemini-2.0-flash:generateContent" {
			t.Errorf("sent %s %s", last.Method, last.Path)
		}
		if strings.Contains(last.Path, "?") || strings.Contains(last.Path, "key") {
			t.Errorf("query string on the wire: %s", last.Path)
		}
		if got := last.Header.Get("x-goog-api-key"); got != testKey {
			t.Errorf("x-goog-api-key = %q", got)
		}
		if last.Header.Get("Authorization") != "" {
			t.Errorf("Authorization header sent to the Gemini API")
		}
		if !bytes.Equal(last.Body, req.Body) {
			t.Errorf("body sent differs from rendered body")
		}
	})
	t.Run("vertex", func(t *testing.T) {
		srv := probestest.NewReplay(t, probestest.Case{Fixture: "vertex_200_normal_with_severity_scores.json"})
		p := newTestProber(t, srv.URL, vertexOpts, nil)
		_, res := probestest.Do(t, p, probestest.Probe)
		if res.Class != probes.Allowed {
			t.Fatalf("class %s", res.Class)
		}
		last := srv.Last()
		if last.Path != "/v1/projects/test-project/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent" {
			t.Errorf("path %s", last.Path)
		}
		if got := last.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization = %q", got)
		}
		if last.Header.Get("x-goog-api-key") != "" {
			t.Errorf("x-goog-api-key sent to Vertex")
		}
	})
}

func TestDefaultBaseURLs(t *testing.T) {
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{nil, "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent"},
		{vertexOpts, "https://us-central1-aiplatform.googleapis.com/v1/projects/test-project/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent"},
		{map[string]string{OptAPI: APIVertex, OptProject: "p", OptLocation: "global"}, "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google/models/gemini-2.0-flash:generateContent"},
	} {
		req, err := newTestProber(t, "", c.opts, nil).Render(probestest.Probe)
		if err != nil {
			t.Fatal(err)
		}
		if req.URL != c.want {
			t.Errorf("url = %s, want %s", req.URL, c.want)
		}
	}
	// A "models/" prefix on the model name is accepted.
	pr, err := New(probes.Target{Provider: "gemini", Model: "models/gemini-2.0-flash", MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := pr.Render(userOnly())
	if req.Path != "/v1beta/models/gemini-2.0-flash:generateContent" {
		t.Errorf("path %s", req.Path)
	}
}

func TestKeyNeverRendered(t *testing.T) {
	for _, opts := range []map[string]string{nil, vertexOpts} {
		p := newTestProber(t, "", opts, nil)
		for _, pr := range []probes.Probe{probestest.Probe, userOnly()} {
			req, err := p.Render(pr)
			if err != nil {
				t.Fatal(err)
			}
			dump := string(probestest.Dump(req)) + req.URL
			for k, v := range req.Header {
				dump += k + strings.Join(v, "")
			}
			if strings.Contains(dump, testKey) || strings.Contains(dump, "TESTSECRET") || strings.Contains(req.URL, "key=") {
				t.Fatalf("key appears in rendered request:\n%s", dump)
			}
		}
		if _, err := p.Render(probes.Probe{ID: "bad", Messages: []probes.Message{{Role: "tool", Content: testKey}}}); err == nil || strings.Contains(err.Error(), testKey) {
			t.Fatalf("render error = %v", err)
		}
	}
}

func TestRenderBody(t *testing.T) {
	seed := int64(42)
	p := newTestProber(t, "", nil, &seed)
	conv := probes.Probe{ID: "conv", Messages: []probes.Message{
		{Role: "system", Content: "S1"}, {Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}, {Role: "system", Content: "S2"}, {Role: "user", Content: "q2"},
	}}
	req, err := p.Render(conv)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"a"}]},{"role":"user","parts":[{"text":"q2"}]}],"systemInstruction":{"parts":[{"text":"S1"},{"text":"S2"}]},"generationConfig":{"temperature":0,"maxOutputTokens":64,"seed":42}}`
	if string(req.Body) != want {
		t.Errorf("body\n got %s\nwant %s", req.Body, want)
	}
	req, _ = newTestProber(t, "", nil, nil).Render(userOnly())
	if strings.Contains(string(req.Body), "systemInstruction") || strings.Contains(string(req.Body), "seed") {
		t.Errorf("optional fields present: %s", req.Body)
	}
	if _, err := p.Render(probes.Probe{ID: "sys-only", Messages: []probes.Message{{Role: "system", Content: "A"}}}); err == nil {
		t.Errorf("want an error for a probe with no user message")
	}
}

func TestGolden(t *testing.T) {
	seed := int64(7)
	for _, c := range []struct {
		name  string
		opts  map[string]string
		seed  *int64
		probe probes.Probe
	}{
		{"gemini_system", nil, nil, probestest.Probe},
		{"gemini_user_only_seed", nil, &seed, userOnly()},
		{"vertex_system", vertexOpts, nil, probestest.Probe},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := newTestProber(t, "", c.opts, c.seed).Render(c.probe)
			if err != nil {
				t.Fatal(err)
			}
			probestest.Golden(t, c.name, req)
		})
	}
}

func TestStableGemini(t *testing.T) {
	p := newTestProber(t, "", nil, nil)
	probestest.Stable(t, func() (*probes.Request, error) { return p.Render(probestest.Probe) })
}

func TestStableGeminiSeed(t *testing.T) {
	seed := int64(7)
	p := newTestProber(t, "", nil, &seed)
	probestest.Stable(t, func() (*probes.Request, error) { return p.Render(userOnly()) })
}

func TestStableVertex(t *testing.T) {
	p := newTestProber(t, "", vertexOpts, nil)
	probestest.Stable(t, func() (*probes.Request, error) { return p.Render(probestest.Probe) })
}

func TestCheckAndRegistry(t *testing.T) {
	info, ok := probes.Lookup("gemini")
	if !ok || info.KeyEnv != "GEMINI_API_KEY" || !info.NeedsKey || !info.Input || !info.Output || !info.Scores || info.Check == nil {
		t.Fatalf("registry info = %+v", info)
	}
	fields := func(t probes.Target) map[string]bool {
		m := map[string]bool{}
		for _, e := range Check(t) {
			m[e.Field] = true
		}
		return m
	}
	if f := fields(probes.Target{Model: "m", Options: map[string]string{OptAPI: APIVertex}}); !f["options.project"] || !f["options.location"] {
		t.Errorf("vertex without project/location: %v", f)
	}
	if f := fields(probes.Target{Model: "m", Options: map[string]string{OptAPI: APIVertex, OptProject: "a/b", OptLocation: "us-central1"}}); !f["options.project"] {
		t.Errorf("project with a slash accepted: %v", f)
	}
	if f := fields(probes.Target{Model: "m", Options: map[string]string{OptAPI: "palm"}}); !f["options.api"] {
		t.Errorf("bad api accepted: %v", f)
	}
	if f := fields(probes.Target{Model: "m", Options: map[string]string{OptProject: "p"}}); !f["options.project"] {
		t.Errorf("project without vertex accepted: %v", f)
	}
	if f := fields(probes.Target{Model: "m", Endpoint: "moderation"}); !f["endpoint"] {
		t.Errorf("bad endpoint accepted: %v", f)
	}
	if f := fields(probes.Target{Model: "m", Endpoint: "chat", Options: vertexOpts}); len(f) != 0 {
		t.Errorf("good vertex target: %v", f)
	}
	if _, err := New(probes.Target{Model: "m", Options: map[string]string{OptAPI: APIVertex}}); err == nil {
		t.Errorf("New accepted vertex without project")
	}
}

func TestUnspecifiedBlockReasonBesideCandidates(t *testing.T) {
	p := newTestProber(t, "", nil, nil)
	got := p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{},
		Body: []byte(`{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],"promptFeedback":{"blockReason":"BLOCK_REASON_UNSPECIFIED"}}`)})
	probestest.Check(t, got, probestest.Want{Class: probes.Allowed, Reason: "STOP"})
	// With no candidates either, the unused placeholder names no block:
	// nothing was generated (it was read as a block before).
	got = p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{},
		Body: []byte(`{"promptFeedback":{"blockReason":"BLOCKED_REASON_UNSPECIFIED"}}`)})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "no_candidates"})
}

// TestUnknownSanitized: provider-controlled values recorded in Unknown
// (finish and block reasons, rating enums, error status, new keys) never
// carry the comma storage joins the list with, nor a control character,
// and two values that sanitize alike are recorded once.
func TestUnknownSanitized(t *testing.T) {
	p := newTestProber(t, "", nil, nil)
	for _, c := range []struct {
		status int
		body   string
		want   []string
	}{
		{200, `{"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"NEW,REASON","safetyRatings":[{"category":"HARM_CATEGORY_A,B","probability":"VERY\nHIGH"},{"category":"HARM_CATEGORY_A_B","probability":"LOW"}]}],"new,key":1}`,
			[]string{"finish_reason:NEW_REASON", "category:HARM_CATEGORY_A_B", "probability:VERY_HIGH", "field:new_key"}},
		{200, `{"promptFeedback":{"blockReason":"FAKE,\tBLOCK"}}`, []string{"block_reason:FAKE__BLOCK"}},
		{400, `{"error":{"code":400,"message":"?","status":"NEW,STATUS\r"}}`, []string{"error_status:NEW_STATUS_"}},
	} {
		r := p.Classify(nil, &probes.Response{Status: c.status, Header: http.Header{}, Body: []byte(c.body)})
		seen := map[string]bool{}
		for _, u := range r.Unknown {
			if strings.ContainsAny(u, ",\n\r\t") {
				t.Errorf("unsanitized Unknown entry %q in %q", u, r.Unknown)
			}
			if seen[u] {
				t.Errorf("Unknown entry %q twice in %q", u, r.Unknown)
			}
			seen[u] = true
		}
		probestest.Check(t, r, probestest.Want{Class: r.Class, Stage: r.Stage, Unknown: c.want, NoCheckCategories: true, Heuristic: r.Heuristic})
	}
}

// TestNoTextIsNoVerdict: a candidate with no text whose finish reason is not
// a block is a failed generation (transient empty_candidate:<REASON>), not
// an allowed answer; MAX_TOKENS and RECITATION stay answers even with no
// text; with text, the non-policy reasons stay allowed.
func TestNoTextIsNoVerdict(t *testing.T) {
	const other = `{"candidates":[{"finishReason":"OTHER","finishMessage":"Model failed to generate content due to internal error."}]}`
	cases := []probestest.Case{
		{Name: "other_no_content", Body: `{"candidates":[{"finishReason":"OTHER"}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:OTHER"}},
		{Name: "other_internal_error_message", Body: other,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:OTHER"}},
		{Name: "language_no_content", Body: `{"candidates":[{"finishReason":"LANGUAGE","safetyRatings":` + negligible + `}],"modelVersion":"gemini-2.0-flash"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:LANGUAGE"}},
		{Name: "malformed_function_call_no_content", Body: `{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL","index":0}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:MALFORMED_FUNCTION_CALL"}},
		{Name: "stop_empty_parts", Body: `{"candidates":[{"content":{"role":"model"},"finishReason":"STOP","index":0}],"modelVersion":"gemini-2.5-pro"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:STOP"}},
		{Name: "stop_blank_text", Body: `{"candidates":[{"content":{"parts":[{"text":" \n"}],"role":"model"},"finishReason":"STOP"}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:STOP"}},
		{Name: "stop_thoughts_only", Body: `{"candidates":[{"content":{"parts":[{"text":"hmm","thought":true}],"role":"model"},"finishReason":"STOP"}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:STOP"}},
		{Name: "unknown_reason_no_content", Body: `{"candidates":[{"finishReason":"NEW_FANCY_REASON"}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate:NEW_FANCY_REASON", Unknown: []string{"finish_reason:NEW_FANCY_REASON"}}},
		{Name: "no_reason_blank_text", Body: `{"candidates":[{"content":{"parts":[{"text":""}]}}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "empty_candidate"}},
		// Answers with no text.
		{Name: "max_tokens_no_text", Body: `{"candidates":[{"content":{"role":"model"},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":5,"thoughtsTokenCount":64}}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "MAX_TOKENS", TokensIn: 5, TokensOut: 64}},
		{Name: "max_tokens_thoughts_only", Body: `{"candidates":[{"content":{"parts":[{"text":"planning","thought":true}],"role":"model"},"finishReason":"MAX_TOKENS"}]}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "MAX_TOKENS"}},
		{Name: "recitation_no_text", Body: `{"candidates":[{"finishReason":"RECITATION"}]}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "RECITATION"}},
		// With text: unchanged.
		{Name: "other_with_text", Body: `{"candidates":[{"content":{"parts":[{"text":"Paris is the capital"}],"role":"model"},"finishReason":"OTHER"}]}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "OTHER"}},
		{Name: "language_with_text", Body: `{"candidates":[{"content":{"parts":[{"text":"Bonjour"}],"role":"model"},"finishReason":"LANGUAGE"}]}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "LANGUAGE"}},
		// Policy reasons with no text stay blocks.
		{Name: "safety_no_content_still_block", Fixture: "vertex_200_finish_reason_safety_no_content.json",
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SAFETY", Categories: []string{probes.CatHarassment}}},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil, nil) }, probestest.Probe, cases)

	// The finishMessage of a failed generation is kept.
	got := newTestProber(t, "", nil, nil).Classify(nil, &probes.Response{Status: 200, Header: http.Header{}, Body: []byte(other)})
	if got.Message != "Model failed to generate content due to internal error." {
		t.Errorf("message = %q", got.Message)
	}
}

// TestPromptFeedbackWithoutBlockReason: promptFeedback with no candidates is
// an input block only when it says so (a real blockReason, a
// blockReasonMessage, or a prompt rating flagged blocked:true); otherwise
// nothing was generated: transient no_candidates.
func TestPromptFeedbackWithoutBlockReason(t *testing.T) {
	cases := []probestest.Case{
		{Name: "ratings_only", Body: `{"promptFeedback":{"safetyRatings":[{"category":"HARM_CATEGORY_HATE_SPEECH","probability":"NEGLIGIBLE"}]},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"gemini-2.0-flash-001"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "no_candidates", Severities: map[string]string{"prompt.HARM_CATEGORY_HATE_SPEECH": "NEGLIGIBLE"}}},
		{Name: "empty_feedback", Body: `{"promptFeedback":{}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "no_candidates"}},
		{Name: "empty_feedback_empty_candidates", Body: `{"candidates":[],"promptFeedback":{}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "no_candidates"}},
		{Name: "unspecified_no_candidates", Body: `{"promptFeedback":{"blockReason":"BLOCK_REASON_UNSPECIFIED"}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "no_candidates"}},
		{Name: "high_rating_not_flagged", Body: `{"promptFeedback":{"safetyRatings":[{"category":"HARM_CATEGORY_HATE_SPEECH","probability":"HIGH"}]}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "no_candidates"}},
		// Still blocks.
		{Name: "flagged_rating_no_reason", Body: `{"promptFeedback":{"safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "block_reason_missing",
				Categories: []string{probes.CatHarassment}, Unknown: []string{"block_reason:<none>"}}},
		{Name: "unspecified_with_message", Body: `{"promptFeedback":{"blockReason":"BLOCKED_REASON_UNSPECIFIED","blockReasonMessage":"Blocked."}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "BLOCKED_REASON_UNSPECIFIED", Categories: nil}},
		{Name: "safety_reason", Body: `{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HATE_SPEECH","probability":"HIGH"}]}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "SAFETY", Categories: []string{probes.CatHate}}},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil, nil) }, probestest.Probe, cases)
}

// TestBookkeepingTypes: a wrongly typed bookkeeping field (token counts,
// modelVersion, responseId, messages, scores, error code) never turns a
// clear block into a malformed answer; it is noted in Unknown.
func TestBookkeepingTypes(t *testing.T) {
	cases := []probestest.Case{
		{Name: "prompt_tokens_string", Body: `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":"8"}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "SAFETY", TokensIn: 8,
				Unknown: []string{"usageMetadata.promptTokenCount:bad_type"}}},
		{Name: "model_version_number", Body: `{"promptFeedback":{"blockReason":"SAFETY"},"modelVersion":5}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "SAFETY", Unknown: []string{"modelVersion:bad_type"}}},
		{Name: "response_id_object", Body: `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"responseId":{"x":1}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "PROHIBITED_CONTENT", Categories: []string{probes.CatOther}, Unknown: []string{"responseId:bad_type"}}},
		{Name: "usage_not_object", Body: `{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}],"usageMetadata":"n/a"}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SAFETY", Categories: []string{probes.CatHarassment},
				Unknown: []string{"usageMetadata:bad_type"}}},
		{Name: "output_tokens_float", Body: `{"candidates":[{"finishReason":"SAFETY"}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":1.5,"thoughtsTokenCount":[]}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SAFETY", TokensIn: 8,
				Unknown: []string{"usageMetadata.candidatesTokenCount:bad_type", "usageMetadata.thoughtsTokenCount:bad_type"}}},
		{Name: "finish_message_number", Body: `{"candidates":[{"finishReason":"PROHIBITED_CONTENT","finishMessage":5}]}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "PROHIBITED_CONTENT", Categories: []string{probes.CatOther}, Unknown: []string{"candidate.finishMessage:bad_type"}}},
		{Name: "block_message_object", Body: `{"promptFeedback":{"blockReason":"OTHER","blockReasonMessage":{"text":"x"}}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "OTHER", Categories: []string{probes.CatOther}, Unknown: []string{"promptFeedback.blockReasonMessage:bad_type"}}},
		{Name: "score_string_keeps_flagged_rating",
			Body: `{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"LOW","probabilityScore":"0.61","severity":"HARM_SEVERITY_LOW","severityScore":true,"blocked":true}]}]}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SAFETY", Categories: []string{probes.CatHarassment},
				Raw: []string{"HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_HARASSMENT:severity"}, Unknown: []string{"rating.probabilityScore:bad_type", "rating.severityScore:bad_type"}}},
		{Name: "error_code_string_suspended", Status: 403,
			Body: `{"error":{"code":"403","message":"Permission denied: Consumer has been suspended.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"CONSUMER_SUSPENDED"}]}}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount, Reason: "403:PERMISSION_DENIED:CONSUMER_SUSPENDED", Unknown: []string{"error.code:bad_type"}}},
		{Name: "error_in_200_code_string", Body: `{"error":{"code":"503","message":"overloaded","status":"UNAVAILABLE"}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "200:503:UNAVAILABLE", Unknown: []string{"error.code:bad_type"}}},
		// Well typed bodies note nothing.
		{Name: "normal_no_bad_type", Fixture: "developer_api_200_normal.json", Want: probestest.Want{Class: probes.Allowed, Reason: "STOP", TokensIn: 7, TokensOut: 22}},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil, nil) }, probestest.Probe, cases)

	p := newTestProber(t, "", nil, nil)
	got := p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{}, Body: []byte(`{"promptFeedback":{"blockReason":"SAFETY"},"modelVersion":5,"responseId":7}`)})
	// An odd model version or response id is noted, never used: a model
	// id of "5" would read as a model change.
	if got.ModelID != "" || got.RequestID != "" || got.Class != probes.BlockedInput {
		t.Errorf("class %s, model %q, request id %q", got.Class, got.ModelID, got.RequestID)
	}
	for _, f := range []string{"developer_api_200_normal.json", "vertex_200_normal_with_severity_scores.json", "vertex_200_finish_reason_safety_blocked_rating.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{}, Body: b}).Unknown {
			if strings.HasSuffix(u, ":bad_type") {
				t.Errorf("%s: %s", f, u)
			}
		}
	}
}

// TestSSEStream: a complete streamGenerateContent SSE body reads like the
// answer it merges into; a stream cut before its end is transient.
func TestSSEStream(t *testing.T) {
	rec, err := os.ReadFile(filepath.Join("testdata", "developer_api_stream_finish_reason_recitation.sse.txt"))
	if err != nil {
		t.Fatal(err)
	}
	events := strings.SplitAfter(strings.ReplaceAll(string(rec), "\r\n", "\n"), "\n\n")
	cases := []probestest.Case{
		{Name: "text_then_stop", Body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hello\"}],\"role\":\"model\"}}],\"modelVersion\":\"gemini-2.0-flash\"}\n\n" +
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\" world\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":4,\"candidatesTokenCount\":2},\"modelVersion\":\"gemini-2.0-flash\",\"responseId\":\"r-sse\"}\n\n",
			Want: probestest.Want{Class: probes.Allowed, Reason: "STOP", TokensIn: 4, TokensOut: 2, RequestID: "r-sse", ModelFP: "gemini-2.0-flash"}},
		{Name: "text_then_safety", Body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Sure, here\"}],\"role\":\"model\"}}]}\r\n\r\n" +
			"data: {\"candidates\":[{\"finishReason\":\"SAFETY\",\"safetyRatings\":[{\"category\":\"HARM_CATEGORY_DANGEROUS_CONTENT\",\"probability\":\"HIGH\",\"blocked\":true}]}]}\r\n\r\n",
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "SAFETY", Categories: []string{probes.CatIllicit}}},
		{Name: "refusal_split_across_chunks", Body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"I'm sorry, but \"}]}}]}\n\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"I can't help with that.\"}]},\"finishReason\":\"STOP\"}]}\n\n",
			Want: probestest.Want{Class: probes.ModelRefusal, Stage: probes.StageOutput, Reason: "refusal_text", Heuristic: true}},
		{Name: "error_event", Body: "data: {\"error\":{\"code\":503,\"message\":\"overloaded\",\"status\":\"UNAVAILABLE\"}}\n\n",
			Want: probestest.Want{Class: probes.Transient, Reason: "200:503:UNAVAILABLE"}},
		{Name: "cut_before_finish", Body: strings.Join(events[:3], ""),
			Want: probestest.Want{Class: probes.Transient, Reason: "incomplete_stream"}},
		{Name: "cut_mid_event", Body: string(rec[:len(rec)-40]),
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		{Name: "openai_stream", Body: "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		{Name: "empty_stream", Body: "event: ping\n\n",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		// Comments and id lines first, lone-CR line endings: still a stream.
		{Name: "comment_and_id_lines", Body: ": keep-alive\nid: 1\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]},\"finishReason\":\"STOP\"}]}\n\n",
			Want: probestest.Want{Class: probes.Allowed, Reason: "STOP"}},
		{Name: "cr_line_endings", Body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]},\"finishReason\":\"STOP\"}]}\r\r",
			Want: probestest.Want{Class: probes.Allowed, Reason: "STOP"}},
		// A streamed prompt block carrying only its message reads as the
		// unary answer does: a block.
		{Name: "prompt_block_message_only", Body: "data: {\"promptFeedback\":{\"blockReasonMessage\":\"The prompt was blocked.\"}}\n\n",
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "block_reason_missing"}},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil, nil) }, probestest.Probe, cases)

	// A stream the reader cut (max_body_bytes) is never an answer.
	p := newTestProber(t, "", nil, nil)
	got := p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{}, Body: rec, Truncated: true})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "truncated_response"})
}
