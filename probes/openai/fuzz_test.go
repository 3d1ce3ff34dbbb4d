package openai

import (
	"time"

	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// FuzzClassify fuzzes the chat and moderation readers through the prober.
//
//	go test ./probes/openai -run '^$' -fuzz '^FuzzClassify$' -fuzztime 30s
func FuzzClassify(f *testing.F) {
	var targets []probestest.FuzzTarget
	for _, ep := range []string{EndpointChat, EndpointModeration} {
		tg := target(ep, "https://api.openai.com/v1")
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
