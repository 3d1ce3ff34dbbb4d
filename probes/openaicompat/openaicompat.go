// Package openaicompat is the driftprobe adapter for any server speaking the
// OpenAI chat-completions API (provider "openai_compatible"): vLLM, LiteLLM
// and other gateways, self-hosted or vendor endpoints.
//
// It sends POST {base_url}/chat/completions (base_url is required and is the
// API root as the OpenAI SDKs take it, usually ending in /v1; its path is
// part of the fingerprint, its host is not) with the canonical
// oaiwire.ChatRequest body, model included. The key is optional: with no
// api_key_env (or an empty key) no Authorization header is sent; otherwise
// it is a bearer token added by Authorize.
//
// It reads what oaiwire.ClassifyChat reads: finish_reason=content_filter
// (output block, with Azure-style content_filter_results when a gateway
// passes them through), message.refusal and plain-text refusals (model
// refusal, the latter heuristic), Azure-style 400 content_filter errors and
// OpenAI's 400 invalid_prompt (input block), what gateways make of provider
// blocks (input blocks: LiteLLM's ContentPolicyViolationError, with Azure's
// per-category results when it forwards them in
// error.provider_specific_fields.innererror; OpenAI's invalid-prompt
// messages ("Invalid prompt: your prompt was flagged", "Invalid prompt:
// we've limited access to this content for safety reasons") whatever the
// code; OpenRouter's 403 moderation error, its metadata.reasons the
// categories), the input blocks providers state only in words (xAI's 403
// "Content violates usage guidelines. ... Failed check:
// SAFETY_CHECK_TYPE_<CHECK>", the check the category; DeepSeek's 400
// "Content Exists Risk", uncategorized), account enforcement wording and
// codes (abuse_block, never on the invalid-prompt wording; Groq's
// organization_restricted included), the error envelope in the OpenAI, {"error":"text"},
// top-level {message,type,code} and FastAPI {"detail":...} shapes, a 2xx
// carrying only an error (transient), Retry-After / retry-after-ms /
// x-ratelimit-reset-* and the x-request-id header (fallback: body id).
// A choice whose generation failed (finish_reason "error", OpenRouter's
// error object on the choice after an HTTP 200, vLLM's "abort") is
// transient, whatever text came before the failure. Other unknown finish
// reasons and new keys are recorded in Result.Unknown.
package openaicompat

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/oaiwire"
)

func init() {
	probes.Register(Info(), New)
}

// Info describes the provider.
func Info() probes.Info {
	return probes.Info{
		Name:      "openai_compatible",
		Endpoints: []string{"chat"},
		NeedsKey:  false,
		Signals: []string{
			"choices[0].finish_reason=content_filter (+ content_filter_results when present) (output block)",
			"choices[0].message.refusal; plain-text refusal opening (model refusal, the latter heuristic)",
			"400 error.code=content_filter / invalid_prompt (input block)",
			"gateways: LiteLLM ContentPolicyViolationError (+ provider_specific_fields.innererror), OpenAI's \"Invalid prompt: ...\" flagged/safety messages with any code, OpenRouter 403 metadata.reasons (input block)",
			"providers: xAI 403 \"Content violates usage guidelines\" (+ Failed check: SAFETY_CHECK_TYPE_*), DeepSeek 400 \"Content Exists Risk\" (input block)",
			"account enforcement wording in error type/code/message, e.g. Groq organization_restricted (abuse_block)",
			"error envelopes: {error:{...}}, {error:\"...\"}, {message,type,code}, {detail}",
			"429/5xx with Retry-After, retry-after-ms, x-ratelimit-reset-*",
			"model, system_fingerprint, usage",
		},
		Input: true, Output: true, Scores: true,
		RequestID: "x-request-id header (fallback: body id)",
		ModelFP:   "system_fingerprint where the server sends it; response model recorded as model id",
		Options:   []string{oaiwire.TokenParamOption},
		Check:     Check,
		Warn:      Warn,
	}
}

// Warn reports a base_url ending in an OpenAI endpoint (/chat/completions,
// …): the adapter appends /chat/completions to base_url. Its version is
// not checked: servers put the API root where they like.
func Warn(t probes.Target) []probes.FieldError {
	return probes.PastedEndpoint(t.BaseURL, "/chat/completions", "openai_compatible", "http://vllm:8000/v1", oaiwire.Endpoints...)
}

// Check validates an openai_compatible target: base_url is required.
func Check(t probes.Target) []probes.FieldError {
	var errs []probes.FieldError
	if t.Endpoint != "" && t.Endpoint != "chat" {
		errs = append(errs, probes.FieldError{Field: "endpoint", Msg: fmt.Sprintf("%q: openai_compatible supports chat", t.Endpoint)})
	}
	if t.BaseURL == "" {
		errs = append(errs, probes.FieldError{Field: "base_url", Msg: "required for openai_compatible: the API root, e.g. http://vllm:8000/v1"})
	} else if err := oaiwire.CheckBaseURL(t.BaseURL); err != nil {
		errs = append(errs, probes.FieldError{Field: "base_url", Msg: err.Error()})
	}
	if err := oaiwire.CheckTokenParam(t.Options[oaiwire.TokenParamOption]); err != nil {
		errs = append(errs, probes.FieldError{Field: "options." + oaiwire.TokenParamOption, Msg: err.Error()})
	}
	return errs
}

// Prober renders and reads requests for one OpenAI-compatible target.
type Prober struct {
	target probes.Target
	now    func() time.Time
}

var (
	_ probes.Prober     = (*Prober)(nil)
	_ probes.Authorizer = (*Prober)(nil)
)

// New builds an openai_compatible prober.
func New(t probes.Target) (probes.Prober, error) {
	if errs := Check(t); len(errs) > 0 {
		return nil, fmt.Errorf("openai_compatible: %s: %s", errs[0].Field, errs[0].Msg)
	}
	return &Prober{target: t, now: time.Now}, nil
}

// Render renders the canonical request for pr.
func (p *Prober) Render(pr probes.Probe) (*probes.Request, error) {
	return oaiwire.RenderURL(p.target.BaseURL, "/chat/completions", oaiwire.NewChatRequest(p.target, pr, true).WithTokenParam(p.target))
}

// Authorize adds a bearer key when one is configured.
func (p *Prober) Authorize(_ context.Context, r *http.Request) error {
	if p.target.APIKey != "" {
		r.Header.Set("Authorization", "Bearer "+p.target.APIKey)
	}
	return nil
}

// Classify reads one attempt's response.
func (p *Prober) Classify(_ *probes.Request, resp *probes.Response) probes.Result {
	return oaiwire.Redact(oaiwire.ClassifyChat(resp, p.now()), p.target.APIKey)
}
