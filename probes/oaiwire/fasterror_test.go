package oaiwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// errFastSlowDiff reads resp with the fast and the reference reader of an
// error body. It reports whether the fast reader accepted the body and,
// when it did and the results differ (reflect.DeepEqual, so a nil and an
// empty slice differ too), a description of the difference; ClassifyError
// itself must return the reference result as well. Transport errors are
// not compared.
func errFastSlowDiff(resp *probes.Response) (accepted bool, diff string) {
	if resp.Err != nil {
		return false, ""
	}
	now := probestest.FuzzNow
	fast, ok := classifyErrorFast(resp, now)
	slow := classifyErrorSlow(resp, now)
	if orig := classifyErrorOrig(resp, now); !reflect.DeepEqual(slow, orig) {
		return ok, fmt.Sprintf("classifyErrorSlow differs from the ClassifyError it was refactored from on status %d truncated=%v header %v body %q:\nslow: %#v\norig: %#v", resp.Status, resp.Truncated, resp.Header, resp.Body, slow, orig)
	}
	// ClassifyError skips a leading byte order mark (wire.SkipBOM) before it
	// gives the body to the fast reader or the reference.
	if got, ref := ClassifyError(resp, now), classifyErrorSlow(wire.SkipBOM(resp), now); !reflect.DeepEqual(got, ref) {
		return ok, fmt.Sprintf("ClassifyError differs from classifyErrorSlow on status %d truncated=%v header %v body %q:\nClassifyError: %#v\nslow:          %#v", resp.Status, resp.Truncated, resp.Header, resp.Body, got, ref)
	}
	if !ok {
		return false, ""
	}
	if !reflect.DeepEqual(fast, slow) {
		return true, fmt.Sprintf("fast path differs from classifyErrorSlow on status %d truncated=%v header %v body %q:\nfast: %#v\nslow: %#v", resp.Status, resp.Truncated, resp.Header, resp.Body, fast, slow)
	}
	return true, ""
}

// classifyErrorOrig is ClassifyError as it was before the fast path
// (commit e2b8722), verbatim but for the name, retryWaitOrig and the
// gateway rules added since (marked "gateway"; decodeError reads LiteLLM's
// provider_specific_fields.innererror into e.Inner and OpenRouter's
// moderation metadata itself; the invalid-prompt message, first read on
// 4xx but 429 only, is read under any status, marked "any status"; the
// input blocks OpenAI-compatible providers state only in words, marked
// "provider wording"): the
// refactored reference
// (classifyErrorSlow, errorResult, statusReason, innerFilters, RetryWait's
// hasRetryAfter) must still return what it did.
func classifyErrorOrig(resp *probes.Response, now time.Time) probes.Result {
	if resp.Err != nil {
		return wire.Transport(resp)
	}
	r := probes.Result{RequestID: RequestID(resp.Header)}
	e, perr := decodeError(resp.Body)
	if r.RequestID == "" {
		r.RequestID = e.RequestID
	}
	r.RetryAfter = retryWaitOrig(resp.Header, resp.Status, e.Type, now)
	r.Message = e.Message
	r.Reason = strings.Trim(fmt.Sprintf("%d:%s:%s", resp.Status, e.Type, e.Code), ":")
	ok2xx := resp.Status >= 200 && resp.Status < 300
	switch {
	case (resp.Status == 400 || ok2xx) && (e.Code == "content_filter" || (e.Inner != nil && e.Inner.Code == "ResponsibleAIPolicyViolation") || GatewayContentPolicy(e.Message)):
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "content_filter"
		if e.Code != "content_filter" && (e.Inner == nil || e.Inner.Code != "ResponsibleAIPolicyViolation") { // gateway
			r.Reason = "content_policy_violation"
		}
		if e.Inner != nil {
			fs := filterSet{}
			for k, v := range e.Inner.ContentFilterResult {
				fs[k] = v
			}
			for k, v := range e.Inner.ContentFilterResults {
				fs[k] = v
			}
			if readFilters(fs, &r) && !anyFired(r.Signals) {
				// The filter did not run and nothing it did run fired.
				r.Class, r.Stage = probes.FilterUnavailable, probes.StageNone
			}
		}
	case perr != nil && resp.Status == 400 && cutJSON(resp.Body, '{', '"') && bytes.Contains(resp.Body, []byte("content_filter")):
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "content_filter"
		r.Unknown = append(r.Unknown, "unparseable_body")
	case (resp.Status == 400 || ok2xx) && promptBlockCodes[e.Code]:
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, e.Code
	case (resp.Status >= 400 && resp.Status < 500 || ok2xx) && wire.IsAbuse(e.Type, e.Code, e.Message):
		r.Class, r.Stage = probes.AbuseBlock, probes.StageAccount // before the gateway's message rules
	case wire.IsPromptFlagged(e.Message) && !wire.IsAbuse(e.Type, e.Code, e.Message): // gateway; any status
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "invalid_prompt"
	case (resp.Status == 403 || resp.Status == 400 || ok2xx) && IsUsageGuidelinesBlock(e.Message): // provider wording (xAI)
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "safety_check"
		r.Signals, r.Unknown = safetyCheckSignals(e.Message, r.Signals, r.Unknown)
	case (resp.Status == 400 || ok2xx) && IsContentExistsRisk(e.Message): // provider wording (DeepSeek)
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "content_exists_risk"
	case (resp.Status == 403 || resp.Status == 400 || ok2xx) && e.moderation: // gateway
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "moderation"
		r.Signals, r.Unknown = moderationSignals(e.reasons, r.Signals, r.Unknown)
	case resp.Status == 429 && (e.Code == "insufficient_quota" || e.Type == "insufficient_quota"):
		r.Class = probes.ClientError
	case ok2xx:
		r.Class = probes.Transient
		r.Reason = strings.Trim(fmt.Sprintf("error_body:%s:%s", e.Type, e.Code), ":")
	default:
		r.Class = wire.StatusClass(resp.Status)
	}
	if perr != nil && resp.Truncated {
		r.Unknown = append(r.Unknown, "truncated_body")
	}
	return finish(r)
}

