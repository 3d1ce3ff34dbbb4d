package oaiwire

import (
	"net/http"
	"os"
	"testing"

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
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				_ = ClassifyChat(resp, probestest.FuzzNow)
			}
		})
		b.Run(bb.name+"-reference", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				_ = classifyChatSlow(resp, probestest.FuzzNow)
			}
		})
	}
}
