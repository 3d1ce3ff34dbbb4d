package openaicompat

// QA pass 2 on the provider adapters: each test fails on the code as it
// stands, for the reason its comment gives.

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// OpenAI's current models (GPT-5.x, o-series) block some prompts before
// any generation with 400 invalid_request_error code "invalid_prompt" and
// the message "Invalid prompt: we've limited access to this content for
// safety reasons. ..." (observed against GPT-5.4: microsoft/PyRIT#1463,
// which handles it as a content filter). Sent to the openai adapter it is
// blocked_input (by its code). LiteLLM forwards it, as it forwards the
// "your prompt was flagged" wording this adapter already reads as an input
// block, as "litellm.BadRequestError: OpenAIException - <message>" with
// code "400": the code is gone and only the message is left. The
// message-based rule (wire.IsPromptFlagged) knows only the "your prompt
// was flagged" wording, so this one reads as client_error — not a
// verdict: a benign->blocked flip on a bio probe behind a gateway is never
// seen, and the run is not even degraded (client errors do not count).
func TestQA2GatewayForwardedSafetyInvalidPrompt(t *testing.T) {
	const msg = "Invalid prompt: we've limited access to this content for safety reasons. This type of information may be used to benefit or to harm people. We are continuously refining our work in this area, and you can read more about our approach in our blog post (https://openai.com/index/preparing-for-future-ai-capabilities-in-biology) and Model Spec (https://openai.com/index/introducing-the-model-spec)."
	probestest.Conformance(t, newProber(secret), probestest.Probe, []probestest.Case{
		{
			// Direct (the code is kept): the reference reading.
			Name: "direct_code_invalid_prompt", Status: 400,
			Body: `{"error":{"message":"` + msg + `","type":"invalid_request_error","param":null,"code":"invalid_prompt"}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "invalid_prompt"},
		},
		{
			Name: "litellm_forwarded", Status: 400,
			Body: `{"error":{"message":"litellm.BadRequestError: OpenAIException - ` + msg + `","type":null,"param":null,"code":"400"}}`,
			Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "invalid_prompt"},
		},
	})
}

// xAI's OpenAI-compatible API (https://api.x.ai/v1, an openai_compatible
// target) rejects a prompt its safety checks flag with HTTP 403 and
// {"code":"The caller does not have permission to execute the specified
// operation","error":"Content violates usage guidelines. Team: …, API key
// ID: …, Model: grok-4-0709, Failed check: SAFETY_CHECK_TYPE_BIO"}
// (verbatim but redacted in UKGovernmentBEIS/inspect_ai#2267, "Add
// content filter handling to grok"; theopenco/llmgateway#1785 "treat xAI
// content safety 403 as content_filter", seen with SAFETY_CHECK_TYPE_CSAM
// too). It is a per-request input block, deterministic for these bytes;
// the adapter reads it as client_error, which is no verdict: the probe's
// move from allowed to blocked is never seen.
//
// DeepSeek's API (https://api.deepseek.com, OpenAI-compatible) does the
// same with HTTP 400 {"error":{"message":"Content Exists Risk","type":
// "invalid_request_error","param":null,"code":"invalid_request_error"}}:
// its input moderation ("we refuse to answer harmful queries ...
// probably because we've updated our safety strategy", a DeepSeek
// maintainer in deepseek-ai/awesome-deepseek-integration#13 — exactly the
// drift driftprobe exists to see; body verbatim in 666ghj/BettaFish#108).
func TestQA2CompatProviderContentBlocksAreInputBlocks(t *testing.T) {
	probestest.Conformance(t, newProber(secret), probestest.Probe, []probestest.Case{{
		Name: "xai_403_safety_check", Status: 403,
		Body: `{"code":"The caller does not have permission to execute the specified operation","error":"Content violates usage guidelines. Team: 0f3c2b1a-team, API key ID: 9e8d7c6b-key, Model: grok-4-0709, Failed check: SAFETY_CHECK_TYPE_BIO"}`,
		Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, NoCheckCategories: true},
	}, {
		Name: "deepseek_400_content_exists_risk", Status: 400,
		Body: `{"error":{"message":"Content Exists Risk","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`,
		Want: probestest.Want{Class: probes.BlockedInput, Stage: probes.StageInput, NoCheckCategories: true},
	}})
}

// Groq (an OpenAI-compatible API, https://api.groq.com/openai/v1)
// enforces at the account level with HTTP 400 {"error":{"message":
// "Organization has been restricted. Please reach out to support if you
// believe this was in error.","type":"invalid_request_error","param":"",
// "code":"organization_restricted"}} (songquanpeng/one-api#1764, fixed in
// #1822 by disabling the channel). docs/PROVIDERS.md: "account-level enforcement
// (suspended organisation or key, abuse monitoring), which may arrive as
// an ordinary 400/403, becomes abuse_block" — which pages on its own. The
// adapter reads it as an ordinary client_error: every probe of the target
// fails and nothing pages.
func TestQA2GroqOrganizationRestrictedIsAbuse(t *testing.T) {
	probestest.Conformance(t, newProber(secret), probestest.Probe, []probestest.Case{{
		Name: "groq_400_organization_restricted", Status: 400,
		Body: `{"error":{"message":"Organization has been restricted. Please reach out to support if you believe this was in error.","type":"invalid_request_error","param":"","code":"organization_restricted"}}`,
		Want: probestest.Want{Class: probes.AbuseBlock, Stage: probes.StageAccount},
	}})
}
