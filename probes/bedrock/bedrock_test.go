package bedrock

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// Test credentials (AWS documentation's example key pair; not real).
const (
	testAKID   = "AKIDEXAMPLE"
	testSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testToken  = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN//////////wEaDEXAMPLE"
	testModel  = "anthropic.claude-3-5-sonnet-20240620-v1:0"
	testGrID   = "gr1abc2def3g"
)

var signTime = time.Date(2025, 5, 12, 11, 11, 55, 0, time.UTC)

func setCreds(t *testing.T) {
	t.Helper()
	t.Setenv(EnvAccessKeyID, testAKID)
	t.Setenv(EnvSecretAccessKey, testSecret)
	t.Setenv(EnvSessionToken, testToken)
}

func target(endpoint, base string) probes.Target {
	opts := map[string]string{OptRegion: "us-east-1", OptGuardrailID: testGrID, OptGuardrailVersion: "3"}
	return probes.Target{
		Name: "bedrock-" + endpoint, Provider: "bedrock", Model: testModel, Endpoint: endpoint,
		BaseURL: base, MaxTokens: 256, Temperature: 0, Options: opts,
	}
}

func newProber(t *testing.T, tg probes.Target) *Prober {
	t.Helper()
	setCreds(t)
	pr, err := probes.New(tg)
	if err != nil {
		t.Fatal(err)
	}
	p := pr.(*Prober)
	p.now = func() time.Time { return signTime }
	return p
}

func chatProber(t *testing.T, base string) probes.Prober {
	return newProber(t, target(EndpointChat, base))
}

func guardrailProber(t *testing.T, base string) probes.Prober {
	return newProber(t, target(EndpointGuardrail, base))
}

const reqID = "ca47a5ce-e260-4824-aa0e-2e62669d5d6e"

func hdr(kv ...string) map[string]string {
	m := map[string]string{"x-amzn-RequestId": reqID}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestConformanceChat(t *testing.T) {
	cases := []probestest.Case{
		{Name: "end_turn", Fixture: "converse_end_turn.json", Header: hdr(), Want: probestest.Want{
			Class: probes.Allowed, RequestID: reqID, ModelID: testModel, Reason: "end_turn", TokensIn: 31, TokensOut: 17,
		}},
		{Name: "refusal_heuristic", Fixture: "converse_refusal.json", Header: hdr(), Want: probestest.Want{
			Class: probes.ModelRefusal, Stage: probes.StageOutput, Heuristic: true, RequestID: reqID, Reason: "refusal_text",
		}},
		{Name: "guardrail_input", Fixture: "converse_guardrail_input.json", Header: hdr(), Want: probestest.Want{
			Class: probes.BlockedInput, Stage: probes.StageInput, Categories: []string{probes.CatViolence},
			Raw:        []string{"contentPolicy.VIOLENCE"},
			Severities: map[string]string{"contentPolicy.VIOLENCE": "HIGH", "contentPolicy.INSULTS": "LOW"},
			RequestID:  reqID, Reason: "guardrail_intervened", ModelID: testModel,
		}},
		{Name: "guardrail_output", Fixture: "converse_guardrail_output.json", Header: hdr(), Want: probestest.Want{
			Class: probes.BlockedOutput, Stage: probes.StageOutput, Categories: []string{probes.CatHate, probes.CatPrivacy},
			Raw:        []string{"output.contentPolicy.HATE", "output.sensitiveInformationPolicy.EMAIL"},
			Severities: map[string]string{"contentPolicy.HATE": "NONE", "output.contentPolicy.HATE": "MEDIUM", "output.sensitiveInformationPolicy.EMAIL": "ANONYMIZED"},
			RequestID:  reqID, Reason: "guardrail_intervened", TokensIn: 31, TokensOut: 64,
		}},
		{Name: "guardrail_no_trace", Fixture: "converse_guardrail_notrace.json", Header: hdr(), Want: probestest.Want{
			Class: probes.BlockedInput, Stage: probes.StageInput, RequestID: reqID, Reason: "guardrail_intervened",
		}},
		{Name: "content_filtered", Fixture: "converse_content_filtered.json", Header: hdr(), Want: probestest.Want{
			Class: probes.BlockedOutput, Stage: probes.StageOutput, RequestID: reqID, Reason: "content_filtered",
		}},
		{Name: "unknown_stop_reason", Fixture: "converse_unknown_stop.json", Header: hdr(), Want: probestest.Want{
			Class: probes.Allowed, RequestID: reqID, Reason: "brand_new_reason", Unknown: []string{"stop_reason:brand_new_reason"},
			ModelID: "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0",
		}},
		{Name: "context_window", Header: hdr(), Body: `{"output":{"message":{"content":[],"role":"assistant"}},"stopReason":"model_context_window_exceeded","usage":{"inputTokens":1,"outputTokens":0,"totalTokens":1}}`, Want: probestest.Want{
			Class: probes.ClientError, Reason: "model_context_window_exceeded",
		}},
		{Name: "malformed_200", Header: hdr(), Body: `{"output":`, Want: probestest.Want{
			Class: probes.Transient, Reason: "malformed_response", RequestID: reqID,
		}},
		{Name: "throttling_429_observed", Fixture: "converse_429_throttling_exception.json", Status: 429,
			Header: hdr("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", "Retry-After", "7"),
			Want:   probestest.Want{Class: probes.Transient, Reason: "429:ThrottlingException", RequestID: reqID, RetryAfter: 7 * time.Second},
		},
		{Name: "service_unavailable_503", Status: 503, Header: hdr("x-amzn-ErrorType", "ServiceUnavailableException"),
			Body: `{"message":"503 Too many connections, please wait before trying again."}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "503:ServiceUnavailableException", RequestID: reqID}},
		{Name: "internal_500", Status: 500, Header: hdr("x-amzn-ErrorType", "InternalServerException"), Body: `{"Message":"Internal error"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "500:InternalServerException"}},
		{Name: "model_not_ready_429", Status: 429, Header: hdr("x-amzn-ErrorType", "ModelNotReadyException"), Body: `{"message":"Model is not ready"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:ModelNotReadyException"}},
		{Name: "model_timeout_408", Status: 408, Header: hdr("x-amzn-ErrorType", "ModelTimeoutException"), Body: `{"message":"Model has timed out"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "408:ModelTimeoutException"}},
		{Name: "validation_400", Status: 400, Header: hdr("x-amzn-ErrorType", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
			Body: `{"message":"The provided model identifier is invalid."}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:ValidationException", RequestID: reqID}},
		{Name: "access_denied_403", Status: 403, Header: hdr("x-amzn-ErrorType", "AccessDeniedException"),
			Body: `{"Message":"You don't have access to the model with the specified model ID."}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "403:AccessDeniedException"}},
		{Name: "access_denied_abuse_403", Status: 403, Header: hdr("x-amzn-ErrorType", "AccessDeniedException"),
			Body: `{"message":"Access to this API has been disabled: your account has been suspended for repeated violations."}`,
			Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount, Reason: "403:AccessDeniedException"}},
		{Name: "not_found_404", Status: 404, Header: hdr("x-amzn-ErrorType", "ResourceNotFoundException"), Body: `{"message":"Model not found"}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "404:ResourceNotFoundException"}},
		// A ModelErrorException passes on the model's own status: a model
		// server failing (5xx) or throttling (429) is transient (retried,
		// counted by the breaker); a request the model rejected is not.
		{Name: "model_error_424_body_type", Status: 424, Header: hdr(),
			Body: `{"__type":"ModelErrorException","message":"Received error from model","originalStatusCode":500,"resourceName":"x"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "424:ModelErrorException"}},
		{Name: "model_error_424_throttled", Status: 424, Header: hdr("x-amzn-ErrorType", "ModelErrorException"),
			Body: `{"message":"Received error from model","originalStatusCode":429}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "424:ModelErrorException"}},
		{Name: "model_error_424_original_400", Status: 424, Header: hdr("x-amzn-ErrorType", "ModelErrorException"),
			Body: `{"message":"Received client error (400) from model: prompt is too long","originalStatusCode":400,"resourceName":"x"}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "424:ModelErrorException"}},
		{Name: "model_error_424_no_original", Status: 424, Header: hdr("x-amzn-ErrorType", "ModelErrorException"),
			Body: `{"message":"Received error from model"}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "424:ModelErrorException"}},
		{Name: "model_error_424_original_not_a_number", Status: 424, Header: hdr("x-amzn-ErrorType", "ModelErrorException"),
			Body: `{"message":"Received error from model","originalStatusCode":{"x":1}}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "424:ModelErrorException"}},
		{Name: "unknown_error_type_502", Status: 502, Header: hdr("x-amzn-ErrorType", "BrandNewException"), Body: `{"message":"?"}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "502:BrandNewException", Unknown: []string{"error_type:BrandNewException"}}},
		{Name: "unknown_error_type_400", Status: 400, Header: hdr("x-amzn-ErrorType", "ExpiredTokenException"), Body: `{"message":"The security token included in the request is expired"}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "400:ExpiredTokenException"}},
	}
	probestest.Conformance(t, chatProber, probestest.Probe, cases)
}

