package anthropic

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
			// The stream's error event is read as the envelope it carries.
			Want: probestest.Want{Class: probes.Transient, Reason: "200:overloaded_error", RequestID: "req_stream123"}},
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

// TestSkeletonNotAVerdict: a non-streaming Messages answer always carries a
// stop_reason and a content array. A 200 body without either is a skeleton
// (QA: after three refusals, {"type":"message"} read as allowed and
// confirmed a fake "loosened" policy change): transient, never a verdict.
// Real answers of every documented stop_reason, an empty content array
// included, still read as before.
func TestSkeletonNotAVerdict(t *testing.T) {
	malformed := func(unknown ...string) probestest.Want {
		return probestest.Want{Class: probes.Transient, Reason: "malformed_response", Unknown: unknown}
	}
	cases := []probestest.Case{
		{Name: "type_only", Body: `{"type":"message"}`, Want: malformed("stop_reason:<none>", "content:<none>")},
		{Name: "model_only", Body: `{"model":"m"}`, Want: malformed("stop_reason:<none>", "content:<none>")},
		{Name: "empty_content_no_stop", Body: `{"content":[]}`, Want: malformed("stop_reason:<none>")},
		{Name: "null_content_null_stop", Body: `{"type":"message","content":null,"stop_reason":null}`, Want: malformed("stop_reason:<none>", "content:<none>")},
		{Name: "stop_without_content", Body: `{"stop_reason":"end_turn"}`, Want: malformed("content:<none>")},
		{Name: "empty_stop_reason", Body: `{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":""}`, Want: malformed("stop_reason:<none>")},
		{Name: "text_without_stop", Body: `{"id":"msg_1","type":"message","model":"m","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"output_tokens":1}}`,
			Want: malformed("stop_reason:<none>")},
		// A refusal is unmistakable without its (empty) content array: a
		// proxy re-encoding with omitempty drops it. Still a block.
		{Name: "refusal_without_content", Body: `{"type":"message","stop_reason":"refusal","stop_details":{"type":"refusal","category":"cyber"}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal", Categories: []string{"illicit"}}},
		{Name: "text_refusal_without_stop", Body: `{"type":"message","content":[{"type":"text","text":"I can't help with that."}]}`,
			Want: malformed("stop_reason:<none>")},

		// Real answers keep working.
		{Name: "end_turn_empty_content", Body: `{"type":"message","content":[],"stop_reason":"end_turn"}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn"}},
		{Name: "max_tokens", Body: `{"type":"message","content":[{"type":"text","text":"Sure, here"}],"stop_reason":"max_tokens"}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "max_tokens"}},
		{Name: "stop_sequence", Body: `{"type":"message","content":[{"type":"text","text":"ok"}],"stop_reason":"stop_sequence","stop_sequence":"END"}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "stop_sequence"}},
		{Name: "tool_use", Body: `{"type":"message","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}],"stop_reason":"tool_use"}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "tool_use"}},
		{Name: "pause_turn", Body: `{"type":"message","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}],"stop_reason":"pause_turn"}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "pause_turn"}},
		{Name: "refusal_empty_content", Body: `{"type":"message","content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":"cyber","explanation":"x"}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal", Categories: []string{probes.CatIllicit}}},
		{Name: "unknown_future_stop", Body: `{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":"brand_new"}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "brand_new", Unknown: []string{"stop_reason:brand_new"}}},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil) }, probestest.Probe, cases)

	// The QA body must be a retried non-verdict (a verdict there is what
	// confirmed the fake flip).
	p := newTestProber(t, "", nil)
	r := p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{}, Body: []byte(`{"type":"message"}`)})
	if r.Class.IsVerdict() || !r.Class.Retryable() {
		t.Errorf(`{"type":"message"} read as %s (reason %q): a skeleton must be a retried non-verdict`, r.Class, r.Reason)
	}
}

// TestLenientBookkeeping: a wrongly typed bookkeeping field (token counts,
// id, model, request_id, stop_details.explanation) must not turn a clear
// refusal into a retried malformed_response (QA: usage.input_tokens "12",
// model 5, id 7). The block is kept with its categories; the odd field is
// noted "<field>:bad_type".
func TestLenientBookkeeping(t *testing.T) {
	refusal := func(extra string) string {
		return `{"type":"message","role":"assistant","content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":"cyber","explanation":"Declined."}` + extra + `}`
	}
	blocked := func(unknown ...string) probestest.Want {
		return probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal",
			Categories: []string{probes.CatIllicit}, Raw: []string{"cyber"}, Unknown: unknown}
	}
	cases := []probestest.Case{
		{Name: "input_tokens_string", Body: refusal(`,"id":"msg_1","model":"m","usage":{"input_tokens":"12","output_tokens":3}`),
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal", Categories: []string{probes.CatIllicit},
				Raw: []string{"cyber"}, ModelID: "m", TokensIn: 12, TokensOut: 3, Unknown: []string{"usage.input_tokens:bad_type"}}},
		{Name: "output_tokens_object", Body: refusal(`,"usage":{"input_tokens":4,"output_tokens":{"n":1}}`),
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal", Categories: []string{probes.CatIllicit},
				TokensIn: 4, Unknown: []string{"usage.output_tokens:bad_type"}}},
		{Name: "model_number", Body: refusal(`,"model":5`), Want: blocked("model:bad_type")},
		{Name: "id_number", Body: refusal(`,"id":7`), Want: blocked("id:bad_type")},
		{Name: "usage_not_object", Body: refusal(`,"usage":"lots"`), Want: blocked("usage:bad_type")},
		{Name: "request_id_number", Body: refusal(`,"request_id":9`), Want: blocked("request_id:bad_type")},
		{Name: "explanation_number", Body: `{"type":"message","content":[],"stop_reason":"refusal","stop_details":{"type":7,"category":"bio","explanation":5}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal", Categories: []string{probes.CatWeapons},
				Unknown: []string{"stop_details.type:bad_type", "stop_details.explanation:bad_type"}}},
		{Name: "all_at_once", Body: refusal(`,"id":[1],"model":true,"usage":{"input_tokens":1.5,"output_tokens":"x"},"request_id":{}`),
			Want: blocked("id:bad_type", "model:bad_type", "usage.input_tokens:bad_type", "usage.output_tokens:bad_type", "request_id:bad_type")},
		{Name: "allowed_with_odd_usage", Body: `{"type":"message","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":null,"output_tokens":"2"}}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn", ModelID: "m", TokensOut: 2, Unknown: []string{"usage.output_tokens:bad_type"}}},
		{Name: "error_envelope_odd_request_id", Status: 429, Header: map[string]string{"retry-after": "3"},
			Body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"},"request_id":12}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:rate_limit_error", RetryAfter: 3 * time.Second, Unknown: []string{"request_id:bad_type"}}},
		// Verdict fields stay strict: a stop_reason of the wrong type is
		// unreadable, not a guess.
		{Name: "stop_reason_number_is_malformed", Body: `{"type":"message","content":[],"stop_reason":5}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil) }, probestest.Probe, cases)

	// An odd model or request id is not kept as evidence.
	p := newTestProber(t, "", nil)
	r := p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{}, Body: []byte(refusal(`,"model":5,"request_id":6`))})
	if r.ModelID != "" || r.ModelFP != "" || r.RequestID != "" {
		t.Errorf("odd values kept: model %q fp %q request id %q", r.ModelID, r.ModelFP, r.RequestID)
	}
	if r.Message != "Declined." {
		t.Errorf("message = %q", r.Message)
	}
}

// sse builds an event stream from (event, data) pairs.
func sse(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			b.WriteString("event: " + pairs[i] + "\n")
		}
		b.WriteString("data: " + pairs[i+1] + "\n\n")
	}
	return b.String()
}

// TestEventStream: we never ask for a stream, but a complete one is read
// like the message it describes; anything less (a fragment, a cut or failed
// stream, a declared Content-Type other than text/event-stream) stays a
// transient non-verdict.
func TestEventStream(t *testing.T) {
	const (
		start    = `{"type":"message_start","message":{"id":"msg_s","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":1}}}`
		blockTxt = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
		stop0    = `{"type":"content_block_stop","index":0}`
		endTurn  = `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`
		msgStop  = `{"type":"message_stop"}`
	)
	delta := func(i int, text string) string {
		return `{"type":"content_block_delta","index":` + string(rune('0'+i)) + `,"delta":{"type":"text_delta","text":"` + text + `"}}`
	}
	es := map[string]string{"Content-Type": "text/event-stream; charset=utf-8", "request-id": "req_sse"}
	malformed := probestest.Want{Class: probes.Transient, Reason: "malformed_response"}
	// A stream's error event is read as the error envelope it carries.
	overloaded := probestest.Want{Class: probes.Transient, Reason: "200:overloaded_error"}
	cases := []probestest.Case{
		{Name: "docs_end_turn", Fixture: "stream_end_turn_docs.sse.txt", Header: map[string]string{"Content-Type": "text/event-stream"},
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn", ModelID: "claude-3-5-sonnet-20241022", TokensIn: 25, TokensOut: 15,
				Unknown: []string{"response:event_stream"}}},
		{Name: "complete_refusal", Fixture: "stream_refusal_complete_synth.sse.txt", Header: map[string]string{"Content-Type": "text/event-stream"},
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal", Categories: []string{probes.CatIllicit},
				Raw: []string{"cyber"}, TokensIn: 15, TokensOut: 8, Unknown: []string{"response:event_stream"}}},
		{Name: "plain_text_refusal", Header: es,
			Body: sse("message_start", start, "content_block_start", blockTxt, "content_block_delta", delta(0, "I can’t help"),
				"content_block_delta", delta(0, " with that request."), "content_block_stop", stop0, "message_delta", endTurn, "message_stop", msgStop),
			Want: probestest.Want{Class: probes.ModelRefusal, Stage: probes.StageOutput, Reason: "refusal_text", Heuristic: true, RequestID: "req_sse",
				ModelID: "claude-x", TokensIn: 7, TokensOut: 9}},
		{Name: "crlf_comments_no_event_names", Header: es,
			Body: strings.ReplaceAll(": keepalive\n\n"+sse("", start, "", blockTxt, "", delta(0, "Hi"), "", stop0, "", endTurn, "", msgStop), "\n", "\r\n"),
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn"}},
		{Name: "unknown_event_skipped", Header: es,
			Body: sse("message_start", start, "future_thing", `{"type":"future_thing","x":1}`, "message_delta", endTurn, "message_stop", msgStop),
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn", Unknown: []string{"stream_event:future_thing"}}},

		// Anything less is not a verdict.
		{Name: "fragment_fixture", Fixture: "stream_refusal_message_delta.sse.txt", Header: map[string]string{"Content-Type": "text/event-stream"}, Want: malformed},
		{Name: "error_fixture", Fixture: "stream_error_overloaded_after_200.sse.txt", Header: map[string]string{"Content-Type": "text/event-stream"}, Want: overloaded},
		// The replay server declares application/json when a case names no
		// type: a declared type decides (TestEventStreamWithoutHeaders
		// covers a response with no Content-Type at all).
		{Name: "default_json_content_type", Body: sse("message_start", start, "message_delta", endTurn, "message_stop", msgStop), Want: malformed},
		{Name: "json_content_type", Header: map[string]string{"Content-Type": "application/json"},
			Body: sse("message_start", start, "message_delta", endTurn, "message_stop", msgStop), Want: malformed},
		{Name: "no_message_stop", Header: es, Body: sse("message_start", start, "message_delta", endTurn), Want: malformed},
		{Name: "last_event_without_blank_line", Header: es,
			Body: strings.TrimSuffix(sse("message_start", start, "message_delta", endTurn, "message_stop", msgStop), "\n"), Want: malformed},
		{Name: "no_message_start", Header: es, Body: sse("message_delta", endTurn, "message_stop", msgStop), Want: malformed},
		{Name: "no_stop_reason", Header: es, Body: sse("message_start", start, "message_stop", msgStop),
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response", Unknown: []string{"stop_reason:<none>"}}},
		{Name: "error_mid_stream", Header: es,
			Body: sse("message_start", start, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "message_delta", endTurn, "message_stop", msgStop),
			Want: overloaded},
		{Name: "event_after_stop", Header: es, Body: sse("message_start", start, "message_delta", endTurn, "message_stop", msgStop, "message_delta", endTurn), Want: malformed},
		{Name: "block_left_open", Header: es, Body: sse("message_start", start, "content_block_start", blockTxt, "message_delta", endTurn, "message_stop", msgStop), Want: malformed},
		{Name: "delta_without_block", Header: es, Body: sse("message_start", start, "content_block_delta", delta(0, "x"), "message_delta", endTurn, "message_stop", msgStop), Want: malformed},
		{Name: "block_index_skips", Header: es,
			Body: sse("message_start", start, "content_block_start", strings.Replace(blockTxt, `"index":0`, `"index":1`, 1), "message_delta", endTurn, "message_stop", msgStop), Want: malformed},
		{Name: "event_name_mismatch", Header: es, Body: sse("message_start", start, "message_stop", endTurn, "message_stop", msgStop), Want: malformed},
		{Name: "two_message_starts", Header: es, Body: sse("message_start", start, "message_start", start, "message_delta", endTurn, "message_stop", msgStop), Want: malformed},
		{Name: "event_without_type", Header: es, Body: sse("message_start", start, "", `{"x":1}`, "message_delta", endTurn, "message_stop", msgStop), Want: malformed},
		{Name: "data_not_json", Header: es, Body: sse("message_start", start, "message_delta", "{not json", "message_stop", msgStop), Want: malformed},
		{Name: "start_message_is_error", Header: es,
			Body: sse("message_start", `{"type":"message_start","message":{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"}}}`,
				"message_delta", endTurn, "message_stop", msgStop), Want: malformed},
	}
	probestest.Conformance(t, func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil) }, probestest.Probe, cases)

	// A cut stream is truncated, never rebuilt.
	p := newTestProber(t, "", nil)
	full := sse("message_start", start, "message_delta", strings.Replace(endTurn, "end_turn", "refusal", 1), "message_stop", msgStop)
	r := p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: []byte(full), Truncated: true})
	probestest.Check(t, r, probestest.Want{Class: probes.Transient, Reason: "truncated_response"})
	// The same stream, whole, is the refusal.
	r = p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: []byte(full)})
	probestest.Check(t, r, probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal", Unknown: []string{"response:event_stream"}})
}

