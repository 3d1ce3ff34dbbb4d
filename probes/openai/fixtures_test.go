package openai

import (
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// TestFixtures replays every recorded body in testdata/ (sources in the
// meta files) over loopback HTTP and pins its exact reading: class, stage,
// reason and categories. A fixture added without a case here fails.
func TestFixtures(t *testing.T) {
	chat, mod := newProber(EndpointChat), newProber(EndpointModeration)
	probestest.Fixtures(t, probestest.Probe, map[string]probestest.Fixture{
		"chat_completion_200_object.json":                        {Prober: chat, Class: probes.Allowed, Reason: "stop"},
		"chat_completion_200_default.json":                       {Prober: chat, Class: probes.Allowed, Reason: "stop"},
		"chat_completion_200_x_request_id_headers_observed.json": {Prober: chat, Class: probes.Allowed, Reason: "stop"},
		// The documented x-ratelimit-reset-* headers (sample values in the
		// meta file): the tokens limit was hit, so its reset is the wait.
		"error_429_rate_limit_tokens.json": {Prober: chat, Status: 429,
			Header: map[string]string{"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"},
			Class:  probes.Transient, Reason: "429:tokens:rate_limit_exceeded", RetryAfter: 6 * time.Minute},
		"error_429_rate_limit_tokens_2023.json": {Prober: chat, Status: 429, Header: map[string]string{"Retry-After": "1"},
			Class: probes.Transient, Reason: "429:tokens:rate_limit_exceeded", RetryAfter: time.Second},
		// A flagged prompt on a reasoning model: an input block, never
		// retried, never account enforcement.
		"error_400_invalid_prompt_observed.json": {Prober: chat, Status: 400,
			Header: map[string]string{"x-request-id": "req_bf2eadd66b9f5c652172871aebf34737", "x-ratelimit-reset-requests": "6ms", "x-ratelimit-reset-tokens": "40ms"},
			Class:  probes.BlockedInput, Stage: probes.StageInput, Reason: "invalid_prompt"},
		"moderation_200_omni.json": {Prober: mod, Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "flagged",
			Categories: []string{probes.CatHarassment, probes.CatViolence}},
		"moderation_200_text_moderation_007.json": {Prober: mod, Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "flagged",
			Categories: []string{probes.CatHarassment, probes.CatViolence}},
	})
}
