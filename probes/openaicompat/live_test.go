//go:build live

// Live smoke test against a real OpenAI-compatible server (vLLM, LiteLLM,
// a vendor gateway). It never runs in CI (build tag live) and skips unless
// OPENAI_COMPATIBLE_BASE_URL is set:
//
//	go test -tags live ./probes/openaicompat -run Live -v
//
// Settings: OPENAI_COMPATIBLE_BASE_URL (the API root, e.g.
// http://localhost:8000/v1), OPENAI_COMPATIBLE_API_KEY (optional),
// OPENAI_COMPATIBLE_MODEL (default gpt-4o-mini). Request and model ids are
// logged, not required: servers differ in what they return.
package openaicompat

import (
	"os"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

func TestLiveChat(t *testing.T) {
	base := probestest.Env(t, "OPENAI_COMPATIBLE_BASE_URL")
	key := os.Getenv("OPENAI_COMPATIBLE_API_KEY")
	p, err := New(probes.Target{
		Name: "openai-compatible-live", Provider: "openai_compatible", Endpoint: "chat",
		Model: probestest.EnvOr("OPENAI_COMPATIBLE_MODEL", "gpt-4o-mini"), BaseURL: base, APIKey: key, MaxTokens: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	probestest.LiveSmoke(t, p, probestest.LiveWant{}, key)
}
