package oaiwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// fastSlowDiff reads resp with the fast and the reference reader of a 2xx
// chat answer. It reports whether the fast reader accepted the body and,
// when it did and the results differ (reflect.DeepEqual, so a nil and an
// empty slice differ too), a description of the difference; ClassifyChat
// itself must then return the reference result as well. Responses that are
// not 2xx answers are not compared.
func fastSlowDiff(resp *probes.Response) (accepted bool, diff string) {
	if resp.Err != nil || resp.Status < 200 || resp.Status >= 300 {
		return false, ""
	}
	now := probestest.FuzzNow
	fast, ok := classifyChatFast(resp)
	slow := classifyChatSlow(resp, now)
	// ClassifyChat skips a leading byte order mark (wire.SkipBOM) before it
	// gives the body to the fast reader or the reference.
	if got, ref := ClassifyChat(resp, now), classifyChatSlow(wire.SkipBOM(resp), now); !reflect.DeepEqual(got, ref) {
		return ok, fmt.Sprintf("ClassifyChat differs from classifyChatSlow on status %d truncated=%v body %q:\nClassifyChat: %#v\nslow:         %#v", resp.Status, resp.Truncated, resp.Body, got, ref)
	}
	if !ok {
		return false, ""
	}
	if !reflect.DeepEqual(fast, slow) {
		return true, fmt.Sprintf("fast path differs from classifyChatSlow on status %d truncated=%v body %q:\nfast: %#v\nslow: %#v", resp.Status, resp.Truncated, resp.Body, fast, slow)
	}
	return true, ""
}

// checkFastSlow is fastSlowDiff as FuzzClassify's chat target applies it.
// The shared fuzz harness gives a target no *testing.T, so a difference
// panics: the fuzzing engine reports the panic as a failure and keeps the
// input under testdata/fuzz.
func checkFastSlow(resp *probes.Response) {
	if _, diff := fastSlowDiff(resp); diff != "" {
		panic(diff)
	}
}

// chatFixtureDirs hold the providers' recorded bodies read by ClassifyChat.
var chatFixtureDirs = []string{"testdata", "../openai/testdata", "../azure/testdata", "../openaicompat/testdata", "../mistral/testdata"}

// plainChatFixtures are the fixtures that are ordinary 2xx chat answers:
// the fast path must accept them (read as sent, as a 200).
var plainChatFixtures = []string{
	"testdata/chat_200_sim.json",
	"../openai/testdata/chat_completion_200_default.json",
	"../openai/testdata/chat_completion_200_object.json",
	"../openai/testdata/chat_completion_200_x_request_id_headers_observed.json",
	"../openaicompat/testdata/chat_completion_200_object.json",
	"../azure/testdata/chat_200_annotations_prompt_filter_results.json",
	"../azure/testdata/completion_200_n3_one_choice_content_filter.json",
}

// eachFixture calls fn with every recorded body under chatFixtureDirs
// (golden request files and fuzz corpora left out).
func eachFixture(t *testing.T, fn func(path string, body []byte)) {
	t.Helper()
	for _, dir := range chatFixtureDirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "golden" || d.Name() == "fuzz" {
					return filepath.SkipDir
				}
				return nil
			}
			body, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fn(path, body)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestFastChatFixtures compares the fast and the reference reader on every
// fixture body (moderation and error bodies included: the fast reader must
// decline or agree), whole and cut, as every 2xx status, truncated or not,
// with and without a request id header.
func TestFastChatFixtures(t *testing.T) {
	accepted := map[string]bool{}
	eachFixture(t, func(path string, body []byte) {
		for _, b := range [][]byte{body, body[:len(body)/2], body[:len(body)*9/10]} {
			for _, st := range []int{200, 201, 299} {
				for _, h := range []http.Header{nil, {"X-Request-Id": {"req_1"}}} {
					for _, tr := range []bool{false, true} {
						ok, diff := fastSlowDiff(&probes.Response{Status: st, Header: h, Body: b, Truncated: tr})
						if diff != "" {
							t.Errorf("%s: %s", path, diff)
						}
						if ok && len(b) == len(body) && st == 200 && h == nil && !tr {
							accepted[filepath.ToSlash(path)] = true
						}
					}
				}
			}
		}
	})
	for _, p := range plainChatFixtures {
		if !accepted[p] {
			t.Errorf("%s: the fast path declined a plain chat answer", p)
		}
	}
}

