package oaiwire

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// sseHeader is what a gateway that streams regardless sends.
func sseHeader() http.Header {
	return http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}, "X-Request-Id": {"req_sse_1"}}
}

// sse renders chunks as an event stream ("[DONE]" as itself).
func sse(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	return b.String()
}

// qaChunk is a chunk of the QA mock: a content delta, or (finish non-empty)
// the finishing chunk with filter results.
func qaChunk(content, finish, filters string) string {
	if finish == "" {
		return `{"id":"chatcmpl-qa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":` + fmt.Sprintf("%q", content) + `},"finish_reason":null}]}`
	}
	return `{"id":"chatcmpl-qa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"finish_reason":"` + finish + `"` + filters + `}]}`
}

// qaBlocked is the QA mock: content, then a content_filter finish with
// Azure's completion filter results, then [DONE].
var qaBlocked = sse(
	`{"id":"","object":"","created":0,"model":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"low"}}}],"choices":[],"usage":null}`,
	qaChunk("Here is how", "", ""),
	qaChunk(" you would", "", ""),
	qaChunk("", "content_filter", `,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"high"},"self_harm":{"filtered":true,"severity":"medium"}}`),
	"[DONE]",
)

var qaAnswer = sse(
	`{"id":"chatcmpl-qa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_qa","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	qaChunk("Here is a short,", "", ""),
	qaChunk(" helpful answer.", "", ""),
	qaChunk("", "stop", ""),
	`{"id":"chatcmpl-qa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":6,"total_tokens":17}}`,
	"[DONE]",
)

// classifyBoth classifies body as a 2xx answer with sseHeader and with no
// headers at all (as replay reads a stored body), checks that the two
// readers agree (the fast path declines every stream), and returns the
// result with headers after checking that the one without reads the same
// but for the request id.
func classifyBoth(t *testing.T, name, body string, truncated bool) probes.Result {
	t.Helper()
	var out []probes.Result
	for _, h := range []http.Header{sseHeader(), nil, {}} {
		resp := &probes.Response{Status: 200, Header: h, Body: []byte(body), Truncated: truncated}
		if ok, diff := fastSlowDiff(resp); ok || diff != "" {
			t.Fatalf("%s: fast path accepted=%v %s", name, ok, diff)
		}
		out = append(out, ClassifyChat(resp, probestest.FuzzNow))
	}
	for _, r := range out[1:] {
		a, b := out[0], r
		a.RequestID, b.RequestID = "", ""
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: without headers:\n%+v\nwith event-stream headers:\n%+v", name, b, a)
		}
	}
	return out[0]
}

// TestStreamQA is QA's report: a 200 text/event-stream whose last chunk
// finishes with content_filter was transient malformed_response, retried
// three times (a policy block re-sent); a streamed answer was never a
// verdict.
func TestStreamQA(t *testing.T) {
	r := classifyBoth(t, "blocked", qaBlocked, false)
	if r.Class != probes.BlockedOutput || r.Stage != probes.StageOutput || r.Reason != "content_filter" ||
		!slices.Equal(r.Categories, []string{"self_harm", "violence"}) {
		t.Errorf("blocked: %s %s %q %v, want blocked_output output content_filter [self_harm violence]", r.Class, r.Stage, r.Reason, r.Categories)
	}
	if r.Class.Retryable() || r.Class.BreakerFailure() {
		t.Errorf("blocked: %s would be retried or counted by the breaker", r.Class)
	}
	if r.ModelID != "gpt-4o-2024-08-06" || r.RequestID != "req_sse_1" || !slices.Contains(r.Unknown, StreamMarker) {
		t.Errorf("blocked: %+v", r)
	}
	// Prompt-side results are kept as scores beside the completion's.
	if len(r.Signals) != 5 || r.Signals[0].Raw != "prompt.hate" || r.Signals[1].Raw != "prompt.violence" || r.Signals[1].Severity != "low" {
		t.Errorf("blocked: signals %+v", r.Signals)
	}

	r = classifyBoth(t, "answer", qaAnswer, false)
	if r.Class != probes.Allowed || r.Reason != "stop" || r.ModelID != "gpt-4o-2024-08-06" || r.ModelFP != "fp_qa" ||
		r.TokensIn != 11 || r.TokensOut != 6 || !slices.Equal(r.Unknown, []string{StreamMarker}) {
		t.Errorf("answer: %+v", r)
	}
	// The content is concatenated: a refusal split over deltas is read as
	// one text.
	refusal := strings.Replace(strings.Replace(qaAnswer, "Here is a short,", "I can't help", 1), " helpful answer.", " with that.", 1)
	r = classifyBoth(t, "refusal text", refusal, false)
	if r.Class != probes.ModelRefusal || !r.Heuristic || r.Message != "I can't help with that." {
		t.Errorf("refusal text: %+v", r)
	}
	// A content_filter finish is a block wherever the stream ends ...
	r = classifyBoth(t, "no [DONE]", strings.TrimSuffix(qaBlocked, "data: [DONE]\n\n"), false)
	if r.Class != probes.BlockedOutput || !slices.Equal(r.Categories, []string{"self_harm", "violence"}) {
		t.Errorf("no [DONE]: %s %v", r.Class, r.Categories)
	}
	// ... but a stop is an answer only once the stream ended: a later
	// chunk could still finish with content_filter.
	r = classifyBoth(t, "answer without [DONE]", strings.TrimSuffix(qaAnswer, "data: [DONE]\n\n"), false)
	if r.Class != probes.Transient || r.Reason != "incomplete_stream" {
		t.Errorf("answer without [DONE]: %s %q", r.Class, r.Reason)
	}
}

// TestStreamCut: a stream cut before the answer's finish reason is
// transient (retryable), with or without [DONE], truncated or not; a cut
// tail that still spells "finish_reason":"content_filter" is blocked
// only when the body was cut by the cap (Truncated), as a cut
// non-streamed body is.
func TestStreamCut(t *testing.T) {
	finishAt := strings.Index(qaBlocked, `data: {"id":"chatcmpl-qa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"finish_reason":"content_filter"`)
	spelled := strings.Index(qaBlocked, `"finish_reason":"content_filter"`) + len(`"finish_reason":"content_filter"`)
	for _, c := range []struct {
		name      string
		body      string
		truncated bool
		class     probes.Class
		reason    string
	}{
		{"cut between chunks", qaBlocked[:finishAt], false, probes.Transient, "incomplete_stream"},
		{"cut between chunks, truncated", qaBlocked[:finishAt], true, probes.Transient, "truncated_response"},
		{"cut inside a chunk", qaBlocked[:finishAt-40], false, probes.Transient, "incomplete_stream"},
		{"cut inside a chunk, truncated", qaBlocked[:finishAt-40], true, probes.Transient, "truncated_response"},
		{"cut after content_filter is spelled", qaBlocked[:spelled+3], false, probes.Transient, "incomplete_stream"},
		{"cut after content_filter is spelled, truncated", qaBlocked[:spelled+3], true, probes.BlockedOutput, "content_filter"},
		{"answer cut before its finish", qaAnswer[:strings.Index(qaAnswer, `"finish_reason":"stop"`)], false, probes.Transient, "incomplete_stream"},
		{"[DONE] without a finish reason", sse(qaChunk("Hi", "", ""), "[DONE]"), false, probes.Transient, "incomplete_stream"},
		// Azure's asynchronous filter annotates after the model's stop: a
		// stream cut there may miss a content_filter finish.
		{"cut after stop", sse(qaChunk("Hi", "", ""), qaChunk("", "stop", "")), false, probes.Transient, "incomplete_stream"},
		{"cut after stop, truncated", sse(qaChunk("Hi", "", ""), qaChunk("", "stop", "")), true, probes.Transient, "truncated_response"},
		{"n2 cut after the first choice's stop", sse(`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}`, `{"choices":[{"index":1,"delta":{"content":"b"},"finish_reason":null}]}`), false, probes.Transient, "incomplete_stream"},
		{"only the prompt chunk", sse(`{"id":"","choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`, "[DONE]"), false, probes.Transient, "incomplete_stream"},
		{"[DONE] only", sse("[DONE]"), false, probes.Transient, "incomplete_stream"},
		{"data: only", "data:\n\n", false, probes.Transient, "incomplete_stream"},
		// An event that is not a chunk.
		{"garbage event", sse(qaChunk("Hi", "", ""), "not json", qaChunk("", "stop", ""), "[DONE]"), false, probes.Transient, "malformed_response"},
		{"content of the wrong type", sse(`{"choices":[{"index":0,"delta":{"content":5},"finish_reason":"stop"}]}`), false, probes.Transient, "malformed_response"},
		{"finish of the wrong type", sse(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":1}]}`), false, probes.Transient, "malformed_response"},
		{"delta of the wrong type", sse(`{"choices":[{"index":0,"delta":"hi","finish_reason":"stop"}]}`), false, probes.Transient, "malformed_response"},
		{"choices of the wrong type", sse(`{"choices":{"index":0},"model":"m"}`, qaChunk("", "stop", "")), false, probes.Transient, "malformed_response"},
		{"filters of the wrong type", sse(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop","content_filter_results":[]}]}`), false, probes.Transient, "malformed_response"},
		// ... but a choice that finished with content_filter is a block
		// whatever else the stream holds: never re-sent.
		{"garbage event, then content_filter", sse(qaChunk("Hi", "", ""), "not json", qaChunk("", "content_filter", "")), false, probes.BlockedOutput, "content_filter"},
		{"content_filter, then cut", qaBlocked[:len(qaBlocked)-len("data: [DONE]\n\n")-5], true, probes.BlockedOutput, "content_filter"},
		// A failed stream: the error chunk is read as a 2xx error body.
		{"error chunk", sse(qaChunk("Hi", "", ""), `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`), false, probes.Transient, "error_body:server_error"},
		{"error chunk then finish", sse(`{"error":{"message":"upstream reset","type":"server_error"}}`, qaChunk("", "stop", "")), false, probes.Transient, "error_body:server_error"},
		{"content_filter error chunk", sse(`{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400}}`), false, probes.BlockedInput, "content_filter"},
	} {
		r := classifyBoth(t, c.name, c.body, c.truncated)
		if r.Class != c.class || r.Reason != c.reason {
			t.Errorf("%s: %s %q, want %s %q", c.name, r.Class, r.Reason, c.class, c.reason)
		}
		if !slices.Contains(r.Unknown, StreamMarker) || c.truncated != slices.Contains(r.Unknown, "truncated_body") {
			t.Errorf("%s: unknown %v", c.name, r.Unknown)
		}
		if (r.Class == probes.Transient) != r.Class.Retryable() {
			t.Errorf("%s: %s retryable=%v", c.name, r.Class, r.Class.Retryable())
		}
	}
}

// TestStreamDetection: a stream is read when declared text/event-stream
// or, with no Content-Type, when the body opens with a data: line after
// blank and comment lines; a body declared as something else is not
// read as one, and a JSON body is read as JSON whatever it is declared.
func TestStreamDetection(t *testing.T) {
	answer := `{"id":"c","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`
	for _, c := range []struct {
		name   string
		header http.Header
		body   string
		stream bool
	}{
		{"declared", sseHeader(), qaAnswer, true},
		{"declared, upper case", http.Header{"Content-Type": {"Text/Event-Stream"}}, qaAnswer, true},
		{"declared, event line first", sseHeader(), "event: message\n" + qaAnswer, true},
		{"declared, comment first", sseHeader(), ": keep-alive\n\n" + qaAnswer, true},
		{"no headers", nil, qaAnswer, true},
		{"no Content-Type", http.Header{"X-Request-Id": {"r"}}, qaAnswer, true},
		{"no headers, blank and comment lines first", nil, "\r\n: OPENROUTER PROCESSING\n\n: ping\r\n" + qaAnswer, true},
		{"no headers, byte order mark", nil, "\xef\xbb\xbf" + qaAnswer, true},
		{"no headers, CRLF line ends", nil, strings.ReplaceAll(qaAnswer, "\n", "\r\n"), true},
		{"no headers, CR line ends", nil, strings.ReplaceAll(qaAnswer, "\n", "\r"), true},
		{"no headers, no final line end", nil, strings.TrimSuffix(qaAnswer, "\n\n"), true},
		{"declared JSON", http.Header{"Content-Type": {"application/json"}}, qaAnswer, false},
		{"declared HTML", http.Header{"Content-Type": {"text/html"}}, qaAnswer, false},
		{"no headers, only a comment", nil, ": ping", false},
		{"no headers, prose", nil, "the data: is here", false},
		{"a JSON answer declared a stream", sseHeader(), answer, false},
	} {
		resp := &probes.Response{Status: 200, Header: c.header, Body: []byte(c.body)}
		if got := isChatStream(resp); got != c.stream {
			t.Errorf("%s: isChatStream %v, want %v", c.name, got, c.stream)
		}
		r := ClassifyChat(resp, probestest.FuzzNow)
		if c.stream && (r.Class != probes.Allowed || !slices.Contains(r.Unknown, StreamMarker)) {
			t.Errorf("%s: %s %q %v", c.name, r.Class, r.Reason, r.Unknown)
		}
		if !c.stream && slices.Contains(r.Unknown, StreamMarker) {
			t.Errorf("%s: read as a stream: %+v", c.name, r)
		}
		if _, diff := fastSlowDiff(resp); diff != "" {
			t.Error(diff)
		}
	}
	// A JSON answer declared a stream is read exactly as the same answer
	// declared JSON (by the fast path).
	a := ClassifyChat(&probes.Response{Status: 200, Header: sseHeader(), Body: []byte(answer)}, probestest.FuzzNow)
	b := ClassifyChat(&probes.Response{Status: 200, Header: http.Header{"X-Request-Id": {"req_sse_1"}}, Body: []byte(answer)}, probestest.FuzzNow)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("JSON declared a stream:\n%+v\n%+v", a, b)
	}
	// Error statuses are never read as streams.
	r := ClassifyChat(&probes.Response{Status: 500, Header: sseHeader(), Body: []byte(qaBlocked)}, probestest.FuzzNow)
	if r.Class != probes.Transient || slices.Contains(r.Unknown, StreamMarker) {
		t.Errorf("500 stream: %+v", r)
	}
}

// TestStreamFixtures replays the recorded streams under testdata (sources
// in the meta files), declared and without headers, and checks that every
// cut of them is either what the whole stream says (once what decides is
// in: [DONE], or a content_filter finish) or transient: never a different
// verdict, and never allowed where the whole stream is a block.
func TestStreamFixtures(t *testing.T) {
	for _, c := range []struct {
		file          string
		class         probes.Class
		reason        string
		cats          []string
		model, fp     string
		in, out       int
		message       string
		unknown       []string
		decidingChunk string // what decides: cuts before its end are transient
	}{
		{"chat_stream_200_openai_sdk_snapshot.sse.txt", probes.Allowed, "stop", nil, "gpt-4o-2024-08-06", "fp_845eaabc1f", 14, 47, "",
			[]string{StreamMarker}, `[DONE]`},
		{"chat_stream_200_refusal_openai_sdk_snapshot.sse.txt", probes.ModelRefusal, "message.refusal", nil, "gpt-4o-2024-08-06", "fp_845eaabc1f", 17, 12, "I'm sorry, but I can't assist with that request.",
			[]string{StreamMarker}, `[DONE]`},
		{"chat_stream_200_azure_async_filter_passes_docs.sse.txt", probes.Allowed, "stop", nil, "gpt-35-turbo", "", 0, 0, "",
			[]string{"key:prompt_annotations", StreamMarker}, `[DONE]`},
		{"chat_stream_200_azure_async_filter_blocked_docs.sse.txt", probes.BlockedOutput, "content_filter", []string{"other"}, "gpt-35-turbo", "", 0, 0, "",
			[]string{StreamMarker}, `"finish_reason":"content_filter"`},
	} {
		body, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		r := classifyBoth(t, c.file, string(body), false)
		if r.Class != c.class || r.Reason != c.reason || !slices.Equal(r.Categories, c.cats) || r.ModelID != c.model || r.ModelFP != c.fp ||
			r.TokensIn != c.in || r.TokensOut != c.out || r.Message != c.message || !slices.Equal(r.Unknown, c.unknown) {
			t.Errorf("%s:\n %s %q %v model %q fp %q tokens %d/%d message %q unknown %v\nwant %s %q %v model %q fp %q tokens %d/%d message %q unknown %v",
				c.file, r.Class, r.Reason, r.Categories, r.ModelID, r.ModelFP, r.TokensIn, r.TokensOut, r.Message, r.Unknown,
				c.class, c.reason, c.cats, c.model, c.fp, c.in, c.out, c.message, c.unknown)
		}
		// The request id: the header's, else the stream's id.
		if noHeader := ClassifyChat(&probes.Response{Status: 200, Body: body}, probestest.FuzzNow); noHeader.RequestID == "" || r.RequestID != "req_sse_1" {
			t.Errorf("%s: request ids %q %q", c.file, noHeader.RequestID, r.RequestID)
		}
		start := strings.Index(string(body), c.decidingChunk)
		end := start + len(c.decidingChunk) // [DONE]
		if c.decidingChunk != "[DONE]" {
			end = strings.LastIndexByte(string(body[:strings.IndexByte(string(body[start:]), '\n')+start]), '}') + 1 // the end of that chunk
		}
		for cut := 0; cut < len(body); cut += 7 {
			for _, tr := range []bool{false, true} {
				got := ClassifyChat(&probes.Response{Status: 200, Body: body[:cut], Truncated: tr}, probestest.FuzzNow)
				switch {
				case got.Class == probes.Transient:
					if cut >= end {
						t.Errorf("%s cut at %d (truncated=%v), after the deciding chunk: %s %q", c.file, cut, tr, got.Class, got.Reason)
					}
				case got.Class == c.class && got.Reason == c.reason && slices.Equal(got.Categories, c.cats):
					if cut < end && !(tr && c.class == probes.BlockedOutput && cut > start) {
						t.Errorf("%s cut at %d (truncated=%v), before the deciding chunk: %s", c.file, cut, tr, got.Class)
					}
				case got.Class == probes.BlockedOutput && got.Reason == "content_filter" && len(got.Categories) == 0:
					// The cut tail spells content_filter: a block whose
					// categories were cut off, only when Truncated.
					if !tr || c.class != probes.BlockedOutput || cut < start || cut >= end {
						t.Errorf("%s cut at %d (truncated=%v): a block read from a cut tail", c.file, cut, tr)
					}
				default:
					t.Errorf("%s cut at %d (truncated=%v): %s %q %v, want transient or %s", c.file, cut, tr, got.Class, got.Reason, got.Categories, c.class)
				}
			}
		}
	}
}

// TestStreamMerge: what a stream spreads over chunks is gathered as a
// non-streamed answer holds it.
func TestStreamMerge(t *testing.T) {
	filters := func(sev string, filtered bool) string {
		return fmt.Sprintf(`"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":%v,"severity":"%s"}}`, filtered, sev)
	}
	annotation := func(f string) string {
		return `{"id":"","object":"","created":0,"model":"","choices":[{"index":0,"finish_reason":null,` + f + `,"content_filter_offsets":{"check_offset":1,"start_offset":1,"end_offset":9}}],"usage":null}`
	}
	for _, c := range []struct {
		name    string
		body    string
		class   probes.Class
		reason  string
		cats    []string
		unknown []string
		check   func(r probes.Result) bool
	}{
		{
			// Azure's asynchronous filter: the content was streamed and a
			// later annotation flags it after the stop. Allowed (delivered),
			// with the flag visible.
			"asynchronous flag after stop",
			sse(qaChunk("Here", "", ""), qaChunk("", "stop", ""), annotation(filters("high", true)), "[DONE]"),
			probes.Allowed, "stop", nil, []string{"filtered_but_answered:violence", StreamMarker},
			func(r probes.Result) bool {
				return len(r.Signals) == 2 && r.Signals[1].Fired && r.Signals[1].Severity == "high"
			},
		},
		{
			// A flag in one range stays when a later range is safe; the
			// stronger severity is kept.
			"flag kept over a later safe range",
			sse(qaChunk("Here", "", ""), annotation(filters("medium", true)), annotation(filters("safe", false)), qaChunk("", "stop", ""), "[DONE]"),
			probes.Allowed, "stop", nil, []string{"filtered_but_answered:violence", StreamMarker},
			func(r probes.Result) bool { return r.Signals[1].Fired && r.Signals[1].Severity == "medium" },
		},
		{
			"higher severity kept",
			sse(qaChunk("Here", "", ""), annotation(filters("medium", false)), annotation(filters("low", false)), qaChunk("", "stop", ""), "[DONE]"),
			probes.Allowed, "stop", nil, []string{StreamMarker},
			func(r probes.Result) bool { return !r.Signals[1].Fired && r.Signals[1].Severity == "medium" },
		},
		{
			// A filter that did not run on one range: as a non-streamed
			// answer whose filter did not run.
			"filter error kept",
			sse(qaChunk("Here", "", ""), annotation(`"content_filter_results":{"error":{"code":"content_filter_error","message":"not run"}}`), annotation(filters("safe", false)), qaChunk("", "stop", ""), "[DONE]"),
			probes.FilterUnavailable, "filter_error:content_filter_error", nil, []string{StreamMarker}, nil,
		},
		{
			// content_filter after stop (the asynchronous block) wins; a
			// later stop does not replace content_filter either.
			"content_filter after stop",
			sse(qaChunk("Here", "", ""), qaChunk("", "stop", ""), qaChunk("", "content_filter", ","+filters("high", true)), qaChunk("", "stop", "")),
			probes.BlockedOutput, "content_filter", []string{"violence"}, []string{StreamMarker}, nil,
		},
		{
			// n=2, interleaved: the answer is choice 0 unless another one
			// finished with content_filter.
			"n2 second choice filtered",
			sse(`{"choices":[{"index":1,"delta":{"content":"B"},"finish_reason":null},{"index":0,"delta":{"content":"A"},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
				`{"choices":[{"index":1,"delta":{},"finish_reason":"content_filter",`+filters("high", true)+`}]}`, "[DONE]"),
			probes.BlockedOutput, "content_filter", []string{"violence"}, []string{StreamMarker}, nil,
		},
		{
			"n2 answer is choice 0",
			sse(`{"choices":[{"index":1,"delta":{"content":"I can't help with that."},"finish_reason":"stop"},{"index":0,"delta":{"content":"Sure."},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"),
			probes.Allowed, "stop", nil, []string{StreamMarker}, nil,
		},
		{
			// Legacy completions stream text pieces.
			"text pieces",
			sse(`{"id":"cmpl-1","object":"text_completion","model":"m","choices":[{"index":0,"text":"I can't","finish_reason":null}]}`, `{"choices":[{"index":0,"text":" help with that.","finish_reason":"stop"}]}`, "[DONE]"),
			probes.ModelRefusal, "refusal_text", nil, []string{StreamMarker},
			func(r probes.Result) bool {
				return r.Message == "I can't help with that." && r.Heuristic && r.ModelID == "m"
			},
		},
		{
			// A stream that never sent content: as a message without
			// content.
			"role only",
			sse(`{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`, qaChunk("", "stop", ""), "[DONE]"),
			probes.Transient, "no_content", nil, []string{StreamMarker}, nil,
		},
		{
			"finish without a delta",
			sse(`{"choices":[{"index":0,"finish_reason":"stop"}]}`, "[DONE]"),
			probes.Transient, "no_message", nil, []string{StreamMarker}, nil,
		},
		{
			// Unknown keys are recorded as for a non-streamed answer;
			// OpenAI's obfuscation and Azure's offsets are known.
			"unknown keys",
			sse(`{"id":"c","obfuscation":"xYz","brand_new":1,"choices":[{"index":0,"matched_stop":2,"content_filter_raw":[],"delta":{"role":"assistant","content":"hi","thinking":"x"},"finish_reason":"stop"}]}`, "[DONE]"),
			probes.Allowed, "stop", nil, []string{"choice_key:matched_stop", "key:brand_new", "message_key:thinking", StreamMarker}, nil,
		},
		{
			// Bookkeeping fields are taken from the chunks that carry a
			// value and read as leniently as a non-streamed answer's.
			"bookkeeping",
			sse(`{"id":"","model":"","created":0,"choices":[],"usage":null}`, `{"id":"c1","model":"m-1","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],"usage":null}`,
				`{"id":"","model":"","choices":[],"usage":{"prompt_tokens":"3","completion_tokens":4}}`, "[DONE]"),
			probes.Allowed, "stop", nil, []string{StreamMarker, "usage.prompt_tokens:bad_type"},
			func(r probes.Result) bool {
				return r.ModelID == "m-1" && r.ModelFP == "fp" && r.TokensIn == 3 && r.TokensOut == 4
			},
		},
	} {
		r := classifyBoth(t, c.name, c.body, false)
		if r.Class != c.class || r.Reason != c.reason || !slices.Equal(r.Categories, c.cats) || !slices.Equal(r.Unknown, c.unknown) || (c.check != nil && !c.check(r)) {
			t.Errorf("%s: %s %q %v %v\n%+v\nwant %s %q %v %v", c.name, r.Class, r.Reason, r.Categories, r.Unknown, r, c.class, c.reason, c.cats, c.unknown)
		}
	}
}

// toStream renders a non-streamed chat answer as a stream of it: a first
// chunk with the bookkeeping fields and the prompt filter results, each
// choice's message in role, content and refusal deltas (text in pieces),
// its finish reason and filter results in a last chunk of its own, the
// usage in a chunk of its own, and [DONE]. Indexes are the choices'
// positions. ok is false for a body that is not a JSON object with a
// choices array of objects.
func toStream(body []byte) (stream string, ok bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil {
		return "", false
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(top["choices"], &choices) != nil {
		return "", false
	}
	q := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	first := map[string]json.RawMessage{"choices": json.RawMessage("[]")}
	for k, v := range top {
		if k != "choices" && k != "usage" {
			first[k] = v
		}
	}
	chunks := []string{q(first)}
	for i, c := range choices {
		if c == nil {
			return "", false
		}
		piece := func(m map[string]any) {
			m["index"] = i
			chunks = append(chunks, q(map[string]any{"choices": []any{m}}))
		}
		var msg map[string]json.RawMessage
		if raw := nonNull(c["message"]); raw != nil && json.Unmarshal(raw, &msg) != nil {
			return "", false
		}
		if msg != nil {
			d := map[string]any{"role": "assistant"}
			for k, v := range msg {
				if k != "content" && k != "refusal" {
					d[k] = v
				}
			}
			piece(map[string]any{"delta": d})
			for _, k := range []string{"content", "refusal"} {
				var s *string
				if raw := nonNull(msg[k]); raw != nil && json.Unmarshal(raw, &s) != nil {
					return "", false
				}
				if s != nil {
					h := len(*s) / 2
					for h > 0 && h < len(*s) && (*s)[h]&0xc0 == 0x80 {
						h--
					}
					piece(map[string]any{"delta": map[string]any{k: (*s)[:h]}})
					piece(map[string]any{"delta": map[string]any{k: (*s)[h:]}})
				}
			}
		}
		var text *string
		if raw := nonNull(c["text"]); raw != nil && json.Unmarshal(raw, &text) != nil {
			return "", false
		}
		if text != nil {
			piece(map[string]any{"text": *text})
		}
		last := map[string]any{}
		for k, v := range c {
			if k != "message" && k != "text" && k != "index" {
				last[k] = v
			}
		}
		piece(last)
	}
	if u, has := top["usage"]; has {
		chunks = append(chunks, q(map[string]any{"choices": []any{}, "usage": u}))
	}
	return sse(append(chunks, "[DONE]")...), true
}

// TestStreamEquivalence: every recorded non-streamed chat answer, and
// edge cases, streamed (toStream) classify as the answer itself:
// same class, stage, reason, categories, signals, message, model,
// fingerprint and tokens.
func TestStreamEquivalence(t *testing.T) {
	bodies := map[string][]byte{}
	eachFixture(t, func(path string, body []byte) { bodies[path] = body })
	for i, b := range []string{
		`{"id":"c","model":"m","choices":[{"message":{"content":"I can't help with that."},"finish_reason":"stop"}]}`,
		`{"id":"c","choices":[{"message":{"content":null,"refusal":"I'm sorry, I cannot help with that."},"finish_reason":"stop"}]}`,
		`{"id":"c","choices":[{"message":{"content":null},"finish_reason":"content_filter","content_filter_results":{"hate":{"filtered":true,"severity":"high"},"brand_new":{"filtered":true}}}]}`,
		`{"choices":[{"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":""},"finish_reason":"length"}]}`,
		`{"choices":[{"text":"caf\u00e9 \ud83d\ude00","finish_reason":"stop"}]}`,
		`{"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"sexual":{"filtered":true,"severity":"medium"}}}],"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"violence":{"filtered":true,"severity":"high"}}}]}`,
		`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"error":{"code":"content_filter_error","message":"The contents are not filtered"}}}]}`,
		`{"choices":[{"message":{"content":"a"},"finish_reason":"stop"},{"message":{"content":null},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":3,"completion_tokens":"4"}}`,
	} {
		bodies[fmt.Sprint("edge ", i)] = []byte(b)
	}
	streamed := 0
	for name, body := range bodies {
		want := classifyChatSlow(&probes.Response{Status: 200, Body: body}, probestest.FuzzNow)
		stream, ok := toStream(body)
		if !ok || want.Reason == "malformed_response" || want.Reason == "no_choices" {
			continue
		}
		streamed++
		got := classifyBoth(t, name, stream, false)
		if want.Reason == "empty_choice" {
			// A choice without a finish reason: a stream of it is cut.
			if got.Class != probes.Transient || got.Reason != "incomplete_stream" {
				t.Errorf("%s: %s %q, want transient incomplete_stream", name, got.Class, got.Reason)
			}
			continue
		}
		if got.Class != want.Class || got.Stage != want.Stage || got.Reason != want.Reason || !slices.Equal(got.Categories, want.Categories) ||
			!reflect.DeepEqual(got.Signals, want.Signals) || got.Message != want.Message || got.Heuristic != want.Heuristic ||
			got.ModelID != want.ModelID || got.ModelFP != want.ModelFP || got.TokensIn != want.TokensIn || got.TokensOut != want.TokensOut {
			t.Errorf("%s: streamed\n%+v\nnot streamed\n%+v\nstream %s", name, got, want, stream)
		}
		for _, u := range want.Unknown {
			if strings.HasPrefix(u, "filtered_but_answered:") && !slices.Contains(got.Unknown, u) {
				t.Errorf("%s: streamed, %s is missing: %v", name, u, got.Unknown)
			}
		}
	}
	t.Logf("%d bodies streamed", streamed)
	if streamed < 12 {
		t.Errorf("only %d bodies streamed", streamed)
	}
}

// TestFilteredButAnswered: an Azure answer whose content was returned
// though a filter result says filtered (asynchronous filter mode), or
// whose prompt filter results fired on an answered request, stays
// allowed (the content was delivered) and says so in Unknown; before,
// nothing but the stored signal showed it. Both readers agree, and the
// fast path still reads these bodies. Blocks and unflagged answers are
// unchanged.
func TestFilteredButAnswered(t *testing.T) {
	b, err := os.ReadFile("../azure/testdata/chat_200_annotations_prompt_filter_results.json")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	hate := "\"hate\": { \n          \"filtered\": false, \n          \"severity\": \"safe\" \n        }"
	if strings.Count(doc, hate) != 2 {
		t.Fatalf("the fixture changed: %d hate entries", strings.Count(doc, hate))
	}
	flagged := "\"hate\": {\"filtered\": true, \"severity\": \"high\"}"
	output := strings.Replace(doc, hate, flagged, 1)                                                      // choices[0].content_filter_results
	prompt := doc[:strings.LastIndex(doc, hate)] + flagged + doc[strings.LastIndex(doc, hate)+len(hate):] // prompt_filter_results
	fixtureUnknown := ClassifyChat(&probes.Response{Status: 200, Body: b}, probestest.FuzzNow).Unknown
	for _, c := range []struct {
		name  string
		body  string
		class probes.Class
		mark  []string
	}{
		{"fixture as published", doc, probes.Allowed, nil},
		{"completion hate filtered, finish stop", output, probes.Allowed, []string{"filtered_but_answered:hate"}},
		{"prompt hate filtered, answered", prompt, probes.Allowed, []string{"filtered_but_answered:prompt.hate"}},
		{"both", strings.Replace(output, hate, flagged, 1), probes.Allowed, []string{"filtered_but_answered:hate", "filtered_but_answered:prompt.hate"}},
		{"block: categories, no marker", strings.Replace(output, `"finish_reason": "stop"`, `"finish_reason": "content_filter"`, 1), probes.BlockedOutput, nil},
		{"minimal", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"violence":{"filtered":true,"severity":"medium"},"weird,name":{"filtered":true}}}]}`, probes.Allowed,
			[]string{"filtered_but_answered:violence", "filtered_but_answered:weird_name"}},
	} {
		for _, h := range []http.Header{nil, {"Apim-Request-Id": {"apim-1"}}} {
			resp := &probes.Response{Status: 200, Header: h, Body: []byte(c.body)}
			r := ClassifyChat(resp, probestest.FuzzNow)
			var marks []string
			for _, u := range r.Unknown {
				if strings.HasPrefix(u, "filtered_but_answered:") {
					marks = append(marks, u)
				}
			}
			if r.Class != c.class || !slices.Equal(marks, c.mark) {
				t.Errorf("%s: %s %q unknown %v, want %s %v", c.name, r.Class, r.Reason, r.Unknown, c.class, c.mark)
			}
			if c.class == probes.Allowed && len(r.Categories) != 0 {
				t.Errorf("%s: categories %v on an allowed answer", c.name, r.Categories)
			}
			if c.class == probes.BlockedOutput && !slices.Equal(r.Categories, []string{"hate"}) {
				t.Errorf("%s: categories %v", c.name, r.Categories)
			}
			if c.name != "minimal" && c.class == probes.Allowed {
				// Nothing else changes: the fixture's own entries stay.
				for _, u := range fixtureUnknown {
					if !slices.Contains(r.Unknown, u) {
						t.Errorf("%s: %s lost: %v", c.name, u, r.Unknown)
					}
				}
			}
			ok, diff := fastSlowDiff(resp)
			if diff != "" {
				t.Error(diff)
			}
			if !ok && c.name == "minimal" {
				t.Errorf("%s: the fast path declined", c.name)
			}
		}
	}
}

// TestStreamNeverPanics: odd streams are classified.
func TestStreamNeverPanics(t *testing.T) {
	for _, b := range []string{
		"data:", "data: ", "data: {", "data: []", "data: null", "data: {}\n\n", "data: {\"choices\":[null]}\n\n", "data: {\"choices\":[{}]}\n\ndata: [DONE]",
		"data: {\"choices\":[{\"index\":{},\"delta\":null,\"finish_reason\":\"stop\"}]}\n\n", "data: {\"choices\":[{\"index\":\"0\",\"delta\":{\"content\":\"a\"}},{\"index\":0,\"finish_reason\":\"stop\"}]}\n\n",
		"data: {\"prompt_filter_results\":[null,{\"prompt_index\":[],\"content_filter_results\":{\"x\":1}}],\"choices\":[{\"finish_reason\":\"content_filter\",\"content_filter_results\":{\"a\":[],\"error\":5}}]}\n\n",
		"data: {\"error\":null,\"choices\":[]}\n\ndata: {\"error\":{}}\n\n", "data: {\"error\":\"x\"}\n\n", ":\n:\n", "\n\n\n", "data\n\ndata\n\n", "data:[DONE]\n\ndata: garbage",
		strings.Repeat("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n", 2000) + "data: {\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"}]}\n\n",
	} {
		for _, tr := range []bool{false, true} {
			for _, h := range []http.Header{nil, sseHeader()} {
				r := ClassifyChat(&probes.Response{Status: 200, Header: h, Body: []byte(b), Truncated: tr}, probestest.FuzzNow)
				if r.Class == "" || !slices.Contains(r.Unknown, StreamMarker) && isChatStream(&probes.Response{Header: h, Body: []byte(b)}) {
					t.Errorf("%.60q: %+v", b, r)
				}
				for _, msg := range probestest.CheckResult(r, "") {
					t.Errorf("%.60q: %s", b, msg)
				}
			}
		}
	}
}

// FuzzChatStream builds a chat answer from fuzzed parts (texts, finish
// reasons, filter names and severities, n > 1, prompt filters, usage, a
// raw literal dropped into one value position), streams it (toStream,
// optionally with CRLF line ends, comments, no [DONE], or cut), and
// checks that the stream classifies as the answer itself (as
// TestStreamEquivalence does), that what the non-streamed reader finds
// malformed is never a verdict when streamed, that a cut stream is a
// verdict only once the answer's finish reason is in, and that the
// result is the same without headers.
//
//	go test ./probes/oaiwire -run '^$' -fuzz '^FuzzChatStream$' -fuzztime 1m
func FuzzChatStream(f *testing.F) {
	f.Add(uint32(0), "Here you go.", "stop", "hate", "safe", "m-1", `"x"`, 0)
	f.Add(uint32(0xffffffff), "I can't help with that.", "content_filter", "violence", "high", "", "5", 40)
	f.Add(uint32(0x12345), "caf\u00e9 \U0001F600", "length", "self-harm", "medium", "gpt", "{}", 7)
	f.Add(uint32(0x80f0f), "", "", "brand,new", "odd", "m", "[1]", 3)
	f.Fuzz(func(t *testing.T, bits uint32, text, finish, cat, sev, model, raw string, cut int) {
		bit := func(i uint) bool { return bits>>i&1 == 1 }
		rawAt := bits >> 28 % 8
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		val := func(at uint32, s string) string {
			if rawAt == at {
				return raw
			}
			return q(s)
		}
		filters := `{"hate":{"filtered":false,"severity":"safe"},` + q(cat) + `:{"filtered":` + fmt.Sprint(bit(1)) + `,"severity":` + val(1, sev) + `}}`
		msg := `"message":{"role":"assistant","content":` + val(2, text) + `}`
		if bit(2) {
			msg = `"message":{"role":"assistant","content":null,"refusal":` + q(text) + `}`
		}
		if bit(3) {
			msg = `"text":` + q(text)
		}
		choice := `{"index":0,` + msg + `,"finish_reason":` + val(3, finish) + `,"content_filter_results":` + filters + `}`
		choices := []string{choice}
		if bit(4) {
			choices = append(choices, `{"index":1,"message":{"content":null},"finish_reason":"content_filter","content_filter_results":`+filters+`}`)
		}
		top := []string{`"id":"chatcmpl-1"`, `"model":` + val(4, model), `"choices":[` + strings.Join(choices, ",") + `]`}
		if bit(5) {
			top = append(top, `"prompt_filter_results":[{"prompt_index":0,"content_filter_results":`+filters+`}]`)
		}
		if bit(6) {
			top = append(top, `"usage":{"prompt_tokens":3,"completion_tokens":`+func() string {
				if rawAt == 5 {
					return raw
				}
				return "4"
			}()+`}`)
		}
		if bit(7) {
			top = append(top, `"system_fingerprint":`+val(6, "fp_1"))
		}
		body := []byte("{" + strings.Join(top, ",") + "}")
		want := classifyChatSlow(&probes.Response{Status: 200, Body: body}, probestest.FuzzNow)
		stream, ok := toStream(body)
		if !ok {
			return
		}
		if bit(8) {
			stream = strings.ReplaceAll(stream, "\n", "\r\n")
		}
		if bit(9) {
			stream = ": keep-alive\n\n" + strings.Replace(stream, "\n\ndata: ", "\n\n: ping\n\ndata: ", 3)
		}
		if bit(10) {
			stream = strings.TrimSuffix(strings.TrimSuffix(stream, "data: [DONE]\n\n"), "data: [DONE]\r\n\r\n")
		}
		cutAt := -1
		if bit(11) && len(stream) > 0 {
			cutAt = (cut%len(stream) + len(stream)) % len(stream)
		}
		s := stream
		if cutAt >= 0 {
			s = stream[:cutAt]
		}
		for _, tr := range []bool{false, true} {
			var res []probes.Result
			for _, h := range []http.Header{sseHeader(), nil} {
				resp := &probes.Response{Status: 200, Header: h, Body: []byte(s), Truncated: tr}
				r := ClassifyChat(resp, probestest.FuzzNow)
				for _, msg := range probestest.CheckResult(r, "") {
					t.Errorf("stream %q: %s", s, msg)
				}
				if !isChatStream(resp) {
					return // cut before its first data line
				}
				if !slices.Contains(r.Unknown, StreamMarker) {
					t.Fatalf("stream %q read as no stream: %+v", s, r)
				}
				r.RequestID = ""
				res = append(res, r)
			}
			if !reflect.DeepEqual(res[0], res[1]) {
				t.Fatalf("stream %q: with and without headers:\n%+v\n%+v", s, res[0], res[1])
			}
			got := res[0]
			cutBlock := tr && cutAt >= 0 && got.Class == probes.BlockedOutput && got.Reason == "content_filter"
			same := got.Class == want.Class && got.Stage == want.Stage && got.Reason == want.Reason &&
				slices.Equal(got.Categories, want.Categories) && reflect.DeepEqual(got.Signals, want.Signals) &&
				got.Message == want.Message && got.Heuristic == want.Heuristic && got.ModelID == want.ModelID
			switch {
			case want.Reason == "malformed_response" || want.Reason == "no_choices" || want.Reason == "empty_choice":
				// Not an answer, streamed or not.
				if got.Class.IsVerdict() && !cutBlock {
					t.Fatalf("body %s is %s, streamed %q: %s %q", body, want.Reason, s, got.Class, got.Reason)
				}
			case cutAt >= 0 || bit(10):
				// A cut stream, or one without [DONE]: transient, or what
				// the whole stream says, or (Truncated) a block read from
				// the cut tail.
				if got.Class != probes.Transient && !same && !cutBlock {
					t.Fatalf("body %s cut at %d (truncated=%v): %+v, the whole stream is %+v", body, cutAt, tr, got, want)
				}
			case !same:
				t.Fatalf("body %s\nstreamed %q (truncated=%v):\n%+v\nnot streamed:\n%+v", body, s, tr, got, want)
			}
		}
	})
}

// A streamed generation that fails after it started (OpenRouter: HTTP 200,
// the last chunk's choice carries an error object, finish_reason "error")
// is transient, as the same failure in a non-streamed answer is: the text
// before the failure is not the provider's verdict. A falsy error member
// ("no error", as some gateways send on every chunk) is no failure, and a
// failure sent once is not undone by a later falsy member.
func TestStreamChoiceError(t *testing.T) {
	failed := sse(
		`{"id":"gen-1","object":"chat.completion.chunk","created":1767225600,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Here is"},"finish_reason":null}]}`,
		`{"id":"gen-1","object":"chat.completion.chunk","created":1767225600,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"content":""},"finish_reason":"error","error":{"code":502,"message":"Upstream provider failed"}}]}`,
		"[DONE]",
	)
	r := classifyBoth(t, "failed", failed, false)
	if r.Class != probes.Transient || r.Reason != "choice_error" || r.Message != "Upstream provider failed" {
		t.Errorf("failed generation: %s %q %q, want transient choice_error with the gateway's message", r.Class, r.Reason, r.Message)
	}
	// The failure without a finish reason of its own, then a falsy member.
	undone := sse(
		`{"id":"gen-2","object":"chat.completion.chunk","created":1767225600,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Here is"},"finish_reason":null,"error":{"message":"Upstream provider failed"}}]}`,
		`{"id":"gen-2","object":"chat.completion.chunk","created":1767225600,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"content":" an answer."},"finish_reason":"stop","error":null}]}`,
		"[DONE]",
	)
	if r := classifyBoth(t, "failure then null", undone, false); r.Class != probes.Transient || r.Reason != "choice_error" {
		t.Errorf("a failure then a null error member: %s %q, want transient choice_error", r.Class, r.Reason)
	}
	falsy := strings.Replace(qaAnswer, `"finish_reason":"stop"`, `"finish_reason":"stop","error":false`, 1)
	if !strings.Contains(falsy, `"error":false`) {
		t.Fatal("scenario: no stop chunk to mark")
	}
	if r := classifyBoth(t, "falsy", falsy, false); r.Class != probes.Allowed || r.Reason != "stop" {
		t.Errorf("a falsy error member: %s %q, want allowed stop", r.Class, r.Reason)
	}
}