// retryWaitOrig is RetryWait before hasRetryAfter (commit e2b8722).
func retryWaitOrig(h http.Header, status int, errType string, now time.Time) time.Duration {
	if d := wire.RetryAfter(h, now); d > 0 {
		return d
	}
	if status != http.StatusTooManyRequests || h == nil {
		return 0
	}
	keys := []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"}
	switch errType {
	case "requests":
		keys = keys[:1]
	case "tokens":
		keys = keys[1:]
	}
	var max time.Duration
	for _, k := range keys {
		v := strings.TrimSpace(h.Get(k))
		d, err := time.ParseDuration(v)
		if err != nil {
			if s, e2 := strconv.ParseFloat(v, 64); e2 == nil {
				d, err = wire.Duration(s, time.Second), nil
			}
		}
		if err == nil && d > max {
			max = d
		}
	}
	return max
}

// checkErrFastSlow is errFastSlowDiff as FuzzClassify's error target
// applies it: a difference panics (see checkFastSlow).
func checkErrFastSlow(resp *probes.Response) {
	if _, diff := errFastSlowDiff(resp); diff != "" {
		panic(diff)
	}
}

// errStatuses and errHeaders are what the table tests read every body
// with: the statuses whose branches differ in ClassifyError, and headers
// without and with a request id, with a Retry-After and with OpenAI's
// rate-limit resets.
var (
	errStatuses = []int{400, 403, 404, 429, 500, 503, 200}
	errHeaders  = []http.Header{
		nil,
		{"X-Request-Id": {"req_1"}},
		{"Retry-After": {"3"}, "Apim-Request-Id": {"apim-1"}},
		{"X-Ratelimit-Reset-Requests": {"1s"}, "X-Ratelimit-Reset-Tokens": {"6m0s"}},
	}
)

// plainErrorFixtures are the recorded error bodies the fast path must
// accept (read as sent): the simulator's content_filter 400, OpenAI's, and
// both of Azure's documented bodies (which need ParseLenient's repairs).
var plainErrorFixtures = []string{
	"testdata/error_400_sim.json",
	"../openai/testdata/error_400_invalid_prompt_observed.json",
	"../openai/testdata/error_429_rate_limit_tokens.json",
	"../openai/testdata/error_429_rate_limit_tokens_2023.json",
	"../openaicompat/testdata/error_429_rate_limit_tokens.json",
	"../azure/testdata/prompt_filtered_400_docs_fragment.json",
	"../azure/testdata/prompt_filtered_400_innererror_docs_legacy.json",
}

// TestFastErrorFixtures compares the fast and the reference reader on every
// fixture body (chat and moderation answers included: they read as bodies
// without an error), whole and cut, under every status and header of
// errStatuses and errHeaders, truncated or not.
func TestFastErrorFixtures(t *testing.T) {
	accepted := map[string]bool{}
	eachFixture(t, func(path string, body []byte) {
		for _, b := range [][]byte{body, body[:len(body)/2], body[:len(body)*9/10], body[:max(len(body)-1, 0)]} {
			for _, st := range errStatuses {
				for hi, h := range errHeaders {
					for _, tr := range []bool{false, true} {
						ok, diff := errFastSlowDiff(&probes.Response{Status: st, Header: h, Body: b, Truncated: tr})
						if diff != "" {
							t.Errorf("%s: %s", path, diff)
						}
						if ok && len(b) == len(body) && st == 400 && hi == 0 && !tr {
							accepted[filepath.ToSlash(path)] = true
						}
					}
				}
			}
		}
	})
	for _, p := range plainErrorFixtures {
		if !accepted[p] {
			t.Errorf("%s: the fast path declined a plain error body", p)
		}
	}
}

// TestFastErrorVerdicts pins what the fixtures the fast path must read
// classify as, so that both readers agreeing on something else fails too.
func TestFastErrorVerdicts(t *testing.T) {
	for _, c := range []struct {
		path   string
		status int
		class  probes.Class
		reason string
		cats   []string
		sigs   int
	}{
		{"testdata/error_400_sim.json", 400, probes.BlockedInput, "content_filter", []string{"violence"}, 9},
		{"../azure/testdata/prompt_filtered_400_innererror_docs_legacy.json", 400, probes.BlockedInput, "content_filter", []string{"hate", "self_harm", "violence"}, 4},
		{"../azure/testdata/prompt_filtered_400_docs_fragment.json", 400, probes.BlockedInput, "content_filter", nil, 0},
		{"../openai/testdata/error_400_invalid_prompt_observed.json", 400, probes.BlockedInput, "invalid_prompt", nil, 0},
		{"../openai/testdata/error_429_rate_limit_tokens.json", 429, probes.Transient, "429:tokens:rate_limit_exceeded", nil, 0},
		{"../openaicompat/testdata/litellm_400_azure_content_policy.json", 400, probes.BlockedInput, "content_policy_violation", nil, 0},
		{"../openaicompat/testdata/litellm_400_openai_invalid_prompt.json", 400, probes.BlockedInput, "invalid_prompt", nil, 0},
	} {
		body, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		resp := &probes.Response{Status: c.status, Body: body}
		r, ok := classifyErrorFast(resp, probestest.FuzzNow)
		if !ok {
			t.Errorf("%s: declined", c.path)
			continue
		}
		if r.Class != c.class || r.Reason != c.reason || !reflect.DeepEqual(r.Categories, c.cats) || len(r.Signals) != c.sigs || r.Message == "" {
			t.Errorf("%s: %+v", c.path, r)
		}
	}
}