// TestFastChatEdgeCases compares the two readers on hand-written bodies;
// accept says whether the fast reader must accept (true), must decline
// (false) or may do either (nil).
func TestFastChatEdgeCases(t *testing.T) {
	yes, no := new(bool), new(bool)
	*yes = true
	filters := `"content_filter_results":{"hate":{"filtered":false,"severity":"safe","score":0.01},"violence":{"filtered":true,"severity":"high","score":0.9}}`
	cases := []struct {
		name   string
		body   string
		accept *bool
	}{
		{"minimal", `{"id":"c","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, yes},
		{"whitespace", " \t\r\n{ \"id\" : \"c\" , \"choices\" : [ { \"message\" : { \"content\" : \"hi\" } , \"finish_reason\" : \"stop\" } ] } \n", yes},
		{"null fields", `{"id":null,"model":null,"system_fingerprint":null,"usage":null,"prompt_filter_results":null,"choices":[{"index":null,"finish_reason":null,"message":{"content":null,"refusal":null},"text":null,"content_filter_results":null,"logprobs":null}]}`, yes},
		{"null choice", `{"id":"c","choices":[null]}`, yes},
		{"null message", `{"id":"c","choices":[{"message":null,"finish_reason":"stop"}]}`, yes},
		{"null prompt entry", `{"id":"c","prompt_filter_results":[null],"choices":[]}`, yes},
		{"null choices with prompt", `{"id":"c","choices":null,"prompt_filter_results":[{"prompt_index":0,` + filters + `}]}`, yes},
		{"empty choices with prompt", `{"id":"c","choices":[],"prompt_filter_results":[{"prompt_index":0,` + filters + `}]}`, yes},
		{"empty choices", `{"id":"c","model":"m","choices":[]}`, no},
		{"no choices", `{"id":"c","model":"m"}`, no},
		{"empty object", `{}`, no},
		{"error body", `{"error":{"message":"m","type":"t","code":"content_filter"}}`, no},
		{"error with choices", `{"error":{"message":"m"},"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, yes},
		{"usage", `{"choices":[{"message":{"content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":12,"completion_tokens":-3,"total_tokens":9,"prompt_tokens_details":{"cached_tokens":0}}}`, yes},
		{"usage empty", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{}}`, yes},
		{"usage float", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1.5}}`, no},
		{"usage exponent", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1e2}}`, no},
		{"usage huge", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":99999999999999999999}}`, no},
		{"usage string", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":"12"}}`, no},
		{"usage array", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":[]}`, no},
		{"usage negative zero", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-0}}`, yes},
		{"index float", `{"choices":[{"index":0.0,"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"index string", `{"choices":[{"index":"0","message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"content number", `{"choices":[{"message":{"content":1},"finish_reason":"stop"}]}`, no},
		{"content parts", `{"choices":[{"message":{"content":[{"type":"text","text":"hi"}]},"finish_reason":"stop"}]}`, no},
		{"finish number", `{"choices":[{"message":{"content":"hi"},"finish_reason":1}]}`, no},
		{"message string", `{"choices":[{"message":"hi","finish_reason":"stop"}]}`, no},
		{"choice string", `{"choices":["hi"]}`, no},
		{"choices object", `{"choices":{"message":{"content":"hi"}}}`, no},
		{"id number", `{"id":1,"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"model object", `{"model":{},"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"top-level array", `[{"choices":[{"message":{"content":"hi"}}]}]`, no},
		{"top-level null", `null`, no},
		{"trailing garbage", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}x`, no},
		{"two values", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]} {}`, no},
		{"truncated", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]`, no},
		{"raw newline", "{\"choices\":[{\"message\":{\"content\":\"a\nb\"},\"finish_reason\":\"stop\"}]}", no},
		{"missing braces", `"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]`, no},
		{"invalid utf8", "{\"choices\":[{\"message\":{\"content\":\"\xff\"},\"finish_reason\":\"stop\"}]}", no},
		{"invalid utf8 in skipped value", "{\"x\":\"\xff\",\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}", no},
		{"lone surrogate", `{"choices":[{"message":{"content":"\ud800"},"finish_reason":"stop"}]}`, no},
		{"duplicate key", `{"choices":[{"message":{"content":"a","content":"b"},"finish_reason":"stop"}]}`, no},
		{"duplicate top key", `{"id":"a","id":"b","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"duplicate escaped key", `{"id":"a","\u0069d":"b","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"escaped key", `{"\u0069d":"c","choices":[{"message":{"cont\u0065nt":"hi"},"finish_reason":"stop"}]}`, yes},
		{"folded top key", `{"ID":"c","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"folded choices", `{"Choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"folded choice key", `{"choices":[{"message":{"content":"hi"},"Finish_Reason":"content_filter"}]}`, no},
		{"folded message key", `{"choices":[{"message":{"Content":"hi"},"finish_reason":"stop"}]}`, no},
		{"folded known key", `{"choices":[{"message":{"Role":"assistant","content":"hi"},"finish_reason":"stop"}]}`, no},
		{"folded filter key", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"Filtered":true}}}]}`, no},
		{"kelvin fold", "{\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_to\u212aens\":5}}", no},
		{"long s fold", "{\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\",\"content_filter_results\":{\"hate\":{\"\u017feverity\":\"high\"}}}]}", no},
		{"folded usage key", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"Prompt_Tokens":5}}`, no},
		{"folded prompt key", `{"prompt_filter_results":[{"Content_Filter_Results":{"hate":{"filtered":true}}}],"choices":[]}`, no},
		{"unknown keys", `{"id":"c","brand_new":{"a":[1,2]},"object":"chat.completion","created":1,"service_tier":"default","choices":[{"index":0,"extra,key":1,"logprobs":null,"stop_reason":null,"message":{"role":"assistant","content":"hi","annotations":[],"audio":null,"tool_calls":[],"function_call":null,"reasoning_content":null,"thinking":"x","a\nb":1},"finish_reason":"stop"}]}`, yes},
		{"unknown keys on choice 1", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"},{"x":1,"message":{"content":"hi","y":2},"finish_reason":"stop"}]}`, yes},
		{"long unknown key", `{"` + strings.Repeat("k", 200) + `":1,"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, yes},
		{"unknown finish", `{"choices":[{"message":{"content":"hi"},"finish_reason":"abort,now"}]}`, yes},
		{"empty finish", `{"choices":[{"message":{"content":"hi"},"finish_reason":""}]}`, yes},
		{"empty choice", `{"choices":[{}]}`, yes},
		{"text without finish", `{"choices":[{"text":"hi"}]}`, yes},
		{"empty text without finish", `{"choices":[{"text":""}]}`, yes},
		{"content without finish", `{"choices":[{"message":{"content":"hi"}}]}`, yes},
		{"empty content without finish", `{"choices":[{"message":{"content":""}}]}`, yes},
		{"finish without message", `{"choices":[{"finish_reason":"stop"}]}`, yes},
		{"finish with null message and text", `{"choices":[{"message":null,"text":null,"finish_reason":"length"}]}`, yes},
		{"finish with empty message", `{"choices":[{"message":{},"finish_reason":"stop"}]}`, yes},
		{"content filter without message", `{"choices":[{"finish_reason":"content_filter"}]}`, yes},
		{"n2 first without message", `{"choices":[{"finish_reason":"stop"},{"message":{"content":"hi"},"finish_reason":"stop"}]}`, yes},
		{"created", `{"id":"c","object":"chat.completion","created":1767225600,"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, yes},
		{"created null", `{"created":null,"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, yes},
		{"created string", `{"created":"x","choices":[{"message":{"content":"hi"},"finish_reason":"content_filter"}]}`, no},
		{"created float", `{"created":1767225600.5,"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"created object", `{"created":{},"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"fingerprint number", `{"system_fingerprint":123,"choices":[{"message":{"content":null},"finish_reason":"content_filter"}]}`, no},
		{"prompt index string", `{"prompt_filter_results":[{"prompt_index":"0","content_filter_results":{"hate":{"filtered":false}}}],"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"usage null counts", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":null,"completion_tokens":null}}`, yes},
		{"usage count object", `{"choices":[{"message":{"content":null},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":{}}}`, no},
		{"null content without finish", `{"choices":[{"message":{"content":null,"refusal":null},"text":null}]}`, yes},
		{"refusal without finish", `{"choices":[{"message":{"refusal":""}}]}`, yes},
		{"text completion", `{"choices":[{"text":"hi","finish_reason":"stop"}]}`, yes},
		{"text and content", `{"choices":[{"text":"I can't help with that.","message":{"content":"fine"},"finish_reason":"stop"}]}`, yes},
		{"text refusal", `{"choices":[{"text":"I can't help with that.","finish_reason":"stop"}]}`, yes},
		{"refusal", `{"choices":[{"message":{"content":null,"refusal":"I'm sorry, I cannot help with that."},"finish_reason":"stop"}]}`, yes},
		{"empty refusal", `{"choices":[{"message":{"content":"hi","refusal":""},"finish_reason":"stop"}]}`, yes},
		{"refusal text", `{"choices":[{"message":{"content":"  \"I can\u2019t help with that request."},"finish_reason":"stop"}]}`, yes},
		{"refusal text sorry", `{"choices":[{"message":{"content":"*Sorry, I can't do that.*"},"finish_reason":"stop"}]}`, yes},
		{"refusal text dotted I", "{\"choices\":[{\"message\":{\"content\":\"\u0130 cannot help with that\"},\"finish_reason\":\"stop\"}]}", yes},
		{"not a refusal", `{"choices":[{"message":{"content":"Sure. I can't help with everything, but here goes."},"finish_reason":"stop"}]}`, yes},
		{"escaped strings", `{"id":"c\"1\\\/\b\f\n\r\t","model":"m\u00e9\ud83d\ude00","choices":[{"message":{"content":"line\nnext \"quoted\" \u2028"},"finish_reason":"st\u006fp"}]}`, yes},
		{"unicode", `{"model":"模型","choices":[{"message":{"content":"你好, 世界 🌍"},"finish_reason":"stop"}]}`, yes},
		{"content filter", `{"choices":[{"message":{"content":null},"finish_reason":"content_filter",` + filters + `}]}`, yes},
		{"content filter nothing fired", `{"prompt_filter_results":[{"content_filter_results":{"sexual":{"filtered":true,"severity":"high"}}}],"choices":[{"message":{"content":null},"finish_reason":"content_filter","content_filter_results":{"hate":{"filtered":false}}}]}`, yes},
		{"n2 content filter second", `{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}},{"index":1,"message":{"content":null},"finish_reason":"content_filter",` + filters + `}]}`, yes},
		{"n3 content filter second and third", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"},{"finish_reason":"content_filter","content_filter_results":{"sexual":{"filtered":true}}},{"finish_reason":"content_filter",` + filters + `}]}`, yes},
		{"n2 content filter first", `{"choices":[{"finish_reason":"content_filter",` + filters + `},{"finish_reason":"content_filter","content_filter_results":{"sexual":{"filtered":true}}}]}`, yes},
		{"n2 unknown category in other choice", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"},{"message":{"content":"x"},"finish_reason":"stop","content_filter_results":{"brand_new":{"filtered":false,"severity":"odd"}}}]}`, yes},
		{"prompt filters", `{"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"violence":{"filtered":false,"severity":"low"},"jailbreak":{"filtered":false,"detected":true},"hate":{"filtered":false,"severity":"safe"}}},{"prompt_index":1,"content_filter_results":{"sexual":{"filtered":false,"severity":"medium","score":0.5}}}],"choices":[{"message":{"content":"hi"},"finish_reason":"stop",` + filters + `}]}`, yes},
		{"filter detected", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"protected_material_text":{"detected":false,"filtered":false},"protected_material_code":{"citation":{"URL":"u","license":"l"},"detected":true,"filtered":false},"profanity":{"detected":true,"severity":"low"}}}]}`, yes},
		{"filter unknown category and severity", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"Brand_New,x":{"filtered":true,"severity":"extreme\nly"},"HATE":{"filtered":false},"Self-Harm":{"severity":"high"}}}]}`, yes},
		{"filter nulls", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"filtered":null,"detected":null,"severity":null,"score":null,"error":null}}}]}`, yes},
		{"filter empty entry", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{}}}]}`, yes},
		{"filter empty set", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{}}]}`, yes},
		{"filter score int", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"score":1}}}]}`, yes},
		{"filter score exponent", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"score":-1.5e-3}}}]}`, yes},
		{"filter score tiny", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"score":1e-400}}}]}`, yes},
		{"filter score out of range", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"score":1e400}}}]}`, no},
		{"filter score string", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"score":"0.5"}}}]}`, no},
		{"filter filtered string", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"filtered":"true"}}}]}`, no},
		{"filter severity number", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"severity":3}}}]}`, no},
		{"filter entry error", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"filtered":false,"error":{"code":"c","message":"m"}}}}]}`, no},
		{"filter set error", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"error":{"code":"content_filter_error","message":"The contents are not filtered"}}}]}`, no},
		{"prompt filter set error", `{"prompt_filter_results":[{"content_filter_results":{"error":{"code":"x","message":"y"}}}],"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
		{"filter set Error key", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"Error":{"filtered":true}}}]}`, yes},
		{"filter entry citation block", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"protected_material_code":[{"URL":"u"}]}}]}`, no},
		{"filter entry string", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":"safe"}}]}`, no},
		{"filter entry null", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":null}}]}`, no},
		{"filter set array", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":[]}]}`, no},
		{"deep unknown value", `{"x":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `,"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, yes},
		{"at the depth limit", `{"x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `,"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, yes},
		{"past the depth limit", `{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `,"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, no},
	}
	for _, c := range cases {
		for _, tr := range []bool{false, true} {
			for _, h := range []http.Header{nil, {"Apim-Request-Id": {"apim-1"}}} {
				ok, diff := fastSlowDiff(&probes.Response{Status: 200, Header: h, Body: []byte(c.body), Truncated: tr})
				if diff != "" {
					t.Errorf("%s: %s", c.name, diff)
				}
				if c.accept != nil && ok != *c.accept {
					t.Errorf("%s (truncated=%v): fast path accepted=%v, want %v", c.name, tr, ok, *c.accept)
				}
			}
		}
	}
}

// TestFastChatSyntheticBodies runs the comparison over the fuzz harness's
// synthetic bodies (garbage, HTML, SSE, provider-shaped JSON).
func TestFastChatSyntheticBodies(t *testing.T) {
	for _, b := range probestest.SyntheticBodies() {
		for _, tr := range []bool{false, true} {
			if _, diff := fastSlowDiff(&probes.Response{Status: 200, Body: b, Truncated: tr}); diff != "" {
				t.Error(diff)
			}
		}
	}
}

// TestFastChatReuse reads bodies of different shapes in turn, so state a
// pooled reader keeps from one read cannot leak into the next.
func TestFastChatReuse(t *testing.T) {
	bodies := []string{
		`{"id":"a","model":"m1","system_fingerprint":"fp","prompt_filter_results":[{"content_filter_results":{"hate":{"filtered":true,"score":0.5,"severity":"odd"}}}],"choices":[{"message":{"content":"x","refusal":"no"},"text":"t","finish_reason":"content_filter","content_filter_results":{"sexual":{"filtered":true}},"extra":1}],"usage":{"prompt_tokens":3,"completion_tokens":4},"more":1}`,
		`{"choices":[{}]}`,
		`{"choices":[null,{"finish_reason":"content_filter"}]}`,
		`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`,
	}
	for round := 0; round < 3; round++ {
		for _, b := range bodies {
			ok, diff := fastSlowDiff(&probes.Response{Status: 200, Body: []byte(b)})
			if diff != "" || !ok {
				t.Fatalf("round %d: accepted=%v %s", round, ok, diff)
			}
		}
	}
}

// TestMayBeRefusal checks the assumption mayBeRefusal rests on: the only
// runes strings.ToLower turns into an ASCII letter are ASCII letters, İ
// (U+0130, to i) and the Kelvin sign (U+212A, to k); and that it never
// rules out a text wire.IsRefusal accepts.
func TestMayBeRefusal(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		lo := []rune(strings.ToLower(string(r)))
		if len(lo) == 1 && lo[0] < utf8.RuneSelf && r != '\u0130' && r != '\u212a' {
			t.Errorf("%U lower-cases to %q", r, lo[0])
		}
	}
	texts := []string{
		"I can't help with that.", "i cannot help with this", "  \"I’m unable to help", "*_I'm sorry, but I can't", "SORRY, I CAN'T",
		"\u2018Sorry, i can't", "\u0130 CANNOT PROVIDE that", "\t\n I must decline.", "Sure, here you go", "Here is", "", " ",
		"I think so", "Sorry to hear that", "So sorry, I can't", "«I can't help with that»", "\u00a0I can't help with that",
		"'\t I can't help with that", "\"\u2019 i won't help with it",
	}
	for _, s := range texts {
		if wire.IsRefusal(s) && !mayBeRefusal([]byte(s)) {
			t.Errorf("%q: IsRefusal true, mayBeRefusal false", s)
		}
	}
	for _, s := range []string{"Here is a short, helpful answer to your question.", "Sure. Here is an overview in a few sentences."} {
		if mayBeRefusal([]byte(s)) {
			t.Errorf("%q: a sim answer would call IsRefusal", s)
		}
	}
}

// FuzzMayBeRefusal: mayBeRefusal never rules out what IsRefusal accepts.
func FuzzMayBeRefusal(f *testing.F) {
	for _, s := range []string{"I can't help with that.", "Sorry, I can't", "\u0130 cannot provide", " *'i'm unable to help"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if wire.IsRefusal(s) && !mayBeRefusal([]byte(s)) {
			t.Errorf("%q: IsRefusal true, mayBeRefusal false", s)
		}
	})
}

// TestFastChatAllocs pins the allocation count of the common answer.
func TestFastChatAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	body, err := os.ReadFile("testdata/chat_200_sim.json")
	if err != nil {
		t.Fatal(err)
	}
	resp := &probes.Response{Status: 200, Header: http.Header{"X-Request-Id": {"req_1"}}, Body: body}
	if _, ok := classifyChatFast(resp); !ok {
		t.Fatal("sim body declined")
	}
	if n := testing.AllocsPerRun(100, func() { ClassifyChat(resp, probestest.FuzzNow) }); n > 4 {
		t.Errorf("%v allocations per read of the sim body, want at most 4 (the signals slice; model and fingerprint are reused)", n)
	}
}