func TestConformanceGuardrail(t *testing.T) {
	cases := []probestest.Case{
		{Name: "intervened", Fixture: "apply_guardrail_intervened.json", Header: hdr(), Want: probestest.Want{
			Class: probes.BlockedInput, Stage: probes.StageInput,
			Categories: []string{probes.CatHate, probes.CatJailbreak, probes.CatOther, probes.CatPrivacy},
			Raw: []string{"contentPolicy.HATE", "contentPolicy.PROMPT_ATTACK", "topicPolicy.Investment advice", "wordPolicy.customWords",
				"sensitiveInformationPolicy.PHONE", "sensitiveInformationPolicy.regex.account_number"},
			Severities: map[string]string{"contentPolicy.HATE": "HIGH", "contentPolicy.INSULTS": "LOW", "contentPolicy.PROMPT_ATTACK": "MEDIUM",
				"sensitiveInformationPolicy.PHONE": "ANONYMIZED", "wordPolicy.PROFANITY": "NONE"},
			RequestID: reqID, Reason: "GUARDRAIL_INTERVENED",
		}},
		{Name: "none", Fixture: "apply_guardrail_none.json", Header: hdr(), Want: probestest.Want{
			Class: probes.Allowed, RequestID: reqID, Reason: "NONE",
			Severities: map[string]string{"contentPolicy.VIOLENCE": "LOW"},
		}},
		{Name: "grounding_and_new_keys", Header: hdr(), Body: `{"action":"GUARDRAIL_INTERVENED","actionReason":"Guardrail blocked.","assessments":[{"contextualGroundingPolicy":{"filters":[{"action":"BLOCKED","detected":true,"score":0.12,"threshold":0.5,"type":"GROUNDING"}]},"contentPolicy":{"filters":[{"action":"BLOCKED","confidence":"EXTREME","type":"SELF_HARM"}]},"brandNewPolicy":{}}],"outputs":[{"text":"blocked"}]}`,
			Want: probestest.Want{
				Class: probes.BlockedInput, Stage: probes.StageInput, Categories: []string{probes.CatOther},
				Raw:     []string{"contextualGroundingPolicy.GROUNDING", "contentPolicy.SELF_HARM"},
				Scores:  map[string]float64{"contextualGroundingPolicy.GROUNDING": 0.12},
				Unknown: []string{"assessment_key:brandNewPolicy", "filter_type:SELF_HARM", "confidence:EXTREME"},
			}},
		{Name: "unknown_action", Header: hdr(), Body: `{"action":"GUARDRAIL_WARNED","assessments":[]}`,
			Want: probestest.Want{Class: probes.Allowed, Unknown: []string{"action:GUARDRAIL_WARNED"}}},
		{Name: "missing_action", Header: hdr(), Body: `{"outputs":[]}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "malformed_response"}},
		{Name: "throttling", Fixture: "converse_429_throttling_exception.json", Status: 429,
			Header: hdr("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
			Want:   probestest.Want{Class: probes.Transient, Reason: "429:ThrottlingException", RequestID: reqID}},
		{Name: "guardrail_not_found", Status: 404, Header: hdr("x-amzn-ErrorType", "ResourceNotFoundException"), Body: `{"message":"The guardrail identifier or version provided does not exist."}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "404:ResourceNotFoundException"}},
	}
	probestest.Conformance(t, guardrailProber, probestest.Probe, cases)
}

