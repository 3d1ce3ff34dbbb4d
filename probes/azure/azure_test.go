package azure

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

const secret = "azure-SECRET-key-0123456789abcdef"

func target(base string) probes.Target {
	return probes.Target{
		Name: "azure-test", Provider: "azure", Model: "gpt-4o-prod", Endpoint: "chat",
		BaseURL: base, APIKey: secret, MaxTokens: 256, Temperature: 0,
		Options: map[string]string{"api_version": "2024-10-21"},
	}
}

func newProber(t *testing.T, base string) probes.Prober {
	p, err := New(target(base))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// answered is a synthesized 200 with the given choice filter results,
// finish reason and prompt filter results (shapes from the Azure content
// filter docs).
func answered(finish, content, choiceFilters, promptFilters string) string {
	c := "null"
	if content != "" {
		c = `"` + content + `"`
	}
	return `{"id":"chatcmpl-az1","object":"chat.completion","created":1730000000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_az",` +
		`"prompt_filter_results":[{"prompt_index":0,"content_filter_results":` + promptFilters + `}],` +
		`"choices":[{"index":0,"finish_reason":"` + finish + `","message":{"role":"assistant","content":` + c + `},"content_filter_results":` + choiceFilters + `}],` +
		`"usage":{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27}}`
}

const safeFilters = `{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`

func TestConformance(t *testing.T) {
	cases := []probestest.Case{
		// Real fixtures (docs; see testdata/*.meta.yaml).
		{
			Name: "200_annotations", Fixture: "chat_200_annotations_prompt_filter_results.json",
			Want: probestest.Want{
				Class: probes.Allowed, Reason: "stop", RequestID: "chatcmpl-8IMI4HzcmcK6I77vpOJCPt0Vcf8zJ", ModelID: "gpt-35-turbo-instruct",
				TokensIn: 11, TokensOut: 40,
				Severities: map[string]string{
					"prompt.hate": "safe", "prompt.jailbreak": "not_detected", "prompt.profanity": "not_detected",
					"hate": "safe", "protected_material_code": "detected", "protected_material_text": "not_detected", "self_harm": "safe",
				},
			},
		},
		{
			Name: "200_n3_one_choice_content_filter", Fixture: "completion_200_n3_one_choice_content_filter.json",
			Header: map[string]string{"apim-request-id": "0b8a4c6e-0000-4000-8000-000000000001"},
			Want:   probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "content_filter", ModelID: "ada", RequestID: "0b8a4c6e-0000-4000-8000-000000000001"},
		},
		{
			// Not valid JSON as published (no outer braces): still a block.
			Name: "400_docs_fragment", Fixture: "prompt_filtered_400_docs_fragment.json", Status: 400,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "content_filter"},
		},
		{
			// Not valid JSON as published (raw newlines in the message): still
			// a block, with its categories and severities.
			Name: "400_innererror_legacy_invalid_json", Fixture: "prompt_filtered_400_innererror_docs_legacy.json", Status: 400,
			Header: map[string]string{"x-request-id": "a1b2c3", "apim-request-id": "a1b2c3"},
			Want: probestest.Want{
				Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "content_filter", RequestID: "a1b2c3",
				Categories: []string{probes.CatHate, probes.CatSelfHarm, probes.CatViolence},
				Raw:        []string{"hate", "self-harm", "violence"},
				Severities: map[string]string{"hate": "high", "self-harm": "high", "violence": "medium", "sexual": "safe"},
			},
		},

		// Synthesized from the Azure content-filter docs (no fixture).
		{
			Name: "synth_400_observed_shape_singular_key_jailbreak", Status: 400,
			Body: `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,` +
				`"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":true,"detected":true},"self_harm":{"filtered":true,"severity":"medium"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"low"}}}}}`,
			Header: map[string]string{"apim-request-id": "req-az-400"},
			Want: probestest.Want{
				Class: probes.BlockedInput, Stage: probes.StageInput, RequestID: "req-az-400",
				Categories: []string{probes.CatJailbreak, probes.CatSelfHarm}, Raw: []string{"jailbreak", "self_harm"},
				Severities: map[string]string{"jailbreak": "detected", "self_harm": "medium", "violence": "low"},
			},
		},
		{
			Name: "synth_400_both_keys", Status: 400,
			Body: `{"error":{"message":"filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation",` +
				`"content_filter_result":{"hate":{"filtered":true,"severity":"high"}},"content_filter_results":{"violence":{"filtered":true,"severity":"medium"},"indirect_attack":{"filtered":false,"detected":false}}}}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Categories: []string{probes.CatHate, probes.CatViolence}, Raw: []string{"hate", "violence"},
				Severities: map[string]string{"indirect_attack": "not_detected"}},
		},
		{
			Name: "synth_400_filter_error_only", Status: 400,
			Body: `{"error":{"message":"filtered","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"error":{"code":"content_filter_error","message":"The contents are not filtered"}}}}}`,
			Want: probestest.Want{Class: probes.FilterUnavailable, Reason: "filter_error:content_filter_error"},
		},
		{
			Name: "synth_output_content_filter", Body: answered("content_filter", "", `{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"medium"}}`, safeFilters),
			Header: map[string]string{"x-request-id": "req-az-out"},
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "content_filter", Categories: []string{probes.CatViolence}, Raw: []string{"violence"},
				Severities: map[string]string{"violence": "medium", "prompt.violence": "safe"}, RequestID: "req-az-out", ModelID: "gpt-4o-2024-08-06", ModelFP: "fp_az"},
		},
		{
			Name: "synth_prompt_filter_scores_on_allowed", Body: answered("stop", "Here is the answer.", safeFilters, `{"hate":{"filtered":false,"severity":"low"},"jailbreak":{"filtered":false,"detected":false},"violence":{"filtered":false,"severity":"medium"}}`),
			Want: probestest.Want{Class: probes.Allowed, Severities: map[string]string{"prompt.hate": "low", "prompt.violence": "medium", "prompt.jailbreak": "not_detected"}, TokensIn: 20, TokensOut: 7},
		},
		{
			Name: "synth_prompt_filter_error_unavailable", Body: answered("stop", "Here is the answer.", safeFilters, `{"error":{"code":"content_filter_error","message":"The contents are not filtered"}}`),
			Want: probestest.Want{Class: probes.FilterUnavailable, Reason: "filter_error:content_filter_error"},
		},
		{
			Name: "synth_choice_filter_error_unavailable", Body: answered("stop", "Here is the answer.", `{"error":{"code":"content_filter_error","message":"The contents are not filtered"}}`, safeFilters),
			Want: probestest.Want{Class: probes.FilterUnavailable, Reason: "filter_error:content_filter_error"},
		},
		{
			Name: "synth_single_filter_error_unavailable", Body: answered("stop", "Here is the answer.", `{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"error":{"code":"filter_timeout","message":"Filter did not run"}}}`, safeFilters),
			Want: probestest.Want{Class: probes.FilterUnavailable, Reason: "filter_error:filter_timeout"},
		},
		{
			Name: "synth_new_filter_and_severity", Body: answered("stop", "Here is the answer.", `{"hate":{"filtered":false,"severity":"extreme"},"groundedness":{"filtered":false,"detected":false}}`, safeFilters),
			Want: probestest.Want{Class: probes.Allowed, Unknown: []string{"category:groundedness", "severity:extreme"}},
		},
		{
			Name: "synth_plain_text_refusal", Body: answered("stop", "I'm sorry, but I can't assist with that.", safeFilters, safeFilters),
			Want: probestest.Want{Class: probes.ModelRefusal, Stage: probes.StageOutput, Heuristic: true},
		},
		{
			// Wording from a third-party description of Azure's abuse block
			// (the body itself was not verified).
			Name: "synth_403_resource_blocked", Status: 403,
			Body: `{"error":{"code":"403","message":"Access denied: this resource has been temporarily blocked because we detected behavior that may violate our content policy."}}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount, Reason: "403::403"},
		},
		{
			Name: "synth_403_not_abuse", Status: 403,
			Body: `{"error":{"code":"AuthenticationTypeDisabled","message":"Key based authentication is disabled for this resource."}}`,
			Want: probestest.Want{Class: probes.ClientError},
		},
		{
			Name: "synth_429", Status: 429,
			Body:   `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 7 seconds."}}`,
			Header: map[string]string{"retry-after": "7", "retry-after-ms": "7000", "apim-request-id": "req-az-429"},
			Want:   probestest.Want{Class: probes.Transient, RetryAfter: 7 * time.Second, RequestID: "req-az-429", Reason: "429::429"},
		},
		{
			Name: "synth_401", Status: 401,
			Body: `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}`,
			Want: probestest.Want{Class: probes.ClientError},
		},
		{
			Name: "synth_404_deployment", Status: 404,
			Body: `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "404::DeploymentNotFound"},
		},
		{
			Name: "synth_500", Status: 500, Body: `{"error":{"code":"InternalServerError","message":"Backend returned unexpected response."}}`,
			Want: probestest.Want{Class: probes.Transient},
		},
		{
			Name: "synth_garbage_200", Body: "\x00\x01 not json",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"},
		},
	}
	probestest.Conformance(t, newProber, probestest.Probe, cases)
}

func TestTruncated(t *testing.T) {
	p := newProber(t, "https://res.openai.azure.com")
	b := []byte(answered("content_filter", "", safeFilters, safeFilters))
	got := p.Classify(nil, &probes.Response{Status: 200, Body: b[:len(b)-200], Truncated: true})
	probestest.Check(t, got, probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Unknown: []string{"truncated_body"}})
	got = p.Classify(nil, &probes.Response{Status: 400, Body: []byte(`{"error":{"message":"The response was filtered","code":"content_filter","innererror":{"code":"Respo`), Truncated: true})
	probestest.Check(t, got, probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Unknown: []string{"unparseable_body", "truncated_body"}})
}

func TestGolden(t *testing.T) {
	p := newProber(t, "https://example-resource.openai.azure.com/")
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	probestest.Golden(t, "azure_chat", req)
}

func TestStable(t *testing.T) {
	p := newProber(t, "https://example-resource.openai.azure.com")
	probestest.Stable(t, func() (*probes.Request, error) { return p.Render(probestest.Probe) })
}

func TestPathAndAuth(t *testing.T) {
	const want = "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"
	for _, base := range []string{"https://r.openai.azure.com", "https://r.openai.azure.com/", "https://r.openai.azure.com/openai"} {
		req, err := newProber(t, base).Render(probestest.Probe)
		if err != nil {
			t.Fatal(err)
		}
		if req.Path != want || req.URL != "https://r.openai.azure.com"+want {
			t.Errorf("base %s: path %q url %q", base, req.Path, req.URL)
		}
		if bytes.Contains(req.Body, []byte(`"model"`)) {
			t.Errorf("body carries a model: %s", req.Body)
		}
	}
	tg := target("https://r.openai.azure.com")
	tg.Options = nil
	p, _ := New(tg)
	req, _ := p.Render(probestest.Probe)
	if !strings.HasSuffix(req.Path, "api-version="+DefaultAPIVersion) {
		t.Errorf("default api version: %s", req.Path)
	}
	srv := probestest.NewReplay(t, probestest.Case{Body: answered("stop", "ok", safeFilters, safeFilters)})
	got, _ := probestest.Do(t, newProber(t, srv.URL), probestest.Probe)
	last := srv.Last()
	if last.Path != want || got.Path != want {
		t.Errorf("server got %q", last.Path)
	}
	if last.Header.Get("api-key") != secret || last.Header.Get("Authorization") != "" {
		t.Errorf("auth headers: %v", last.Header)
	}
}

func TestKeyNeverRendered(t *testing.T) {
	p := newProber(t, "https://r.openai.azure.com")
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
	if hr.Header.Get("api-key") != secret {
		t.Fatal("Authorize did not add api-key")
	}
}

func TestCheck(t *testing.T) {
	info, ok := probes.Lookup("azure")
	if !ok || info.Check == nil || info.KeyEnv != "AZURE_OPENAI_API_KEY" || !info.NeedsKey {
		t.Fatalf("registration: %+v", info)
	}
	if errs := info.Check(target("https://r.openai.azure.com")); len(errs) != 0 {
		t.Errorf("valid: %v", errs)
	}
	for _, v := range []string{"2024-10-21", "2025-04-01-preview"} {
		tg := target("https://r.openai.azure.com")
		tg.Options["api_version"] = v
		if errs := info.Check(tg); len(errs) != 0 {
			t.Errorf("%s: %v", v, errs)
		}
	}
	tg := target("")
	tg.Options["api_version"] = "v1"
	tg.Model = "bad/deployment"
	fields := map[string]bool{}
	for _, e := range info.Check(tg) {
		fields[e.Field] = true
	}
	for _, f := range []string{"base_url", "options.api_version", "model"} {
		if !fields[f] {
			t.Errorf("no error for %s: %v", f, fields)
		}
	}
	if _, err := New(tg); err == nil {
		t.Error("New accepted an invalid target")
	}
}

// TestKeyNotEchoed checks a provider message echoing the key is redacted.
func TestKeyNotEchoed(t *testing.T) {
	p, err := New(target("https://r.openai.azure.com"))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"invalid_api_key"}}`
	res := p.Classify(nil, &probes.Response{Status: 401, Body: []byte(strings.Replace(body, "%s", secret, 1))})
	if strings.Contains(res.Message, secret) || !strings.Contains(res.Message, "[REDACTED]") || res.Class != probes.ClientError {
		t.Fatalf("key echoed: %+v", res)
	}
}
