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
	if r := ClassifyModeration(&probes.Response{Status: 200, Body: []byte(`{"id":"m","results":[null]}`)}, now, NormalizeAzure); r.Class != probes.Transient || r.Reason != "no_categories" {
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
		{"litellm invalid prompt 429", 429, invalid, probes.Transient, "429::400", nil},
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
