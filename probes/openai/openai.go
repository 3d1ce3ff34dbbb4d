// Package openai is the driftprobe adapter for the OpenAI API (provider
// "openai").
//
// Endpoint "chat" sends POST {base}/chat/completions (default base
// https://api.openai.com/v1, so the fingerprinted path is
// /v1/chat/completions) with the canonical oaiwire.ChatRequest body, model
// included. It reads choices[0].finish_reason (content_filter → blocked_output),
// message.refusal (→ model_refusal), a short plain-text refusal in content (→
// model_refusal, Heuristic), the dated response model, system_fingerprint and
// usage. OpenAI chat has no input-side filter signal, except the 400
// code=invalid_prompt ("your prompt was flagged as potentially violating our
// usage policy", reasoning models) read as blocked_input.
//
// Option token_param: max_completion_tokens sends the token limit under that
// name (reasoning models reject max_tokens); it changes the body, so the
// fingerprint.
//
// Endpoint "moderation" sends POST {base}/moderations with {"model", "input"}
// where input is the probe's user messages joined with "\n". It reads
// results[0].flagged (flagged → blocked_input at stage input: the moderation
// endpoint's flag is the classifier's verdict), categories (Fired),
// category_scores (Score) and category_applied_input_types (Severity
// "applied:image+text"), and the response model. A category value that is
// not true or false makes the answer unreadable (transient
// "malformed_response"), never a verdict.
//
// Both read the x-request-id header (falling back to the body id), the error
// envelope {error:{message,type,param,code}} (account enforcement such as
// account_deactivated → abuse_block; insufficient_quota → client_error; 429
// and 5xx → transient) and Retry-After, retry-after-ms and, on a 429,
// x-ratelimit-reset-requests / x-ratelimit-reset-tokens.
package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/oaiwire"
)

// DefaultBaseURL is the API root as the OpenAI SDKs take it.
const DefaultBaseURL = "https://api.openai.com/v1"

// Endpoint values.
const (
	EndpointChat       = "chat"
	EndpointModeration = "moderation"
)

func init() {
	probes.Register(Info(), New)
}

// Info describes the provider.
func Info() probes.Info {
	return probes.Info{
		Name:      "openai",
		Endpoints: []string{EndpointChat, EndpointModeration},
		KeyEnv:    "OPENAI_API_KEY",
		NeedsKey:  true,
		Signals: []string{
			"chat: choices[0].finish_reason=content_filter (output block)",
			"chat: choices[0].message.refusal (model refusal)",
			"chat: plain-text refusal opening in message.content (model refusal, heuristic)",
			"chat: 400 error.code=invalid_prompt / content_policy_violation (input block)",
			"chat: model (dated snapshot), system_fingerprint, usage",
			"moderation: results[0].flagged (input block), categories (fired), category_scores (scores), category_applied_input_types (severity \"applied:TYPES\")",
			"moderation: model",
			"errors: error.type/code/message; account_deactivated etc. and abuse wording (abuse_block); insufficient_quota (client_error)",
			"rate limits: Retry-After, retry-after-ms, x-ratelimit-reset-requests/-tokens on 429",
		},
		Input: true, Output: true, Scores: true,
		RequestID: "x-request-id header (fallback: body id)",
		ModelFP:   "system_fingerprint (chat); response model recorded as model id",
		Options:   []string{"organization", "project", oaiwire.TokenParamOption},
		Check:     Check,
		Warn:      Warn,
	}
}

// Warn reports a base_url ending in an OpenAI endpoint (/chat/completions,
// /moderations, …), or whose path does not end in /v1: the adapter
// appends only /chat/completions or /moderations to base_url (the API
// root as the OpenAI SDKs take it, version included), so
// https://api.openai.com would request /chat/completions.
func Warn(t probes.Target) []probes.FieldError {
	path := "/chat/completions"
	if t.Endpoint == EndpointModeration {
		path = "/moderations"
	}
	if w := probes.PastedEndpoint(t.BaseURL, path, "openai", DefaultBaseURL, oaiwire.Endpoints...); w != nil {
		return w
	}
	return probes.MissingVersion(t.BaseURL, path, "openai", DefaultBaseURL, "v1")
}

