package sim

import (
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// FuzzClassify fuzzes the sim prober's reader (the shared OpenAI/Azure
// one). A base URL is set so no in-process server starts.
//
//	go test ./probes/sim -run '^$' -fuzz '^FuzzClassify$' -fuzztime 30s
func FuzzClassify(f *testing.F) {
	pr, err := New(probes.Target{Name: "sim-fuzz", Provider: "sim", Model: "sim-large", BaseURL: "http://127.0.0.1:1", APIKey: probestest.FuzzKey})
	if err != nil {
		f.Fatal(err)
	}
	p := pr.(*Prober)
	p.now = func() time.Time { return probestest.FuzzNow }
	probestest.Fuzz(f, []probestest.FuzzTarget{{Name: "chat", AllowVerdict: probestest.OpenAIDialectVerdict,
		Classify: func(resp *probes.Response) probes.Result { return p.Classify(nil, resp) }}}, "testdata")
}