// TestWirePath checks that the model id is URL-encoded on the wire and that
// Request.Path is exactly what the server receives.
func TestWirePath(t *testing.T) {
	c := probestest.Case{Fixture: "converse_end_turn.json"}
	srv := probestest.NewReplay(t, c)
	arn := "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0"
	for _, tc := range []struct{ endpoint, model, want string }{
		{EndpointChat, testModel, "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"},
		{EndpointChat, arn, "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"},
		{EndpointGuardrail, testModel, "/guardrail/gr1abc2def3g/version/3/apply"},
	} {
		tg := target(tc.endpoint, srv.URL)
		tg.Model = tc.model
		p := newProber(t, tg)
		req, _ := probestest.Do(t, p, probestest.Probe)
		if req.Path != tc.want {
			t.Errorf("Request.Path = %s, want %s", req.Path, tc.want)
		}
		if got := srv.Last().Path; got != req.Path {
			t.Errorf("server received %s, Request.Path %s", got, req.Path)
		}
		if req.URL != srv.URL+req.Path {
			t.Errorf("URL = %s", req.URL)
		}
	}
}

func TestGolden(t *testing.T) {
	setCreds(t)
	for _, tc := range []struct {
		name string
		tg   probes.Target
	}{
		{"chat", target(EndpointChat, "")},
		{"chat_no_guardrail", func() probes.Target {
			tg := target(EndpointChat, "")
			tg.Options = map[string]string{OptRegion: "eu-central-1"}
			tg.Model = "arn:aws:bedrock:eu-central-1:123456789012:inference-profile/eu.anthropic.claude-3-haiku-20240307-v1:0"
			tg.Temperature = 0.7
			return tg
		}()},
		{"guardrail", target(EndpointGuardrail, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProber(t, tc.tg)
			req, err := p.Render(probestest.Probe)
			if err != nil {
				t.Fatal(err)
			}
			probestest.Golden(t, tc.name, req)
		})
	}
}

func TestStable(t *testing.T) {
	for _, ep := range []string{EndpointChat, EndpointGuardrail} {
		t.Run(ep, func(t *testing.T) {
			p := newProber(t, target(ep, ""))
			probestest.Stable(t, func() (*probes.Request, error) { return p.Render(probestest.Probe) })
		})
	}
}