// Check validates an openai target.
func Check(t probes.Target) []probes.FieldError {
	var errs []probes.FieldError
	switch t.Endpoint {
	case "", EndpointChat, EndpointModeration:
	default:
		errs = append(errs, probes.FieldError{Field: "endpoint", Msg: fmt.Sprintf("%q: openai supports chat, moderation", t.Endpoint)})
	}
	if t.BaseURL != "" {
		if err := oaiwire.CheckBaseURL(t.BaseURL); err != nil {
			errs = append(errs, probes.FieldError{Field: "base_url", Msg: err.Error()})
		}
	}
	if err := oaiwire.CheckTokenParam(t.Options[oaiwire.TokenParamOption]); err != nil {
		errs = append(errs, probes.FieldError{Field: "options." + oaiwire.TokenParamOption, Msg: err.Error()})
	}
	for _, k := range accountOptions {
		v := t.Options[k]
		switch {
		case strings.ContainsAny(v, "\r\n") || strings.TrimSpace(v) != v:
			errs = append(errs, probes.FieldError{Field: "options." + k, Msg: "must be a single token without whitespace around it or line breaks"})
		case strings.HasPrefix(v, "sk-"):
			// The id is recorded (the target's origin): a key pasted
			// here would be stored. The value is not repeated.
			errs = append(errs, probes.FieldError{Field: "options." + k, Msg: "holds an API key (sk-…), not an " + k + " id: the key belongs in the variable api_key_env names"})
		}
	}
	return errs
}

// accountOptions are the options naming the account a target speaks for
// (sent as OpenAI-Organization and OpenAI-Project), in the order
// AccountScope names them.
var accountOptions = []string{"organization", "project"}

// Prober renders and reads OpenAI requests for one target.
type Prober struct {
	target   probes.Target
	base     string
	endpoint string
	now      func() time.Time
}

var (
	_ probes.Prober        = (*Prober)(nil)
	_ probes.Authorizer    = (*Prober)(nil)
	_ probes.AccountScoper = (*Prober)(nil)
	_ probes.Generator     = (*Prober)(nil)
)

// New builds an openai prober.
func New(t probes.Target) (probes.Prober, error) {
	if errs := Check(t); len(errs) > 0 {
		return nil, fmt.Errorf("openai: %s: %s", errs[0].Field, errs[0].Msg)
	}
	p := &Prober{target: t, base: t.BaseURL, endpoint: t.Endpoint, now: time.Now}
	if p.base == "" {
		p.base = DefaultBaseURL
	}
	if p.endpoint == "" {
		p.endpoint = EndpointChat
	}
	return p, nil
}

// Render renders the canonical request for pr.
func (p *Prober) Render(pr probes.Probe) (*probes.Request, error) {
	if p.endpoint == EndpointModeration {
		in, err := oaiwire.UserText(pr)
		if err != nil {
			return nil, err
		}
		return oaiwire.RenderURL(p.base, "/moderations", oaiwire.ModerationRequest{Model: p.target.Model, Input: in})
	}
	return oaiwire.RenderURL(p.base, "/chat/completions", oaiwire.NewChatRequest(p.target, pr, true).WithTokenParam(p.target))
}

// Authorize adds the bearer key and the optional OpenAI-Organization and
// OpenAI-Project headers. None of them is part of the fingerprint; the
// organization and project are part of the origin (AccountScope).
func (p *Prober) Authorize(_ context.Context, r *http.Request) error {
	if p.target.APIKey != "" {
		r.Header.Set("Authorization", "Bearer "+p.target.APIKey)
	}
	if v := p.target.Options["organization"]; v != "" {
		r.Header.Set("OpenAI-Organization", v)
	}
	if v := p.target.Options["project"]; v != "" {
		r.Header.Set("OpenAI-Project", v)
	}
	return nil
}

// AccountScope names the organization and project the target speaks for
// ("organization=org-1 project=proj_2", either alone, or "" for neither):
// they choose the account's policy and enforcement, and the request
// fingerprint leaves their headers out, so they are part of the target's
// origin (probes.AccountScoper). Ids, never the key.
func (p *Prober) AccountScope() string {
	var parts []string
	for _, k := range accountOptions {
		if v := p.target.Options[k]; v != "" {
			parts = append(parts, k+"="+url.QueryEscape(v))
		}
	}
	return strings.Join(parts, " ")
}

// Classify reads one attempt's response.
func (p *Prober) Classify(_ *probes.Request, resp *probes.Response) probes.Result {
	if p.endpoint == EndpointModeration {
		return oaiwire.Redact(oaiwire.ClassifyModeration(resp, p.now(), NormalizeModeration), p.target.APIKey)
	}
	return oaiwire.Redact(oaiwire.ClassifyChat(resp, p.now()), p.target.APIKey)
}

// NormalizeModeration maps an OpenAI moderation category (omni and legacy
// text-moderation models: oaiwire.NormalizeModeration); unknown names are
// "other" with known false.
func NormalizeModeration(raw string) (string, bool) { return oaiwire.NormalizeModeration(raw) }

// Generates reports whether the requests have a model generate output:
// not for endpoint moderation, whose requests carry no max_tokens.
func (p *Prober) Generates() bool { return p.endpoint != EndpointModeration }
