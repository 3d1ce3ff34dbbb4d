// Package mistral is the driftprobe adapter for Mistral's moderation API
// (provider "mistral"). Mistral's chat completions carry no filter verdict,
// so both endpoints are classifiers:
//
//   - endpoint "moderation": POST {base}/v1/moderations with
//     {"model", "input": [TEXT]}, TEXT being the probe's user messages joined
//     with "\n" (raw-text classification);
//   - endpoint "chat" (the default): POST {base}/v1/chat/moderations with
//     {"model", "input": [[{role, content}, ...]]}, the probe's whole
//     conversation (Mistral classifies its last turn in context). The
//     contract's endpoint values are chat|moderation|guardrail, so "chat"
//     names the conversational classifier here.
//
// Default base https://api.mistral.ai. Both return {id, model, results:
// [{categories: {NAME: bool}, category_scores: {NAME: float}}]} with no
// flagged field: any category true is blocked_input at stage input (the
// classifier's verdict), otherwise allowed; a category value that is not
// true or false (a string, an object, null) makes the answer unreadable:
// transient "malformed_response", never a verdict. Every category is kept
// as a Signal with its score. Categories map as sexual→sexual,
// hate_and_discrimination→hate, violence_and_threats→violence,
// dangerous_and_criminal_content→illicit, selfharm→self_harm,
// health/financial/law→other, pii→privacy, jailbreaking→jailbreak, and the
// mistral-moderation-2603 split dangerous/criminal→illicit; any other name
// is "other" with "category:NAME" in Result.Unknown. The response model
// (e.g. mistral-moderation-latest) is recorded as the model id; the request
// id comes from the x-request-id or mistral-correlation-id header, else the
// body id. Errors ({message, type, code} or {error:{...}}, message possibly
// an object) follow oaiwire.ClassifyError: 429/5xx transient with
// Retry-After, account enforcement wording abuse_block, other 4xx client
// errors.
package mistral

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/oaiwire"
)

// DefaultBaseURL is the API root as the Mistral SDKs take it.
const DefaultBaseURL = "https://api.mistral.ai"

// Endpoint values.
const (
	EndpointChat       = "chat"       // POST /v1/chat/moderations
	EndpointModeration = "moderation" // POST /v1/moderations
)

func init() {
	probes.Register(Info(), New)
}

// Info describes the provider.
func Info() probes.Info {
	return probes.Info{
		Name:      "mistral",
		Endpoints: []string{EndpointChat, EndpointModeration},
		KeyEnv:    "MISTRAL_API_KEY",
		NeedsKey:  true,
		Signals: []string{
			"endpoint chat = POST /v1/chat/moderations (conversation); endpoint moderation = POST /v1/moderations (user text)",
			"results[].categories{NAME: bool} (any true: input block)",
			"results[].category_scores{NAME: float} (scores)",
			"model (moderation model id)",
			"errors: {message,type,code} / {error:{...}}; account enforcement wording (abuse_block); 429/5xx with Retry-After",
		},
		Input: true, Output: false, Scores: true,
		RequestID: "x-request-id or mistral-correlation-id header (fallback: body id)",
		ModelFP:   "none; the response model is recorded as model id",
		Check:     Check,
		Warn:      Warn,
	}
}

// Warn reports a base_url ending in /v1, or in an endpoint
// (/v1/chat/moderations, /v1/moderations, /v1/chat/completions, or those
// without /v1): the adapter appends
// /v1/chat/moderations or /v1/moderations to base_url (the API root as the
// Mistral SDKs take it, without /v1), so that base would request /v1/v1/….
func Warn(t probes.Target) []probes.FieldError {
	path := "/v1/chat/moderations"
	if t.Endpoint == EndpointModeration {
		path = "/v1/moderations"
	}
	// A pasted endpoint: either of the adapter's, or the chat endpoint
	// of Mistral's own API (which carries no filter verdict).
	if w := probes.PastedEndpoint(t.BaseURL, path, "mistral", DefaultBaseURL,
		"/v1/chat/moderations", "/v1/moderations", "/v1/chat/completions",
		"/chat/moderations", "/moderations", "/chat/completions"); w != nil {
		return w
	}
	return probes.DoubledVersion(t.BaseURL, path, "mistral", DefaultBaseURL, "v1")
}