// TestLookupFilterName: the switch interns every name of filterNameList at
// its own entry, and the list holds the whole vocabulary and every name
// NormalizeAzure knows.
func TestLookupFilterName(t *testing.T) {
	for i, n := range filterNameList {
		fn := lookupFilterName([]byte(n))
		if fn != &filterNames[i] || fn.raw != n || fn.prompt != "prompt."+n {
			t.Errorf("%s: %+v", n, fn)
		}
		cat, known := NormalizeAzure(n)
		if fn.cat != cat || fn.known != known || !known {
			t.Errorf("%s: %+v, NormalizeAzure %s %v", n, fn, cat, known)
		}
	}
	for _, n := range append(probes.Categories, "self-harm", "selfharm", "indirect_attack", "profanity", "protected_material_text", "protected_material_code", "custom_blocklists", "ungrounded_material") {
		if lookupFilterName([]byte(n)) == nil {
			t.Errorf("%s is not interned", n)
		}
	}
	if lookupFilterName([]byte("Hate")) != nil || lookupFilterName([]byte("brand_new")) != nil {
		t.Error("interned an unknown name")
	}
}

// TestParseFloat: parseFloat is strconv.ParseFloat, bit for bit.
func TestParseFloat(t *testing.T) {
	nums := []string{"0", "-0", "0.0", "-0.0", "1", "0.5", "0.0045", "0.0132", "0.9999", "1.0", "123456789012345", "1234567890123456",
		"0.123456789012345", "0.1234567890123456", "-0.3", "9007199254740993", "1e5", "1E-5", "-1.5e-3", "1e400", "-1e400", "1e-400",
		"0.30000000000000004", "179769313486231570000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"}
	rng := uint64(1)
	for i := 0; i < 20000; i++ {
		rng = rng*6364136223846793005 + 1442695040888963407
		digits := int(rng>>60) + 1
		frac := int(rng>>56) % (digits + 1)
		s := strconv.FormatUint(rng>>8, 10)
		if len(s) > digits {
			s = s[:digits]
		}
		if frac > 0 && frac < len(s) {
			s = "0." + s[len(s)-frac:]
		}
		if rng&1 == 1 {
			s = "-" + s
		}
		nums = append(nums, s)
	}
	for _, s := range nums {
		want, err := strconv.ParseFloat(s, 64)
		got, ok := parseFloat([]byte(s))
		if ok != (err == nil) || (ok && math.Float64bits(got) != math.Float64bits(want)) {
			t.Errorf("%s: parseFloat %v %v, ParseFloat %v %v", s, got, ok, want, err)
		}
	}
}

