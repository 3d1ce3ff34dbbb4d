package oaiwire

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

func TestRenderURL(t *testing.T) {
	r, err := RenderURL("https://api.openai.com/v1/", "/chat/completions", ChatRequest{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != "/v1/chat/completions" || r.URL != "https://api.openai.com/v1/chat/completions" {
		t.Errorf("%q %q", r.Path, r.URL)
	}
	r, _ = RenderURL("http://127.0.0.1:9/", "/openai/deployments/d/chat/completions?api-version=2024-10-21", ChatRequest{})
	if r.Path != "/openai/deployments/d/chat/completions?api-version=2024-10-21" {
		t.Errorf("%q", r.Path)
	}
	for _, bad := range []string{"", "api.openai.com", "ftp://x", "https://u:p@x", "https://x/?key=1", "https://x/#f"} {
		if _, err := RenderURL(bad, "/p", ChatRequest{}); !errors.Is(err, ErrBaseURL) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	// The sim's Render keeps its original path semantics.
	r, _ = Render("http://127.0.0.1:1/", "/v1/chat/completions", ChatRequest{})
	if r.Path != "/v1/chat/completions" {
		t.Errorf("%q", r.Path)
	}
}

func TestTokenParam(t *testing.T) {
	tg := probes.Target{Model: "o3", MaxTokens: 100, Options: map[string]string{TokenParamOption: "max_completion_tokens"}}
	r := NewChatRequest(tg, probes.Probe{Messages: []probes.Message{{Role: "user", Content: "x"}}}, true).WithTokenParam(tg)
	if r.MaxTokens != 0 || r.MaxCompletionTokens != 100 {
		t.Errorf("%+v", r)
	}
	if CheckTokenParam("max_completion_tokens") != nil || CheckTokenParam("tokens") == nil {
		t.Error("CheckTokenParam")
	}
}

func TestRetryWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("Retry-After", now.Add(30*time.Second).Format(http.TimeFormat))
	if d := RetryWait(h, 503, "", now); d != 30*time.Second {
		t.Errorf("http date: %v", d)
	}
	h = http.Header{}
	h.Set("x-ratelimit-reset-requests", "2")
	if d := RetryWait(h, 429, "requests", now); d != 2*time.Second {
		t.Errorf("plain seconds: %v", d)
	}
	if d := RetryWait(h, 503, "requests", now); d != 0 {
		t.Errorf("reset headers outside 429: %v", d)
	}
}

func TestDecodeError(t *testing.T) {
	for body, want := range map[string]errInfo{
		`{"error":{"message":"m","type":"t","code":"c"}}`:  {Message: "m", Type: "t", Code: "c"},
		`{"error":{"message":"m","type":null,"code":429}}`: {Message: "m", Code: "429"},
		`{"error":"plain"}`:                                           {Message: "plain"},
		`{"message":"Unauthorized","request_id":"r1"}`:                {Message: "Unauthorized", RequestID: "r1"},
		`{"message":{"detail":[1]},"type":"invalid_request_message"}`: {Message: `{"detail":[1]}`, Type: "invalid_request_message"},
		`{"detail":"Not Found"}`:                                      {Message: "Not Found"},
	} {
		got, err := decodeError([]byte(body))
		if err != nil || got.Message != want.Message || got.Type != want.Type || got.Code != want.Code || got.RequestID != want.RequestID {
			t.Errorf("%s: %+v %v", body, got, err)
		}
	}
	if _, err := decodeError([]byte("<html>")); err == nil {
		t.Error("html decoded")
	}
}

func TestUserText(t *testing.T) {
	s, err := UserText(probes.Probe{Messages: []probes.Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}, {Role: "user", Content: "c"}}})
	if err != nil || s != "a\nc" {
		t.Errorf("%q %v", s, err)
	}
}