// Check validates a mistral target.
func Check(t probes.Target) []probes.FieldError {
	var errs []probes.FieldError
	switch t.Endpoint {
	case "", EndpointChat, EndpointModeration:
	default:
		errs = append(errs, probes.FieldError{Field: "endpoint", Msg: fmt.Sprintf("%q: mistral supports chat (/v1/chat/moderations), moderation (/v1/moderations)", t.Endpoint)})
	}
	if t.BaseURL != "" {
		if err := oaiwire.CheckBaseURL(t.BaseURL); err != nil {
			errs = append(errs, probes.FieldError{Field: "base_url", Msg: err.Error()})
		}
	}
	return errs
}

// Prober renders and reads Mistral moderation requests for one target.
type Prober struct {
	target   probes.Target
	base     string
	endpoint string
	now      func() time.Time
}

var (
	_ probes.Prober     = (*Prober)(nil)
	_ probes.Authorizer = (*Prober)(nil)
	_ probes.Generator  = (*Prober)(nil)
)

// New builds a mistral prober.
func New(t probes.Target) (probes.Prober, error) {
	if errs := Check(t); len(errs) > 0 {
		return nil, fmt.Errorf("mistral: %s: %s", errs[0].Field, errs[0].Msg)
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

// textRequest is the canonical /v1/moderations body.
type textRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

// chatRequest is the canonical /v1/chat/moderations body: one conversation.
type chatRequest struct {
	Model string             `json:"model"`
	Input [][]probes.Message `json:"input"`
}

// Render renders the canonical request for pr.
func (p *Prober) Render(pr probes.Probe) (*probes.Request, error) {
	if p.endpoint == EndpointModeration {
		in, err := oaiwire.UserText(pr)
		if err != nil {
			return nil, err
		}
		return oaiwire.RenderURL(p.base, "/v1/moderations", textRequest{Model: p.target.Model, Input: []string{in}})
	}
	if len(pr.Messages) == 0 {
		return nil, fmt.Errorf("probe %s has no messages", pr.ID)
	}
	return oaiwire.RenderURL(p.base, "/v1/chat/moderations", chatRequest{Model: p.target.Model, Input: [][]probes.Message{pr.Messages}})
}

// Authorize adds the bearer key (never part of the fingerprint).
func (p *Prober) Authorize(_ context.Context, r *http.Request) error {
	if p.target.APIKey != "" {
		r.Header.Set("Authorization", "Bearer "+p.target.APIKey)
	}
	return nil
}

// Classify reads one attempt's response.
func (p *Prober) Classify(_ *probes.Request, resp *probes.Response) probes.Result {
	return oaiwire.Redact(oaiwire.ClassifyModeration(resp, p.now(), Normalize), p.target.APIKey)
}

var categories = map[string]string{
	"sexual":                         probes.CatSexual,
	"hate_and_discrimination":        probes.CatHate,
	"violence_and_threats":           probes.CatViolence,
	"dangerous_and_criminal_content": probes.CatIllicit,
	"dangerous":                      probes.CatIllicit, // mistral-moderation-2603
	"criminal":                       probes.CatIllicit, // mistral-moderation-2603
	"selfharm":                       probes.CatSelfHarm,
	"health":                         probes.CatOther,
	"financial":                      probes.CatOther,
	"law":                            probes.CatOther,
	"pii":                            probes.CatPrivacy,
	"jailbreaking":                   probes.CatJailbreak,
}

// Normalize maps a Mistral moderation category; unknown names are "other"
// with known false.
func Normalize(raw string) (string, bool) {
	if c, ok := categories[raw]; ok {
		return c, true
	}
	return probes.CatOther, false
}

// Generates reports false: both endpoints (/v1/moderations and
// /v1/chat/moderations) classify the input; no model generates output and
// the requests carry no max_tokens.
func (p *Prober) Generates() bool { return false }
