package bedrock

// QA findings on the Bedrock adapter (branch qa-providers).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// sendWithRetries sends the probe over real HTTP to a loopback replay of c
// the way the runner does: again while the class is retryable, at most
// three attempts. It returns the last result and how many requests the
// server received.
func sendWithRetries(t *testing.T, c probestest.Case) (probes.Result, int) {
	t.Helper()
	srv := probestest.NewReplay(t, c)
	r := probestest.DoRetrying(t, chatProber(t, srv.URL), probestest.Probe, 3)
	return r, srv.Requests()
}

// Amazon's models answer a prompt Bedrock's content filter flags with a
// 400 ValidationException (message as quoted from InvokeModel in public
// notes), and withhold flagged output with "The generated text has been
// blocked by our content filters.". Both are policy verdicts: they were
// client_error (no verdict, so a filter flip was never seen). Each is sent
// once; account enforcement in the same message still wins; the wording
// under another error type proves nothing.
func TestQAContentFilterDeflection(t *testing.T) {
	const (
		validation = "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"
		inMsg      = "This request has been blocked by our content filters. Our filters automatically flagged this prompt because it may conflict our AUP or AWS Responsible AI Policy. Please adjust your text prompt to submit a new request."
		outMsg     = "The generated text has been blocked by our content filters."
	)
	for _, c := range []struct {
		name   string
		header map[string]string
		body   string
		class  probes.Class
		stage  probes.Stage
		reason string
	}{
		{"input", hdr("x-amzn-ErrorType", validation), `{"message":"` + inMsg + `"}`,
			probes.BlockedInput, probes.StageInput, "content_filter_input"},
		{"output", hdr("x-amzn-ErrorType", validation), `{"message":"` + outMsg + `"}`,
			probes.BlockedOutput, probes.StageOutput, "content_filter_output"},
		// The type from the body's __type (no header), Message capitalised.
		{"input_body_type", hdr(), `{"__type":"com.amazon.coral.validate#ValidationException","Message":"` + inMsg + `"}`,
			probes.BlockedInput, probes.StageInput, "content_filter_input"},
		{"output_other_case", hdr("x-amzn-ErrorType", "ValidationException"), `{"message":"  the generated text has been BLOCKED by our content filters"}`,
			probes.BlockedOutput, probes.StageOutput, "content_filter_output"},
		{"abuse_wins", hdr("x-amzn-ErrorType", validation), `{"message":"` + inMsg + ` Your account has been suspended for repeated violations."}`,
			probes.AbuseBlock, probes.StageAccount, "400:ValidationException"},
		{"other_type", hdr("x-amzn-ErrorType", "AccessDeniedException"), `{"message":"` + inMsg + `"}`,
			probes.ClientError, probes.StageNone, "400:AccessDeniedException"},
		{"wording_not_leading", hdr("x-amzn-ErrorType", validation), `{"message":"Malformed input request: #/text: 'This request has been blocked by our content filters', please reformat your input and try again."}`,
			probes.ClientError, probes.StageNone, "400:ValidationException"},
		{"ordinary_validation", hdr("x-amzn-ErrorType", validation), `{"message":"The provided model identifier is invalid."}`,
			probes.ClientError, probes.StageNone, "400:ValidationException"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, sent := sendWithRetries(t, probestest.Case{Status: 400, Header: c.header, Body: c.body})
			if r.Class != c.class || r.Stage != c.stage || r.Reason != c.reason {
				t.Errorf("got %s/%q reason %q, want %s/%q reason %q (message %q)", r.Class, r.Stage, r.Reason, c.class, c.stage, c.reason, r.Message)
			}
			if sent != 1 {
				t.Errorf("sent %d times, want once", sent)
			}
			if len(r.Categories) != 0 {
				t.Errorf("categories = %v, want none (the filter names none)", r.Categories)
			}
			if r.RequestID != reqID {
				t.Errorf("request id = %q", r.RequestID)
			}
			if c.class.IsBlock() && c.class != probes.AbuseBlock && r.Message == "" {
				t.Error("the filter's message was not kept")
			}
		})
	}
}

// stopReasonRE reads the StopReason constants of the aws-sdk-go-v2 enum
// excerpt in testdata/converse_stop_reason_enum.txt.
var stopReasonRE = regexp.MustCompile(`(?m)^\s*StopReason\w+\s+StopReason\s*=\s*"([^"]+)"`)

