//go:build live

// Live smoke test against Anthropic's Messages API. It never runs in CI
// (build tag live) and skips when ANTHROPIC_API_KEY is unset:
//
//	go test -tags live ./probes/anthropic -run Live -v
//
// Settings: ANTHROPIC_API_KEY (required), ANTHROPIC_BASE_URL (default
// https://api.anthropic.com), ANTHROPIC_MODEL (default
// claude-3-5-haiku-latest).
package anthropic

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

func TestLiveChat(t *testing.T) {
	key := probestest.Env(t, "ANTHROPIC_API_KEY")
	p, err := New(probes.Target{
		Name: "anthropic-live", Provider: "anthropic", Endpoint: "chat",
		Model:   probestest.EnvOr("ANTHROPIC_MODEL", "claude-3-5-haiku-latest"),
		BaseURL: probestest.EnvOr("ANTHROPIC_BASE_URL", DefaultBaseURL), APIKey: key, MaxTokens: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	probestest.LiveSmoke(t, p, probestest.LiveWant{RequestID: true, ModelID: true}, key)
}