// TestEventStreamWithoutHeaders: replay re-classifies stored bodies with no
// response headers (they are not stored). A stored event stream must read
// exactly as it did with its text/event-stream header, and a JSON body
// exactly as it did with application/json.
func TestEventStreamWithoutHeaders(t *testing.T) {
	p := newTestProber(t, "", nil)
	read := func(h http.Header, body []byte) probes.Result {
		return p.Classify(nil, &probes.Response{Status: 200, Header: h, Body: body})
	}
	same := func(name string, body []byte, declared string) probes.Result {
		t.Helper()
		want := read(http.Header{"Content-Type": {declared}}, body)
		for label, h := range map[string]http.Header{"nil": nil, "empty": {}, "blank_type": {"Content-Type": {" "}}} {
			if got := read(h, body); !reflect.DeepEqual(got, want) {
				t.Errorf("%s with %s headers:\n got %+v\nwant %+v (Content-Type %s)", name, label, got, want, declared)
			}
		}
		return want
	}
	streams, err := filepath.Glob("testdata/*.sse.txt")
	if err != nil || len(streams) == 0 {
		t.Fatalf("no stream fixtures (%v)", err)
	}
	for _, f := range streams {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := same(f, b, "text/event-stream")
		if filepath.Base(f) == "stream_refusal_complete_synth.sse.txt" {
			// The QA case: a complete refusal stream, recorded by the run
			// as blocked_output [illicit], must not replay as transient.
			probestest.Check(t, r, probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal",
				Categories: []string{probes.CatIllicit}, Raw: []string{"cyber"}, TokensIn: 15, TokensOut: 8, Unknown: []string{"response:event_stream"}})
		}
	}
	jsons, err := filepath.Glob("testdata/*.json")
	if err != nil || len(jsons) == 0 {
		t.Fatalf("no JSON fixtures (%v)", err)
	}
	for _, f := range jsons {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if r := same(f, b, "application/json"); slices.Contains(r.Unknown, "response:event_stream") {
			t.Errorf("%s: JSON read as an event stream", f)
		}
	}

	refusal, err := os.ReadFile("testdata/stream_refusal_complete_synth.sse.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := read(http.Header{"Content-Type": {"text/event-stream"}}, refusal)
	// What an SSE reader skips before the first field still opens a stream:
	// a byte order mark, blank lines, a comment; CRLF line ends too.
	for name, body := range map[string]string{
		"bom":         "\ufeff" + string(refusal),
		"blank_lines": "\n\n" + string(refusal),
		"comment":     ": keepalive\n\n" + string(refusal),
		"crlf":        strings.ReplaceAll(string(refusal), "\n", "\r\n"),
		"data_first":  strings.Replace(string(refusal), "event: message_start\n", "", 1),
	} {
		withType := read(http.Header{"Content-Type": {"text/event-stream"}}, []byte(body))
		if got := read(nil, []byte(body)); !reflect.DeepEqual(got, withType) || got.Class != want.Class || !slices.Equal(got.Categories, want.Categories) {
			t.Errorf("%s: nil headers %+v, with type %+v, want %s %v", name, got, withType, want.Class, want.Categories)
		}
	}
	// A declared type other than text/event-stream still decides, and
	// neither garbage nor a cut stream becomes a verdict without headers.
	if r := read(http.Header{"Content-Type": {"application/json"}}, refusal); r.Class != probes.Transient || r.Reason != "malformed_response" {
		t.Errorf("stream declared application/json: %s %s", r.Class, r.Reason)
	}
	for name, body := range map[string][]byte{
		"garbage":   []byte("not a stream: data: {}"),
		"html":      []byte("<html>event: message_start</html>"),
		"half":      refusal[:len(refusal)/2],
		"json_text": []byte(`"event: message_start"`),
	} {
		if r := read(nil, body); r.Class != probes.Transient || r.Reason != "malformed_response" {
			t.Errorf("%s without headers: %s %s, want transient malformed_response", name, r.Class, r.Reason)
		}
	}
	if r := p.Classify(nil, &probes.Response{Status: 200, Body: refusal, Truncated: true}); r.Class != probes.Transient || r.Reason != "truncated_response" {
		t.Errorf("cut stream without headers: %s %s", r.Class, r.Reason)
	}
}
