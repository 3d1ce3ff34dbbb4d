package bedrock

import (
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// FuzzClassify fuzzes the Converse and ApplyGuardrail readers through the
// prober, once with a Bedrock API key and once with SigV4 credentials whose
// secret key and session token must never appear in a result either.
//
//	go test ./probes/bedrock -run '^$' -fuzz '^FuzzClassify$' -fuzztime 30s
func FuzzClassify(f *testing.F) {
	f.Setenv(EnvAccessKeyID, "AKIDFUZZ")
	f.Setenv(EnvSecretAccessKey, probestest.FuzzKey)
	f.Setenv(EnvSessionToken, "fuzz-session-token-"+probestest.FuzzKey)
	var targets []probestest.FuzzTarget
	for _, ep := range []string{EndpointChat, EndpointGuardrail} {
		for _, bearer := range []bool{false, true} {
			tg := target(ep, "")
			name := ep + "/sigv4"
			if bearer {
				tg.APIKey, name = probestest.FuzzKey, ep+"/apikey"
			}
			pr, err := New(tg)
			if err != nil {
				f.Fatal(err)
			}
			p := pr.(*Prober)
			p.now = func() time.Time { return probestest.FuzzNow }
			targets = append(targets, probestest.FuzzTarget{Name: name,
				Classify: func(resp *probes.Response) probes.Result { return p.Classify(nil, resp) }})
		}
	}
	probestest.Fuzz(f, targets, "testdata")
}
