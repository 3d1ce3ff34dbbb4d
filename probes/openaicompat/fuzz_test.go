package openaicompat

import (
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// FuzzClassify fuzzes the OpenAI-compatible chat reader through the prober.
//
//	go test ./probes/openaicompat -run '^$' -fuzz '^FuzzClassify$' -fuzztime 30s
func FuzzClassify(f *testing.F) {
	pr, err := New(target("http://vllm.internal:8000/v1", probestest.FuzzKey))
	if err != nil {
		f.Fatal(err)
	}
	p := pr.(*Prober)
	p.now = func() time.Time { return probestest.FuzzNow }
	probestest.Fuzz(f, []probestest.FuzzTarget{{Name: "chat", AllowVerdict: probestest.OpenAIDialectVerdict,
		Classify: func(resp *probes.Response) probes.Result { return p.Classify(nil, resp) }}}, "testdata")
}
