package openai

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/oaiwire"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

const secret = "sk-test-SECRET-do-not-leak-0123456789"

func target(endpoint, base string) probes.Target {
	seed := int64(7)
	return probes.Target{
		Name: "openai-test", Provider: "openai", Model: "gpt-4o-2024-08-06", Endpoint: endpoint,
		BaseURL: base, APIKey: secret, MaxTokens: 256, Temperature: 0, Seed: &seed,
		Options: map[string]string{"organization": "org-test", "project": "proj_test"},
	}
}

func newProber(endpoint string) func(t *testing.T, base string) probes.Prober {
	return func(t *testing.T, base string) probes.Prober {
		tg := target(endpoint, base+"/v1")
		if endpoint == EndpointModeration {
			tg.Model = "omni-moderation-latest"
		}
		p, err := New(tg)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// chatBody builds a synthesized chat-completions body.
func chatBody(content, refusal, finish string, extra string) string {
	c := "null"
	if content != "" {
		c = `"` + content + `"`
	}
	r := "null"
	if refusal != "" {
		r = `"` + refusal + `"`
	}
	return `{"id":"chatcmpl-synth1","object":"chat.completion","created":1741570283,"model":"gpt-4o-2024-08-06",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":` + c + `,"refusal":` + r + `,"annotations":[]},"logprobs":null,"finish_reason":"` + finish + `"}],` +
		`"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15},"system_fingerprint":"fp_synth"` + extra + `}`
}

func errBody(msg, typ, code string) string {
	return `{"error":{"message":"` + msg + `","type":"` + typ + `","param":null,"code":"` + code + `"}}`
}

func TestConformanceChat(t *testing.T) {
	cases := []probestest.Case{
		// Real fixtures (see testdata/*.meta.yaml for provenance).
		{
			Name: "200_object", Fixture: "chat_completion_200_object.json",
			// The spec example carries no headers; x-request-id is the documented header.
			Header: map[string]string{"x-request-id": "req_0123456789abcdef"},
			Want: probestest.Want{Class: probes.Allowed, Reason: "stop", RequestID: "req_0123456789abcdef",
				ModelID: "gpt-4o-2024-08-06", ModelFP: "fp_fc9f1d7035", TokensIn: 1117, TokensOut: 46},
		},
		{
			Name: "200_default_no_header", Fixture: "chat_completion_200_default.json",
			Want: probestest.Want{Class: probes.Allowed, RequestID: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", ModelID: "gpt-5.4", TokensIn: 19, TokensOut: 10},
		},
		{
			Name: "200_observed_headers", Fixture: "chat_completion_200_x_request_id_headers_observed.json",
			Header: map[string]string{"x-request-id": "req_deaa3616cbd15d33b4db96b3ba74d2b4", "openai-organization": "studiosity", "openai-processing-ms": "1032", "openai-version": "2020-10-01"},
			Want:   probestest.Want{Class: probes.Allowed, RequestID: "req_deaa3616cbd15d33b4db96b3ba74d2b4", ModelID: "gpt-4-0613", TokensIn: 13, TokensOut: 5},
		},
		{
			Name: "429_tokens_reset_headers", Fixture: "error_429_rate_limit_tokens.json", Status: 429,
			Header: map[string]string{"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s", "x-request-id": "req_429"},
			Want:   probestest.Want{Class: probes.Transient, Reason: "429:tokens:rate_limit_exceeded", RetryAfter: 6 * time.Minute, RequestID: "req_429"},
		},
		{
			Name: "429_2023_retry_after", Fixture: "error_429_rate_limit_tokens_2023.json", Status: 429,
			Header: map[string]string{"Retry-After": "20", "x-ratelimit-reset-tokens": "6ms"},
			Want:   probestest.Want{Class: probes.Transient, RetryAfter: 20 * time.Second},
		},
		{
			// Observed in public issue threads (see the meta file): a flagged
			// prompt on a reasoning model. Must not be read as abuse.
			Name: "400_invalid_prompt_observed", Fixture: "error_400_invalid_prompt_observed.json", Status: 400,
			Header: map[string]string{"x-request-id": "req_bf2eadd66b9f5c652172871aebf34737"},
			Want:   probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "invalid_prompt", RequestID: "req_bf2eadd66b9f5c652172871aebf34737"},
		},

		// Synthesized from the docs (no fixture exists): the error envelope
		// {error:{message,type,param,code}}, the finish_reason enum,
		// message.refusal, and the documented status codes.
		{
			Name: "synth_429_retry_after_ms", Status: 429, Body: errBody("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
			Header: map[string]string{"retry-after-ms": "1500", "x-ratelimit-reset-requests": "20s"},
			Want:   probestest.Want{Class: probes.Transient, RetryAfter: 1500 * time.Millisecond},
		},
		{
			Name: "synth_429_requests_reset", Status: 429, Body: errBody("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
			Header: map[string]string{"x-ratelimit-reset-requests": "20ms", "x-ratelimit-reset-tokens": "6m0s"},
			Want:   probestest.Want{Class: probes.Transient, RetryAfter: 20 * time.Millisecond},
		},
		{
			Name: "synth_429_insufficient_quota", Status: 429, Body: errBody("You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", "insufficient_quota"),
			Want: probestest.Want{Class: probes.ClientError, Reason: "429:insufficient_quota:insufficient_quota"},
		},
		{
			Name: "synth_400_invalid_request", Status: 400, Body: errBody("Invalid value for 'temperature': must be between 0 and 2.", "invalid_request_error", "invalid_value"),
			Header: map[string]string{"x-request-id": "req_400"},
			Want:   probestest.Want{Class: probes.ClientError, Reason: "400:invalid_request_error:invalid_value", RequestID: "req_400"},
		},
		{
			Name: "synth_401_invalid_key", Status: 401, Body: errBody("Incorrect API key provided: sk-test***6789.", "invalid_request_error", "invalid_api_key"),
			Want: probestest.Want{Class: probes.ClientError, Reason: "401:invalid_request_error:invalid_api_key"},
		},
		{
			Name: "synth_404_model", Status: 404, Body: errBody("The model `gpt-9` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
			Want: probestest.Want{Class: probes.ClientError},
		},
		{
			Name: "synth_500", Status: 500, Body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "500:server_error"},
		},
		{
			Name: "synth_503_retry_after", Status: 503, Body: errBody("The engine is currently overloaded, please try again later.", "server_error", "engine_overloaded"),
			Header: map[string]string{"Retry-After": "3"},
			Want:   probestest.Want{Class: probes.Transient, RetryAfter: 3 * time.Second},
		},
		{
			Name: "synth_502_html", Status: 502, Body: "<html><body>502 Bad Gateway</body></html>",
			Want: probestest.Want{Class: probes.Transient, Reason: "502"},
		},
		{
			Name: "synth_401_account_deactivated", Status: 401, Body: errBody("This key is associated with a deactivated account. If you feel this is an error, contact us through our help center at help.openai.com.", "invalid_request_error", "account_deactivated"),
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount, Reason: "401:invalid_request_error:account_deactivated"},
		},
		{
			Name: "synth_403_access_terminated", Status: 403, Body: `{"error":{"message":"Your access was terminated due to violation of our policies, please check your email for more information.","type":"access_terminated","param":null,"code":"access_terminated"}}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount},
		},
		{
			Name: "synth_finish_content_filter", Body: chatBody("", "", "content_filter", ""),
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "content_filter", ModelID: "gpt-4o-2024-08-06", ModelFP: "fp_synth"},
		},
		{
			Name: "synth_message_refusal", Body: chatBody("", "I'm sorry, I cannot assist with that request.", "stop", ""),
			Want: probestest.Want{Class: probes.ModelRefusal, Stage: probes.StageOutput, Reason: "message.refusal"},
		},
		{
			Name: "synth_plain_text_refusal", Body: chatBody("I can't help with that.", "", "stop", ""),
			Want: probestest.Want{Class: probes.ModelRefusal, Stage: probes.StageOutput, Reason: "refusal_text", Heuristic: true},
		},
		{
			Name: "synth_long_answer_mentioning_cant", Body: chatBody("Sure. Here is the overview. Note that I can't help with booking, but the steps are simple.", "", "stop", ""),
			Want: probestest.Want{Class: probes.Allowed},
		},
		{
			Name: "synth_unknown_finish_and_new_key", Body: chatBody("Fine.", "", "safety_pause", `,"moderation_verdict":{"x":1}`),
			Want: probestest.Want{Class: probes.Allowed, Reason: "safety_pause", Unknown: []string{"finish_reason:safety_pause", "key:moderation_verdict"}},
		},
		{
			Name: "synth_garbage_200", Body: "<html>upstream says hello</html>",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"},
		},
		{
			Name: "synth_empty_object_200", Body: "{}",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"},
		},
		{
			Name: "synth_json_array_200", Body: "[1,2,3]",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"},
		},
		{
			Name: "synth_200_error_body", Body: errBody("upstream failed", "server_error", ""),
			Want: probestest.Want{Class: probes.Transient, Reason: "error_body:server_error"},
		},
	}
	probestest.Conformance(t, newProber(EndpointChat), probestest.Probe, cases)
}

func TestConformanceModeration(t *testing.T) {
	cases := []probestest.Case{
		{
			Name: "omni_flagged", Fixture: "moderation_200_omni.json",
			Want: probestest.Want{
				Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "flagged",
				Categories: []string{probes.CatHarassment, probes.CatViolence},
				Raw:        []string{"harassment", "harassment/threatening", "violence", "violence/graphic"},
				Scores: map[string]float64{
					"harassment": 0.8189693396524255, "violence": 0.9999992735124786,
					"sexual/minors": 2.212566909570261e-8, "illicit/violent": 0.008925306722380033,
				},
				Severities: map[string]string{"harassment": "applied:text", "violence": "applied:image+text", "sexual/minors": "applied:text"},
				RequestID:  "modr-0d9740456c391e43c445bf0f010940c7", ModelID: "omni-moderation-latest",
			},
		},
		{
			Name: "legacy_007_flagged", Fixture: "moderation_200_text_moderation_007.json",
			Header: map[string]string{"x-request-id": "req_mod007"},
			Want: probestest.Want{
				Class: probes.BlockedInput, Stage: probes.StageInput,
				Categories: []string{probes.CatHarassment, probes.CatViolence},
				Raw:        []string{"harassment", "harassment/threatening", "violence"},
				Scores:     map[string]float64{"hate": 0.22706663608551025, "violence": 0.9971134662628174},
				Severities: map[string]string{"violence": ""},
				RequestID:  "req_mod007", ModelID: "text-moderation-007",
			},
		},
		// Synthesized from the documented response shape.
		{
			Name: "synth_not_flagged",
			Body: `{"id":"modr-1","model":"omni-moderation-2024-09-26","results":[{"flagged":false,"categories":{"hate":false,"self-harm/intent":false},"category_scores":{"hate":0.01,"self-harm/intent":0.002},"category_applied_input_types":{"hate":["text"],"self-harm/intent":[]}}]}`,
			Want: probestest.Want{Class: probes.Allowed, Scores: map[string]float64{"hate": 0.01, "self-harm/intent": 0.002},
				Severities: map[string]string{"self-harm/intent": "applied:none"}, ModelID: "omni-moderation-2024-09-26"},
		},
		{
			Name: "synth_new_category_and_key",
			Body: `{"id":"modr-2","model":"omni-moderation-latest","results":[{"flagged":true,"categories":{"hate":false,"extremism":true},"category_scores":{"hate":0.01,"extremism":0.93,"weird":"high"},"new_field":1}],"usage":{}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Categories: []string{probes.CatOther}, Raw: []string{"extremism"},
				Scores:  map[string]float64{"extremism": 0.93},
				Unknown: []string{"category:extremism", "category:weird", "score:weird", "key:usage", "result_key:new_field"}},
		},
		// A category value that is not true/false: unreadable, never a
		// verdict, flagged or not (the categories are half the verdict).
		{
			Name: "synth_unreadable_value_flagged",
			Body: `{"id":"modr-2","model":"omni-moderation-latest","results":[{"flagged":true,"categories":{"hate":false,"extremism":true,"weird":"yes"},"category_scores":{"hate":0.01,"extremism":0.93}}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response", Unknown: []string{"category:weird", "value:weird"}},
		},
		{
			Name: "synth_unreadable_values_no_flag",
			Body: `{"id":"modr-4","model":"omni-moderation-latest","results":[{"categories":{"hate":"true","violence":{"v":true},"sexual":null},"category_scores":{"hate":0.9,"violence":0.9,"sexual":0.9}}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response", Unknown: []string{"value:hate", "value:violence", "value:sexual"}},
		},
		{
			Name: "synth_null_value_no_flag",
			Body: `{"id":"modr-5","model":"omni-moderation-latest","results":[{"categories":{"hate":false,"violence":null},"category_scores":{"hate":0.01,"violence":0.99}}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response", Unknown: []string{"value:violence"}},
		},
		{
			Name: "synth_self_harm_minors",
			Body: `{"id":"modr-3","model":"omni-moderation-latest","results":[{"flagged":true,"categories":{"self-harm/instructions":true,"sexual/minors":true,"illicit/violent":true},"category_scores":{"self-harm/instructions":0.9,"sexual/minors":0.8,"illicit/violent":0.7}}]}`,
			Want: probestest.Want{Class: probes.BlockedInput, Categories: []string{probes.CatIllicit, probes.CatSelfHarm, probes.CatSexualMinors}},
		},
		{
			Name: "synth_garbage_200", Body: "not json at all",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"},
		},
		{
			Name: "synth_400", Status: 400, Body: errBody("'input' is a required property", "invalid_request_error", ""),
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:invalid_request_error"},
		},
		{
			Name: "synth_429", Status: 429, Body: errBody("Rate limit reached", "requests", "rate_limit_exceeded"), Header: map[string]string{"Retry-After": "2"},
			Want: probestest.Want{Class: probes.Transient, RetryAfter: 2 * time.Second},
		},
	}
	probestest.Conformance(t, newProber(EndpointModeration), probestest.Probe, cases)
}

// TestTruncated feeds bodies the runner cut at its size cap.
func TestTruncated(t *testing.T) {
	p, _ := New(target(EndpointChat, ""))
	full := chatBody("", "", "content_filter", "")
	cut := &probes.Response{Status: 200, Body: []byte(full[:len(full)-60]), Truncated: true}
	got := p.Classify(nil, cut)
	probestest.Check(t, got, probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "content_filter", Unknown: []string{"truncated_body"}})

	ok := chatBody("Hello there.", "", "stop", "")
	got = p.Classify(nil, &probes.Response{Status: 200, Body: []byte(ok[:40]), Truncated: true})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "truncated_response"})

	got = p.Classify(nil, &probes.Response{Status: 500, Body: []byte(`{"error":{"message":"boo`), Truncated: true})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Unknown: []string{"truncated_body"}})

	m, _ := New(target(EndpointModeration, ""))
	got = m.Classify(nil, &probes.Response{Status: 200, Body: []byte(`{"id":"modr-1","results":[{"flagged":tr`), Truncated: true})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "truncated_response"})

	got = m.Classify(nil, &probes.Response{Err: context.DeadlineExceeded})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "timeout"})
}

func TestGolden(t *testing.T) {
	for _, ep := range []string{EndpointChat, EndpointModeration} {
		t.Run(ep, func(t *testing.T) {
			tg := target(ep, "")
			if ep == EndpointModeration {
				tg.Model = "omni-moderation-latest"
			}
			p, err := New(tg)
			if err != nil {
				t.Fatal(err)
			}
			req, err := p.Render(probestest.Probe)
			if err != nil {
				t.Fatal(err)
			}
			probestest.Golden(t, "openai_"+ep, req)
		})
	}
}

func TestStable(t *testing.T) {
	for _, ep := range []string{EndpointChat, EndpointModeration} {
		t.Run(ep, func(t *testing.T) {
			p, err := New(target(ep, ""))
			if err != nil {
				t.Fatal(err)
			}
			probestest.Stable(t, func() (*probes.Request, error) { return p.Render(probestest.Probe) })
		})
	}
}

// TestPathHostIndependent pins that the fingerprint ignores scheme and host
// but keeps the base's path prefix, and that the server receives that path.
func TestPathHostIndependent(t *testing.T) {
	for ep, want := range map[string]string{EndpointChat: "/v1/chat/completions", EndpointModeration: "/v1/moderations"} {
		def, _ := New(target(ep, ""))
		a, err := def.Render(probestest.Probe)
		if err != nil {
			t.Fatal(err)
		}
		if a.Path != want || a.URL != "https://api.openai.com"+want {
			t.Errorf("%s: path %q url %q, want %q", ep, a.Path, a.URL, want)
		}
		srv := probestest.NewReplay(t, probestest.Case{Body: "{}"})
		pr := newProber(ep)(t, srv.URL)
		b, _ := probestest.Do(t, pr, probestest.Probe)
		if ep == EndpointChat && a.SHA256() != b.SHA256() {
			t.Errorf("%s: fingerprint depends on host: %s vs %s", ep, a.SHA256(), b.SHA256())
		}
		last := srv.Last()
		if last.Path != want {
			t.Errorf("%s: server got %q, want %q", ep, last.Path, want)
		}
		if got := last.Header.Get("Authorization"); got != "Bearer "+secret {
			t.Errorf("%s: Authorization = %q", ep, got)
		}
		if last.Header.Get("OpenAI-Organization") != "org-test" || last.Header.Get("OpenAI-Project") != "proj_test" {
			t.Errorf("%s: org/project headers missing: %v", ep, last.Header)
		}
	}
}

func TestModerationBody(t *testing.T) {
	p, _ := New(target(EndpointModeration, ""))
	req, err := p.Render(probes.Probe{ID: "x", Messages: []probes.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}, {Role: "user", Content: "c"}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(req.Body) != `{"model":"gpt-4o-2024-08-06","input":"a\nc"}` {
		t.Errorf("body %s", req.Body)
	}
	if _, err := p.Render(probes.Probe{ID: "x", Messages: []probes.Message{{Role: "system", Content: "sys"}}}); err == nil {
		t.Error("want an error for a probe without user text")
	}
}

// TestKeyNeverRendered checks the key appears only in the Authorization
// header added by Authorize: never in the rendered URL, path, headers or
// body, nor in errors.
func TestKeyNeverRendered(t *testing.T) {
	for _, ep := range []string{EndpointChat, EndpointModeration} {
		p, err := New(target(ep, ""))
		if err != nil {
			t.Fatal(err)
		}
		req, err := p.Render(probestest.Probe)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(req.URL, secret) || strings.Contains(req.Path, secret) || bytes.Contains(req.Body, []byte(secret)) || bytes.Contains(probestest.Dump(req), []byte(secret)) {
			t.Fatalf("%s: key leaked into the rendered request", ep)
		}
		for k, vs := range req.Header {
			for _, v := range vs {
				if strings.Contains(v, secret) {
					t.Fatalf("%s: key leaked into header %s", ep, k)
				}
			}
		}
		hr, _ := http.NewRequest(req.Method, req.URL, bytes.NewReader(req.Body))
		if err := p.(probes.Authorizer).Authorize(context.Background(), hr); err != nil {
			t.Fatal(err)
		}
		if hr.Header.Get("Authorization") != "Bearer "+secret {
			t.Fatalf("%s: Authorize did not set the key", ep)
		}
	}
	bad := target(EndpointChat, "ftp://user:"+secret+"@example.com")
	if _, err := New(bad); err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("bad base url: err %v", err)
	}
}

func TestTokenParam(t *testing.T) {
	tg := target(EndpointChat, "")
	tg.Options[oaiwire.TokenParamOption] = "max_completion_tokens"
	p, err := New(tg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := p.Render(probestest.Probe)
	if !bytes.Contains(req.Body, []byte(`"max_completion_tokens":256,`)) || bytes.Contains(req.Body, []byte(`"max_tokens"`)) {
		t.Errorf("body %s", req.Body)
	}
	tg.Options[oaiwire.TokenParamOption] = "max_tokenz"
	if _, err := New(tg); err == nil {
		t.Error("bad token_param accepted")
	}
}

func TestInfoAndCheck(t *testing.T) {
	info, ok := probes.Lookup("openai")
	if !ok || !info.NeedsKey || info.KeyEnv != "OPENAI_API_KEY" || info.Check == nil {
		t.Fatalf("registration: %+v", info)
	}
	if errs := info.Check(target(EndpointChat, "")); len(errs) != 0 {
		t.Errorf("valid target: %v", errs)
	}
	tg := target("guardrail", "not a url")
	tg.Options["organization"] = "org\nX-Evil: 1"
	errs := info.Check(tg)
	fields := map[string]bool{}
	for _, e := range errs {
		fields[e.Field] = true
	}
	for _, f := range []string{"endpoint", "base_url", "options.organization"} {
		if !fields[f] {
			t.Errorf("no error for %s: %v", f, errs)
		}
	}
	for raw, want := range map[string]string{"harassment/threatening": "harassment", "self-harm/instructions": "self_harm", "sexual/minors": "sexual_minors", "illicit/violent": "illicit", "hate/threatening": "hate", "violence/graphic": "violence"} {
		if got, known := NormalizeModeration(raw); got != want || !known {
			t.Errorf("%s -> %s %v", raw, got, known)
		}
	}
	if got, known := NormalizeModeration("brand-new"); got != probes.CatOther || known {
		t.Errorf("unknown -> %s %v", got, known)
	}
}

// TestKeyNotEchoed checks a provider message echoing the key is redacted.
func TestKeyNotEchoed(t *testing.T) {
	p, err := New(target(EndpointChat, ""))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"invalid_api_key"}}`
	res := p.Classify(nil, &probes.Response{Status: 401, Body: []byte(strings.Replace(body, "%s", secret, 1))})
	if strings.Contains(res.Message, secret) || !strings.Contains(res.Message, "[REDACTED]") || res.Class != probes.ClientError {
		t.Fatalf("key echoed: %+v", res)
	}
}

// The organization and project a target names choose the account it
// speaks for: they are its account scope (part of its origin, so a switch
// moves the target), escaped so that no two accounts read alike, and
// never the key. They are not part of the request fingerprint: a target
// naming neither, or both, renders the same bytes (the golden files pin
// them) with the same fingerprint.
func TestAccountScope(t *testing.T) {
	for _, c := range []struct{ org, project, want string }{
		{"", "", ""},
		{"org-test", "", "organization=org-test"},
		{"", "proj_test", "project=proj_test"},
		{"org-test", "proj_test", "organization=org-test project=proj_test"},
		{"x project=y", "", "organization=x+project%3Dy"}, // not organization x with project y
	} {
		tg := target(EndpointChat, "")
		tg.Options = map[string]string{}
		if c.org != "" {
			tg.Options["organization"] = c.org
		}
		if c.project != "" {
			tg.Options["project"] = c.project
		}
		p, err := New(tg)
		if err != nil {
			t.Fatal(err)
		}
		got := p.(probes.AccountScoper).AccountScope()
		if got != c.want || strings.Contains(got, secret) {
			t.Errorf("organization %q, project %q: scope %q, want %q", c.org, c.project, got, c.want)
		}
	}
	for _, ep := range []string{EndpointChat, EndpointModeration} {
		with := target(ep, "")
		without := target(ep, "")
		without.Options = nil
		var reqs []*probes.Request
		for _, tg := range []probes.Target{with, without} {
			p, err := New(tg)
			if err != nil {
				t.Fatal(err)
			}
			req, err := p.Render(probestest.Probe)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, req)
		}
		if a, b := reqs[0], reqs[1]; a.SHA256() != b.SHA256() || !bytes.Equal(a.Body, b.Body) || a.Path != b.Path || a.PinnedHeaders() != "" || b.PinnedHeaders() != "" {
			t.Errorf("%s: organization and project changed the request: %s %s vs %s %s", ep, a.Path, a.SHA256(), b.Path, b.SHA256())
		}
	}
	// A key pasted as an id would be recorded with the origin: refused,
	// without repeating it.
	for _, k := range []string{"organization", "project"} {
		tg := target(EndpointChat, "")
		tg.Options[k] = secret
		errs := Check(tg)
		if len(errs) != 1 || errs[0].Field != "options."+k || strings.Contains(errs[0].Msg, secret) || !strings.Contains(errs[0].Msg, "holds an API key") {
			t.Errorf("%s holding the key: %v", k, errs)
		}
		if _, err := New(tg); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%s holding the key: New: %v", k, err)
		}
	}
}
