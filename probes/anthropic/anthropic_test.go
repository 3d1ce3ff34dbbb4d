package anthropic

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

const testKey = "sk-ant-api03-TESTSECRETKEY0123456789"

var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestProber(t *testing.T, base string, opts map[string]string) *Prober {
	t.Helper()
	pr, err := New(probes.Target{
		Name: "anthropic-test", Provider: "anthropic", Model: "claude-sonnet-4-5", Endpoint: "chat",
		BaseURL: base, APIKey: testKey, MaxTokens: 64, Options: opts,
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

func TestConformance(t *testing.T) {
	reset := func(d time.Duration) string { return fixedNow.Add(d).Format(time.RFC3339) }
	cases := []probestest.Case{
		// Real fixtures (testdata/*.meta.yaml give status, headers and source).
		{Name: "end_turn_docs", Fixture: "message_200_end_turn_docs.json",
			Header: map[string]string{"request-id": "req_018EeWyXxfu5pfWkrYcMdjWG"}, // documented on every response
			Want:   probestest.Want{Class: probes.Allowed, Reason: "end_turn", RequestID: "req_018EeWyXxfu5pfWkrYcMdjWG", TokensIn: 100, TokensOut: 50}},
		{Name: "end_turn_sdk", Fixture: "message_200_end_turn_sdk_go_fixture.json",
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn", ModelID: "claude-sonnet-4-6-20250514", ModelFP: "claude-sonnet-4-6-20250514", TokensIn: 1, TokensOut: 1}},
		{Name: "refusal_docs_stop_details", Fixture: "stop_reason_refusal_docs.json",
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal",
				Categories: []string{probes.CatIllicit}, Raw: []string{"cyber"}}},
		{Name: "refusal_sdk_null_category", Fixture: "stop_reason_refusal_sdk_go_fixture.json",
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal", Categories: nil,
				ModelID: "primary-model", TokensIn: 1, TokensOut: 1}},
		{Name: "400_invalid_request_body_request_id", Fixture: "error_400_invalid_request.json", Status: 400,
			// No header set: the request id must come from the body.
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:invalid_request_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7Fy"}},
		{Name: "400_invalid_request_header_request_id", Fixture: "error_400_invalid_request.json", Status: 400,
			Header: map[string]string{"request-id": "req_from_header"},
			Want:   probestest.Want{Class: probes.ClientError, RequestID: "req_from_header"}},
		{Name: "429_ratelimit_reset_headers", Fixture: "error_429_rate_limit.json", Status: 429,
			// Header names from the meta file; values synthesized around the fixed clock.
			Header: map[string]string{
				"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": reset(20 * time.Second),
				"anthropic-ratelimit-tokens-remaining": "5000", "anthropic-ratelimit-tokens-reset": reset(50 * time.Second),
			},
			Want: probestest.Want{Class: probes.Transient, Reason: "429:rate_limit_error", RequestID: "req_011CcR9mkMvXdaiWP4739PSN", RetryAfter: 20 * time.Second}},
		{Name: "429_retry_after", Fixture: "error_429_rate_limit.json", Status: 429,
			Header: map[string]string{"retry-after": "7", "anthropic-ratelimit-tokens-reset": reset(50 * time.Second)},
			Want:   probestest.Want{Class: probes.Transient, RetryAfter: 7 * time.Second}},
		{Name: "529_overloaded", Fixture: "error_529_overloaded.json", Status: 529, Header: map[string]string{"Retry-After": "0"},
			Want: probestest.Want{Class: probes.Transient, Reason: "529:overloaded_error"}},
		{Name: "sse_error_after_200", Fixture: "stream_error_overloaded_after_200.sse.txt",
			Header: map[string]string{"Request-Id": "req_stream123", "Content-Type": "text/event-stream"},
			Want:   probestest.Want{Class: probes.Transient, Reason: "malformed_response", RequestID: "req_stream123"}},
		{Name: "sse_refusal_delta", Fixture: "stream_refusal_message_delta.sse.txt", Header: map[string]string{"Content-Type": "text/event-stream"},
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},

		// The output content filter (testdata/*.meta.yaml: observed, with
		// sources): blocked_output, never a client error.
		{Name: "400_output_blocked_content_filter", Fixture: "error_400_output_blocked_content_filter.json", Status: 400,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "400:output_blocked",
				RequestID: "req_011CZibekJwDaAz4R8V6Qc5m", Categories: nil}},
		{Name: "400_output_blocked_details_null", Status: 400, // anthropics/claude-code#58367's later shape
			Body: `{"type":"error","error":{"details":null,"type":"invalid_request_error","message":"Output blocked by content filtering policy"},"request_id":null}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "400:output_blocked"}},
		{Name: "400_output_blocked_case_and_punctuation", Status: 400,
			Body: `{"type":"error","error":{"type":"invalid_request_error","message":"  OUTPUT blocked by content  filtering\n policy. "}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "400:output_blocked"}},
		{Name: "200_error_envelope_output_blocked",
			Body: `{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "200:output_blocked"}},
		// Matched narrowly: other 400s that mention content stay client errors.
		{Name: "400_other_content_message_is_client_error", Status: 400,
			Body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content: Input blocked by content filtering policy"}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:invalid_request_error"}},
		{Name: "400_output_blocked_prefix_only_is_client_error", Status: 400,
			Body: `{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy for field x"}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:invalid_request_error"}},
		{Name: "400_output_blocked_other_type_is_client_error", Status: 400,
			Body: `{"type":"error","error":{"type":"permission_error","message":"Output blocked by content filtering policy"}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:permission_error"}},
		{Name: "500_output_blocked_is_transient", Status: 500,
			Body: `{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"}}`,
			Want: probestest.Want{Class: probes.Transient}},

		// Synthesized from the docs (error types and envelope in
		// error_400_invalid_request.meta.yaml; no verbatim bodies exist).
		{Name: "401_authentication_error", Status: 401, Header: map[string]string{"request-id": "req_401"},
			Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_401"}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "401:authentication_error", RequestID: "req_401"}},
		{Name: "403_permission_error", Status: 403,
			Body: `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "403:permission_error"}},
		{Name: "500_api_error", Status: 500,
			Body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_500"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "500:api_error", RequestID: "req_500"}},
		{Name: "400_organization_disabled_abuse", Status: 400,
			Body: `{"type":"error","error":{"type":"invalid_request_error","message":"This organization has been disabled."}}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount, Reason: "400:invalid_request_error"}},
		{Name: "403_account_suspended_abuse", Status: 403,
			Body: `{"type":"error","error":{"type":"permission_error","message":"Your account has been suspended for repeated violations of our Usage Policy."}}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount}},
		{Name: "402_billing_error", Status: 402,
			Body: `{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low."}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "402:billing_error"}},
		{Name: "unknown_error_type", Status: 418,
			Body: `{"type":"error","error":{"type":"teapot_error","message":"short and stout"}}`,
			Want: probestest.Want{Class: probes.ClientError, Unknown: []string{"error_type:teapot_error"}}},
		{Name: "502_html_gateway", Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html><body>Bad Gateway</body></html>",
			Want: probestest.Want{Class: probes.Transient, Reason: "502"}},
		{Name: "200_error_envelope", Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_e200"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "200:overloaded_error", RequestID: "req_e200"}},
		{Name: "plain_text_refusal", Header: map[string]string{"request-id": "req_pt"},
			Body: `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"I can’t help with that request."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":9}}`,
			Want: probestest.Want{Class: probes.ModelRefusal, Stage: probes.StageOutput, Reason: "refusal_text", Heuristic: true,
				RequestID: "req_pt", ModelID: "claude-sonnet-4-5-20250929", TokensIn: 12, TokensOut: 9}},
		{Name: "long_answer_mentioning_cant_is_allowed",
			Body: `{"id":"msg_3","type":"message","model":"m","content":[{"type":"text","text":"Sure. ` + strings.Repeat("Here is a detailed answer. ", 20) + ` I can't help with anything else."}],"stop_reason":"max_tokens","usage":{"input_tokens":1,"output_tokens":64}}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "max_tokens"}},
		{Name: "unknown_stop_reason_and_new_field",
			Body: `{"id":"msg_4","type":"message","model":"m","content":[{"type":"text","text":"hi"},{"type":"hologram","data":"x"}],"stop_reason":"daydreaming","frobnicate":{"a":1},"usage":{"input_tokens":1,"output_tokens":1}}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "daydreaming",
				Unknown: []string{"stop_reason:daydreaming", "field:frobnicate", "content_type:hologram"}}},
		{Name: "refusal_bio",
			Body: `{"id":"msg_5","type":"message","model":"m","content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":"bio","explanation":"Declined."}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Categories: []string{probes.CatWeapons}, Raw: []string{"bio"}}},
		{Name: "refusal_unknown_category_and_field",
			Body: `{"id":"msg_6","type":"message","model":"m","content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":"chem","explanation":null,"severity":"high"}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Categories: []string{probes.CatOther}, Raw: []string{"chem"},
				Unknown: []string{"category:chem", "stop_details.severity"}}},
		{Name: "garbage_200", Body: "\x00\x01not json at all",
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		{Name: "cut_json_200", Body: `{"id":"msg_1","type":"message","content":[{"type":"te`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		{Name: "null_200", Body: `null`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		{Name: "empty_200", Body: ``,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil) }, probestest.Probe, cases)
}

func TestClassifyEdges(t *testing.T) {
	p := newTestProber(t, "", nil)
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	// Transport error: no response at all.
	got := p.Classify(req, &probes.Response{Err: errors.New("read tcp: connection reset by peer")})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "connection_reset"})
	// A body cut by the runner's cap.
	got = p.Classify(req, &probes.Response{Status: 200, Header: http.Header{}, Body: []byte(`{"id":"msg_1","content":[`), Truncated: true})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient, Reason: "truncated_response"})
	// A nil header map must not crash.
	got = p.Classify(req, &probes.Response{Status: 429, Body: []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`)})
	probestest.Check(t, got, probestest.Want{Class: probes.Transient})
	// A provider message echoing the key is redacted.
	got = p.Classify(req, &probes.Response{Status: 401, Header: http.Header{},
		Body: []byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: ` + testKey + ` (also sk-ant-other-123)"}}`)})
	if strings.Contains(got.Message, testKey) || strings.Contains(got.Message, "sk-ant-") {
		t.Errorf("key leaked into message: %q", got.Message)
	}
	// Refusal explanation is kept as the message.
	got = p.Classify(req, &probes.Response{Status: 200, Header: http.Header{},
		Body: []byte(`{"type":"message","content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":"cyber","explanation":"This request was declined."}}`)})
	if got.Message != "This request was declined." {
		t.Errorf("message = %q", got.Message)
	}
}

func TestRequestOnTheWire(t *testing.T) {
	srv := probestest.NewReplay(t, probestest.Case{Fixture: "message_200_end_turn_sdk_go_fixture.json"})
	p := newTestProber(t, srv.URL+"/", map[string]string{OptVersion: "2024-01-01"})
	req, res := probestest.Do(t, p, probestest.Probe)
	if res.Class != probes.Allowed {
		t.Fatalf("class %s", res.Class)
	}
	last := srv.Last()
	if last.Method != "POST" || last.Path != "/v1/messages" {
		t.Errorf("sent %s %s", last.Method, last.Path)
	}
	if got := last.Header.Get("x-api-key"); got != testKey {
		t.Errorf("x-api-key = %q", got)
	}
	if got := last.Header.Get("anthropic-version"); got != "2024-01-01" {
		t.Errorf("anthropic-version = %q", got)
	}
	if got := last.Header.Get("content-type"); got != "application/json" {
		t.Errorf("content-type = %q", got)
	}
	if !bytes.Equal(last.Body, req.Body) {
		t.Errorf("body sent differs from rendered body")
	}
}

func TestKeyNeverRendered(t *testing.T) {
	p := newTestProber(t, "", nil)
	for _, pr := range []probes.Probe{probestest.Probe, userOnly()} {
		req, err := p.Render(pr)
		if err != nil {
			t.Fatal(err)
		}
		dump := string(probestest.Dump(req)) + req.URL
		for k, v := range req.Header {
			dump += k + strings.Join(v, "")
		}
		if strings.Contains(dump, testKey) || strings.Contains(dump, "TESTSECRET") {
			t.Fatalf("key appears in rendered request:\n%s", dump)
		}
		if req.Header.Get("x-api-key") != "" || req.Header.Get("Authorization") != "" {
			t.Fatalf("credential header in Request.Header")
		}
	}
	if _, err := p.Render(probes.Probe{ID: "bad", Messages: []probes.Message{{Role: "tool", Content: testKey}}}); err == nil || strings.Contains(err.Error(), testKey) {
		t.Fatalf("render error = %v", err)
	}
}

func TestRenderBody(t *testing.T) {
	p := newTestProber(t, "", nil)
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-sonnet-4-5","max_tokens":64,"system":"You are a careful assistant.","messages":[{"role":"user","content":"Is <b>\"5 > 3\"</b> & 'true'? こんにちは"}],"temperature":0}`
	if string(req.Body) != want {
		t.Errorf("body\n got %s\nwant %s", req.Body, want)
	}
	if req.URL != DefaultBaseURL+Path {
		t.Errorf("url %s", req.URL)
	}
	req, _ = p.Render(userOnly())
	if strings.Contains(string(req.Body), `"system"`) {
		t.Errorf("system present without system messages: %s", req.Body)
	}
	two := probes.Probe{ID: "two-sys", Messages: []probes.Message{{Role: "system", Content: "A"}, {Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}, {Role: "system", Content: "B"}, {Role: "user", Content: "q2"}}}
	req, _ = p.Render(two)
	if !strings.Contains(string(req.Body), `"system":"A\n\nB"`) || !strings.Contains(string(req.Body), `{"role":"assistant","content":"a"}`) {
		t.Errorf("multi-system body %s", req.Body)
	}
	if _, err := p.Render(probes.Probe{ID: "sys-only", Messages: []probes.Message{{Role: "system", Content: "A"}}}); err == nil {
		t.Errorf("want an error for a probe with no user message")
	}
}

func TestGolden(t *testing.T) {
	p := newTestProber(t, "", nil)
	for name, pr := range map[string]probes.Probe{"messages_system": probestest.Probe, "messages_user_only": userOnly()} {
		t.Run(name, func(t *testing.T) {
			req, err := p.Render(pr)
			if err != nil {
				t.Fatal(err)
			}
			probestest.Golden(t, name, req)
		})
	}
}

func TestStableSystem(t *testing.T) {
	p := newTestProber(t, "", nil)
	probestest.Stable(t, func() (*probes.Request, error) { return p.Render(probestest.Probe) })
}

func TestStableUserOnly(t *testing.T) {
	p := newTestProber(t, "", nil)
	probestest.Stable(t, func() (*probes.Request, error) { return p.Render(userOnly()) })
}

func TestCheckAndRegistry(t *testing.T) {
	info, ok := probes.Lookup("anthropic")
	if !ok || info.KeyEnv != "ANTHROPIC_API_KEY" || !info.NeedsKey || !info.Output || info.Input || info.Check == nil {
		t.Fatalf("registry info = %+v", info)
	}
	bad := probes.Target{Provider: "anthropic", Model: "m", Endpoint: "moderation", Temperature: 1.5, Options: map[string]string{OptVersion: "latest"}}
	errs := Check(bad)
	fields := map[string]bool{}
	for _, e := range errs {
		fields[e.Field] = true
	}
	for _, f := range []string{"endpoint", "options.anthropic_version", "temperature"} {
		if !fields[f] {
			t.Errorf("no error for %s in %+v", f, errs)
		}
	}
	if _, err := New(bad); err == nil {
		t.Errorf("New accepted a bad target")
	}
	if errs := Check(probes.Target{Provider: "anthropic", Model: "m", Endpoint: "chat"}); len(errs) != 0 {
		t.Errorf("good target: %+v", errs)
	}
}

// TestUnknownSanitized: provider-controlled values recorded in Unknown
// (category, content type, stop reason, error type, stop_details.type)
// never carry the comma storage joins the list with, nor a control
// character: "category:new,cat" would read back as two entries.
func TestUnknownSanitized(t *testing.T) {
	p := newTestProber(t, "", nil)
	for _, c := range []struct {
		status int
		body   string
		want   []string
	}{
		{200, `{"type":"message","model":"m","content":[{"type":"weird,type","x":1}],"stop_reason":"refusal","stop_details":{"type":"refusal\nx","category":"new,cat","a,b":1}}`,
			[]string{"content_type:weird_type", "category:new_cat", "stop_details.type:refusal_x", "stop_details.a_b"}},
		{200, `{"type":"message\u0000","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"odd,\r\nstop\u0085"}`,
			[]string{"type:message_", "stop_reason:odd___stop_"}},
		{418, `{"type":"error","error":{"type":"teapot,\terror","message":"x"}}`, []string{"error_type:teapot__error"}},
	} {
		r := p.Classify(nil, &probes.Response{Status: c.status, Header: http.Header{}, Body: []byte(c.body)})
		for _, u := range r.Unknown {
			if strings.ContainsAny(u, ",\n\r\t\x00\u0085") {
				t.Errorf("unsanitized Unknown entry %q in %q", u, r.Unknown)
			}
		}
		probestest.Check(t, r, probestest.Want{Class: r.Class, Unknown: c.want, NoCheckCategories: true})
	}
}
