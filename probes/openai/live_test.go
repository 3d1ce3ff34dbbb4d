//go:build live

// Live smoke tests against the real OpenAI API. They never run in CI (build
// tag live) and skip when OPENAI_API_KEY is unset:
//
//	go test -tags live ./probes/openai -run Live -v
//
// Settings: OPENAI_API_KEY (required), OPENAI_BASE_URL (default
// https://api.openai.com/v1), OPENAI_MODEL (default gpt-4o-mini),
// OPENAI_MODERATION_MODEL (default omni-moderation-latest).
package openai

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

func liveProber(t *testing.T, endpoint, model string) probes.Prober {
	t.Helper()
	key := probestest.Env(t, "OPENAI_API_KEY")
	p, err := New(probes.Target{
		Name: "openai-live", Provider: "openai", Endpoint: endpoint, Model: model,
		BaseURL: probestest.EnvOr("OPENAI_BASE_URL", DefaultBaseURL), APIKey: key, MaxTokens: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLiveChat(t *testing.T) {
	p := liveProber(t, EndpointChat, probestest.EnvOr("OPENAI_MODEL", "gpt-4o-mini"))
	probestest.LiveSmoke(t, p, probestest.LiveWant{RequestID: true, ModelID: true}, p.(*Prober).target.APIKey)
}

func TestLiveModeration(t *testing.T) {
	p := liveProber(t, EndpointModeration, probestest.EnvOr("OPENAI_MODERATION_MODEL", "omni-moderation-latest"))
	probestest.LiveSmoke(t, p, probestest.LiveWant{RequestID: true, ModelID: true}, p.(*Prober).target.APIKey)
}