// FuzzParseFloat: parseFloat is strconv.ParseFloat on every JSON number.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"0", "-0.0", "0.0045", "1e5", "123456789012345.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !jsonNumber.MatchString(s) {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		got, ok := parseFloat([]byte(s))
		if ok != (err == nil) || (ok && math.Float64bits(got) != math.Float64bits(want)) {
			t.Errorf("%s: parseFloat %v %v, ParseFloat %v %v", s, got, ok, want, err)
		}
	})
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// FuzzFastChat is a structure-aware companion of FuzzClassify: it builds a
// chat answer from fuzzed parts (names that may fold onto known ones,
// strings with any content, a raw literal dropped into value positions,
// n > 1 choices, a choice without a message, prompt filters, nulls,
// duplicates, a raw literal in bookkeeping fields) so that most inputs are
// valid JSON the fast path reads, and compares it with the reference.
//
//	go test ./probes/oaiwire -run '^$' -fuzz '^FuzzFastChat$' -fuzztime 1m
func FuzzFastChat(f *testing.F) {
	f.Add(uint32(0), "hate", "filtered", "0.5", "safe", "stop", "content", "Here you go.", "extra")
	f.Add(uint32(0xffffffff), "Self-Harm", "score", "-1.5e-3", "high", "content_filter", "refusal", "I can't help with that.", "Index")
	f.Add(uint32(0x1005a5a), "violence", "Filtered", "true", "medium", "length", "text", "Sorry, I can't", "\u212aey")
	f.Add(uint32(0x2010f0f), "error", "detected", "null", "", "", "role", "\u0130 cannot", "usage")
	f.Add(uint32(0x7031234), "jailbreak", "error", "{}", "low", "tool_calls", "Content", "caf\u00e9 \U0001F600", "choices")
	f.Add(uint32(0xc0001), "hate", "filtered", `"x"`, "safe", "stop", "content", "", "extra")
	f.Add(uint32(0x40000), "sexual", "filtered", "1.5", "high", "content_filter", "role", "", "created")
	f.Fuzz(func(t *testing.T, bits uint32, cat, field, raw, sev, finish, key, text, extra string) {
		bit := func(i uint) bool { return bits>>i&1 == 1 }
		// The raw literal goes in at most one place (rawAt), so that most
		// bodies stay valid JSON.
		rawAt := bits >> 24 % 8
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		val := func(at uint32, s string) string {
			if rawAt == at {
				return raw
			}
			return q(s)
		}
		entry := func(i uint) string {
			parts := []string{`"filtered":` + strconv.FormatBool(bit(i)), `"severity":` + val(1, sev)}
			if bit(i + 1) {
				parts = append(parts, `"score":0.25`)
			}
			if bit(i + 2) {
				v := `1`
				if rawAt == 7 {
					v = raw
				}
				parts = append(parts, q(field)+`:`+v)
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
		filters := func(i uint) string {
			return `{"hate":{"filtered":false,"severity":"safe","score":0.01},` + q(cat) + `:` + entry(i) + `}`
		}
		msg := `{"role":"assistant",` + q(key) + `:` + val(2, text)
		if bit(0) {
			msg += `,"content":` + q(text)
		}
		msg += `}`
		msgMember := `"message":` + msg + `,`
		if bit(18) {
			msgMember = "" // a choice with no message object
		}
		choice0 := `{"index":0,` + msgMember + `"finish_reason":` + val(3, finish) + `,"content_filter_results":` + filters(1) + `}`
		choices := []string{choice0}
		if bit(4) {
			choices = append(choices, `{"index":1,`+q(extra)+`:1,"message":{"content":null},"finish_reason":"content_filter","content_filter_results":`+filters(5)+`}`)
		}
		if bit(8) {
			choices = append(choices, `null`)
		}
		if bit(9) {
			choices[0], choices[len(choices)-1] = choices[len(choices)-1], choices[0]
		}
		top := []string{`"id":"chatcmpl-1"`, `"model":` + val(4, "m-2026"), `"choices":[` + strings.Join(choices, ",") + `]`}
		if bit(10) {
			top = append(top, `"prompt_filter_results":[{"prompt_index":0,"content_filter_results":`+filters(11)+`}]`)
		}
		if bit(14) {
			v := `{"a":[1,"x"]}`
			if rawAt == 6 {
				v = raw
			}
			top = append(top, q(extra)+`:`+v)
		}
		if bit(15) {
			v := `5`
			if rawAt == 5 {
				v = raw
			}
			top = append(top, `"usage":{"prompt_tokens":3,"completion_tokens":`+v+`}`)
		}
		if bit(16) {
			top = append(top, `"id":"dup"`)
		}
		if bit(19) {
			v := `1767225600`
			if rawAt == 0 {
				v = raw
			}
			top = append(top, `"created":`+v)
		}
		if bit(17) {
			top[0], top[len(top)-1] = top[len(top)-1], top[0]
		}
		body := "{" + strings.Join(top, ",") + "}"
		for _, tr := range []bool{false, true} {
			_, diff := fastSlowDiff(&probes.Response{Status: 200, Body: []byte(body), Truncated: tr})
			if diff != "" {
				t.Fatal(diff)
			}
		}
	})
}

// TestHasBackslash: hasBackslash is bytes.IndexByte(b, '\\') >= 0.
func TestHasBackslash(t *testing.T) {
	rng := uint64(7)
	for i := 0; i < 50000; i++ {
		rng = rng*6364136223846793005 + 1442695040888963407
		b := make([]byte, rng>>59)
		for j := range b {
			rng = rng*6364136223846793005 + 1442695040888963407
			b[j] = []byte{'\\', 'a', 0, 0x5b, 0x5d, 0xdc, 0x5c ^ 0x80, byte(rng >> 32)}[rng>>61]
		}
		if got, want := hasBackslash(b), bytes.IndexByte(b, '\\') >= 0; got != want {
			t.Fatalf("%q: %v, want %v", b, got, want)
		}
	}
}
