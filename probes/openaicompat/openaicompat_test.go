package openaicompat

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

const secret = "compat-SECRET-token-0123456789"

func target(base, key string) probes.Target {
	return probes.Target{
		Name: "vllm", Provider: "openai_compatible", Model: "meta-llama/Llama-3.1-8B-Instruct", Endpoint: "chat",
		BaseURL: base, APIKey: key, MaxTokens: 128, Temperature: 0,
	}
}

func newProber(key string) func(t *testing.T, base string) probes.Prober {
	return func(t *testing.T, base string) probes.Prober {
		p, err := New(target(base+"/v1", key))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func TestConformance(t *testing.T) {
	cases := []probestest.Case{
		// Real OpenAI fixtures (the format these servers imitate).
		{
			Name: "200_object", Fixture: "chat_completion_200_object.json", Header: map[string]string{"x-request-id": "req-1"},
			Want: probestest.Want{Class: probes.Allowed, RequestID: "req-1", ModelID: "gpt-4o-2024-08-06", ModelFP: "fp_fc9f1d7035", TokensIn: 1117, TokensOut: 46},
		},
		{
			Name: "200_observed", Fixture: "chat_completion_200_x_request_id_headers_observed.json",
			Want: probestest.Want{Class: probes.Allowed, RequestID: "chatcmpl-A652Fhuqsr1kskKe5B63M0eiw3842", ModelID: "gpt-4-0613"},
		},
		{
			Name: "429_tokens", Fixture: "error_429_rate_limit_tokens.json", Status: 429, Header: map[string]string{"x-ratelimit-reset-tokens": "6m0s"},
			Want: probestest.Want{Class: probes.Transient, RetryAfter: 6 * time.Minute},
		},

		// Gateways in front of providers (testdata/*.meta.yaml give sources).
		{
			Name: "litellm_azure_content_policy_older", Fixture: "litellm_400_azure_content_policy.json", Status: 400,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "content_policy_violation", Categories: nil},
		},
		{
			Name: "litellm_azure_content_policy_provider_specific_fields", Fixture: "litellm_400_azure_content_policy_provider_specific_fields.json", Status: 400,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "content_filter",
				Categories: []string{probes.CatHate}, Raw: []string{"hate"}, Severities: map[string]string{"hate": "high", "violence": "safe", "jailbreak": "not_detected"}},
		},
		{
			Name: "litellm_openai_invalid_prompt_is_not_abuse", Fixture: "litellm_400_openai_invalid_prompt.json", Status: 400,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "invalid_prompt", Categories: nil},
		},
		{
			Name: "openrouter_403_moderation", Fixture: "openrouter_403_moderation.json", Status: 403,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "moderation",
				Categories: []string{probes.CatHarassment, probes.CatViolence}, Raw: []string{"violence", "harassment/threatening"}},
		},
		{
			Name: "openrouter_403_moderation_unknown_reason", Status: 403,
			Body: `{"error":{"code":403,"message":"flagged","metadata":{"reasons":["self-harm","brand,new",7],"flagged_input":"x","provider_name":"P","model_slug":"m"}}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "moderation",
				Categories: []string{probes.CatOther, probes.CatSelfHarm}, Unknown: []string{"category:brand_new"}},
		},
		{
			Name: "openrouter_403_other_metadata_is_client_error", Status: 403,
			Body: `{"error":{"code":403,"message":"Key limit exceeded","metadata":{"provider_name":"P","raw":"x"}}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "403::403"},
		},
		{
			// Real account enforcement through a gateway still pages.
			Name: "litellm_account_suspended_is_abuse", Status: 403,
			Body: `{"error":{"message":"litellm.PermissionDeniedError: OpenAIException - Your account has been suspended for repeated violations of our usage policies.","type":null,"param":null,"code":"403"}}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount},
		},
		{
			Name: "litellm_other_400_is_client_error", Status: 400,
			Body: `{"error":{"message":"litellm.BadRequestError: OpenAIException - Unrecognized request argument supplied: content_policy","type":null,"param":null,"code":"400"}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "400::400"},
		},

		// Synthesized from the vLLM / FastAPI / gateway docs' error shapes.
		{
			Name: "synth_vllm_200", Body: `{"id":"chatcmpl-abc","object":"chat.completion","created":1,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"message":{"role":"assistant","content":"Hi.","reasoning_content":null,"tool_calls":[]},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":9,"total_tokens":11,"completion_tokens":2},"prompt_logprobs":null}`,
			Want: probestest.Want{Class: probes.Allowed, RequestID: "chatcmpl-abc", ModelID: "meta-llama/Llama-3.1-8B-Instruct", Unknown: []string{"key:prompt_logprobs"}},
		},
		{
			Name: "synth_vllm_abort_finish", Body: `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"abort"}]}`,
			// The engine aborted the request: no verdict (it was "allowed"
			// with the finish in Unknown, a fake loosened flip after a
			// blocked baseline).
			Want: probestest.Want{Class: probes.Transient, Reason: "choice_abort"},
		},
		{
			Name: "synth_vllm_400_top_level_error", Status: 400, Body: `{"object":"error","message":"This model's maximum context length is 8192 tokens.","type":"BadRequestError","param":null,"code":400}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:BadRequestError:400"},
		},
		{
			Name: "synth_fastapi_422", Status: 422, Body: `{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}`,
			Want: probestest.Want{Class: probes.ClientError},
		},
		{
			Name: "synth_error_string_401", Status: 401, Body: `{"error":"Unauthorized"}`,
			Want: probestest.Want{Class: probes.ClientError},
		},
		{
			Name: "synth_gateway_content_filter_finish", Body: `{"id":"c","model":"claude-via-gateway","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"content_filter"}]}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput},
		},
		{
			Name: "synth_gateway_refusal", Body: `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"I cannot help with that."},"finish_reason":"stop"}]}`,
			Want: probestest.Want{Class: probes.ModelRefusal, Heuristic: true},
		},
		{
			Name: "synth_abuse_403", Status: 403, Body: `{"error":{"message":"Your organization has been suspended.","type":"invalid_request_error","code":"organization_suspended"}}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount},
		},
		{
			Name: "synth_503_retry", Status: 503, Body: `{"error":{"message":"overloaded"}}`, Header: map[string]string{"Retry-After": "5"},
			Want: probestest.Want{Class: probes.Transient, RetryAfter: 5 * time.Second},
		},
		{
			Name: "synth_garbage_200", Body: "OK",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"},
		},
	}
	probestest.Conformance(t, newProber(""), probestest.Probe, cases)
}

func TestGolden(t *testing.T) {
	p, err := New(target("http://vllm.internal:8000/v1", ""))
	if err != nil {
		t.Fatal(err)
	}
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	probestest.Golden(t, "openai_compatible_chat", req)
}

func TestStable(t *testing.T) {
	p, _ := New(target("http://vllm.internal:8000/v1", secret))
	probestest.Stable(t, func() (*probes.Request, error) { return p.Render(probestest.Probe) })
}

func TestAuthOptional(t *testing.T) {
	body := `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`
	for _, key := range []string{"", secret} {
		srv := probestest.NewReplay(t, probestest.Case{Body: body})
		req, res := probestest.Do(t, newProber(key)(t, srv.URL), probestest.Probe)
		if res.Class != probes.Allowed {
			t.Fatalf("class %s", res.Class)
		}
		got := srv.Last().Header.Get("Authorization")
		if key == "" && got != "" || key != "" && got != "Bearer "+key {
			t.Errorf("key %q: Authorization = %q", key, got)
		}
		if srv.Last().Path != "/v1/chat/completions" || req.Path != "/v1/chat/completions" {
			t.Errorf("path %q", srv.Last().Path)
		}
	}
}

func TestKeyNeverRendered(t *testing.T) {
	p, _ := New(target("https://gw.example.com/openai/v1", secret))
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(probestest.Dump(req), []byte(secret)) || strings.Contains(req.URL, secret) {
		t.Fatal("key leaked into the rendered request")
	}
	for k, vs := range req.Header {
		if strings.Contains(strings.Join(vs, ","), secret) {
			t.Fatalf("key leaked into header %s", k)
		}
	}
	hr, _ := http.NewRequest(req.Method, req.URL, nil)
	_ = p.(probes.Authorizer).Authorize(context.Background(), hr)
	if hr.Header.Get("Authorization") != "Bearer "+secret {
		t.Fatal("Authorize did not add the key")
	}
}

func TestCheck(t *testing.T) {
	info, ok := probes.Lookup("openai_compatible")
	if !ok || info.NeedsKey || info.Check == nil {
		t.Fatalf("registration: %+v", info)
	}
	if errs := info.Check(target("", "")); len(errs) != 1 || errs[0].Field != "base_url" {
		t.Errorf("missing base_url: %v", errs)
	}
	if errs := info.Check(target("http://vllm:8000/v1", "")); len(errs) != 0 {
		t.Errorf("valid: %v", errs)
	}
	if _, err := New(target("", "")); err == nil {
		t.Error("New accepted a target without base_url")
	}
}

// TestKeyNotEchoed checks a provider message echoing the key is redacted.
func TestKeyNotEchoed(t *testing.T) {
	p, err := New(target("http://vllm:8000/v1", secret))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"invalid_api_key"}}`
	res := p.Classify(nil, &probes.Response{Status: 401, Body: []byte(strings.Replace(body, "%s", secret, 1))})
	if strings.Contains(res.Message, secret) || !strings.Contains(res.Message, "[REDACTED]") || res.Class != probes.ClientError {
		t.Fatalf("key echoed: %+v", res)
	}
}