func TestRender(t *testing.T) {
	p := newProber(t, target(EndpointChat, ""))
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	if req.URL != "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse" {
		t.Errorf("default URL = %s", req.URL)
	}
	want := `{"messages":[{"role":"user","content":[{"text":"Is <b>\"5 > 3\"</b> & 'true'? こんにちは"}]}],"system":[{"text":"You are a careful assistant."}],"inferenceConfig":{"maxTokens":256,"temperature":0},"guardrailConfig":{"guardrailIdentifier":"gr1abc2def3g","guardrailVersion":"3","trace":"enabled"}}`
	if string(req.Body) != want {
		t.Errorf("body:\n%s\nwant\n%s", req.Body, want)
	}
	if _, err := p.Render(probes.Probe{Messages: []probes.Message{{Role: "tool", Content: "x"}}}); err == nil {
		t.Error("tool role accepted")
	}
	if _, err := p.Render(probes.Probe{Messages: []probes.Message{{Role: "system", Content: "x"}}}); err == nil {
		t.Error("probe without user message accepted")
	}
	g := newProber(t, target(EndpointGuardrail, ""))
	req, err = g.Render(probes.Probe{Messages: []probes.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}, {Role: "user", Content: "c"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"source":"INPUT","content":[{"text":{"text":"a"}},{"text":{"text":"c"}}]}`; string(req.Body) != want {
		t.Errorf("guardrail body %s, want %s", req.Body, want)
	}
}

func TestEscapeLabel(t *testing.T) {
	for in, want := range map[string]string{
		"amazon.titan-text-express-v1":        "amazon.titan-text-express-v1",
		"anthropic.claude-v2:1":               "anthropic.claude-v2%3A1",
		"a/b c~d_e":                           "a%2Fb%20c~d_e",
		"arn:aws:bedrock:us-east-1:1:x/y.z-1": "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ax%2Fy.z-1",
	} {
		if got := EscapeLabel(in); got != want {
			t.Errorf("EscapeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// awsURIEncode is an independent implementation of SigV4's URI encoding
// (everything but unreserved characters and '/').
func awsURIEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

var authRe = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

// expectedSignature recomputes the SigV4 signature of a received request
// from scratch (canonical request, string to sign, derived key), as AWS
// would on the server.
func expectedSignature(r *http.Request, body []byte, signed []string) string {
	var canonHeaders strings.Builder
	for _, h := range signed {
		v := r.Header.Get(h)
		if h == "host" {
			v = r.Host
		}
		fmt.Fprintf(&canonHeaders, "%s:%s\n", h, strings.TrimSpace(v))
	}
	bodySum := sha256.Sum256(body)
	canon := strings.Join([]string{
		r.Method,
		awsURIEncode(r.URL.EscapedPath()), // the wire path, escaped once more
		r.URL.RawQuery,
		canonHeaders.String(),
		strings.Join(signed, ";"),
		hex.EncodeToString(bodySum[:]),
	}, "\n")
	amzDate := r.Header.Get("X-Amz-Date")
	day := amzDate[:8]
	scope := day + "/us-east-1/bedrock/aws4_request"
	canonSum := sha256.Sum256([]byte(canon))
	sts := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(canonSum[:])
	k := hmacSHA256([]byte("AWS4"+testSecret), day)
	k = hmacSHA256(k, "us-east-1")
	k = hmacSHA256(k, "bedrock")
	k = hmacSHA256(k, "aws4_request")
	return hex.EncodeToString(hmacSHA256(k, sts))
}

func TestSigV4(t *testing.T) {
	type seen struct {
		auth, path, canonPath string
		signed                []string
		sigOK                 bool
		token                 string
		date                  string
	}
	var got seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = seen{auth: r.Header.Get("Authorization"), path: r.URL.EscapedPath(), canonPath: awsURIEncode(r.URL.EscapedPath()),
			token: r.Header.Get("X-Amz-Security-Token"), date: r.Header.Get("X-Amz-Date")}
		if m := authRe.FindStringSubmatch(got.auth); m != nil {
			got.signed = strings.Split(m[5], ";")
			got.sigOK = m[6] == expectedSignature(r, body, got.signed)
		}
		w.Header().Set("x-amzn-RequestId", reqID)
		w.Write([]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`))
	}))
	defer srv.Close()

	p := newProber(t, target(EndpointChat, srv.URL))
	req, res := probestest.Do(t, p, probestest.Probe)
	if res.Class != probes.Allowed {
		t.Fatalf("class %s (%s)", res.Class, res.Reason)
	}
	m := authRe.FindStringSubmatch(got.auth)
	if m == nil {
		t.Fatalf("Authorization header %q is not SigV4", got.auth)
	}
	if m[1] != testAKID || m[2] != "20250512" || m[3] != "us-east-1" || m[4] != "bedrock" {
		t.Errorf("credential scope = %s/%s/%s/%s, want %s/20250512/us-east-1/bedrock", m[1], m[2], m[3], m[4], testAKID)
	}
	for _, h := range []string{"host", "x-amz-date", "x-amz-security-token"} {
		if !strings.Contains(";"+m[5]+";", ";"+h+";") {
			t.Errorf("SignedHeaders %q lacks %s", m[5], h)
		}
	}
	if got.date != "20250512T111155Z" {
		t.Errorf("X-Amz-Date = %q (signing clock not pinned?)", got.date)
	}
	if got.token != testToken {
		t.Errorf("X-Amz-Security-Token not sent")
	}
	if got.path != req.Path || !strings.Contains(got.path, "%3A") {
		t.Errorf("wire path %s, Request.Path %s", got.path, req.Path)
	}
	if !strings.Contains(got.canonPath, "%253A") {
		t.Errorf("canonical path %s should double-encode ':'", got.canonPath)
	}
	if !got.sigOK {
		t.Errorf("signature does not match an independent SigV4 computation over the wire path and body")
	}

	// The signature covers the body: same request, other body bytes, other
	// signature; identical bytes at the pinned time, identical signature.
	sign := func(body string) string {
		hr, err := http.NewRequest(http.MethodPost, req.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		hr.Header.Set("Content-Type", "application/json")
		if err := p.Authorize(context.Background(), hr); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(hr.Body)
		if string(b) != body {
			t.Errorf("Authorize consumed the body: %q", b)
		}
		return hr.Header.Get("Authorization")
	}
	a1, a2, b1 := sign(string(req.Body)), sign(string(req.Body)), sign(string(req.Body)+" ")
	if a1 != a2 {
		t.Errorf("signature not deterministic at a pinned time")
	}
	if a1 == b1 {
		t.Errorf("signature does not cover the body")
	}
	if a1 != got.auth {
		t.Errorf("re-signing the same request gave another Authorization header")
	}
}

