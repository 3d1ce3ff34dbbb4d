package probestest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// FuzzKey is the credential every fuzz target configures its prober with.
// No Result string field may ever contain it; several seeds and header
// choices put it where a provider could echo it.
const FuzzKey = "sk-fuzz-SECRET-0123456789abcdefXYZ"

// FuzzNow is the fixed clock fuzz targets give their probers, so an
// HTTP-date Retry-After reads the same on every call.
var FuzzNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// FuzzStatuses are the HTTP statuses a fuzz input picks from (by index,
// modulo the length). Append only: committed corpus entries under
// testdata/fuzz refer to these by position.
var FuzzStatuses = []int{
	200, 201, 202, 204, 206, 299, 100, 301, 304,
	400, 401, 402, 403, 404, 408, 409, 413, 422, 425, 429, 451, 499,
	500, 502, 503, 504, 520, 529, 599, 0, 600,
}

// FuzzHeader returns header choice i (modulo the number of choices):
// none, request ids in every provider's header (some echoing FuzzKey),
// HTML content types, and Retry-After / rate-limit reset values that are
// valid, odd or out of range. Append only (see FuzzStatuses).
func FuzzHeader(i uint8) http.Header {
	date := FuzzNow.Add(90 * time.Second).Format(http.TimeFormat)
	future := FuzzNow.Add(42 * time.Second).Format(time.RFC3339)
	choices := []map[string]string{
		nil,
		{},
		{"Content-Type": "application/json", "x-request-id": "req_fuzz_1"},
		{"Content-Type": "text/html", "Server": "nginx/1.25.3"},
		{"Retry-After": "7", "retry-after-ms": "1500"},
		{"Retry-After": date},
		{"Retry-After": "NaN"},
		{"Retry-After": "1e300"},
		{"Retry-After": "-5", "x-ratelimit-reset-requests": "6m0s", "x-ratelimit-reset-tokens": "1e30"},
		{"anthropic-ratelimit-requests-reset": future, "anthropic-ratelimit-requests-remaining": "0", "request-id": "req_ant_1"},
		{"x-request-id": FuzzKey, "apim-request-id": FuzzKey, "request-id": FuzzKey, "x-goog-request-id": FuzzKey, "x-amzn-RequestId": FuzzKey, "mistral-correlation-id": FuzzKey},
		{"x-amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", "x-amzn-RequestId": "ca47a5ce-e260-4824-aa0e-2e62669d5d6e"},
		{"x-amzn-ErrorType": "AccessDeniedException", "x-amz-request-id": "r-2"},
		{"retry-after-ms": "+Inf", "Retry-After": "Inf"},
		{"x-ratelimit-reset-tokens": "9999999999999999h", "x-ratelimit-reset-requests": "1e20"},
		{"x-amzn-ErrorType": FuzzKey, "Retry-After": FuzzKey},
		{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT", "x-goog-request-id": strings.Repeat("r", 5000)},
		{"x-amzn-ErrorType": "aws#ValidationException:extra", "Retry-After": "0.25"},
	}
	m := choices[int(i)%len(choices)]
	if m == nil {
		return nil
	}
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// fuzzErr returns a transport error of kind i; the URL form carries
// FuzzKey as a query parameter (old Gemini clients sent ?key=).
func fuzzErr(i uint8) error {
	switch i % 4 {
	case 0:
		return &url.Error{Op: "Post", URL: "https://example.invalid/v1?key=" + FuzzKey, Err: context.DeadlineExceeded}
	case 1:
		return errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer")
	case 2:
		return errors.New("dial tcp 127.0.0.1:9: connect: connection refused")
	}
	return errors.New("unexpected EOF " + FuzzKey)
}

// FuzzTarget is one response reader under fuzz.
type FuzzTarget struct {
	Name string
	// Classify reads one response (typically a prober's Classify, with a
	// fixed clock).
	Classify func(resp *probes.Response) probes.Result
	// Key is the credential the reader was configured with; it must never
	// appear in a Result. Empty means FuzzKey.
	Key string
	// AllowVerdict reports whether a verdict read from a body that is not
	// provider JSON is justified by a documented adapter rule (e.g. a cut
	// body that still spells finish_reason content_filter). Nil allows none.
	AllowVerdict func(resp *probes.Response, r probes.Result) bool
}

// Fuzz seeds f and runs targets on every input: seeds are every file under
// dirs (recursively, skipping testdata/fuzz) plus garbage, HTML error pages,
// truncated and huge bodies and bodies echoing FuzzKey, each paired with a
// few statuses and header choices. Each input is classified as sent, with
// Truncated set, and as a transport error, and CheckResult is applied.
func Fuzz(f *testing.F, targets []FuzzTarget, dirs ...string) {
	f.Helper()
	for _, s := range FuzzSeeds(f, dirs...) {
		f.Add(s.Status, s.Header, s.Body)
	}
	// Huge bodies are checked once here rather than seeded: the fuzzing
	// engine mutates seeds and multi-megabyte inputs slow it to a crawl.
	huge := hugeBodies()
	for _, b := range huge {
		for _, st := range []int{200, 400, 500} {
			for _, tr := range []bool{false, true} {
				resp := &probes.Response{Status: st, Header: FuzzHeader(2), Body: b, Truncated: tr}
				for _, tg := range targets {
					checkOne(f, tg, resp)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, status, header uint8, body []byte) {
		st := FuzzStatuses[int(status)%len(FuzzStatuses)]
		for _, tg := range targets {
			for _, tr := range []bool{false, true} {
				checkOne(t, tg, &probes.Response{Status: st, Header: FuzzHeader(header), Body: body, Truncated: tr, Latency: time.Second})
			}
			resp := &probes.Response{Err: fuzzErr(header), Body: body}
			r := checkOne(t, tg, resp)
			if r.Class != probes.Transient {
				t.Errorf("%s: transport error read as %q, want transient", tg.Name, r.Class)
			}
		}
	})
}

// Seed is one fuzz corpus entry.
type Seed struct {
	Status, Header uint8
	Body           []byte
}

func statusIndex(code int) uint8 {
	for i, s := range FuzzStatuses {
		if s == code {
			return uint8(i)
		}
	}
	return 0
}

var metaStatus = regexp.MustCompile(`(?m)^status:\s*(\d+)`)

// FuzzSeeds returns the seed inputs: every file under dirs (with the status
// its NAME.meta.yaml names, and 200 and 500) and a cut copy of it, then the
// synthetic bodies.
func FuzzSeeds(tb testing.TB, dirs ...string) []Seed {
	tb.Helper()
	var seeds []Seed
	n := uint8(0)
	add := func(status int, body []byte) {
		seeds = append(seeds, Seed{statusIndex(status), n, body})
		n++
	}
	for _, dir := range dirs {
		var files []string
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "fuzz" {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			tb.Fatalf("seed dir %s: %v", dir, err)
		}
		sort.Strings(files)
		for _, path := range files {
			b, err := os.ReadFile(path)
			if err != nil {
				tb.Fatal(err)
			}
			statuses := []int{200, 500}
			meta := strings.TrimSuffix(path, filepath.Ext(path)) + ".meta.yaml"
			if mb, err := os.ReadFile(meta); err == nil {
				if m := metaStatus.FindSubmatch(mb); m != nil {
					if code, err := strconv.Atoi(string(m[1])); err == nil && code != 200 && code != 500 {
						statuses = append(statuses, code)
					}
				}
			}
			for _, st := range statuses {
				add(st, b)
			}
			if len(b) > 1 {
				add(200, b[:len(b)/2])
			}
		}
	}
	for _, b := range SyntheticBodies() {
		for _, st := range []int{200, 400, 403, 429, 502} {
			add(st, b)
		}
	}
	return seeds
}

// NginxBadGateway is the body nginx sends with a 502.
const NginxBadGateway = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

// SyntheticBodies are bodies no provider documents: garbage, HTML error
// pages, proxies' plain-text errors, SSE streams, JSON that is not an
// object, cut JSON, and provider-shaped bodies echoing FuzzKey in every
// string the adapters read.
func SyntheticBodies() [][]byte {
	k := FuzzKey
	bodies := []string{
		"", " ", "\x00\xff\xfe", "null", "{}", "[]", "[{}]", "[null]", `"x"`, "0", "true", "-1e999",
		`{"id":`, `{"choices":[{"message":{"content":"hi"`, `{"error":{"message":"cut`,
		NginxBadGateway,
		"<!DOCTYPE html>\n<html lang=\"en-US\"><head><title>example.com | 520: Web server is returning an unknown error</title></head><body>cloudflare</body></html>",
		"<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>",
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>",
		"upstream connect error or disconnect/reset before headers. reset reason: connection failure",
		"Internal Server Error",
		"data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n",
		"event: message_start\ndata: {\"type\":\"message_start\"}\n\n",
		"{\"choices\":[{\"finish_reason\":\"content_filter\"",
		"<html>\"finish_reason\":\"content_filter\"</html>",
		"\"error\": {\"code\": \"content_filter\", \"message\": \"raw\nnewline\"}",
		`{"error":{"message":"Incorrect API key provided: ` + k + `.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
		`{"error":"` + k + `","message":"` + k + `","type":"` + k + `","code":"` + k + `","request_id":"` + k + `","detail":"` + k + `"}`,
		`{"id":"` + k + `","model":"` + k + `","system_fingerprint":"` + k + `","choices":[{"message":{"content":"` + k + `","refusal":"` + k + `","` + k + `":1},"finish_reason":"` + k + `","` + k + `":1,"content_filter_results":{"` + k + `":{"filtered":true,"severity":"` + k + `"}}}],"prompt_filter_results":[{"content_filter_results":{"` + k + `":{"filtered":false,"severity":"` + k + `"},"error":{"code":"` + k + `","message":"` + k + `"}}}],"` + k + `":1}`,
		`{"id":"c","model":"m","choices":[{"message":{"content":null},"finish_reason":"content_filter","content_filter_results":{"hate":{"filtered":true,"severity":"high"},"` + k + `":{"filtered":true,"severity":"high"}}}]}`,
		`{"error":{"code":"content_filter","message":"` + k + `","innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"` + k + `":{"filtered":true,"severity":"` + k + `"},"error":{"code":"` + k + `","message":"` + k + `"}}}}}`,
		`{"id":"` + k + `","model":"` + k + `","results":[{"flagged":true,"categories":{"` + k + `":true,"hate":"yes"},"category_scores":{"` + k + `":0.9,"hate":"x"},"category_applied_input_types":{"` + k + `":["text"],"hate":7},"` + k + `":1}],"` + k + `":1}`,
		`{"id":"msg_1","type":"` + k + `","role":"assistant","model":"` + k + `","content":[{"type":"` + k + `","text":"I can't help with ` + k + `"}],"stop_reason":"refusal","stop_details":{"type":"` + k + `","category":"` + k + `","explanation":"` + k + `","` + k + `":1},"request_id":"` + k + `","` + k + `":1}`,
		`{"type":"message","model":"claude","content":[{"type":"text","text":"x"}],"stop_reason":"` + k + `"}`,
		`{"type":"error","error":{"type":"` + k + `","message":"` + k + `"},"request_id":"` + k + `"}`,
		`{"candidates":[{"content":{"parts":[{"text":"` + k + `"}]},"finishReason":"` + k + `","finishMessage":"` + k + `","safetyRatings":[{"category":"` + k + `","probability":"` + k + `","severity":"` + k + `","blocked":true,"` + k + `":1}],"` + k + `":1}],"promptFeedback":{"blockReason":"` + k + `","blockReasonMessage":"` + k + `","safetyRatings":[{"category":"` + k + `","probability":"HIGH"}],"` + k + `":1},"modelVersion":"` + k + `","responseId":"` + k + `","` + k + `":1}`,
		`{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"` + k + `","probability":"MEDIUM"}]}],"modelVersion":"gemini"}`,
		`[{"error":{"code":403,"message":"Permission denied: Consumer 'api_key:` + k + `' has been suspended.","status":"` + k + `","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"` + k + `"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1e300s"}]}}]`,
		`{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"NaNs"}]}}`,
		`{"output":{"message":{"role":"assistant","content":[{"text":"` + k + `"}]}},"stopReason":"guardrail_intervened","usage":{"inputTokens":1,"outputTokens":0},"trace":{"guardrail":{"actionReason":"` + k + `","inputAssessment":{"` + k + `":{"` + k + `":{},"topicPolicy":{"topics":[{"name":"` + k + `","type":"DENY","action":"BLOCKED"}]},"contentPolicy":{"filters":[{"type":"` + k + `","confidence":"` + k + `","action":"` + k + `"}]},"sensitiveInformationPolicy":{"regexes":[{"name":"` + k + `","action":"ANONYMIZED"}]}}}},"promptRouter":{"invokedModelId":"` + k + `"}}}`,
		`{"output":{"message":{"content":[{"text":"ok"}]}},"stopReason":"` + k + `"}`,
		`{"action":"` + k + `","actionReason":"` + k + `","outputs":[{"text":"` + k + `"}],"assessments":[{"` + k + `":{},"wordPolicy":{"managedWordLists":[{"type":"` + k + `","action":"BLOCKED"}]}}]}`,
		`{"message":"` + k + `","__type":"` + k + `","Message":"` + k + `","code":"` + k + `"}`,
		`{"message":"Your account has been suspended: ` + k + `","__type":"AccessDeniedException"}`,
		// Provider blocks that read like ordinary errors, and
		// provider-controlled values with commas and control characters
		// (Unknown entries must come out sanitized).
		`{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"},"request_id":"` + k + `"}`,
		`{"type":"message","model":"m","content":[{"type":"weird,type"}],"stop_reason":"refusal","stop_details":{"type":"refusal
","category":"new,cat","a,b":1}}`,
		`{"error":{"message":"litellm.BadRequestError: litellm.ContentPolicyViolationError: ` + k + `","type":null,"param":null,"code":"400","provider_specific_fields":{"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"},"` + k + `,x":{"filtered":true,"severity":"a,b"}}}}}}`,
		`{"error":{"message":"litellm.BadRequestError: OpenAIException - Invalid prompt: your prompt was flagged as potentially violating our usage policy.","type":null,"param":null,"code":"400"}}`,
		`{"error":{"message":"litellm.BadRequestError: OpenAIException - Invalid prompt: we've limited access to this content for safety reasons. ` + k + `","type":null,"param":null,"code":"400"}}`,
		// OpenAI-compatible providers' input blocks stated in words (xAI,
		// DeepSeek) and account restriction (Groq), echoing the key.
		`{"code":"The caller does not have permission to execute the specified operation","error":"Content violates usage guidelines. Team: ` + k + `, API key ID: ` + k + `, Model: grok-4, Failed check: SAFETY_CHECK_TYPE_` + k + `, Failed check: SAFETY_CHECK_TYPE_A,B"}`,
		`{"error":{"message":"Content Exists Risk","type":"invalid_request_error","param":null,"code":"` + k + `"}}`,
		`{"error":{"message":"Organization has been restricted: ` + k + `","type":"invalid_request_error","param":"","code":"organization_restricted"}}`,
		// A UTF-8 byte order mark before JSON (skipped by every reader),
		// whole and cut.
		"\xef\xbb\xbf" + `{"id":"c","model":"m","choices":[{"message":{"content":null},"finish_reason":"content_filter","content_filter_results":{"hate":{"filtered":true,"severity":"high"}}}]}`,
		"\xef\xbb\xbf" + `{"choices":[{"finish_reason":"content_filter"`,
		"\xef\xbb\xbf" + `{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"}}`,
		"\xef\xbb\xbf" + `{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}]}`,
		"\xef\xbb\xbf" + `{"output":{"message":{"content":[{"text":"ok"}]}},"stopReason":"content_filtered"}`,
		// Gemini's streamGenerateContent as a JSON array of chunks.
		`[{"candidates":[{"content":{"parts":[{"text":"` + k + `"}]}}],"modelVersion":"` + k + `"},{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"` + k + `","probability":"HIGH","blocked":true}]}]}]`,
		`[{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]},{"error":{"code":503,"message":"` + k + `","status":"UNAVAILABLE"}}]`,
		`{"error":{"code":403,"message":"` + k + `","metadata":{"reasons":["violence","` + k + `","a,b
"],"flagged_input":"` + k + `","provider_name":"` + k + `","model_slug":"m"}}}`,
		`{"id":"modr","model":"m","results":[{"categories":{"hate":"true","violence":null,"sexual":{"x":1},"a,b\t\u0000":false},"category_scores":{"hate":0.9}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"NEW,REASON","safetyRatings":[{"category":"HARM_CATEGORY_A,B","probability":"VERY
HIGH","severity":"X,Y"}]}],"promptFeedback":{"blockReason":"B,R"},"new,key":1}`,
		`{"output":{"message":{"content":[{"text":"ok"}]}},"stopReason":"brand,new","trace":{"guardrail":{"inputAssessment":{"g":{"contentPolicy":{"filters":[{"type":"SELF,HARM","confidence":"EXTREME	","action":"BLOCKED"}]},"brand,New":{}}}}}}`,
	}
	out := make([][]byte, len(bodies))
	for i, b := range bodies {
		out[i] = []byte(b)
	}
	return out
}

// hugeBodies are bodies of about a megabyte, sixteen times the runner's
// default max_body_bytes: garbage, a valid answer (in every dialect at once)
// with huge content strings, the same cut, and a huge HTML page.
func hugeBodies() [][]byte {
	big := strings.Repeat("lorem ipsum ", 30_000)
	valid := `{"id":"c","model":"m","choices":[{"message":{"content":"` + big + `"},"finish_reason":"stop"}],"candidates":[{"content":{"parts":[{"text":"` + big + `"}]},"finishReason":"STOP"}],"type":"message","content":[{"type":"text","text":"` + big + `"}],"stop_reason":"end_turn","stopReason":"end_turn","results":[{"categories":{"hate":false}}]}`
	return [][]byte{
		bytes.Repeat([]byte{0xff, 'A', '{'}, 350_000),
		[]byte(valid),
		[]byte(valid[:len(valid)/2]),
		[]byte("<html><body>" + big + big + big + "</body></html>"),
	}
}

// ProviderJSON reports whether body is, leniently read, a JSON object (or an
// array whose first element is one, as Google wraps errors and streams
// chunks): the shape every provider answers with. Leniency mirrors what
// the adapters read: a leading UTF-8 byte order mark skipped
// (wire.SkipBOM), and oaiwire.ParseLenient's raw newlines inside strings
// and top-level fragment missing its braces.
func ProviderJSON(body []byte) bool {
	body = wire.TrimBOM(body)
	cands := [][]byte{body, wire.EscapeRawNewlines(body)}
	if t := bytes.TrimSpace(cands[1]); len(t) > 0 && t[0] == '"' {
		cands = append(cands, append(append([]byte("{"), t...), '}'))
	}
	for _, c := range cands {
		var v any
		if json.Unmarshal(c, &v) != nil {
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			return true
		case []any:
			if len(x) > 0 {
				if _, ok := x[0].(map[string]any); ok {
					return true
				}
			}
		}
	}
	return false
}

// checkOne classifies resp twice with tg and checks the result.
func checkOne(tb testing.TB, tg FuzzTarget, resp *probes.Response) probes.Result {
	tb.Helper()
	r := tg.Classify(resp)
	again := tg.Classify(resp)
	if !reflect.DeepEqual(r, again) {
		tb.Errorf("%s: status %d: classifying the same response twice differs:\n%+v\n%+v", tg.Name, resp.Status, r, again)
	}
	key := tg.Key
	if key == "" {
		key = FuzzKey
	}
	for _, msg := range CheckResult(r, key) {
		tb.Errorf("%s: status %d truncated=%v err=%v body %q: %s\nresult: %+v", tg.Name, resp.Status, resp.Truncated, resp.Err != nil, clip(resp.Body), msg, r)
	}
	if resp.Err == nil && !ProviderJSON(resp.Body) && r.Class.IsVerdict() && (tg.AllowVerdict == nil || !tg.AllowVerdict(resp, r)) {
		tb.Errorf("%s: status %d truncated=%v: body %q is not provider JSON but was read as verdict %q (reason %q)", tg.Name, resp.Status, resp.Truncated, clip(resp.Body), r.Class, r.Reason)
	}
	return r
}

var finishContentFilter = regexp.MustCompile(`"finish_reason"\s*:\s*"content_filter"`)

// OpenAIDialectVerdict is the AllowVerdict of readers built on oaiwire: two
// documented rules read a verdict from a body that does not parse. A cut 2xx
// chat body (Truncated, opening with '{') that still spells
// "finish_reason":"content_filter" is blocked_output; a 400 whose
// unparseable body opens like JSON and mentions content_filter is
// blocked_input (Azure's legacy error bodies). A complete event stream
// (marked response:event_stream) reads as the answer it describes, and so
// does one that ends with no choices and a fired prompt filter. A
// leading byte order mark is skipped, as the readers skip it.
func OpenAIDialectVerdict(resp *probes.Response, r probes.Result) bool {
	t := bytes.TrimSpace(wire.TrimBOM(resp.Body))
	switch {
	case resp.Status >= 200 && resp.Status < 300:
		if slices.Contains(r.Unknown, "response:event_stream") {
			// A complete event stream (a gateway streaming although
			// none was asked for) reads as the answer it describes.
			// One that ends with no choices and a fired prompt filter is
			// the input filter's block, as unstreamed.
			return bytes.Contains(t, []byte(`"finish_reason"`)) || bytes.Contains(t, []byte(`"error"`)) ||
				r.Class == probes.BlockedInput && r.Reason == "prompt_filter_no_choices" && bytes.Contains(t, []byte(`"prompt_filter_results"`))
		}
		return resp.Truncated && r.Class == probes.BlockedOutput && r.Reason == "content_filter" &&
			len(t) > 0 && t[0] == '{' && finishContentFilter.Match(t)
	case resp.Status == 400:
		return r.Class == probes.BlockedInput && r.Reason == "content_filter" &&
			len(t) > 0 && (t[0] == '{' || t[0] == '"') && bytes.Contains(t, []byte("content_filter"))
	}
	return false
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// CheckResult returns every invariant r breaks: a known class; categories
// only on blocks, sorted, unique and in the normalized vocabulary; signal
// categories in the vocabulary; a bounded message; no negative wait;
// Unknown entries sanitized (wire.SanitizeUnknown); and key in no string
// field.
func CheckResult(r probes.Result, key string) []string {
	var bad []string
	if _, err := probes.ParseClass(string(r.Class)); err != nil {
		bad = append(bad, err.Error())
	}
	if len(r.Categories) > 0 && !r.Class.IsBlock() {
		bad = append(bad, "categories on a non-block: "+strings.Join(r.Categories, ","))
	}
	for i, c := range r.Categories {
		if err := probes.CheckCategory(c); err != nil {
			bad = append(bad, "category: "+err.Error())
		}
		if i > 0 && r.Categories[i-1] >= c {
			bad = append(bad, "categories not sorted and unique: "+strings.Join(r.Categories, ","))
		}
	}
	for _, s := range r.Signals {
		if !probes.ValidCategory(s.Category) {
			bad = append(bad, "signal category not normalized: "+s.Category)
		}
	}
	if len(r.Message) > wire.MaxMessage {
		bad = append(bad, "message of "+strconv.Itoa(len(r.Message))+" bytes exceeds wire.MaxMessage")
	}
	if r.RetryAfter < 0 {
		bad = append(bad, "negative RetryAfter "+r.RetryAfter.String())
	}
	for _, u := range r.Unknown {
		// Storage joins the list with commas: an entry must not hold one
		// (it would read back as two), nor a control character.
		if wire.SanitizeUnknown(u) != u {
			bad = append(bad, fmt.Sprintf("unsanitized Unknown entry %q", u))
		}
	}
	if key != "" {
		fields := map[string]string{"Reason": r.Reason, "Message": r.Message, "RequestID": r.RequestID, "ModelID": r.ModelID, "ModelFP": r.ModelFP, "Class": string(r.Class), "Stage": string(r.Stage)}
		for i, u := range r.Unknown {
			fields["Unknown["+strconv.Itoa(i)+"]"] = u
		}
		for i, c := range r.Categories {
			fields["Categories["+strconv.Itoa(i)+"]"] = c
		}
		for i, s := range r.Signals {
			fields["Signals["+strconv.Itoa(i)+"].Raw"] = s.Raw
			fields["Signals["+strconv.Itoa(i)+"].Severity"] = s.Severity
			fields["Signals["+strconv.Itoa(i)+"].Category"] = s.Category
		}
		names := make([]string, 0, len(fields))
		for n := range fields {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if strings.Contains(fields[n], key) {
				bad = append(bad, "the API key appears in "+n)
			}
		}
	}
	return bad
}
