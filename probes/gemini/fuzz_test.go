package gemini

import (
	"bytes"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// FuzzClassify fuzzes the generateContent reader in both dialects (Gemini
// Developer API and Vertex AI) through the prober.
//
//	go test ./probes/gemini -run '^$' -fuzz '^FuzzClassify$' -fuzztime 30s
func FuzzClassify(f *testing.F) {
	var targets []probestest.FuzzTarget
	for name, opts := range map[string]map[string]string{"gemini": nil, "vertex": vertexOpts} {
		pr, err := New(probes.Target{Name: "gemini-fuzz", Provider: "gemini", Model: "gemini-2.0-flash", APIKey: probestest.FuzzKey, MaxTokens: 64, Options: opts})
		if err != nil {
			f.Fatal(err)
		}
		p := pr.(*Prober)
		p.now = func() time.Time { return probestest.FuzzNow }
		targets = append(targets, probestest.FuzzTarget{Name: name,
			Classify:     func(resp *probes.Response) probes.Result { return p.Classify(nil, resp) },
			AllowVerdict: streamVerdict})
	}
	probestest.Fuzz(f, targets, "testdata")
}

// streamVerdict is the one documented rule that reads a verdict from a body
// that is not a JSON object: a complete, untruncated 2xx SSE stream whose
// every event is a JSON object is read like the answer it merges into (a
// byte order mark before it skipped, as classify skips it).
func streamVerdict(resp *probes.Response, r probes.Result) bool {
	t := bytes.TrimSpace(wire.TrimBOM(resp.Body))
	if resp.Status < 200 || resp.Status > 299 || resp.Truncated || !isSSE(t) {
		return false
	}
	var gr generateResponse
	_, stream, err := decode(t, &gr)
	return stream && err == nil && streamDone(&gr) && r.Class.IsVerdict()
}
