package azure

import (
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// FuzzClassify fuzzes the Azure OpenAI chat reader through the prober.
//
//	go test ./probes/azure -run '^$' -fuzz '^FuzzClassify$' -fuzztime 30s
func FuzzClassify(f *testing.F) {
	tg := target("https://example.openai.azure.com")
	tg.APIKey = probestest.FuzzKey
	pr, err := New(tg)
	if err != nil {
		f.Fatal(err)
	}
	p := pr.(*Prober)
	p.now = func() time.Time { return probestest.FuzzNow }
	probestest.Fuzz(f, []probestest.FuzzTarget{{Name: "chat", AllowVerdict: probestest.OpenAIDialectVerdict,
		Classify: func(resp *probes.Response) probes.Result { return p.Classify(nil, resp) }}}, "testdata")
}