// TestQAStopReasonEnum replays a Converse answer for every stopReason of
// the real enum (aws-sdk-go-v2 service/bedrockruntime/types/enums.go,
// copied with its source in testdata/converse_stop_reason_enum.meta.yaml)
// and checks the class the package comment gives it: with answer text, and
// with no output.message.content. A value added to the enum excerpt with
// no expectation here fails the test.
func TestQAStopReasonEnum(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "converse_stop_reason_enum.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var enum []string
	for _, m := range stopReasonRE.FindAllSubmatch(src, -1) {
		enum = append(enum, string(m[1]))
	}
	if len(enum) != 9 {
		t.Fatalf("read %d stop reasons from the fixture, want 9: %v", len(enum), enum)
	}
	type want struct {
		class probes.Class
		stage probes.Stage
	}
	malformed := want{probes.Transient, probes.StageNone}
	expect := map[string]struct{ withText, noContent want }{
		"end_turn":      {want{probes.Allowed, probes.StageNone}, malformed},
		"tool_use":      {want{probes.Allowed, probes.StageNone}, malformed},
		"max_tokens":    {want{probes.Allowed, probes.StageNone}, malformed},
		"stop_sequence": {want{probes.Allowed, probes.StageNone}, malformed},
		// No trace, and usage reports output tokens: the model ran, so the
		// guardrail acted on its output.
		"guardrail_intervened":          {want{probes.BlockedOutput, probes.StageOutput}, want{probes.BlockedOutput, probes.StageOutput}},
		"content_filtered":              {want{probes.BlockedOutput, probes.StageOutput}, want{probes.BlockedOutput, probes.StageOutput}},
		"malformed_model_output":        {want{probes.Allowed, probes.StageNone}, malformed},
		"malformed_tool_use":            {want{probes.Allowed, probes.StageNone}, malformed},
		"model_context_window_exceeded": {want{probes.ClientError, probes.StageNone}, want{probes.ClientError, probes.StageNone}},
	}
	for _, sr := range enum {
		e, ok := expect[sr]
		if !ok {
			t.Errorf("stopReason %q from the fixture has no expectation", sr)
			continue
		}
		for _, v := range []struct {
			name string
			out  string
			w    want
		}{
			{"text", `{"message":{"role":"assistant","content":[{"text":"Paris is the capital of France."}]}}`, e.withText},
			{"no_content", `{"message":{"role":"assistant"}}`, e.noContent},
		} {
			t.Run(sr+"/"+v.name, func(t *testing.T) {
				body := `{"output":` + v.out + `,"stopReason":"` + sr + `","usage":{"inputTokens":12,"outputTokens":7,"totalTokens":19},"metrics":{"latencyMs":412}}`
				r, sent := sendWithRetries(t, probestest.Case{Header: hdr(), Body: body})
				if r.Class != v.w.class || r.Stage != v.w.stage {
					t.Fatalf("got %s/%q (reason %q), want %s/%q", r.Class, r.Stage, r.Reason, v.w.class, v.w.stage)
				}
				wantReason := sr
				if v.w == malformed {
					wantReason = "malformed_response"
				}
				if r.Reason != wantReason {
					t.Errorf("reason = %q, want %q", r.Reason, wantReason)
				}
				if slices.ContainsFunc(r.Unknown, func(u string) bool { return strings.HasPrefix(u, "stop_reason:") }) {
					t.Errorf("a documented stop reason is recorded as unknown: %v", r.Unknown)
				}
				wantSent := 1
				if r.Class.Retryable() {
					wantSent = 3
				}
				if sent != wantSent {
					t.Errorf("sent %d times, want %d", sent, wantSent)
				}
			})
		}
	}
}

// Nova's user guide ("Error handling") documents flagged output as a
// successful answer carrying "The generated text has been blocked by our
// content filters.", not an exception; through Converse it arrives as the
// answer's whole text with an ordinary stop reason. It was allowed. It is
// an output block, read from the text (heuristic), sent once; an answer
// that quotes the sentence among other text stays allowed.
func TestQAContentFilterNoticeInAnswer(t *testing.T) {
	for _, c := range []struct {
		name, text, stop string
		class            probes.Class
	}{
		{"end_turn", "The generated text has been blocked by our content filters.", "end_turn", probes.BlockedOutput},
		{"no_period_spaced", "  the generated text has been blocked by our content filters\n", "end_turn", probes.BlockedOutput},
		{"max_tokens", "The generated text has been blocked by our content filters.", "max_tokens", probes.BlockedOutput},
		{"quoted", `Bedrock may answer "The generated text has been blocked by our content filters." when its filter flags output.`, "end_turn", probes.Allowed},
		{"ordinary", "Paris is the capital of France.", "end_turn", probes.Allowed},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _ := json.Marshal(c.text)
			body := `{"output":{"message":{"role":"assistant","content":[{"text":` + string(out) + `}]}},"stopReason":"` + c.stop + `","usage":{"inputTokens":12,"outputTokens":11,"totalTokens":23},"metrics":{"latencyMs":301}}`
			r, sent := sendWithRetries(t, probestest.Case{Header: hdr(), Body: body})
			if r.Class != c.class {
				t.Fatalf("class = %s (reason %q), want %s", r.Class, r.Reason, c.class)
			}
			if sent != 1 {
				t.Errorf("sent %d times, want once", sent)
			}
			if c.class != probes.BlockedOutput {
				return
			}
			if r.Stage != probes.StageOutput || r.Reason != "content_filter_output_text" || !r.Heuristic || r.Message != c.text || len(r.Categories) != 0 {
				t.Errorf("got stage %q reason %q heuristic %v message %q categories %#v", r.Stage, r.Reason, r.Heuristic, r.Message, r.Categories)
			}
		})
	}
}
