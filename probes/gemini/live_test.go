//go:build live

// Live smoke tests against Google's generateContent API: the Gemini
// Developer API, and Vertex AI when its settings are given. They never run
// in CI (build tag live) and skip when their credentials are unset:
//
//	go test -tags live ./probes/gemini -run Live -v
//
// Gemini API: GEMINI_API_KEY (required), GEMINI_MODEL (default
// gemini-2.0-flash). Vertex AI: VERTEX_ACCESS_TOKEN (an OAuth access token,
// e.g. from `gcloud auth print-access-token`), VERTEX_PROJECT (required),
// VERTEX_LOCATION (default us-central1), VERTEX_MODEL (default
// gemini-2.0-flash).
package gemini

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

func TestLiveGemini(t *testing.T) {
	key := probestest.Env(t, "GEMINI_API_KEY")
	p, err := New(probes.Target{
		Name: "gemini-live", Provider: "gemini", Endpoint: "chat",
		Model: probestest.EnvOr("GEMINI_MODEL", "gemini-2.0-flash"), APIKey: key, MaxTokens: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Request id: x-goog-request-id or the body's responseId; model id:
	// modelVersion.
	probestest.LiveSmoke(t, p, probestest.LiveWant{RequestID: true, ModelID: true}, key)
}

func TestLiveVertex(t *testing.T) {
	token := probestest.Env(t, "VERTEX_ACCESS_TOKEN")
	project := probestest.Env(t, "VERTEX_PROJECT")
	p, err := New(probes.Target{
		Name: "vertex-live", Provider: "gemini", Endpoint: "chat",
		Model: probestest.EnvOr("VERTEX_MODEL", "gemini-2.0-flash"), APIKey: token, MaxTokens: 64,
		Options: map[string]string{OptAPI: APIVertex, OptProject: project, OptLocation: probestest.EnvOr("VERTEX_LOCATION", "us-central1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	probestest.LiveSmoke(t, p, probestest.LiveWant{RequestID: true, ModelID: true}, token)
}
