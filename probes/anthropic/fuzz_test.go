package anthropic

import (
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// FuzzClassify fuzzes the Messages API reader through the prober.
//
//	go test ./probes/anthropic -run '^$' -fuzz '^FuzzClassify$' -fuzztime 30s
func FuzzClassify(f *testing.F) {
	pr, err := New(probes.Target{Name: "anthropic-fuzz", Provider: "anthropic", Model: "claude-sonnet-4-5", APIKey: probestest.FuzzKey, MaxTokens: 64})
	if err != nil {
		f.Fatal(err)
	}
	p := pr.(*Prober)
	p.now = func() time.Time { return probestest.FuzzNow }
	probestest.Fuzz(f, []probestest.FuzzTarget{{Name: "chat",
		Classify: func(resp *probes.Response) probes.Result { return p.Classify(nil, resp) }}}, "testdata")
}
