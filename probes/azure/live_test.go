//go:build live

// Live smoke test against a real Azure OpenAI deployment. It never runs in
// CI (build tag live) and skips unless AZURE_OPENAI_API_KEY,
// AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_DEPLOYMENT are set:
//
//	go test -tags live ./probes/azure -run Live -v
//
// Settings: AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT (the resource
// endpoint, https://NAME.openai.azure.com), AZURE_OPENAI_DEPLOYMENT (the
// deployment name), AZURE_OPENAI_API_VERSION (default 2024-10-21).
package azure

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

func TestLiveChat(t *testing.T) {
	key := probestest.Env(t, "AZURE_OPENAI_API_KEY")
	endpoint := probestest.Env(t, "AZURE_OPENAI_ENDPOINT")
	deployment := probestest.Env(t, "AZURE_OPENAI_DEPLOYMENT")
	p, err := New(probes.Target{
		Name: "azure-live", Provider: "azure", Endpoint: "chat", Model: deployment,
		BaseURL: endpoint, APIKey: key, MaxTokens: 64,
		Options: map[string]string{"api_version": probestest.EnvOr("AZURE_OPENAI_API_VERSION", DefaultAPIVersion)},
	})
	if err != nil {
		t.Fatal(err)
	}
	probestest.LiveSmoke(t, p, probestest.LiveWant{RequestID: true, ModelID: true}, key)
}
