package mistral

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

const secret = "mistral-SECRET-0123456789abcdef"

func target(endpoint, base string) probes.Target {
	return probes.Target{Name: "mistral-mod", Provider: "mistral", Model: "mistral-moderation-2411", Endpoint: endpoint, BaseURL: base, APIKey: secret}
}

func newProber(endpoint string) func(t *testing.T, base string) probes.Prober {
	return func(t *testing.T, base string) probes.Prober {
		p, err := New(target(endpoint, base))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// flaggedBody is a synthesized response in the documented shape with the
// given categories true.
func flaggedBody(model string, fired ...string) string {
	names := []string{"sexual", "hate_and_discrimination", "violence_and_threats", "dangerous_and_criminal_content", "selfharm", "health", "financial", "law", "pii"}
	is := map[string]bool{}
	for _, f := range fired {
		is[f] = true
	}
	var c, s []string
	for _, n := range names {
		v, sc := "false", "0.001"
		if is[n] {
			v, sc = "true", "0.97"
		}
		c = append(c, `"`+n+`":`+v)
		s = append(s, `"`+n+`":`+sc)
	}
	return `{"id":"synth-1","model":"` + model + `","results":[{"categories":{` + strings.Join(c, ",") + `},"category_scores":{` + strings.Join(s, ",") + `}}]}`
}

// common are cases valid for both endpoints (same response shape).
func common() []probestest.Case {
	return []probestest.Case{
		// Synthesized from the documented response shape and categories.
		{
			Name: "synth_violence_selfharm", Body: flaggedBody("mistral-moderation-2411", "violence_and_threats", "selfharm"),
			Header: map[string]string{"x-request-id": "req-m-1"},
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "category_true", RequestID: "req-m-1", ModelID: "mistral-moderation-2411",
				Categories: []string{probes.CatSelfHarm, probes.CatViolence}, Raw: []string{"violence_and_threats", "selfharm"},
				Scores: map[string]float64{"violence_and_threats": 0.97, "pii": 0.001}},
		},
		{
			Name: "synth_all_mapped", Body: flaggedBody("mistral-moderation-2411", "sexual", "hate_and_discrimination", "dangerous_and_criminal_content", "health", "financial", "law", "pii"),
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput,
				Categories: []string{probes.CatHate, probes.CatIllicit, probes.CatOther, probes.CatPrivacy, probes.CatSexual}},
		},
		{
			Name:   "synth_2603_categories",
			Body:   `{"id":"x","model":"mistral-moderation-2603","results":[{"categories":{"dangerous":false,"criminal":true,"jailbreaking":true,"sexual":false,"brand_new":false},"category_scores":{"dangerous":0.1,"criminal":0.8,"jailbreaking":0.9,"sexual":0.0,"brand_new":0.2}}]}`,
			Header: map[string]string{"mistral-correlation-id": "corr-2603"},
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Categories: []string{probes.CatIllicit, probes.CatJailbreak},
				Raw: []string{"criminal", "jailbreaking"}, Scores: map[string]float64{"brand_new": 0.2}, Unknown: []string{"category:brand_new"},
				RequestID: "corr-2603", ModelID: "mistral-moderation-2603"},
		},
		// Category values that are not true/false: the classifier's decision
		// cannot be read, so no verdict (never allowed).
		{
			Name: "synth_null_and_odd_values",
			Body: `{"id":"x","model":"m","results":[{"categories":{"sexual":null,"pii":"maybe"},"category_scores":{"sexual":null,"pii":0.4}}],"usage":{"prompt_tokens":3}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response", Scores: map[string]float64{"pii": 0.4}, Unknown: []string{"value:pii", "value:sexual", "key:usage"}},
		},
		{
			Name: "synth_string_true_values",
			Body: `{"id":"x","model":"m","results":[{"categories":{"violence_and_threats":"true","selfharm":"false"},"category_scores":{"violence_and_threats":0.97,"selfharm":0.01}}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response", Unknown: []string{"value:violence_and_threats", "value:selfharm"}},
		},
		{
			Name: "synth_object_values",
			Body: `{"id":"x","model":"m","results":[{"categories":{"violence_and_threats":{"flagged":true}},"category_scores":{"violence_and_threats":0.97}}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response", Unknown: []string{"value:violence_and_threats"}},
		},
		{
			Name: "synth_null_value_only",
			Body: `{"id":"x","model":"m","results":[{"categories":{"violence_and_threats":null,"selfharm":false},"category_scores":{"violence_and_threats":0.97,"selfharm":0.01}}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response", Unknown: []string{"value:violence_and_threats"}},
		},
		{
			Name: "synth_scores_without_categories",
			Body: `{"id":"x","model":"m","results":[{"category_scores":{"violence_and_threats":0.97,"selfharm":0.01}}]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"},
		},
		{
			Name: "synth_401", Status: 401, Body: `{"message":"Unauthorized","request_id":"a1b2c3d4"}`,
			Want: probestest.Want{Class: probes.ClientError, RequestID: "a1b2c3d4", Reason: "401"},
		},
		{
			Name: "synth_422_message_object", Status: 422,
			Body: `{"object":"error","message":{"detail":[{"type":"missing","loc":["body","input"],"msg":"Field required"}]},"type":"invalid_request_message_error","param":null,"code":null}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "422:invalid_request_message_error"},
		},
		{
			Name: "synth_429", Status: 429, Body: `{"message":"Requests rate limit exceeded"}`, Header: map[string]string{"Retry-After": "4"},
			Want: probestest.Want{Class: probes.Transient, RetryAfter: 4 * time.Second},
		},
		{
			Name: "synth_503_html", Status: 503, Body: "<html>Service Unavailable</html>",
			Want: probestest.Want{Class: probes.Transient, Reason: "503"},
		},
		{
			Name: "synth_403_abuse", Status: 403, Body: `{"message":"Your account has been suspended for repeated violations of our usage policies."}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount},
		},
		{
			Name: "synth_garbage_200", Body: "}{",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"},
		},
		{
			Name: "synth_empty_results", Body: `{"id":"x","model":"m","results":[]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "no_results"},
		},
	}
}

func TestConformanceModeration(t *testing.T) {
	cases := append([]probestest.Case{
		{
			// The docs example answers two inputs; driftprobe sends one, so
			// the merge (max score, any fired) and the results:2 note apply.
			Name: "docs_moderations_200", Fixture: "moderations_200.json",
			Want: probestest.Want{Class: probes.Allowed, Reason: "not_flagged", RequestID: "4d71ae510af942108ef7344f903e2b88", ModelID: "mistral-moderation-latest",
				Scores:  map[string]float64{"sexual": 0.0011335690505802631, "pii": 0.0035936026833951473, "selfharm": 0.00017952796770259738},
				Unknown: []string{"results:2"}},
		},
	}, common()...)
	probestest.Conformance(t, newProber(EndpointModeration), probestest.Probe, cases)
}

func TestConformanceChat(t *testing.T) {
	cases := append([]probestest.Case{
		{
			Name: "docs_chat_moderations_200", Fixture: "chat_moderations_200.json",
			Want: probestest.Want{Class: probes.Allowed, RequestID: "352bce1a55814127a3b0bc4fb8f02a35", ModelID: "mistral-moderation-latest",
				Scores: map[string]float64{"hate_and_discrimination": 0.001597845577634871, "pii": 0.004198795650154352, "law": 0.00004539786823443137}},
		},
	}, common()...)
	probestest.Conformance(t, newProber(EndpointChat), probestest.Probe, cases)
}

func TestTruncated(t *testing.T) {
	p, _ := New(target(EndpointChat, ""))
	b := []byte(flaggedBody("m", "sexual"))
	got := p.Classify(nil, &probes.Response{Status: 200, Body: b[:len(b)/2], Truncated: true})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "truncated_response"})
}