// TestFastErrorEdgeCases compares the two readers on hand-written bodies
// under every status and header of errStatuses and errHeaders; accept says
// whether the fast reader must accept (true) or decline (false).
func TestFastErrorEdgeCases(t *testing.T) {
	const yes, no = true, false
	sim, err := os.ReadFile("testdata/error_400_sim.json")
	if err != nil {
		t.Fatal(err)
	}
	entry := `{"filtered":true,"severity":"high","score":0.9}`
	safe := `{"filtered":false,"severity":"safe","score":0.01}`
	cf := func(inner string) string {
		return `{"error":{"message":"filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":` + inner + `}}`
	}
	cases := []struct {
		name   string
		body   string
		accept bool
	}{
		{"sim", string(sim), yes},
		{"openai", `{"error":{"message":"m","type":"t","code":"c","param":null}}`, yes},
		{"code number", `{"error":{"message":"m","type":null,"code":429}}`, yes},
		{"code float and type bool", `{"error":{"message":"m","type":true,"code":-1.5e3}}`, yes},
		{"message object", `{"error":{"message":{ "a" : [ 1, 2 ], "b":"x y" },"type":"t"}}`, yes},
		{"message array", `{"error":{"message":[ 1 , "x\ty" ]}}`, yes},
		{"message false", `{"error":{"message":false}}`, yes},
		{"message escaped", `{"error":{"message":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \n","code":"content_\u0066ilter"}}`, yes},
		{"message unicode", `{"error":{"message":"内容被过滤 🌍","code":"content_filter"}}`, yes},
		{"message long", `{"error":{"message":"` + strings.Repeat("é", 2000) + `","code":"x"}}`, yes},
		{"error string", `{"error":"plain"}`, yes},
		{"error empty string", `{"error":"","message":"top","type":"t"}`, yes},
		{"error null", `{"error":null,"message":"m","type":"t","code":"c"}`, yes},
		{"error number", `{"error":5,"message":"m","code":"content_filter"}`, yes},
		{"error array", `{"error":[{"message":"x"}],"detail":"d"}`, yes},
		{"error bool", `{"error":true}`, yes},
		{"error object empty", `{"error":{},"message":"top","type":"tt","code":"cc"}`, yes},
		{"error object fallbacks", `{"error":{"message":"","type":null},"message":"top","type":"tt","code":"content_filter"}`, yes},
		{"error before and after top", `{"message":"top","error":{"message":"inner"},"type":"t2"}`, yes},
		{"mistral", `{"object":"error","message":"Unauthorized","type":"invalid_request_error","param":null,"code":null,"request_id":"r1"}`, yes},
		{"mistral object message", `{"message":{"detail":[1]},"type":"invalid_request_message","code":3001}`, yes},
		{"detail", `{"detail":"Not Found"}`, yes},
		{"detail fastapi", `{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}`, yes},
		{"request id number", `{"request_id":5,"message":"m"}`, yes},
		{"request id long", `{"request_id":"` + strings.Repeat("r", 300) + `","message":"m"}`, yes},
		{"request id null", `{"request_id":null}`, yes},
		{"top null", `null`, yes},
		{"top null spaced", " \n null \t", yes},
		{"empty object", `{}`, yes},
		{"whitespace", " \t\r\n{ \"error\" : { \"message\" : \"m\" , \"code\" : \"content_filter\" } } \n", yes},
		{"unknown keys", `{"x":{"y":[1,{"z":null}]},"error":{"status":400,"param":{"a":1},"extra":[true],"message":"m","code":"invalid_prompt"},"object":"error"}`, yes},
		{"abuse", `{"error":{"message":"Your account has been suspended.","type":"access_terminated","code":"account_suspended"}}`, yes},
		{"abuse message", `{"error":{"message":"This organization has been disabled for abuse_detected reasons.","type":"invalid_request_error"}}`, yes},
		{"insufficient quota", `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, yes},
		{"requests type", `{"error":{"message":"Rate limit","type":"requests","code":"rate_limit_exceeded"}}`, yes},
		{"content policy", `{"error":{"message":"m","type":"invalid_request_error","code":"content_policy_violation"}}`, yes},
		{"trailing colons", `{"error":{"message":"m","type":":a:","code":"b::"}}`, yes},
		{"innererror null", cf(`null`), yes},
		{"innererror empty", cf(`{}`), yes},
		{"innererror rai only", `{"error":{"message":"m","code":"invalid","innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"sexual":` + entry + `}}}}`, yes},
		{"innererror other code", `{"error":{"message":"m","code":"invalid","innererror":{"code":"Other","content_filter_result":{"sexual":` + entry + `}}}}`, yes},
		{"innererror code null", cf(`{"code":null,"content_filter_result":{"hate":` + entry + `}}`), yes},
		{"innererror unknown keys", cf(`{"code":"ResponsibleAIPolicyViolation","x":{"content_filter_result":[]},"content_filter_result":{"hate":` + entry + `}}`), yes},
		{"singular", cf(`{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"violence":` + entry + `,"hate":` + safe + `,"sexual":{"filtered":false,"severity":"low"}}}`), yes},
		{"plural", cf(`{"code":"ResponsibleAIPolicyViolation","content_filter_results":{"self-harm":` + entry + `,"hate":` + safe + `}}`), yes},
		{"both disjoint", cf(`{"content_filter_results":{"violence":` + entry + `,"hate":` + safe + `},"content_filter_result":{"sexual":` + entry + `,"jailbreak":{"filtered":true,"detected":true}}}`), yes},
		{"both one null", cf(`{"content_filter_results":null,"content_filter_result":{"sexual":` + entry + `}}`), yes},
		{"sets null", cf(`{"content_filter_result":null}`), yes},
		{"sets empty", cf(`{"content_filter_result":{},"content_filter_results":{}}`), yes},
		{"nothing fired", cf(`{"content_filter_result":{"hate":` + safe + `,"violence":{"filtered":false}}}`), yes},
		{"detected", cf(`{"content_filter_result":{"jailbreak":{"filtered":true,"detected":true},"indirect_attack":{"filtered":false,"detected":false},"protected_material_code":{"filtered":false,"detected":null}}}`), yes},
		{"odd names", cf(`{"content_filter_result":{"Brand_New,x":{"filtered":true,"severity":"extreme\nly"},"HATE":{"filtered":false},"Self-Harm":{"severity":"high"},"Error":{"filtered":true},"":{"filtered":true}}}`), yes},
		{"filter nulls", cf(`{"content_filter_result":{"hate":{"filtered":null,"detected":null,"severity":null,"score":null,"error":null}}}`), yes},
		{"filter empty entry", cf(`{"content_filter_result":{"hate":{}}}`), yes},
		{"filter unknown entry key", cf(`{"content_filter_result":{"hate":{"filtered":true,"x":[1],"citation":{"URL":"u"}}}}`), yes},
		{"filter scores", cf(`{"content_filter_result":{"hate":{"score":1},"sexual":{"score":-1.5e-3},"violence":{"score":1e-400},"illicit":{"score":0.123456789012345678}}}`), yes},
		{"prompt block 2xx", `{"error":{"message":"m","code":"content_filter","innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":` + entry + `}}}}`, yes},
		{"escaped key", `{"\u0065rror":{"m\u0065ssage":"m","code":"content_filter"}}`, yes},
		{"raw newline", "{\"error\":{\"message\":\"line one\n   line two\",\"code\":\"content_filter\"}}", yes},
		{"raw tab and cr", "{\"error\":{\"message\":\"a\tb\r\nc\",\"type\":\"t\tt\"}}", yes},
		{"raw newline in filters", "{\"error\":{\"code\":\"content_filter\",\"innererror\":{\"content_filter_result\":{\"hate\":{\"filtered\":true,\"severity\":\"hi\ngh\"}}}}}", yes},
		{"missing braces", `"error": {"message": "The response was filtered", "code": "content_filter"}`, yes},
		{"missing braces spaced", " \n \"error\": {\"message\": \"m\", \"code\": \"invalid_prompt\"} \n", yes},
		{"missing braces nbsp", "\u00a0\"error\":\"x\"", yes},
		{"missing braces raw newline", "\"error\": {\"message\": \"a\nb\", \"code\": \"content_filter\"}", yes},
		{"missing braces string", `"error":"x"`, yes},
		{"missing braces two members", `"message":"m","type":"t"`, yes},

		{"empty body", ``, no},
		{"spaces", ` `, no},
		{"html", `<html><body>content_filter</body></html>`, no},
		{"top array", `[{"error":{"message":"x"}}]`, no},
		{"top string", `"x"`, no},
		{"top number", `5`, no},
		{"trailing garbage", `{"error":"x"}x`, no},
		{"two values", `{"error":"x"} {}`, no},
		{"truncated", `{"error":{"message":"filtered","code":"content_filter"`, no},
		{"truncated innererror", `{"error":{"message":"filtered","code":"content_filter","innererror":{"code":"Respo`, no},
		{"invalid utf8", "{\"error\":{\"message\":\"\xff\",\"code\":\"content_filter\"}}", no},
		{"invalid utf8 skipped", "{\"x\":\"\xff\",\"error\":{\"message\":\"m\"}}", no},
		{"lone surrogate", `{"error":{"message":"\ud800"}}`, no},
		{"duplicate top", `{"error":"a","error":"b"}`, no},
		{"duplicate message", `{"error":{"message":"a","message":"b"}}`, no},
		{"duplicate unknown", `{"x":1,"x":2,"error":"a"}`, no},
		{"duplicate escaped", `{"error":"a","\u0065rror":"b"}`, no},
		{"duplicate filter", cf(`{"content_filter_result":{"hate":` + entry + `,"hate":` + safe + `}}`), no},
		{"duplicate in message object", `{"message":{"a":1,"a":2}}`, no},
		{"folded top", `{"Error":{"message":"m"}}`, no},
		{"folded message", `{"MESSAGE":"m"}`, no},
		{"folded detail", `{"Detail":"d"}`, no},
		{"folded request id", `{"Request_ID":"r"}`, no},
		{"long s fold", "{\"requeſt_id\":\"r\"}", no},
		{"kelvin-free fold", "{\"error\":{\"meſſage\":\"m\"}}", no},
		{"folded error field", `{"error":{"Code":"content_filter"}}`, no},
		{"folded param", `{"error":{"PARAM":"x"}}`, no},
		{"folded innererror", `{"error":{"code":"content_filter","InnerError":{"code":"ResponsibleAIPolicyViolation"}}}`, no},
		{"folded inner code", cf(`{"CODE":"ResponsibleAIPolicyViolation"}`), no},
		{"folded set", cf(`{"Content_Filter_Result":{"hate":` + entry + `}}`), no},
		{"folded entry key", cf(`{"content_filter_result":{"hate":{"Filtered":true}}}`), no},
		{"innererror string", cf(`"x"`), no},
		{"innererror array", cf(`[]`), no},
		{"innererror number", cf(`1`), no},
		{"inner code number", cf(`{"code":1}`), no},
		{"inner code object", cf(`{"code":{}}`), no},
		{"set array", cf(`{"content_filter_result":[]}`), no},
		{"set string", cf(`{"content_filter_results":"x"}`), no},
		{"entry null", cf(`{"content_filter_result":{"hate":null}}`), no},
		{"entry string", cf(`{"content_filter_result":{"hate":"safe"}}`), no},
		{"entry citations", cf(`{"content_filter_result":{"protected_material_code":[{"URL":"u"}]}}`), no},
		{"entry filtered string", cf(`{"content_filter_result":{"hate":{"filtered":"true"}}}`), no},
		{"entry severity number", cf(`{"content_filter_result":{"hate":{"severity":3}}}`), no},
		{"entry score string", cf(`{"content_filter_result":{"hate":{"score":"0.5"}}}`), no},
		{"entry score out of range", cf(`{"content_filter_result":{"hate":{"score":1e400}}}`), no},
		{"entry error", cf(`{"content_filter_result":{"hate":{"filtered":false,"error":{"code":"c","message":"m"}}}}`), no},
		{"set error", cf(`{"content_filter_result":{"error":{"code":"content_filter_error","message":"not run"}}}`), no},
		{"same name in both sets", cf(`{"content_filter_result":{"hate":` + entry + `},"content_filter_results":{"hate":` + safe + `}}`), no},
		{"same name in both sets, sorted apart", cf(`{"content_filter_result":{"a":` + safe + `,"hate":` + entry + `},"content_filter_results":{"b":` + safe + `,"hate":` + safe + `}}`), no},
		{"raw newline and duplicate", "{\"error\":{\"message\":\"a\nb\",\"message\":\"c\"}}", no},
		{"missing braces duplicate", `"error":"a","error":"b"`, no},
		{"missing braces folded", `"Error":"a"`, no},
		{"missing brace at end", `{"error":{"message":"m"}`, no},
		{"past the depth limit", `{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `,"error":"e"}`, no},

		// Gateways: message-only rules are read by both; the members the
		// reference reads again (gatewayFields) make the fast reader decline.
		{"litellm content policy", `{"error":{"message":"litellm.BadRequestError: litellm.ContentPolicyViolationError: AzureException - The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":null,"code":"400"}}`, yes},
		{"azure prompt message alone", `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","code":"400"}}`, yes},
		{"litellm invalid prompt", `{"error":{"message":"litellm.BadRequestError: OpenAIException - Invalid prompt: your prompt was flagged as potentially violating our usage policy.","type":null,"param":null,"code":"400"}}`, yes},
		{"invalid prompt and account phrase", `{"error":{"message":"Invalid prompt: your prompt was flagged as potentially violating our usage policy. Your account has been suspended.","code":"400"}}`, yes},
		{"invalid prompt abuse code", `{"error":{"message":"Invalid prompt: your prompt was flagged","code":"account_deactivated"}}`, yes},
		{"usage policy alone", `{"error":{"message":"Your access was terminated due to violation of our usage policies.","type":"invalid_request_error"}}`, yes},
		{"psf innererror", `{"error":{"message":"m","code":"400","provider_specific_fields":{"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":` + entry + `,"sexual":` + safe + `}}}}}`, no},
		{"psf and innererror", `{"error":{"message":"m","code":"400","innererror":{"code":"Other"},"provider_specific_fields":{"innererror":{"code":"ResponsibleAIPolicyViolation"}}}}`, no},
		{"psf innererror not rai", `{"error":{"message":"litellm.ContentPolicyViolationError","code":"400","provider_specific_fields":{"innererror":{"code":"Other","content_filter_results":{"violence":` + entry + `}}}}}`, no},
		{"psf odd shapes", `{"error":{"message":"m","provider_specific_fields":{"innererror":"x"}}}`, no},
		{"psf innererror bad code", `{"error":{"message":"m","provider_specific_fields":{"innererror":{"code":1}}}}`, no},
		{"psf null", `{"error":{"message":"m","provider_specific_fields":null}}`, no},
		{"psf array", `{"error":{"message":"m","provider_specific_fields":[1]}}`, no},
		{"openrouter moderation", `{"error":{"code":403,"message":"flagged","metadata":{"reasons":["violence","hate"],"flagged_input":"x","provider_name":"P","model_slug":"m"}}}`, no},
		{"openrouter reasons empty", `{"error":{"code":403,"message":"flagged","metadata":{"reasons":[]}}}`, no},
		{"openrouter reasons odd", `{"error":{"code":403,"message":"flagged","metadata":{"reasons":["a,b",null,3,{"x":1},"violence","violence"]}}}`, no},
		{"openrouter flagged input only", `{"error":{"code":403,"message":"flagged","metadata":{"flagged_input":"x"}}}`, no},
		{"openrouter reasons string", `{"error":{"code":403,"message":"flagged","metadata":{"reasons":"violence","flagged_input":null}}}`, no},
		{"openrouter provider error", `{"error":{"code":502,"message":"Provider returned error","metadata":{"provider_name":"P","raw":"{}"}}}`, no},
		{"metadata string", `{"error":{"message":"m","metadata":"x"}}`, no},
		{"folded metadata", `{"error":{"message":"m","Metadata":{"reasons":["violence"]}}}`, no},
		{"folded psf", `{"error":{"message":"m","Provider_Specific_Fields":{"innererror":{"code":"ResponsibleAIPolicyViolation"}}}}`, no},
		{"top-level metadata is unknown", `{"error":{"message":"m"},"metadata":{"reasons":["violence"]}}`, yes},
	}
	for _, c := range cases {
		for _, st := range errStatuses {
			for _, h := range errHeaders {
				for _, tr := range []bool{false, true} {
					ok, diff := errFastSlowDiff(&probes.Response{Status: st, Header: h, Body: []byte(c.body), Truncated: tr})
					if diff != "" {
						t.Errorf("%s: %s", c.name, diff)
					}
					if ok != c.accept {
						t.Errorf("%s (status %d truncated=%v): fast path accepted=%v, want %v", c.name, st, tr, ok, c.accept)
					}
				}
			}
		}
	}
}

// TestFastErrorSyntheticBodies runs the comparison over the fuzz harness's
// synthetic bodies (garbage, HTML, SSE, provider-shaped JSON).
func TestFastErrorSyntheticBodies(t *testing.T) {
	for _, b := range probestest.SyntheticBodies() {
		for _, st := range errStatuses {
			for _, tr := range []bool{false, true} {
				if _, diff := errFastSlowDiff(&probes.Response{Status: st, Header: errHeaders[1], Body: b, Truncated: tr}); diff != "" {
					t.Error(diff)
				}
			}
		}
	}
}

// TestFastErrorReuse reads bodies of different shapes in turn, so state a
// pooled reader keeps from one read (or from a failed repair attempt)
// cannot leak into the next.
func TestFastErrorReuse(t *testing.T) {
	bodies := []string{
		`{"error":{"message":"m1","type":"t","code":"content_filter","innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"odd"},"x":{"filtered":true}},"content_filter_results":{"sexual":{"filtered":true}}}},"message":"top","detail":"d","request_id":"r"}`,
		`{}`,
		`{"error":"plain"}`,
		"{\"error\":{\"message\":\"raw\nnewline\",\"code\":\"content_filter\",\"innererror\":{\"content_filter_results\":{\"violence\":{\"filtered\":true}}}}}",
		`"error":{"message":"m1","code":"content_filter"}`,
		`{"error":{"message":"m1","code":"content_filter","innererror":{"content_filter_result":{"violence":{"filtered":false}}}}}`,
		`null`,
	}
	for round := 0; round < 3; round++ {
		for _, b := range bodies {
			ok, diff := errFastSlowDiff(&probes.Response{Status: 400, Body: []byte(b)})
			if diff != "" || !ok {
				t.Fatalf("round %d: %s: accepted=%v %s", round, b, ok, diff)
			}
		}
	}
}

// TestFastErrorAllocs pins the allocation count of the simulator's (and
// Azure's) content_filter 400: the Result's Signals and Categories.
func TestFastErrorAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	body, err := os.ReadFile("testdata/error_400_sim.json")
	if err != nil {
		t.Fatal(err)
	}
	resp := &probes.Response{Status: 400, Header: http.Header{"X-Request-Id": {"req_1"}, "Content-Type": {"application/json"}}, Body: body}
	if _, ok := classifyErrorFast(resp, probestest.FuzzNow); !ok {
		t.Fatal("sim body declined")
	}
	if n := testing.AllocsPerRun(100, func() { ClassifyError(resp, probestest.FuzzNow) }); n > 2 {
		t.Errorf("%v allocations per read of the sim 400, want at most 2 (signals and categories; the message is reused)", n)
	}
}

// TestFastErrorPoolBound: a reader whose buffers grew past the bounds is
// not pooled again, and no pooled reader keeps a body or a string of one.
func TestFastErrorPoolBound(t *testing.T) {
	big := `"error":{"message":"` + strings.Repeat("m", 2*maxPooledBytes) + `","code":"content_filter"}`
	if ok, diff := errFastSlowDiff(&probes.Response{Status: 400, Body: []byte(big)}); !ok || diff != "" {
		t.Fatalf("accepted=%v %s", ok, diff)
	}
	var got []*errReader
	for i := 0; i < 64; i++ {
		c := errReaders.Get().(*errReader)
		got = append(got, c)
		if cap(c.fixBuf) > maxPooledBytes || len(c.lastMessage) > maxPooledBytes || cap(c.valBuf) > maxPooledBytes {
			t.Errorf("a pooled reader kept %d bytes of repair buffer, a %d-byte message", cap(c.fixBuf), len(c.lastMessage))
		}
		if c.s.buf != nil || c.errMessage != "" || c.message != "" || len(c.sigs) > 0 || len(c.unk) > 0 || len(c.fixBuf) > 0 {
			t.Errorf("a pooled reader kept state: %+v", c)
		}
	}
	for _, c := range got {
		c.release()
	}
}

// TestFastErrorNoAlias: a Result the fast path returned is unchanged by
// later reads (nothing in it points into a pooled reader's buffers).
func TestFastErrorNoAlias(t *testing.T) {
	first := `{"error":{"message":"first \u00e9","type":"t\u0031","code":"content_filter","innererror":{"content_filter_result":{"br\u0061nd_new":{"filtered":true,"severity":"w\u0065ird","score":0.5}}}}}`
	r1, ok := classifyErrorFast(&probes.Response{Status: 400, Body: []byte(first)}, probestest.FuzzNow)
	if !ok {
		t.Fatal("declined")
	}
	want := fmt.Sprintf("%#v", r1)
	for i := 0; i < 50; i++ {
		other := fmt.Sprintf(`{"error":{"message":"other %d \u00e8","type":"x\u0032","code":"content_filter","innererror":{"content_filter_result":{"z\u007a%d":{"filtered":true,"severity":"o\u0064d","score":0.25}}}}}`, i, i)
		if _, ok := classifyErrorFast(&probes.Response{Status: 400, Body: []byte(other)}, probestest.FuzzNow); !ok {
			t.Fatal("declined")
		}
	}
	if got := fmt.Sprintf("%#v", r1); got != want {
		t.Errorf("a returned Result changed:\n%s\n%s", got, want)
	}
}

// TestErrFinish: errReader.finish is finish on every Result errorResult can
// produce without Categories (any class, signals fired or not, with empty
// categories, unknown entries or none, long messages and reasons).
func TestErrFinish(t *testing.T) {
	c := &errReader{}
	rng := uint64(3)
	next := func(n int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int(rng>>33) % n
	}
	classes := []probes.Class{probes.Allowed, probes.BlockedInput, probes.BlockedOutput, probes.ModelRefusal, probes.AbuseBlock, probes.Transient, probes.ClientError, probes.FilterUnavailable, ""}
	cats := []string{"hate", "violence", "other", "", "sexual", "hate"}
	for i := 0; i < 20000; i++ {
		r := probes.Result{Class: classes[next(len(classes))], Message: strings.Repeat("é", next(700)), Reason: strings.Repeat("r", next(250))}
		for j := next(6); j > 0; j-- {
			r.Signals = append(r.Signals, probes.Signal{Category: cats[next(len(cats))], Raw: "x", Fired: next(2) == 0})
		}
		for j := next(3); j > 0; j-- {
			r.Unknown = append(r.Unknown, []string{"category:x", "severity:" + strings.Repeat("s", 130), "category:x", "filter_key:y"}[next(4)])
		}
		in := fmt.Sprintf("%#v", r)
		want := finish(r)
		got := c.finish(r)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\nfast:   %#v\nfinish: %#v", in, got, want)
		}
	}
}

// TestHasRetryAfter: RetryWait skips wire.RetryAfter only where that
// function returns 0.
func TestHasRetryAfter(t *testing.T) {
	now := probestest.FuzzNow
	headers := []http.Header{nil, {}, {"X-Request-Id": {"r"}}, {"Retry-After": {""}}, {"Retry-After": {}}, {"Retry-After-Ms": {}},
		{"retry-after": {"5"}}, {"retry-after-ms": {"5"}}, {"Retry-After": {"5"}}, {"Retry-After-Ms": {"1500"}}, {"Retry-After-Ms": {""}, "Retry-After": {"2"}}}
	for i := uint8(0); i < 40; i++ {
		headers = append(headers, probestest.FuzzHeader(i))
	}
	for _, h := range headers {
		if d := wire.RetryAfter(h, now); d != 0 && !hasRetryAfter(h) {
			t.Errorf("%v: RetryAfter %v, skipped", h, d)
		}
	}
}

// TestRawBreakInString: rawBreakInString(b) is whether
// wire.EscapeRawNewlines changes b, on every string of up to 7 bytes over
// the bytes its scan treats specially (and one it does not), and on the
// fixtures and synthetic bodies.
func TestRawBreakInString(t *testing.T) {
	alphabet := []byte{'"', '\\', '\n', '\r', '\t', 'a'}
	var b []byte
	var walk func(n int)
	walk = func(n int) {
		if got, want := rawBreakInString(b), !bytes.Equal(wire.EscapeRawNewlines(b), b); got != want {
			t.Fatalf("%q: %v, want %v", b, got, want)
		}
		if n == 0 {
			return
		}
		for _, ch := range alphabet {
			b = append(b, ch)
			walk(n - 1)
			b = b[:len(b)-1]
		}
	}
	walk(7)
	bodies := probestest.SyntheticBodies()
	for _, p := range plainErrorFixtures {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	for _, b := range bodies {
		if got, want := rawBreakInString(b), !bytes.Equal(wire.EscapeRawNewlines(b), b); got != want {
			t.Errorf("%q: %v, want %v", b, got, want)
		}
	}
}

// TestStatusReason: statusReason is the formatting it replaced.
func TestStatusReason(t *testing.T) {
	for _, st := range []int{0, 1, 99, 100, 200, 400, 429, 599, 600, -1, 1 << 40} {
		for _, typ := range []string{"", ":", "::", "t", ":t:", "a:b", strings.Repeat("x", 100)} {
			for _, code := range []string{"", ":", "c", "c::", ":c", "内容"} {
				e := &errFields{Type: typ, Code: code}
				if got, want := statusReason(st, e), strings.Trim(fmt.Sprintf("%d:%s:%s", st, typ, code), ":"); got != want {
					t.Errorf("%d %q %q: %q, want %q", st, typ, code, got, want)
				}
			}
		}
	}
}

// errGen builds an error body from fuzzed parts (see FuzzFastError).
type errGen struct {
	bits                                 uint32
	cat, field, raw, sev, code, msg, key string
}

// body renders g: one of the error dialects (an error object with an
// innererror and filter sets, an error string, the top-level fields, a
// detail), with names that may fold onto known ones, strings with any
// content, the raw literal dropped into at most one value position, nulls,
// duplicates, pretty-printing, raw line breaks and missing braces.
func (g errGen) body() []byte {
	bit := func(i uint) bool { return g.bits>>i&1 == 1 }
	rawAt := g.bits >> 24 % 16
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	val := func(at uint32, s string) string {
		if rawAt == at {
			return g.raw
		}
		return q(s)
	}
	entry := func(i uint) string {
		parts := []string{`"filtered":` + strconv.FormatBool(bit(i)), `"severity":` + val(1, g.sev)}
		if bit(i + 1) {
			parts = append(parts, `"score":0.25`)
		}
		if bit(i + 2) {
			v := `1`
			if rawAt == 2 {
				v = g.raw
			}
			parts = append(parts, q(g.field)+`:`+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	inner := []string{`"code":` + val(3, "ResponsibleAIPolicyViolation")}
	if bit(0) {
		inner = append(inner, `"content_filter_result":{"hate":{"filtered":false,"severity":"safe","score":0.01},`+q(g.cat)+`:`+entry(1)+`}`)
	}
	if bit(4) {
		set := `"violence":` + entry(5)
		if bit(8) {
			set += `,` + q(g.cat) + `:{"filtered":true}`
		}
		inner = append(inner, `"content_filter_results":{`+set+`}`)
	}
	if bit(9) {
		inner = append(inner, q(g.key)+`:`+val(4, "x"))
	}
	innerV := "{" + strings.Join(inner, ",") + "}"
	if rawAt == 5 {
		innerV = g.raw
	}
	obj := []string{`"message":` + val(6, g.msg), `"type":null`, `"code":` + val(7, g.code), `"param":"prompt"`, `"status":400`}
	if bit(10) {
		obj[1] = `"type":` + val(8, g.code)
	}
	if bit(11) {
		obj = append(obj, `"innererror":`+innerV)
	}
	if bit(12) {
		obj = append(obj, q(g.key)+`:`+val(9, g.msg))
	}
	if bit(13) {
		obj[0], obj[len(obj)-1] = obj[len(obj)-1], obj[0]
	}
	var top []string
	switch g.bits >> 14 % 4 {
	case 0:
		top = []string{`"error":{` + strings.Join(obj, ",") + `}`}
	case 1:
		top = []string{`"error":` + val(10, g.msg)}
	case 2:
		top = []string{`"message":` + val(10, g.msg), `"type":` + val(11, g.code), `"code":` + val(12, g.code)}
	case 3:
		top = []string{`"detail":` + val(10, g.msg), `"error":null`}
	}
	if bit(16) {
		top = append(top, `"request_id":`+val(13, g.msg))
	}
	if bit(17) {
		top = append(top, q(g.key)+`:`+val(14, g.code))
	}
	if bit(18) {
		top = append(top, `"message":"top"`)
	}
	if bit(19) {
		top[0], top[len(top)-1] = top[len(top)-1], top[0]
	}
	body := []byte("{" + strings.Join(top, ",") + "}")
	if bit(20) {
		var buf bytes.Buffer
		if json.Indent(&buf, body, "", "  ") == nil {
			body = buf.Bytes()
		}
	}
	if bit(21) {
		// Escaped line breaks and tabs become raw ones, as in Azure's docs.
		body = bytes.ReplaceAll(bytes.ReplaceAll(body, []byte(`\n`), []byte("\n")), []byte(`\t`), []byte("\t"))
	}
	if bit(22) {
		body = bytes.TrimSuffix(bytes.TrimPrefix(bytes.TrimSpace(body), []byte("{")), []byte("}"))
	}
	return body
}

var errGenSeeds = []errGen{
	{0x00000801, "hate", "filtered", "0.5", "safe", "content_filter", "The response was filtered", "status"},
	{0xffffffff, "self-harm", "score", "-1.5e-3", "high", "content_filter", "line one\nline two", "Code"},
	{0x01200811, "violence", "Filtered", "true", "medium", "invalid_prompt", "Invalid prompt", "\u212aey"},
	{0x02610a91, "jailbreak", "detected", "null", "", "rate_limit_exceeded", "Rate limit reached\tnow", "innererror"},
	{0x05000b11, "Error", "error", "{}", "low", "account_suspended", "Your account has been suspended", "Message"},
	{0x0a004801, "hate", "severity", "[1, {\"a\" : 2}]", "odd", "429", "caf\u00e9 \U0001F600", "request_id"},
	{0x06008000, "x", "x", "\"\\u00e9\"", "safe", "", "", "detail"},
	{0x0d00c000, "sexual", "score", "12", "safe", "insufficient_quota", "quota", "type"},
	{0x00600801, "error", "filtered", "\"\xff\"", "safe", "content_filter", "m", "k"},
	{0x00500801, "hate", "filtered", "{\"a\":1,\"a\":2}", "safe", "content_filter", "m", "k"},
	// Gateway members (bit 12 adds the key, with the raw value at
	// position 9): OpenRouter's moderation metadata, LiteLLM's forwarded
	// innererror.
	{0x09000000, "hate", "filtered", "{\"reasons\":[\"violence\",\"x,y\"],\"flagged_input\":\"t\"}", "safe", "400", "flagged", "metadata"},
	{0x09000a00, "hate", "filtered", "{\"innererror\":{\"code\":\"ResponsibleAIPolicyViolation\",\"content_filter_result\":{\"hate\":{\"filtered\":true}}}}", "safe", "400", "litellm.ContentPolicyViolationError", "provider_specific_fields"},
}

// TestFastErrorGenerator runs FuzzFastError's seeds (each under every
// status and header) and checks that the generator mostly reaches the
// fast path, so the fuzz target exercises it rather than the fallback.
func TestFastErrorGenerator(t *testing.T) {
	accepted, total := 0, 0
	for _, g := range errGenSeeds {
		for flip := uint32(0); flip < 24; flip++ {
			g := g
			g.bits ^= 1 << flip
			for _, st := range errStatuses {
				for _, h := range errHeaders {
					ok, diff := errFastSlowDiff(&probes.Response{Status: st, Header: h, Body: g.body()})
					if diff != "" {
						t.Error(diff)
					}
					total++
					if ok {
						accepted++
					}
				}
			}
		}
	}
	if accepted*2 < total {
		t.Errorf("the fast path read %d of %d generated bodies, want most", accepted, total)
	}
	t.Logf("the fast path read %d of %d generated bodies", accepted, total)
}

// FuzzFastError is a structure-aware companion of FuzzClassify's error
// target: it builds an error body from fuzzed parts (errGen) so that most
// inputs are JSON the fast path reads, and compares it with the reference
// under a fuzzed status and header, truncated or not.
//
//	go test ./probes/oaiwire -run '^$' -fuzz '^FuzzFastError$' -fuzztime 1m
func FuzzFastError(f *testing.F) {
	for i, g := range errGenSeeds {
		f.Add(g.bits, uint8(i), uint8(i), g.cat, g.field, g.raw, g.sev, g.code, g.msg, g.key)
	}
	f.Fuzz(func(t *testing.T, bits uint32, status, header uint8, cat, field, raw, sev, code, msg, key string) {
		g := errGen{bits, cat, field, raw, sev, code, msg, key}
		body := g.body()
		st := probestest.FuzzStatuses[int(status)%len(probestest.FuzzStatuses)]
		if status&0x80 == 0 {
			st = errStatuses[int(status)%len(errStatuses)]
		}
		h := probestest.FuzzHeader(header)
		for _, tr := range []bool{false, true} {
			if _, diff := errFastSlowDiff(&probes.Response{Status: st, Header: h, Body: body, Truncated: tr, Latency: time.Second}); diff != "" {
				t.Fatal(diff)
			}
		}
	})
}
