package openaicompat

import (
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// TestFixtures replays every recorded body in testdata/ (sources in the
// meta files: OpenAI's own bodies, the format these servers imitate, and
// gateways') over loopback HTTP and pins its exact reading: class, stage,
// reason and categories. A fixture added without a case here fails.
func TestFixtures(t *testing.T) {
	p := newProber("")
	probestest.Fixtures(t, probestest.Probe, map[string]probestest.Fixture{
		"chat_completion_200_object.json":                        {Prober: p, Class: probes.Allowed, Reason: "stop"},
		"chat_completion_200_default.json":                       {Prober: p, Class: probes.Allowed, Reason: "stop"},
		"chat_completion_200_x_request_id_headers_observed.json": {Prober: p, Class: probes.Allowed, Reason: "stop"},
		"error_429_rate_limit_tokens.json": {Prober: p, Status: 429, Header: map[string]string{"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"},
			Class: probes.Transient, Reason: "429:tokens:rate_limit_exceeded", RetryAfter: 6 * time.Minute},
		"error_429_rate_limit_tokens_2023.json": {Prober: p, Status: 429, Header: map[string]string{"Retry-After": "1"},
			Class: probes.Transient, Reason: "429:tokens:rate_limit_exceeded", RetryAfter: time.Second},
		"litellm_400_azure_content_policy.json": {Prober: p, Status: 400,
			Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "content_policy_violation"},
		"litellm_400_azure_content_policy_provider_specific_fields.json": {Prober: p, Status: 400,
			Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "content_filter", Categories: []string{probes.CatHate}},
		"litellm_400_openai_invalid_prompt.json": {Prober: p, Status: 400,
			Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "invalid_prompt"},
		"openrouter_403_moderation.json": {Prober: p, Status: 403,
			Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "moderation", Categories: []string{probes.CatHarassment, probes.CatViolence}},
	})
}
