package mistral

import (
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// FuzzClassify fuzzes both Mistral classifiers (/v1/chat/moderations and
// /v1/moderations) through the prober.
//
//	go test ./probes/mistral -run '^$' -fuzz '^FuzzClassify$' -fuzztime 30s
func FuzzClassify(f *testing.F) {
	var targets []probestest.FuzzTarget
	for _, ep := range []string{EndpointChat, EndpointModeration} {
		tg := target(ep, "")
		tg.APIKey = probestest.FuzzKey
		pr, err := New(tg)
		if err != nil {
			f.Fatal(err)
		}
		p := pr.(*Prober)
		p.now = func() time.Time { return probestest.FuzzNow }
		targets = append(targets, probestest.FuzzTarget{Name: ep, AllowVerdict: probestest.OpenAIDialectVerdict,
			Classify: func(resp *probes.Response) probes.Result { return p.Classify(nil, resp) }})
	}
	probestest.Fuzz(f, targets, "testdata")
}
