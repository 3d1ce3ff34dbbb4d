package openai

import (
	"strings"
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

// TestSeveralChoices: with n > 1 (never asked for; a gateway may send it)
// the answer is choices[0], but a content_filter finish on any choice is
// the provider withholding output for these bytes (docs/PROVIDERS.md, as in
// Azure's documented N>1 scenario, testdata of the azure package).
func TestSeveralChoices(t *testing.T) {
	choice := func(i int, content, finish string) string {
		c := "null"
		if content != "" {
			c = `"` + content + `"`
		}
		return `{"index":` + string(rune('0'+i)) + `,"message":{"role":"assistant","content":` + c + `},"finish_reason":"` + finish + `"}`
	}
	body := func(choices ...string) string {
		return `{"id":"chatcmpl-n","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06","choices":[` + strings.Join(choices, ",") + `]}`
	}
	probestest.Conformance(t, newProber(EndpointChat), probestest.Probe, []probestest.Case{
		{Name: "second_filtered", Body: body(choice(0, "Fine.", "stop"), choice(1, "", "content_filter")),
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "content_filter"}},
		{Name: "first_filtered", Body: body(choice(0, "", "content_filter"), choice(1, "Fine.", "stop")),
			Want: probestest.Want{Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "content_filter"}},
		{Name: "none_filtered_first_decides", Body: body(choice(0, "Fine.", "length"), choice(1, "I can't help with that.", "stop")),
			Want: probestest.Want{Class: probes.Allowed, Reason: "length"}},
	})
}
