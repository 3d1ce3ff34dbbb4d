//go:build live

// Live smoke tests against Mistral's moderation API, both endpoints
// (/v1/chat/moderations and /v1/moderations). They never run in CI (build
// tag live) and skip when MISTRAL_API_KEY is unset:
//
//	go test -tags live ./probes/mistral -run Live -v
//
// Settings: MISTRAL_API_KEY (required), MISTRAL_BASE_URL (default
// https://api.mistral.ai), MISTRAL_MODERATION_MODEL (default
// mistral-moderation-latest).
package mistral

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

func TestLiveModeration(t *testing.T) {
	key := probestest.Env(t, "MISTRAL_API_KEY")
	for _, ep := range []string{EndpointChat, EndpointModeration} {
		t.Run(ep, func(t *testing.T) {
			p, err := New(probes.Target{
				Name: "mistral-live", Provider: "mistral", Endpoint: ep,
				Model:   probestest.EnvOr("MISTRAL_MODERATION_MODEL", "mistral-moderation-latest"),
				BaseURL: probestest.EnvOr("MISTRAL_BASE_URL", DefaultBaseURL), APIKey: key,
			})
			if err != nil {
				t.Fatal(err)
			}
			probestest.LiveSmoke(t, p, probestest.LiveWant{RequestID: true, ModelID: true}, key)
		})
	}
}
