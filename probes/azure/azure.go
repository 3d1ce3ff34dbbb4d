// Package azure is the driftprobe adapter for Azure OpenAI (provider
// "azure"), endpoint "chat".
//
// It sends POST {base}/openai/deployments/{deployment}/chat/completions
// ?api-version={options.api_version, default 2024-10-21}, where base is the
// resource endpoint (https://NAME.openai.azure.com; required) and the
// target's model is the deployment name. The body is the canonical
// oaiwire.ChatRequest without a model (the deployment is in the path). The
// key goes in the api-key header, added by Authorize.
//
// It reads, through oaiwire.ClassifyChat:
//   - input blocks: HTTP 400 with error.code=content_filter and/or
//     innererror.code=ResponsibleAIPolicyViolation; the per-category results
//     under innererror.content_filter_result (observed) and
//     innererror.content_filter_results (docs), merged; "self_harm" and
//     "self-harm" both map to self_harm; hate/sexual/violence/self_harm carry
//     {filtered, severity}, jailbreak/indirect_attack/profanity/protected
//     material carry {filtered, detected} (Severity "detected" /
//     "not_detected"). The legacy docs body that is not valid JSON (raw
//     newlines in the message, or a fragment without braces) is repaired and
//     still read as a block;
//   - output blocks: HTTP 200 with finish_reason=content_filter and
//     choices[].content_filter_results (on any choice when n > 1);
//   - scores on answered requests: prompt_filter_results[] (Raw prefixed
//     "prompt.") and choices[0].content_filter_results, kept as Signals;
//   - an "error" entry in any filter result (the filter did not run):
//     filter_unavailable, never allowed (unless a filter that did run fired:
//     then the block stands);
//   - account enforcement (403 "resource has been temporarily blocked" and
//     other wire.IsAbuse wording): abuse_block;
//   - 429/5xx: transient, with retry-after-ms / Retry-After;
//   - request id: x-request-id or apim-request-id header (fallback: body id);
//     model fingerprint: the response model and system_fingerprint. New
//     filter keys are recorded as "category:NAME" in Result.Unknown.
package azure

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/oaiwire"
)

// DefaultAPIVersion is the GA data-plane api-version used when the target
// sets none.
const DefaultAPIVersion = "2024-10-21"

var (
	apiVersionRe = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(-preview)?$`)
	deploymentRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

func init() {
	probes.Register(Info(), New)
}

// Info describes the provider.
func Info() probes.Info {
	return probes.Info{
		Name:      "azure",
		Endpoints: []string{"chat"},
		KeyEnv:    "AZURE_OPENAI_API_KEY",
		NeedsKey:  true,
		Signals: []string{
			"400 error.code=content_filter / innererror.code=ResponsibleAIPolicyViolation + innererror.content_filter_result(s){filtered,severity|detected} (input block)",
			"finish_reason=content_filter + choices[].content_filter_results (output block)",
			"prompt_filter_results[].content_filter_results and choices[].content_filter_results on answered requests (severities, detected flags)",
			"content_filter_results.error or a filter's error (filter_unavailable)",
			"message.refusal; plain-text refusal (model refusal, heuristic)",
			"403 account/resource enforcement wording (abuse_block)",
			"429/5xx with retry-after-ms, Retry-After",
			"model, system_fingerprint, usage",
		},
		Input: true, Output: true, Scores: true,
		RequestID: "x-request-id or apim-request-id header (fallback: body id)",
		ModelFP:   "system_fingerprint; response model recorded as model id; api-version is part of the request path",
		Options:   []string{"api_version", oaiwire.TokenParamOption},
		Check:     Check,
	}
}

// Check validates an azure target: base_url is required (the resource
// endpoint), api_version must look like 2024-10-21 or 2025-01-01-preview,
// and the deployment name must be a plain path segment.
func Check(t probes.Target) []probes.FieldError {
	var errs []probes.FieldError
	if t.Endpoint != "" && t.Endpoint != "chat" {
		errs = append(errs, probes.FieldError{Field: "endpoint", Msg: fmt.Sprintf("%q: azure supports chat", t.Endpoint)})
	}
	if t.BaseURL == "" {
		errs = append(errs, probes.FieldError{Field: "base_url", Msg: "required for azure: the resource endpoint, e.g. https://NAME.openai.azure.com"})
	} else if err := oaiwire.CheckBaseURL(t.BaseURL); err != nil {
		errs = append(errs, probes.FieldError{Field: "base_url", Msg: err.Error()})
	}
	if v, ok := t.Options["api_version"]; ok && !apiVersionRe.MatchString(v) {
		errs = append(errs, probes.FieldError{Field: "options.api_version", Msg: fmt.Sprintf("%q: want YYYY-MM-DD or YYYY-MM-DD-preview", v)})
	}
	if t.Model != "" && !deploymentRe.MatchString(t.Model) {
		errs = append(errs, probes.FieldError{Field: "model", Msg: fmt.Sprintf("%q: an Azure deployment name has letters, digits, '.', '_' and '-' only", t.Model)})
	}
	if err := oaiwire.CheckTokenParam(t.Options[oaiwire.TokenParamOption]); err != nil {
		errs = append(errs, probes.FieldError{Field: "options." + oaiwire.TokenParamOption, Msg: err.Error()})
	}
	return errs
}

// Prober renders and reads Azure OpenAI requests for one target.
type Prober struct {
	target probes.Target
	base   string
	suffix string
	now    func() time.Time
}

var (
	_ probes.Prober     = (*Prober)(nil)
	_ probes.Authorizer = (*Prober)(nil)
)

// New builds an azure prober.
func New(t probes.Target) (probes.Prober, error) {
	if t.Model == "" {
		return nil, fmt.Errorf("azure: model (the deployment name) is required")
	}
	if errs := Check(t); len(errs) > 0 {
		return nil, fmt.Errorf("azure: %s: %s", errs[0].Field, errs[0].Msg)
	}
	ver := t.Options["api_version"]
	if ver == "" {
		ver = DefaultAPIVersion
	}
	// The SDKs take the resource endpoint; accept one that already ends in
	// /openai so the path is never doubled.
	base := strings.TrimRight(t.BaseURL, "/")
	base = strings.TrimSuffix(base, "/openai")
	suffix := "/openai/deployments/" + url.PathEscape(t.Model) + "/chat/completions?api-version=" + url.QueryEscape(ver)
	return &Prober{target: t, base: base, suffix: suffix, now: time.Now}, nil
}

// Render renders the canonical request for pr.
func (p *Prober) Render(pr probes.Probe) (*probes.Request, error) {
	return oaiwire.RenderURL(p.base, p.suffix, oaiwire.NewChatRequest(p.target, pr, false).WithTokenParam(p.target))
}

// Authorize adds the api-key header (never part of the fingerprint).
func (p *Prober) Authorize(_ context.Context, r *http.Request) error {
	if p.target.APIKey != "" {
		r.Header.Set("api-key", p.target.APIKey)
	}
	return nil
}

// Classify reads one attempt's response.
func (p *Prober) Classify(_ *probes.Request, resp *probes.Response) probes.Result {
	return oaiwire.Redact(oaiwire.ClassifyChat(resp, p.now()), p.target.APIKey)
}