func TestBearerAPIKey(t *testing.T) {
	t.Setenv(EnvAccessKeyID, "")
	t.Setenv(EnvSecretAccessKey, "")
	tg := target(EndpointChat, "https://example.invalid")
	tg.APIKey = "ABSKbedrockapikeyEXAMPLE"
	pr, err := New(tg)
	if err != nil {
		t.Fatal(err)
	}
	hr, _ := http.NewRequest(http.MethodPost, "https://example.invalid/model/x/converse", strings.NewReader("{}"))
	if err := pr.(*Prober).Authorize(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	if hr.Header.Get("Authorization") != "Bearer ABSKbedrockapikeyEXAMPLE" || hr.Header.Get("X-Amz-Date") != "" {
		t.Errorf("headers %v", hr.Header)
	}
}

// unsetCreds removes the SigV4 variables for the test (restored after it).
func unsetCreds(t *testing.T) {
	t.Helper()
	for _, k := range []string{EnvAccessKeyID, EnvSecretAccessKey, EnvSessionToken} {
		t.Setenv(k, "") // registers the restore
		os.Unsetenv(k)
	}
}

// TestMissingCredentials: a prober built to send without SigV4 credentials
// says which variable(s) are missing, through CredentialsError (checked by
// app.BuildTargets right after New) and Authorize, which signs nothing.
func TestMissingCredentials(t *testing.T) {
	for _, c := range []struct {
		name          string
		akid, secret  string
		want, notWant []string
	}{
		{"none", "", "", []string{EnvAccessKeyID, EnvSecretAccessKey}, nil},
		{"no_access_key", "", testSecret, []string{EnvAccessKeyID}, []string{EnvSecretAccessKey}},
		{"no_secret", testAKID, "", []string{EnvSecretAccessKey}, []string{EnvAccessKeyID}},
	} {
		t.Run(c.name, func(t *testing.T) {
			unsetCreds(t)
			if c.akid != "" {
				t.Setenv(EnvAccessKeyID, c.akid)
			}
			if c.secret != "" {
				t.Setenv(EnvSecretAccessKey, c.secret)
			}
			pr, err := New(target(EndpointChat, ""))
			if err != nil {
				t.Fatalf("New without credentials: %v (rendering needs none)", err)
			}
			p := pr.(*Prober)
			cerr := p.CredentialsError()
			if cerr == nil {
				t.Fatal("CredentialsError = nil without credentials")
			}
			hr, _ := http.NewRequest(http.MethodPost, "https://example.invalid/model/x/converse", strings.NewReader("{}"))
			aerr := p.Authorize(context.Background(), hr)
			if aerr == nil || aerr.Error() != cerr.Error() {
				t.Errorf("Authorize = %v, want %v", aerr, cerr)
			}
			if hr.Header.Get("Authorization") != "" || hr.Header.Get("X-Amz-Date") != "" {
				t.Errorf("signed without credentials: %v", hr.Header)
			}
			for _, v := range c.want {
				if !strings.Contains(cerr.Error(), v) {
					t.Errorf("error %q does not name %s", cerr, v)
				}
			}
			for _, v := range c.notWant {
				if strings.Contains(cerr.Error(), v) {
					t.Errorf("error %q names %s, which is set", cerr, v)
				}
			}
			if strings.Contains(cerr.Error(), testSecret) || strings.Contains(cerr.Error(), testAKID) {
				t.Fatal("error leaks a credential")
			}
		})
	}
	// With credentials, or with a Bedrock API key, there is nothing missing.
	setCreds(t)
	withKey := target(EndpointChat, "")
	withKey.APIKey = "ABSKbedrockapikeyEXAMPLE"
	for i, tg := range []probes.Target{target(EndpointChat, ""), withKey} {
		if i == 1 {
			unsetCreds(t) // the API key alone is enough
		}
		pr, err := New(tg)
		if err != nil {
			t.Fatalf("%d: New: %v", i, err)
		}
		if err := pr.(*Prober).CredentialsError(); err != nil {
			t.Errorf("%d: CredentialsError = %v, want nil", i, err)
		}
	}
}

// TestRenderWithoutCredentials: plan --no-keys and replay build probers on
// machines without AWS credentials. Such a prober renders the same bytes
// (same fingerprint) as one holding credentials, and reads answers alike.
func TestRenderWithoutCredentials(t *testing.T) {
	for _, endpoint := range []string{EndpointChat, EndpointGuardrail} {
		t.Run(endpoint, func(t *testing.T) {
			with := newProber(t, target(endpoint, ""))
			unsetCreds(t)
			pr, err := New(target(endpoint, ""))
			if err != nil {
				t.Fatalf("New without credentials: %v", err)
			}
			without := pr.(*Prober)
			a, err := with.Render(probestest.Probe)
			if err != nil {
				t.Fatal(err)
			}
			b, err := without.Render(probestest.Probe)
			if err != nil {
				t.Fatal(err)
			}
			if a.SHA256() != b.SHA256() || a.URL != b.URL || !bytes.Equal(a.Body, b.Body) || fmt.Sprint(a.Header) != fmt.Sprint(b.Header) {
				t.Errorf("renders differ:\n with    %s %s %v %s\n without %s %s %v %s", a.URL, a.SHA256(), a.Header, a.Body, b.URL, b.SHA256(), b.Header, b.Body)
			}
			fixture := "converse_guardrail_input.json"
			if endpoint == EndpointGuardrail {
				fixture = "apply_guardrail_intervened.json"
			}
			body, err := os.ReadFile(filepath.Join("testdata", fixture))
			if err != nil {
				t.Fatal(err)
			}
			for _, resp := range []*probes.Response{
				{Status: 200, Body: body}, // replay: no headers
				{Status: 200, Header: http.Header{"X-Amzn-Requestid": {reqID}}, Body: body},
				{Status: 429, Header: http.Header{"X-Amzn-Errortype": {"ThrottlingException"}}, Body: []byte(`{"message":"Too many requests"}`)},
			} {
				got, want := without.Classify(b, resp), with.Classify(a, resp)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("classify %d differs:\n without %+v\n with    %+v", resp.Status, got, want)
				}
				if resp.Status == 200 && !got.Class.IsVerdict() {
					t.Errorf("classify %s: %s (%s), want a verdict", fixture, got.Class, got.Reason)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	fields := func(tg probes.Target) string {
		var fs []string
		for _, e := range Check(tg) {
			fs = append(fs, e.Field)
		}
		return strings.Join(fs, ",")
	}
	ok := target(EndpointChat, "")
	if f := fields(ok); f != "" {
		t.Errorf("valid target: %s", f)
	}
	noGr := target(EndpointChat, "")
	noGr.Options = map[string]string{OptRegion: "us-gov-west-1"}
	if f := fields(noGr); f != "" {
		t.Errorf("chat without guardrail: %s", f)
	}
	arn := target(EndpointGuardrail, "")
	arn.Options[OptGuardrailID] = "arn:aws:bedrock:us-east-1:123456789012:guardrail/gr1abc2def3g"
	arn.Options[OptGuardrailVersion] = "DRAFT"
	if f := fields(arn); f != "" {
		t.Errorf("guardrail ARN + DRAFT: %s", f)
	}
	for _, tc := range []struct {
		name  string
		mut   func(*probes.Target)
		field string
	}{
		{"no region", func(t *probes.Target) { delete(t.Options, OptRegion) }, "options.region"},
		{"bad region", func(t *probes.Target) { t.Options[OptRegion] = "US East" }, "options.region"},
		{"version only", func(t *probes.Target) { delete(t.Options, OptGuardrailID) }, "options.guardrail_id"},
		{"id only", func(t *probes.Target) { delete(t.Options, OptGuardrailVersion) }, "options.guardrail_version"},
		{"bad version", func(t *probes.Target) { t.Options[OptGuardrailVersion] = "latest" }, "options.guardrail_version"},
		{"bad id", func(t *probes.Target) { t.Options[OptGuardrailID] = "My Guardrail" }, "options.guardrail_id"},
		{"guardrail endpoint no id", func(t *probes.Target) {
			t.Endpoint = EndpointGuardrail
			delete(t.Options, OptGuardrailID)
			delete(t.Options, OptGuardrailVersion)
		}, "options.guardrail_id,options.guardrail_version"},
		{"temperature", func(t *probes.Target) { t.Temperature = 1.5 }, "temperature"},
	} {
		tg := target(EndpointChat, "")
		tc.mut(&tg)
		if f := fields(tg); f != tc.field {
			t.Errorf("%s: fields %q, want %q", tc.name, f, tc.field)
		}
	}
}

func TestRegistered(t *testing.T) {
	info, ok := probes.Lookup("bedrock")
	if !ok {
		t.Fatal("bedrock not registered")
	}
	if strings.Join(info.Endpoints, ",") != "chat,guardrail" || strings.Join(info.Options, ",") != "region,guardrail_id,guardrail_version" ||
		info.NeedsKey || info.Check == nil || info.RequestID != "x-amzn-RequestId header" {
		t.Errorf("info = %+v", info)
	}
	// The SigV4 variables sending requires, and only those (the session
	// token is optional), so config validation reports them before a run
	// starts.
	if got, want := strings.Join(info.CredentialEnv, ","), EnvAccessKeyID+","+EnvSecretAccessKey; got != want || info.CredentialAlt == "" {
		t.Errorf("CredentialEnv = %q (alt %q), want %q and an alternative", got, info.CredentialAlt, want)
	}
}

// TestSecretsNeverStored checks that neither the secret key nor the session
// token (nor a Bedrock API key) appears in a Request or in any Result field,
// including when AWS echoes the canonical request in a signature error.
func TestSecretsNeverStored(t *testing.T) {
	echo := fmt.Sprintf(`{"message":"The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.\n\nThe Canonical String for this request should have been\n'POST\n/model/x/converse\n\nhost:bedrock-runtime.us-east-1.amazonaws.com\nx-amz-date:20250512T111155Z\nx-amz-security-token:%s\n\nhost;x-amz-date;x-amz-security-token\nabc'\n(secret %s)"}`, testToken, testSecret)
	bodies := []probestest.Case{
		{Name: "sig_mismatch", Status: 403, Header: hdr("x-amzn-ErrorType", "InvalidSignatureException"), Body: echo},
		{Name: "sig_mismatch_access_denied", Status: 403, Header: hdr("x-amzn-ErrorType", "AccessDeniedException"), Body: echo},
		{Name: "guardrail_text", Fixture: "converse_guardrail_input.json"},
		{Name: "throttle", Status: 429, Header: hdr("x-amzn-ErrorType", "ThrottlingException"), Body: echo},
	}
	for _, ep := range []string{EndpointChat, EndpointGuardrail} {
		for _, c := range bodies {
			t.Run(ep+"/"+c.Name, func(t *testing.T) {
				srv := probestest.NewReplay(t, c)
				p := newProber(t, target(ep, srv.URL))
				req, res := probestest.Do(t, p, probestest.Probe)
				rj, _ := json.Marshal(req)
				resj, _ := json.Marshal(res)
				all := string(rj) + fmt.Sprintf("%+v %+v %s", req, res, resj) + string(probestest.Dump(req))
				for _, sec := range []string{testSecret, testToken} {
					if strings.Contains(all, sec) {
						t.Errorf("secret %q leaked into Request/Result: %s", sec[:8], all)
					}
				}
				// The wire request carried them (signature + token header),
				// which is where they belong.
				if srv.Last().Header.Get("X-Amz-Security-Token") != testToken {
					t.Errorf("token not sent on the wire")
				}
				raw, _ := io.ReadAll(bytes.NewReader(p.Redact([]byte(echo))))
				if bytes.Contains(raw, []byte(testToken)) || bytes.Contains(raw, []byte(testSecret)) {
					t.Errorf("Redact left a secret in the body")
				}
			})
		}
	}
}

// TestUnknownSanitized: provider-controlled values recorded in Unknown
// (stop reason, guardrail action, filter types and confidences, new
// assessment keys, error type) never carry the comma storage joins the
// list with, nor a control character.
func TestUnknownSanitized(t *testing.T) {
	setCreds(t)
	chat, guard := chatProber(t, "https://bedrock.invalid").(*Prober), guardrailProber(t, "https://bedrock.invalid").(*Prober)
	for _, c := range []struct {
		p      *Prober
		status int
		header http.Header
		body   string
		want   []string
	}{
		{chat, 200, nil, `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"brand,new\nreason","usage":{"inputTokens":1,"outputTokens":1}}`,
			[]string{"stop_reason:brand_new_reason"}},
		{guard, 200, nil, `{"action":"GUARDRAIL_INTERVENED","assessments":[{"contentPolicy":{"filters":[{"action":"BLOCKED","confidence":"EXTREME,\tX","type":"SELF,HARM"}]},"brand,New":{}}],"outputs":[]}`,
			[]string{"confidence:EXTREME__X", "filter_type:SELF_HARM", "assessment_key:brand_New"}},
		{guard, 200, nil, `{"action":"GUARDRAIL,WARNED","assessments":[]}`, []string{"action:GUARDRAIL_WARNED"}},
		{guard, 502, http.Header{"X-Amzn-Errortype": {"Brand,NewException"}}, `{"message":"x"}`, []string{"error_type:Brand_NewException"}},
	} {
		h := c.header
		if h == nil {
			h = http.Header{}
		}
		r := c.p.Classify(nil, &probes.Response{Status: c.status, Header: h, Body: []byte(c.body)})
		for _, u := range r.Unknown {
			if strings.ContainsAny(u, ",\n\r\t") {
				t.Errorf("unsanitized Unknown entry %q in %q", u, r.Unknown)
			}
		}
		probestest.Check(t, r, probestest.Want{Class: r.Class, Stage: r.Stage, Unknown: c.want, NoCheckCategories: true, Heuristic: r.Heuristic})
	}
}

// TestConverseSkeleton: a Converse answer without a stop reason, or with a
// normal stop reason but no output.message.content, is not an answer (it
// used to be stored allowed); a block needs no output.
func TestConverseSkeleton(t *testing.T) {
	malformed := probestest.Want{Class: probes.Transient, Reason: "malformed_response", RequestID: reqID}
	cases := []probestest.Case{
		{Name: "output_empty_object", Body: `{"output":{}}`, Want: malformed},
		{Name: "message_and_stop_null", Body: `{"output":{"message":null},"stopReason":null}`, Want: malformed},
		{Name: "stop_only", Body: `{"stopReason":"end_turn"}`, Want: malformed},
		{Name: "stop_empty_string", Body: `{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":""}`, Want: malformed},
		{Name: "no_stop_reason", Body: `{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"usage":{"inputTokens":1,"outputTokens":1}}`, Want: malformed},
		{Name: "content_absent", Body: `{"output":{"message":{"role":"assistant"}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":0}}`, Want: malformed},
		{Name: "content_null_unknown_stop", Body: `{"output":{"message":{"role":"assistant","content":null}},"stopReason":"brand_new_reason"}`, Want: malformed},
		{Name: "output_wrong_type", Body: `{"output":"hello","stopReason":"end_turn"}`, Want: malformed},
		{Name: "content_wrong_type", Body: `{"output":{"message":{"role":"assistant","content":"hello"}},"stopReason":"max_tokens"}`, Want: malformed},
		// An empty content array is an (empty) answer, as an empty
		// completion is for the other adapters.
		{Name: "content_empty_array", Body: `{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":0}}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn"}},
		// Blocks keep working with or without output.
		{Name: "guardrail_stop_only", Body: `{"stopReason":"guardrail_intervened"}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "guardrail_intervened"}},
		{Name: "guardrail_null_message_no_output_tokens", Body: `{"output":{"message":null},"stopReason":"guardrail_intervened","usage":{"inputTokens":0,"outputTokens":0}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "guardrail_intervened"}},
		{Name: "content_filtered_stop_only", Body: `{"stopReason":"content_filtered"}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "content_filtered"}},
		{Name: "guardrail_output_wrong_type", Body: `{"output":{"message":{"content":"blocked"}},"stopReason":"guardrail_intervened","usage":{"inputTokens":3,"outputTokens":0}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "guardrail_intervened", Unknown: []string{"output:bad_type"}}},
		{Name: "context_window_stop_only", Body: `{"stopReason":"model_context_window_exceeded"}`,
			Want: probestest.Want{Class: probes.ClientError, Reason: "model_context_window_exceeded"}},
	}
	for i := range cases {
		cases[i].Header = hdr()
	}
	probestest.Conformance(t, chatProber, probestest.Probe, cases)
}

// TestBookkeepingBadType: a wrongly typed bookkeeping field (token counts,
// latency, model id, role, message text) is noted in Unknown and never
// turns a clear answer into malformed_response; bookkeeping members of an
// assessment never drop its signals.
func TestBookkeepingBadType(t *testing.T) {
	chat := []probestest.Case{
		{Name: "qa_guardrail_input_tokens_string", Body: `{"output":{"message":{"content":[{"text":"Sorry, the model cannot answer this question."}],"role":"assistant"}},"stopReason":"guardrail_intervened","usage":{"inputTokens":"10","outputTokens":0,"totalTokens":10}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "guardrail_intervened", TokensIn: 10, Unknown: []string{"usage.inputTokens:bad_type"}}},
		{Name: "qa_guardrail_input_tokens_string_only", Body: `{"stopReason":"guardrail_intervened","usage":{"inputTokens":"10"}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "guardrail_intervened", Unknown: []string{"usage.inputTokens:bad_type"}}},
		{Name: "guardrail_output_tokens_garbage", Body: `{"stopReason":"guardrail_intervened","usage":{"inputTokens":5,"outputTokens":"many"}}`,
			// A count that cannot be read is not read as 0 (model never ran).
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "guardrail_intervened", TokensIn: 5, Unknown: []string{"usage.outputTokens:bad_type"}}},
		{Name: "usage_not_object", Body: `{"output":{"message":{"content":[{"text":""}],"role":"assistant"}},"stopReason":"content_filtered","usage":"lots"}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "content_filtered", Unknown: []string{"usage:bad_type"}}},
		{Name: "end_turn_latency_string", Body: `{"metrics":{"latencyMs":"412"},"output":{"message":{"content":[{"text":"Yes."}],"role":"assistant"}},"stopReason":"end_turn","usage":{"inputTokens":31,"outputTokens":2,"totalTokens":true}}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn", TokensIn: 31, TokensOut: 2, Unknown: []string{"metrics.latencyMs:bad_type", "usage.totalTokens:bad_type"}}},
		{Name: "metrics_not_object", Body: `{"metrics":[412],"output":{"message":{"content":[{"text":"Yes."}],"role":7}},"stopReason":"end_turn"}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn", Unknown: []string{"metrics:bad_type", "output.message.role:bad_type"}}},
		{Name: "invoked_model_id_number", Body: `{"output":{"message":{"content":[{"text":"Yes."}],"role":"assistant"}},"stopReason":"end_turn","trace":{"promptRouter":{"invokedModelId":42}}}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn", ModelID: testModel, Unknown: []string{"trace.promptRouter.invokedModelId:bad_type"}}},
		{Name: "prompt_router_not_object", Body: `{"output":{"message":{"content":[{"text":"Yes."}],"role":"assistant"}},"stopReason":"end_turn","trace":{"promptRouter":"x"}}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "end_turn", ModelID: testModel, Unknown: []string{"trace.promptRouter:bad_type"}}},
		{Name: "action_reason_number", Body: `{"stopReason":"guardrail_intervened","trace":{"guardrail":{"actionReason":5,"inputAssessment":{"g":{"contentPolicy":{"filters":[{"action":"BLOCKED","confidence":"HIGH","type":"VIOLENCE"}]}}}}},"usage":{"inputTokens":0,"outputTokens":0}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Categories: []string{probes.CatViolence}, Reason: "guardrail_intervened", Unknown: []string{"trace.guardrail.actionReason:bad_type"}}},
		// detected, filterStrength and threshold are not read: odd values
		// there keep the assessment (and so the stage: the output tokens
		// alone would say output).
		{Name: "assessment_bookkeeping_odd", Body: `{"output":{"message":{"content":[{"text":"Sorry."}],"role":"assistant"}},"stopReason":"guardrail_intervened","trace":{"guardrail":{"inputAssessment":{"g":{"contentPolicy":{"filters":[{"action":"BLOCKED","confidence":"HIGH","detected":"yes","filterStrength":3,"type":"VIOLENCE"}]},"topicPolicy":{"topics":[{"action":"NONE","detected":1,"name":"Investing","type":0}]},"contextualGroundingPolicy":{"filters":[{"action":"NONE","detected":false,"score":0.9,"threshold":"0.5","type":"GROUNDING"}]}}}}},"usage":{"inputTokens":10,"outputTokens":5}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Categories: []string{probes.CatViolence}, Raw: []string{"contentPolicy.VIOLENCE"},
				Scores: map[string]float64{"contextualGroundingPolicy.GROUNDING": 0.9}, Reason: "guardrail_intervened"}},
		// A grounding score of the wrong type keeps the assessment, and so
		// its stage and category (it used to drop them: blocked_input,
		// no categories, instead of blocked_output, other).
		{Name: "grounding_score_string", Body: `{"stopReason":"guardrail_intervened","trace":{"guardrail":{"outputAssessments":{"g":[{"contextualGroundingPolicy":{"filters":[{"action":"BLOCKED","detected":true,"score":"0.1","threshold":0.5,"type":"GROUNDING"}]}}]}}},"usage":{"inputTokens":10,"outputTokens":0}}`,
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Categories: []string{probes.CatOther}, Reason: "guardrail_intervened",
				Unknown: []string{"contextualGroundingPolicy.filters.score:bad_type"}}},
	}
	for i := range chat {
		chat[i].Header = hdr()
	}
	probestest.Conformance(t, chatProber, probestest.Probe, chat)

	guard := []probestest.Case{
		{Name: "action_reason_and_outputs_odd", Body: `{"action":"GUARDRAIL_INTERVENED","actionReason":5,"outputs":"blocked","assessments":[]}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "GUARDRAIL_INTERVENED", Unknown: []string{"actionReason:bad_type", "outputs:bad_type"}}},
		{Name: "output_text_odd", Body: `{"action":"NONE","outputs":[{"text":7}],"assessments":[]}`,
			Want: probestest.Want{Class: probes.Allowed, Reason: "NONE", Unknown: []string{"outputs.text:bad_type"}}},
		{Name: "assessment_bookkeeping_odd", Body: `{"action":"GUARDRAIL_WARNED","assessments":[{"topicPolicy":{"topics":[{"action":"BLOCKED","detected":"yes","name":"Investing","type":1}]}}]}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Categories: []string{probes.CatOther}, Raw: []string{"topicPolicy.Investing"}, Unknown: []string{"action:GUARDRAIL_WARNED"}}},
	}
	for i := range guard {
		guard[i].Header = hdr()
	}
	probestest.Conformance(t, guardrailProber, probestest.Probe, guard)
}

// TestFixturesNoBadType: the well-formed fixtures note no bookkeeping field.
func TestFixturesNoBadType(t *testing.T) {
	setCreds(t)
	chat, guard := chatProber(t, "https://bedrock.invalid").(*Prober), guardrailProber(t, "https://bedrock.invalid").(*Prober)
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := chat
		if strings.HasPrefix(filepath.Base(f), "apply_") {
			p = guard
		}
		r := p.Classify(nil, &probes.Response{Status: 200, Header: http.Header{}, Body: body})
		if strings.Contains(filepath.Base(f), "429") {
			continue // an error body, not an answer
		}
		if r.Class == probes.Transient {
			t.Errorf("%s: transient (%s)", f, r.Reason)
		}
		for _, u := range r.Unknown {
			if strings.HasSuffix(u, ":bad_type") {
				t.Errorf("%s: %s", f, u)
			}
		}
	}
}
