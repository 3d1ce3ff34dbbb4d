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
// A base_url ending in /openai/v1 (https://NAME.openai.azure.com/openai/v1,
// the root of Azure OpenAI's v1 API) selects that API instead: POST
// {base}/chat/completions, no api-version (options.api_version is refused
// with it), and the body is the canonical oaiwire.ChatRequest with the
// deployment name as its model. Its answers and errors are the same
// content-filter dialect, read the same way.
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
		ModelFP:   "system_fingerprint; response model recorded as model id; api-version is part of the request path (deployments API)",
		Options:   []string{"api_version", oaiwire.TokenParamOption},
		Check:     Check,
		Warn:      Warn,
	}
}

// V1Root is the path a base_url ends in to select Azure OpenAI's v1 API.
const V1Root = "/openai/v1"

// isV1 reports whether base selects the v1 API: its path ends in
// /openai/v1 (a trailing "/" aside), in any case: /OpenAI/V1 means the
// same to whoever wrote it.
func isV1(base string) bool {
	_, ok := cutSuffixFold(strings.TrimRight(base, "/"), V1Root)
	return ok
}

// cutSuffixFold is strings.CutSuffix with suffix matched in any case.
func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

// route is where the adapter sends t's requests: the base it renders
// against (the resource endpoint without a trailing /openai, or the v1
// root) and the suffix appended to it, query included.
func route(t probes.Target) (base, suffix string, v1 bool) {
	base = strings.TrimRight(t.BaseURL, "/")
	if isV1(base) {
		return base, "/chat/completions", true
	}
	ver := t.Options["api_version"]
	if ver == "" {
		ver = DefaultAPIVersion
	}
	// The SDKs take the resource endpoint; accept one that already ends in
	// /openai (in any case) so the path is never doubled.
	base, _ = cutSuffixFold(base, "/openai")
	return base, "/openai/deployments/" + url.PathEscape(t.Model) + "/chat/completions?api-version=" + url.QueryEscape(ver), false
}

// Warn reports a base_url ending in an endpoint (…/openai/deployments/D,
// with or without /chat/completions, or /chat/completions after the v1
// root): the adapter appends its own path, so every probe would be a 404.
func Warn(t probes.Target) []probes.FieldError {
	_, suffix, _ := route(t)
	path, _, _ := strings.Cut(suffix, "?")
	return probes.PastedEndpoint(t.BaseURL, path, "azure", "https://NAME.openai.azure.com, or https://NAME.openai.azure.com/openai/v1 for the v1 API",
		"/openai/deployments/*/chat/completions", "/openai/deployments/*/completions", "/openai/deployments/*", "/openai/deployments", oaiwire.Endpoints[0], "/completions")
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
	} else if ok && isV1(t.BaseURL) {
		errs = append(errs, probes.FieldError{Field: "options.api_version", Msg: "the v1 API (a base_url ending in /openai/v1) takes no api-version: remove it, or give the resource endpoint (https://NAME.openai.azure.com) to use the deployments API with it"})
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
	v1     bool // Azure OpenAI's v1 API (base_url ending in /openai/v1)
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
	base, suffix, v1 := route(t)
	return &Prober{target: t, base: base, suffix: suffix, v1: v1, now: time.Now}, nil
}

// Render renders the canonical request for pr: the deployments API's
// body carries no model (the deployment is in the path), the v1 API's
// names the deployment as its model.
func (p *Prober) Render(pr probes.Probe) (*probes.Request, error) {
	return oaiwire.RenderURL(p.base, p.suffix, oaiwire.NewChatRequest(p.target, pr, p.v1).WithTokenParam(p.target))
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