// TestNeverPanics feeds odd bodies to every classifier.
func TestNeverPanics(t *testing.T) {
	bodies := []string{"", "null", "[]", `"x"`, `{"choices":null}`, `{"choices":[null]}`, `{"choices":[{"message":null,"content_filter_results":[]}]}`,
		`{"error":[]}`, `{"error":{"innererror":"x"}}`, `{"results":[null]}`, `{"results":[{"categories":[],"category_scores":"x"}]}`,
		`{"prompt_filter_results":[{"content_filter_results":{"error":"x"}}]}`}
	now := time.Now()
	for _, b := range bodies {
		for _, st := range []int{200, 400, 403, 429, 500} {
			for _, tr := range []bool{false, true} {
				resp := &probes.Response{Status: st, Body: []byte(b), Truncated: tr}
				for _, r := range []probes.Result{ClassifyChat(resp, now), ClassifyModeration(resp, now, NormalizeAzure), ClassifyError(resp, now)} {
					if r.Class == "" {
						t.Errorf("%d %q: empty class", st, b)
					}
				}
			}
		}
	}
}

func TestDegenerateAnswers(t *testing.T) {
	now := time.Now()
	if r := ClassifyChat(&probes.Response{Status: 200, Body: []byte(`{"id":"c","choices":[null]}`)}, now); r.Class != probes.Transient || r.Reason != "empty_choice" {
		t.Errorf("empty choice: %+v", r)
	}
	if r := ClassifyChat(&probes.Response{Status: 200, Body: []byte(`{"id":"c","choices":[{"message":{"content":""},"finish_reason":"stop"}]}`)}, now); r.Class != probes.Allowed {
		t.Errorf("empty answer: %+v", r)
	}
	if r := ClassifyModeration(&probes.Response{Status: 200, Body: []byte(`{"id":"m","results":[null]}`)}, now, NormalizeAzure); r.Class != probes.Transient || r.Reason != "malformed_response" {
		t.Errorf("empty result: %+v", r)
	}
}

// TestGarbageNeverAVerdict: found by FuzzClassify. The two rules that read
// a verdict from an unparseable body only apply to bodies that open like
// JSON, not to HTML or plain-text pages quoting the same words.
func TestGarbageNeverAVerdict(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		status    int
		truncated bool
		body      string
		want      probes.Class
	}{
		{200, true, `<html>"finish_reason":"content_filter"</html>`, probes.Transient},
		{400, false, `Unsupported parameter: content_filter`, probes.ClientError},
		{400, false, `<html><body>content_filter</body></html>`, probes.ClientError},
		// The documented cases still read as blocks.
		{200, true, `{"id":"c","choices":[{"finish_reason":"content_filter","message":{"content":"x`, probes.BlockedOutput},
		{400, true, `{"error":{"message":"filtered","code":"content_filter","innererror":{"code":"Respo`, probes.BlockedInput},
	} {
		r := ClassifyChat(&probes.Response{Status: c.status, Body: []byte(c.body), Truncated: c.truncated}, now)
		if r.Class != c.want {
			t.Errorf("%d %q: %s (%s), want %s", c.status, c.body, r.Class, r.Reason, c.want)
		}
	}
}

