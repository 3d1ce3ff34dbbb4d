//go:build live

// Live smoke tests against Amazon Bedrock Runtime: Converse, and
// ApplyGuardrail when a guardrail is given. They never run in CI (build tag
// live) and skip when their settings are unset:
//
//	go test -tags live ./probes/bedrock -run Live -v
//
// Settings: BEDROCK_REGION and BEDROCK_MODEL (required; e.g. us-east-1 and
// anthropic.claude-3-haiku-20240307-v1:0 or an inference profile id), and
// credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ optional
// AWS_SESSION_TOKEN) for SigV4, or AWS_BEARER_TOKEN_BEDROCK (a Bedrock API
// key). BEDROCK_GUARDRAIL_ID and BEDROCK_GUARDRAIL_VERSION (optional) add
// the guardrail to Converse and enable the ApplyGuardrail test.
package bedrock

import (
	"os"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

func liveTarget(t *testing.T, endpoint string, guardrail bool) (probes.Target, []string) {
	t.Helper()
	tg := probes.Target{
		Name: "bedrock-live", Provider: "bedrock", Endpoint: endpoint,
		Model:     probestest.Env(t, "BEDROCK_MODEL"),
		MaxTokens: 64,
		Options:   map[string]string{OptRegion: probestest.Env(t, "BEDROCK_REGION")},
		APIKey:    os.Getenv("AWS_BEARER_TOKEN_BEDROCK"),
	}
	if tg.APIKey == "" && (os.Getenv(EnvAccessKeyID) == "" || os.Getenv(EnvSecretAccessKey) == "") {
		t.Skipf("no AWS credentials: set %s and %s, or AWS_BEARER_TOKEN_BEDROCK", EnvAccessKeyID, EnvSecretAccessKey)
	}
	if guardrail {
		tg.Options[OptGuardrailID] = probestest.Env(t, "BEDROCK_GUARDRAIL_ID")
		tg.Options[OptGuardrailVersion] = probestest.Env(t, "BEDROCK_GUARDRAIL_VERSION")
	}
	secrets := []string{tg.APIKey, os.Getenv(EnvSecretAccessKey), os.Getenv(EnvSessionToken)}
	return tg, secrets
}

func TestLiveConverse(t *testing.T) {
	tg, secrets := liveTarget(t, EndpointChat, false)
	if os.Getenv("BEDROCK_GUARDRAIL_ID") != "" {
		tg, secrets = liveTarget(t, EndpointChat, true)
	}
	p, err := New(tg)
	if err != nil {
		t.Fatal(err)
	}
	// Model id: the configured model (or the prompt router's invoked model).
	probestest.LiveSmoke(t, p, probestest.LiveWant{RequestID: true, ModelID: true}, secrets...)
}

func TestLiveApplyGuardrail(t *testing.T) {
	tg, secrets := liveTarget(t, EndpointGuardrail, true)
	p, err := New(tg)
	if err != nil {
		t.Fatal(err)
	}
	probestest.LiveSmoke(t, p, probestest.LiveWant{RequestID: true}, secrets...)
}