func TestGolden(t *testing.T) {
	for _, ep := range []string{EndpointChat, EndpointModeration} {
		t.Run(ep, func(t *testing.T) {
			p, _ := New(target(ep, ""))
			req, err := p.Render(probestest.Probe)
			if err != nil {
				t.Fatal(err)
			}
			probestest.Golden(t, "mistral_"+ep, req)
		})
	}
}

func TestStable(t *testing.T) {
	for _, ep := range []string{EndpointChat, EndpointModeration} {
		t.Run(ep, func(t *testing.T) {
			p, _ := New(target(ep, ""))
			probestest.Stable(t, func() (*probes.Request, error) { return p.Render(probestest.Probe) })
		})
	}
}

func TestPathsAndAuth(t *testing.T) {
	for ep, want := range map[string]string{EndpointChat: "/v1/chat/moderations", EndpointModeration: "/v1/moderations"} {
		srv := probestest.NewReplay(t, probestest.Case{Fixture: "chat_moderations_200.json"})
		req, res := probestest.Do(t, newProber(ep)(t, srv.URL), probestest.Probe)
		if res.Class != probes.Allowed {
			t.Errorf("%s: %s", ep, res.Class)
		}
		if req.Path != want || srv.Last().Path != want {
			t.Errorf("%s: path %q / %q", ep, req.Path, srv.Last().Path)
		}
		if srv.Last().Header.Get("Authorization") != "Bearer "+secret {
			t.Errorf("%s: no bearer key", ep)
		}
	}
	// An endpoint left empty is the conversational classifier.
	p, _ := New(target("", ""))
	req, _ := p.Render(probestest.Probe)
	if req.URL != "https://api.mistral.ai/v1/chat/moderations" {
		t.Errorf("default: %s", req.URL)
	}
}

func TestKeyNeverRendered(t *testing.T) {
	for _, ep := range []string{EndpointChat, EndpointModeration} {
		p, _ := New(target(ep, ""))
		req, err := p.Render(probestest.Probe)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(probestest.Dump(req), []byte(secret)) || strings.Contains(req.URL, secret) {
			t.Fatalf("%s: key leaked", ep)
		}
		for k, vs := range req.Header {
			if strings.Contains(strings.Join(vs, ","), secret) {
				t.Fatalf("%s: key leaked into header %s", ep, k)
			}
		}
		hr, _ := http.NewRequest(req.Method, req.URL, nil)
		_ = p.(probes.Authorizer).Authorize(context.Background(), hr)
		if hr.Header.Get("Authorization") != "Bearer "+secret {
			t.Fatal("Authorize did not add the key")
		}
	}
}

func TestCheck(t *testing.T) {
	info, ok := probes.Lookup("mistral")
	if !ok || info.KeyEnv != "MISTRAL_API_KEY" || !info.NeedsKey || info.Check == nil {
		t.Fatalf("registration: %+v", info)
	}
	if errs := info.Check(target("guardrail", "mistral.ai")); len(errs) != 2 {
		t.Errorf("want endpoint and base_url errors: %v", errs)
	}
	if _, err := New(target("guardrail", "")); err == nil {
		t.Error("New accepted guardrail")
	}
	p, _ := New(target(EndpointModeration, ""))
	if _, err := p.Render(probes.Probe{ID: "s", Messages: []probes.Message{{Role: "system", Content: "x"}}}); err == nil {
		t.Error("moderation of a probe without user text accepted")
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