// TestGatewayErrors: what gateways in front of providers (LiteLLM,
// OpenRouter) send for a provider's policy block is a block, never a
// client error, and OpenAI's invalid-prompt wording is never account
// enforcement; under other statuses the usual rules hold. Bodies from
// ../openaicompat/testdata (sources in the meta files) and edits of them.
func TestGatewayErrors(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("../openaicompat/testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	older, newer := read("litellm_400_azure_content_policy.json"), read("litellm_400_azure_content_policy_provider_specific_fields.json")
	invalid, openrouter := read("litellm_400_openai_invalid_prompt.json"), read("openrouter_403_moderation.json")
	for _, c := range []struct {
		name   string
		status int
		body   string
		class  probes.Class
		reason string
		cats   []string
	}{
		{"litellm azure older", 400, older, probes.BlockedInput, "content_policy_violation", nil},
		{"litellm azure older 2xx", 200, older, probes.BlockedInput, "content_policy_violation", nil},
		{"litellm azure older 500", 500, older, probes.Transient, "500::400", nil},
		{"litellm azure provider_specific_fields", 400, newer, probes.BlockedInput, "content_filter", []string{"hate"}},
		{"litellm azure psf, direct innererror wins", 400, strings.Replace(newer, `"code": "400",`, `"code": "400", "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {"violence": {"filtered": true, "severity": "medium"}}},`, 1), probes.BlockedInput, "content_filter", []string{"violence"}},
		{"litellm azure psf, filter did not run", 400, `{"error":{"message":"litellm.ContentPolicyViolationError: x","code":"400","provider_specific_fields":{"innererror":{"code":"Other","content_filter_result":{"hate":{"filtered":false,"error":{"code":"e","message":"not run"}}}}}}}`, probes.FilterUnavailable, "filter_error:e", nil},
		{"litellm invalid prompt", 400, invalid, probes.BlockedInput, "invalid_prompt", nil},
		{"litellm invalid prompt 403", 403, invalid, probes.BlockedInput, "invalid_prompt", nil},
		// An enforcement code or account wording is account enforcement,
		// whatever else the message says.
		{"invalid prompt, account code", 400, `{"error":{"message":"Invalid prompt: your prompt was flagged","code":"account_deactivated"}}`, probes.AbuseBlock, "400::account_deactivated", nil},
		{"invalid prompt, account suspended", 400, `{"error":{"message":"Invalid prompt: your prompt was flagged as potentially violating our usage policy. Your account has been suspended.","code":"400"}}`, probes.AbuseBlock, "400::400", nil},
		// The invalid-prompt wording is read under any status: a gateway
		// may wrap the block in a 429 or a 5xx (QA). It was transient on a
		// 429 and a 5xx.
		{"litellm invalid prompt 429", 429, invalid, probes.BlockedInput, "invalid_prompt", nil},
		{"litellm invalid prompt 500", 500, invalid, probes.BlockedInput, "invalid_prompt", nil},
		{"litellm invalid prompt 502", 502, invalid, probes.BlockedInput, "invalid_prompt", nil},
		{"litellm invalid prompt 503", 503, invalid, probes.BlockedInput, "invalid_prompt", nil},
		// Account wording in the same body is never this block: abuse_block
		// on a 4xx (above), the status's class elsewhere.
		{"invalid prompt, account suspended 503", 503, `{"error":{"message":"Invalid prompt: your prompt was flagged as potentially violating our usage policy. Your account has been suspended.","code":"503"}}`, probes.Transient, "503::503", nil},
		{"invalid prompt, account code 502", 502, `{"error":{"message":"Invalid prompt: your prompt was flagged","code":"account_deactivated"}}`, probes.Transient, "502::account_deactivated", nil},
		{"openrouter moderation", 403, openrouter, probes.BlockedInput, "moderation", []string{"harassment", "violence"}},
		{"openrouter moderation 400", 400, openrouter, probes.BlockedInput, "moderation", []string{"harassment", "violence"}},
		{"openrouter moderation 2xx", 200, openrouter, probes.BlockedInput, "moderation", []string{"harassment", "violence"}},
		{"openrouter moderation 500", 500, openrouter, probes.Transient, "500::403", nil},
		{"openrouter moderation no reasons", 403, `{"error":{"code":403,"message":"flagged","metadata":{"reasons":[],"flagged_input":"x"}}}`, probes.BlockedInput, "moderation", nil},
		{"openrouter metadata without moderation", 403, `{"error":{"code":403,"message":"m","metadata":{"reasons":"violence","provider_name":"P"}}}`, probes.ClientError, "403::403", nil},
		// Account enforcement still pages, with or without a gateway.
		{"openai abuse", 403, `{"error":{"message":"Your organization has been suspended.","type":"invalid_request_error","code":"organization_suspended"}}`, probes.AbuseBlock, "403:invalid_request_error:organization_suspended", nil},
		{"gateway abuse", 403, `{"error":{"message":"litellm.PermissionDeniedError: Your account has been suspended for repeated violations of our usage policies.","code":"403"}}`, probes.AbuseBlock, "403::403", nil},
	} {
		resp := &probes.Response{Status: c.status, Body: []byte(c.body)}
		for _, r := range []probes.Result{ClassifyError(resp, time.Now()), ClassifyChat(resp, time.Now())} {
			if r.Class != c.class || r.Reason != c.reason || strings.Join(r.Categories, ",") != strings.Join(c.cats, ",") {
				t.Errorf("%s: %s %q %v, want %s %q %v", c.name, r.Class, r.Reason, r.Categories, c.class, c.reason, c.cats)
			}
			if strings.Contains(r.Message+strings.Join(r.Unknown, ",")+r.Reason, "[probe text echoed back]") {
				t.Errorf("%s: flagged_input copied into the result: %+v", c.name, r)
			}
		}
	}
}

// TestInvalidPromptAnyStatus: OpenAI's invalid-prompt block, as OpenAI
// sends it (a 400 with code invalid_prompt) and as LiteLLM forwards it
// (code "400"), is blocked_input under every status a gateway may wrap it
// in; OpenAI's real rate-limit and quota bodies never read as it.
func TestInvalidPromptAnyStatus(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	now := time.Now()
	for _, path := range []string{"../openai/testdata/error_400_invalid_prompt_observed.json", "../openaicompat/testdata/litellm_400_openai_invalid_prompt.json"} {
		body := read(path)
		for _, st := range []int{400, 403, 404, 422, 429, 500, 502, 503, 504, 529, 200} {
			resp := &probes.Response{Status: st, Body: []byte(body)}
			for _, r := range []probes.Result{ClassifyError(resp, now), ClassifyChat(resp, now)} {
				if r.Class != probes.BlockedInput || r.Reason != "invalid_prompt" {
					t.Errorf("%s as %d: %s %q, want blocked_input invalid_prompt", path, st, r.Class, r.Reason)
				}
			}
		}
	}
	rateLimits := []string{
		read("../openai/testdata/error_429_rate_limit_tokens.json"),
		read("../openai/testdata/error_429_rate_limit_tokens_2023.json"),
		read("../openaicompat/testdata/error_429_rate_limit_tokens.json"),
		`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		`{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`,
	}
	for _, body := range rateLimits {
		r := ClassifyError(&probes.Response{Status: 429, Body: []byte(body)}, now)
		if r.Class == probes.BlockedInput || r.Class.IsVerdict() {
			t.Errorf("429 %.80s: %s %q, want no verdict", body, r.Class, r.Reason)
		}
	}
}

// TestSkeletonAnswers: a choice with no text and no finish reason, and a
// choice whose (non-filter) finish reason comes with no message object at
// all, are not verdicts (QA: both were stored allowed); a content_filter
// finish is a block with or without a message. Both readers agree.
func TestSkeletonAnswers(t *testing.T) {
	filterErr := `"content_filter_results":{"error":{"code":"content_filter_error","message":"not run"}}`
	for _, c := range []struct {
		body   string
		class  probes.Class
		reason string
		cats   []string
	}{
		{`{"choices":[{"message":{"content":""}}]}`, probes.Transient, "empty_choice", nil},
		{`{"choices":[{"message":{"content":null}}]}`, probes.Transient, "empty_choice", nil},
		{`{"choices":[{"message":{"role":"assistant","content":"","refusal":""},"text":""}]}`, probes.Transient, "empty_choice", nil},
		{`{"choices":[{"text":""}]}`, probes.Transient, "empty_choice", nil},
		{`{"choices":[{"message":{"refusal":""}}]}`, probes.Transient, "empty_choice", nil},
		{`{"choices":[{"message":{"content":""},"finish_reason":""}]}`, probes.Transient, "empty_choice", nil},
		{`{"choices":[{"finish_reason":"stop"}]}`, probes.Transient, "no_message", nil},
		{`{"choices":[{"finish_reason":"length"}]}`, probes.Transient, "no_message", nil},
		{`{"choices":[{"finish_reason":"brand_new"}]}`, probes.Transient, "no_message", nil},
		{`{"choices":[{"message":null,"text":null,"finish_reason":"stop"}]}`, probes.Transient, "no_message", nil},
		{`{"id":"c","model":"gpt-4o","choices":[{"index":0,"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":12,"completion_tokens":0}}`, probes.Transient, "no_message", nil},
		// A message object with no content and no refusal is no answer
		// either (a tool call aside); "" is one.
		{`{"choices":[{"index":0,"finish_reason":"stop","message":{}}]}`, probes.Transient, "no_content", nil},
		{`{"choices":[{"finish_reason":"stop","message":{"role":"assistant"}}]}`, probes.Transient, "no_content", nil},
		{`{"choices":[{"finish_reason":"length","message":{"content":null}}]}`, probes.Transient, "no_content", nil},
		// A probe offers no tools: a tool finish without content is no
		// answer either.
		{`{"choices":[{"finish_reason":"tool_calls","message":{"content":null,"tool_calls":[]}}]}`, probes.Transient, "no_content", nil},
		{`{"choices":[{"index":0,"finish_reason":"function_call","message":{"role":"assistant","content":null}}]}`, probes.Transient, "no_content", nil},
		// A content_filter finish stays a block, with or without a message.
		{`{"choices":[{"finish_reason":"content_filter"}]}`, probes.BlockedOutput, "content_filter", nil},
		{`{"choices":[{"message":{"content":""},"finish_reason":"content_filter"}]}`, probes.BlockedOutput, "content_filter", nil},
		{`{"choices":[{"finish_reason":"content_filter","content_filter_results":{"violence":{"filtered":true,"severity":"high"}}}]}`, probes.BlockedOutput, "content_filter", []string{"violence"}},
		// A filter that did not run still says so.
		{`{"choices":[{"finish_reason":"stop",` + filterErr + `}]}`, probes.FilterUnavailable, "filter_error:content_filter_error", nil},
		{`{"choices":[{` + filterErr + `}]}`, probes.FilterUnavailable, "filter_error:content_filter_error", nil},
		// Answers, as before.
		{`{"choices":[{"message":{"content":""},"finish_reason":"stop"}]}`, probes.Allowed, "stop", nil},
		{`{"choices":[{"message":{"content":"hi"}}]}`, probes.Allowed, "", nil},
		{`{"choices":[{"text":"hi","finish_reason":"stop"}]}`, probes.Allowed, "stop", nil},
		{`{"choices":[{"text":"","finish_reason":"length"}]}`, probes.Allowed, "length", nil},
		{`{"choices":[{"message":{"content":null,"refusal":"I can't help with that."}}]}`, probes.ModelRefusal, "message.refusal", nil},
	} {
		resp := &probes.Response{Status: 200, Body: []byte(c.body)}
		r := ClassifyChat(resp, time.Now())
		if r.Class != c.class || r.Reason != c.reason || strings.Join(r.Categories, ",") != strings.Join(c.cats, ",") {
			t.Errorf("%s: %s %q %v, want %s %q %v", c.body, r.Class, r.Reason, r.Categories, c.class, c.reason, c.cats)
		}
		if _, diff := fastSlowDiff(resp); diff != "" {
			t.Error(diff)
		}
	}
}

// TestBookkeepingTypes: a bookkeeping field of the wrong type (QA: a
// string token count, a numeric fingerprint or id, a string index or
// created) no longer makes a clear block malformed (retried, counted by
// the breaker): the verdict stands, sent once, and the field is noted in
// Unknown. A verdict field of the wrong type still makes the answer
// malformed. Both readers agree (the fast one may decline).
func TestBookkeepingTypes(t *testing.T) {
	block := func(top, index string) string {
		return `{"id":"c","model":"gpt-4o",` + top + `"choices":[{"index":` + index + `,"finish_reason":"content_filter","message":{"role":"assistant","content":null},"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"sexual":{"filtered":true,"severity":"medium"}}}]}`
	}
	qa := `{"id":"c","model":"gpt-4o","choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant","content":null}}],"usage":{"prompt_tokens":"12","completion_tokens":0}}`
	answer := `"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]`
	for _, c := range []struct {
		body    string
		class   probes.Class
		cats    []string
		unknown []string
		in, out int
	}{
		{qa, probes.BlockedOutput, nil, []string{"usage.prompt_tokens:bad_type"}, 12, 0},
		{strings.Replace(qa, `"model":"gpt-4o"`, `"model":"gpt-4o","system_fingerprint":123`, 1), probes.BlockedOutput, nil, []string{"system_fingerprint:bad_type", "usage.prompt_tokens:bad_type"}, 12, 0},
		{strings.Replace(qa, `"id":"c"`, `"id":5`, 1), probes.BlockedOutput, nil, []string{"id:bad_type", "usage.prompt_tokens:bad_type"}, 12, 0},
		{strings.Replace(qa, `"index":0`, `"index":"0"`, 1), probes.BlockedOutput, nil, []string{"choices.index:bad_type", "usage.prompt_tokens:bad_type"}, 12, 0},
		{strings.Replace(qa, `"id":"c"`, `"id":"c","created":"x"`, 1), probes.BlockedOutput, nil, []string{"created:bad_type", "usage.prompt_tokens:bad_type"}, 12, 0},
		{block(`"usage":{"prompt_tokens":"12","completion_tokens":0},`, "0"), probes.BlockedOutput, []string{"sexual"}, []string{"usage.prompt_tokens:bad_type"}, 12, 0},
		{block(`"system_fingerprint":123,"created":1.5,`, `"0"`), probes.BlockedOutput, []string{"sexual"}, []string{"choices.index:bad_type", "created:bad_type", "system_fingerprint:bad_type"}, 0, 0},
		{block(`"usage":[12,0],`, "0"), probes.BlockedOutput, []string{"sexual"}, []string{"usage:bad_type"}, 0, 0},
		{block(`"usage":{"prompt_tokens":1.5,"completion_tokens":{"n":3}},`, "null"), probes.BlockedOutput, []string{"sexual"}, []string{"usage.completion_tokens:bad_type", "usage.prompt_tokens:bad_type"}, 0, 0},
		{strings.Replace(block(`"prompt_filter_results":[{"prompt_index":"0","content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}],`, "0"), `"model":"gpt-4o"`, `"model":{"name":"gpt-4o"}`, 1), probes.BlockedOutput, []string{"sexual"}, []string{"model:bad_type", "prompt_filter_results.prompt_index:bad_type"}, 0, 0},
		{`{"id":true,"model":"m",` + answer + `,"usage":{"prompt_tokens":"7","completion_tokens":3}}`, probes.Allowed, nil, []string{"id:bad_type", "usage.prompt_tokens:bad_type"}, 7, 3},
		// Verdict fields stay strict: the answer is malformed.
		{`{"id":"c","choices":[{"message":{"content":null},"finish_reason":1}]}`, probes.Transient, nil, nil, 0, 0},
		{`{"id":"c","choices":[{"message":{"content":1},"finish_reason":"stop"}]}`, probes.Transient, nil, nil, 0, 0},
		{`{"id":"c","choices":[{"message":"hi","finish_reason":"stop"}]}`, probes.Transient, nil, nil, 0, 0},
		{`{"id":"c","choices":[{"message":{"content":"hi"},"finish_reason":"stop","text":5}]}`, probes.Transient, nil, nil, 0, 0},
	} {
		resp := &probes.Response{Status: 200, Body: []byte(c.body)}
		r := ClassifyChat(resp, time.Now())
		if r.Class != c.class || strings.Join(r.Categories, ",") != strings.Join(c.cats, ",") || strings.Join(r.Unknown, ",") != strings.Join(c.unknown, ",") || r.TokensIn != c.in || r.TokensOut != c.out {
			t.Errorf("%s:\n %s %q cats %v unknown %v tokens %d/%d, want %s %v %v %d/%d", c.body, r.Class, r.Reason, r.Categories, r.Unknown, r.TokensIn, r.TokensOut, c.class, c.cats, c.unknown, c.in, c.out)
		}
		if c.class == probes.BlockedOutput && (r.Reason != "content_filter" || r.Class.Retryable() || r.Class.BreakerFailure()) {
			t.Errorf("%s: %s %q would be retried or counted", c.body, r.Class, r.Reason)
		}
		if c.class == probes.Transient && r.Reason != "malformed_response" {
			t.Errorf("%s: reason %q, want malformed_response", c.body, r.Reason)
		}
		if _, diff := fastSlowDiff(resp); diff != "" {
			t.Error(diff)
		}
	}
}

// A moderation answer's id and model are bookkeeping: a wrongly typed one
// is noted, never discards the flagged verdict.
func TestModerationBookkeepingTypes(t *testing.T) {
	for _, body := range []string{
		`{"id":5,"model":"omni-moderation-latest","results":[{"flagged":true,"categories":{"violence":true},"category_scores":{"violence":0.9}}]}`,
		`{"id":"modr-1","model":7,"results":[{"flagged":true,"categories":{"violence":true},"category_scores":{"violence":0.9}}]}`,
	} {
		r := ClassifyModeration(&probes.Response{Status: 200, Body: []byte(body)}, time.Now(), NormalizeAzure)
		if r.Class != probes.BlockedInput || !strings.Contains(strings.Join(r.Unknown, ","), ":bad_type") {
			t.Errorf("%s: %s %q %v", body, r.Class, r.Reason, r.Unknown)
		}
	}
}
