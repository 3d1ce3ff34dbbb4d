package oaiwire

import (
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// benchBodies are the bodies BenchmarkClassifyChat reads: a simulator
// answer captured from probes/sim (1.5 KB, 9 prompt and 9 completion filter
// entries with filtered/score/severity, content, usage, id, model and
// system_fingerprint) and Azure's documented annotated answer.
var benchBodies = []struct{ name, path string }{
	{"sim", "testdata/chat_200_sim.json"},
	{"azure", "../azure/testdata/chat_200_annotations_prompt_filter_results.json"},
}

// BenchmarkClassifyChat reads each body with ClassifyChat (the fast path)
// and, as NAME-reference, with classifyChatSlow, so one run shows the ratio
// on whatever machine it runs on.
//
//	go test ./probes/oaiwire -run '^$' -bench ClassifyChat -benchmem -count 5
func BenchmarkClassifyChat(b *testing.B) {
	for _, bb := range benchBodies {
		body, err := os.ReadFile(bb.path)
		if err != nil {
			b.Fatal(err)
		}
		resp := &probes.Response{Status: 200, Header: http.Header{"X-Request-Id": {"req_sim_1_d4549cfde92c_0"}}, Body: body}
		if _, ok := classifyChatFast(resp); !ok {
			b.Fatalf("%s: the fast path declined the body", bb.path)
		}
		benchPair(b, bb.name, resp, ClassifyChat, classifyChatSlow)
	}
}

// benchPair benchmarks reading resp with the fast path (as name) and with
// the reference reader (as name-reference).
func benchPair(b *testing.B, name string, resp *probes.Response, fast, reference func(*probes.Response, time.Time) probes.Result) {
	for _, r := range []struct {
		name string
		read func(*probes.Response, time.Time) probes.Result
	}{{name, fast}, {name + "-reference", reference}} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(resp.Body)))
			for b.Loop() {
				_ = r.read(resp, probestest.FuzzNow)
			}
		})
	}
}

// errBenchBodies are the bodies BenchmarkClassifyError reads: the
// simulator's content_filter 400 (captured from probes/sim: 0.8 KB, 9
// filter entries with filtered/score/severity under
// innererror.content_filter_result), Azure's documented legacy 400 (raw
// newlines in the message, which the fast path repairs as ParseLenient
// does; 4 entries under content_filter_results) and OpenAI's 429.
var errBenchBodies = []struct {
	name, path string
	status     int
}{
	{"sim-400", "testdata/error_400_sim.json", 400},
	{"azure-400", "../azure/testdata/prompt_filtered_400_innererror_docs_legacy.json", 400},
	{"openai-429", "../openai/testdata/error_429_rate_limit_tokens.json", 429},
}

// BenchmarkClassifyError reads each body with ClassifyError (the fast
// path) and, as NAME-reference, with classifyErrorSlow.
//
//	go test ./probes/oaiwire -run '^$' -bench ClassifyError -benchmem -count 5
func BenchmarkClassifyError(b *testing.B) {
	for _, bb := range errBenchBodies {
		body, err := os.ReadFile(bb.path)
		if err != nil {
			b.Fatal(err)
		}
		resp := &probes.Response{Status: bb.status, Header: http.Header{"X-Request-Id": {"req_sim_1_81e14d518cd4_0"}, "Content-Type": {"application/json"}}, Body: body}
		if _, ok := classifyErrorFast(resp, probestest.FuzzNow); !ok {
			b.Fatalf("%s: the fast path declined the body", bb.path)
		}
		benchPair(b, bb.name, resp, ClassifyError, classifyErrorSlow)
	}
}
