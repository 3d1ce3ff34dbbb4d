// Package anthropic is the driftprobe adapter for Anthropic's Messages API
// (POST /v1/messages, non-streaming).
//
// What it reads:
//   - stop_reason "refusal" (Claude's streaming safety classifiers) is an
//     output-stage block (blocked_output). stop_details.category, when present,
//     becomes a fired Signal (raw name kept, normalized: cyber→illicit,
//     bio→weapons, frontier_llm/reasoning_extraction/general_harms→other);
//     stop_details.explanation becomes the Message.
//   - Every other known stop_reason (end_turn, max_tokens, stop_sequence,
//     tool_use, pause_turn, model_context_window_exceeded) is allowed, except
//     that a short plain-text refusal in the text content is a model_refusal
//     decided by heuristic (wire.IsRefusal, Heuristic=true). An unknown
//     stop_reason is allowed and recorded in Result.Unknown.
//   - 400 invalid_request_error "Output blocked by content filtering policy"
//     (the output content filter; matched exactly, case-insensitively,
//     trailing punctuation ignored) is an output-stage block
//     (blocked_output, reason "400:output_blocked", no category).
//   - The error envelope {type:"error", error:{type,message}, request_id}:
//     429 rate_limit_error, 500 api_error, 529 overloaded_error (any 5xx) are
//     transient with the wait from Retry-After/retry-after-ms, or on a 429
//     from the anthropic-ratelimit-*-reset RFC 3339 headers; 400, 401, 403,
//     404, 413 and 402 are client errors unless the message says the account
//     or organization was disabled/suspended (wire.IsAbuse), which is an
//     account-stage abuse_block.
//   - Request id: the request-id header, else the body's request_id. Model:
//     the response model id, used as the model fingerprint too (Anthropic
//     sends no separate fingerprint). Tokens: usage.input_tokens and
//     usage.output_tokens.
//
// Anthropic has no input-side filter signal and reports no scores. The
// anthropic-version header is pinned (probes.Request.Pinned): it is part of
// the request fingerprint. A 200 whose
// body is not a Messages object (an SSE stream, garbage, a cut body) is
// transient "malformed_response" (or "truncated_response"), never a verdict.
// The API key is added by Authorize as x-api-key and is never part of the
// rendered request; it is redacted from any provider message kept.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

const (
	// DefaultBaseURL is the API root used when the target sets no base_url.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version header sent unless the
	// "anthropic_version" option overrides it.
	DefaultVersion = "2023-06-01"
	// Path is the Messages API path.
	Path = "/v1/messages"
	// OptVersion is the option naming the anthropic-version header value.
	OptVersion = "anthropic_version"
	// VersionHeader is the header carrying the API version; it is pinned
	// (probes.Request.Pinned), so it is part of the request fingerprint.
	VersionHeader = "Anthropic-Version"
	// defaultMaxTokens is used when a target has no max_tokens (the config
	// layer always sets one; the API requires the field).
	defaultMaxTokens = 64
)

func init() {
	probes.Register(probes.Info{
		Name:      "anthropic",
		Endpoints: []string{"chat"},
		KeyEnv:    "ANTHROPIC_API_KEY",
		NeedsKey:  true,
		Signals: []string{
			"stop_reason=refusal + stop_details{category,explanation} (output)",
			"400 invalid_request_error \"Output blocked by content filtering policy\" (output)",
			"plain-text refusal in content[].text (heuristic)",
			"error.type authentication_error/permission_error/invalid_request_error with an account-disabled message (abuse)",
			"429 rate_limit_error, 500 api_error, 529 overloaded_error with Retry-After / anthropic-ratelimit-*-reset",
		},
		Input: false, Output: true, Scores: false,
		RequestID: "request-id header (fallback: body request_id)",
		ModelFP:   "response model id (no separate fingerprint)",
		Options:   []string{OptVersion},
		Check:     Check,
	}, New)
}

var versionRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// Check validates the Anthropic-specific settings of t.
func Check(t probes.Target) []probes.FieldError {
	var errs []probes.FieldError
	if t.Endpoint != "" && t.Endpoint != "chat" {
		errs = append(errs, probes.FieldError{Field: "endpoint", Msg: fmt.Sprintf("%q: anthropic supports chat", t.Endpoint)})
	}
	if v, ok := t.Options[OptVersion]; ok && !versionRE.MatchString(v) {
		errs = append(errs, probes.FieldError{Field: "options." + OptVersion, Msg: fmt.Sprintf("%q: want a date like %s", v, DefaultVersion)})
	}
	if t.Temperature < 0 || t.Temperature > 1 {
		errs = append(errs, probes.FieldError{Field: "temperature", Msg: fmt.Sprintf("%v: anthropic accepts 0 to 1", t.Temperature)})
	}
	return errs
}

// Prober renders and reads Messages API requests for one target.
type Prober struct {
	target  probes.Target
	base    string
	version string
	now     func() time.Time
}

var (
	_ probes.Prober     = (*Prober)(nil)
	_ probes.Authorizer = (*Prober)(nil)
)

// New builds an Anthropic prober for t.
func New(t probes.Target) (probes.Prober, error) {
	if errs := Check(t); len(errs) > 0 {
		return nil, fmt.Errorf("anthropic: %s: %s", errs[0].Field, errs[0].Msg)
	}
	p := &Prober{target: t, base: strings.TrimSuffix(t.BaseURL, "/"), version: DefaultVersion, now: time.Now}
	if p.base == "" {
		p.base = DefaultBaseURL
	}
	if v := t.Options[OptVersion]; v != "" {
		p.version = v
	}
	return p, nil
}

// MessagesRequest is the canonical Messages API body. Field order is the
// wire order; temperature is always present so 0 is explicit. Anthropic has
// no seed parameter, so a target's seed is not sent.
type MessagesRequest struct {
	Model       string    `json:"model"`
	MaxTokens   int       `json:"max_tokens"`
	System      string    `json:"system,omitempty"`
	Messages    []Message `json:"messages"`
	Temperature float64   `json:"temperature"`
}

// Message is one conversation turn.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Body builds the canonical body for pr: system messages (wherever they
// appear) are joined with a blank line into the top-level system string;
// user and assistant turns are kept in order.
func (p *Prober) Body(pr probes.Probe) (MessagesRequest, error) {
	b := MessagesRequest{Model: p.target.Model, MaxTokens: p.target.MaxTokens, Temperature: p.target.Temperature}
	if b.MaxTokens <= 0 {
		b.MaxTokens = defaultMaxTokens
	}
	var system []string
	for _, m := range pr.Messages {
		switch m.Role {
		case "system":
			system = append(system, m.Content)
		case "user", "assistant":
			b.Messages = append(b.Messages, Message{Role: m.Role, Content: m.Content})
		default:
			return b, fmt.Errorf("anthropic: probe %s: unsupported role %q", pr.ID, m.Role)
		}
	}
	if len(b.Messages) == 0 {
		return b, fmt.Errorf("anthropic: probe %s: no user or assistant message", pr.ID)
	}
	b.System = strings.Join(system, "\n\n")
	return b, nil
}

// Render returns the canonical request for pr.
func (p *Prober) Render(pr probes.Probe) (*probes.Request, error) {
	body, err := p.Body(pr)
	if err != nil {
		return nil, err
	}
	b, err := wire.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("anthropic: render body: %w", err)
	}
	h := wire.JSONHeader()
	h.Set(VersionHeader, p.version)
	// The API version decides how the request is read and answered, so it
	// is part of the fingerprint: a version bump is an input change, never
	// a provider policy change.
	return &probes.Request{Method: http.MethodPost, URL: p.base + Path, Path: Path, Header: h, Body: b, Pinned: []string{VersionHeader}}, nil
}

// Authorize adds the API key header.
func (p *Prober) Authorize(_ context.Context, r *http.Request) error {
	if p.target.APIKey != "" {
		r.Header.Set("X-Api-Key", p.target.APIKey)
	}
	return nil
}

// Classify reads one attempt.
func (p *Prober) Classify(_ *probes.Request, resp *probes.Response) probes.Result {
	return classify(resp, p.now(), p.target.APIKey)
}

type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type stopDetails struct {
	Type        string  `json:"type"`
	Category    *string `json:"category"`
	Explanation *string `json:"explanation"`
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type messageResponse struct {
	ID          string         `json:"id"`
	Type        string         `json:"type"`
	Model       string         `json:"model"`
	Content     []contentBlock `json:"content"`
	StopReason  *string        `json:"stop_reason"`
	StopDetails *stopDetails   `json:"stop_details"`
	Usage       *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	Error     *apiError `json:"error"`
	RequestID string    `json:"request_id"`
}

// Known wire vocabulary. Anything else is recorded in Result.Unknown.
var (
	knownTop = wire.Set("id", "type", "role", "content", "model", "stop_reason", "stop_sequence", "stop_details",
		"usage", "container", "context_management")
	knownStopDetails = wire.Set("type", "category", "explanation", "fallback_credit_token", "recommended_model")
	knownContent     = wire.Set("text", "thinking", "redacted_thinking", "tool_use", "server_tool_use")
	// allowedStops are the stop reasons of a normal answer.
	allowedStops = wire.Set("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "model_context_window_exceeded")
	knownErrors  = wire.Set("invalid_request_error", "authentication_error", "billing_error", "permission_error",
		"not_found_error", "request_too_large", "rate_limit_error", "api_error", "overloaded_error", "timeout_error")
	// errorStatus maps an error type to its documented status, for an error
	// envelope that arrives inside a 200.
	errorStatus = map[string]int{"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
		"permission_error": 403, "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
		"api_error": 500, "timeout_error": 504, "overloaded_error": 529}
)

// NormalizeCategory maps a stop_details.category to the normalized
// vocabulary. ok is false for a category it does not know (mapped to other).
//
// cyber (malware, exploit development) is illicit activity; bio (biological
// harm) belongs with weapons (CBRN); frontier_llm (a commercial-terms
// restriction), reasoning_extraction and general_harms have no closer
// normalized category than other.
func NormalizeCategory(raw string) (string, bool) {
	switch strings.ToLower(raw) {
	case "cyber":
		return probes.CatIllicit, true
	case "bio":
		return probes.CatWeapons, true
	case "frontier_llm", "reasoning_extraction", "general_harms":
		return probes.CatOther, true
	}
	return probes.CatOther, false
}

func classify(resp *probes.Response, now time.Time, key string) probes.Result {
	if resp.Err != nil {
		return wire.Transport(resp)
	}
	var r probes.Result
	r.RequestID = wire.Truncate(resp.Header.Get("Request-Id"), 200)
	var mr messageResponse
	perr := json.Unmarshal(resp.Body, &mr)
	if perr == nil && r.RequestID == "" {
		r.RequestID = wire.Truncate(mr.RequestID, 200)
	}
	ok2xx := resp.Status >= 200 && resp.Status < 300
	switch {
	case ok2xx && perr != nil:
		r.Class, r.Reason = probes.Transient, "malformed_response"
		if resp.Truncated {
			r.Reason = "truncated_response"
		}
	case ok2xx && (mr.Type == "error" || mr.Error != nil):
		// An error envelope inside a 200 (seen when streaming; tolerated here).
		status, known := 500, false
		if mr.Error != nil {
			status, known = errorStatus[mr.Error.Type]
		}
		if !known {
			status = 500
		}
		r = classifyError(r, resp, &mr, status, now)
		r.Reason = "200:" + strings.TrimPrefix(r.Reason, fmt.Sprintf("%d:", status))
	case ok2xx:
		r = classifyMessage(r, resp.Body, &mr)
	default:
		if perr != nil {
			mr = messageResponse{}
		}
		r = classifyError(r, resp, &mr, resp.Status, now)
	}
	r.Message = redact(r.Message, key)
	r.Reason = redact(r.Reason, key)
	return wire.Finish(wire.Redact(r, key))
}

func classifyError(r probes.Result, resp *probes.Response, mr *messageResponse, status int, now time.Time) probes.Result {
	var e apiError
	if mr.Error != nil {
		e = *mr.Error
	}
	r.Message = e.Message
	r.Reason = fmt.Sprint(status)
	if e.Type != "" {
		r.Reason += ":" + e.Type
		if !knownErrors[e.Type] {
			r.Unknown = append(r.Unknown, "error_type:"+e.Type)
		}
	}
	switch {
	case status == 400 && isOutputBlocked(e):
		// The output content filter withheld the answer: a policy verdict
		// on these bytes, never retried. Anthropic names no category.
		r.Class, r.Stage = probes.BlockedOutput, probes.StageOutput
		r.Reason = fmt.Sprintf("%d:%s", status, outputBlockedReason)
	case status >= 400 && status < 500 && status != 429 && wire.IsAbuse(e.Type, "", e.Message):
		r.Class, r.Stage = probes.AbuseBlock, probes.StageAccount
	default:
		r.Class = wire.StatusClass(status)
	}
	if r.Class == probes.Transient {
		r.RetryAfter = retryAfter(resp.Header, now, status)
	}
	return r
}

// outputBlockedMessage is the message of Anthropic's output content filter
// (400 invalid_request_error "Output blocked by content filtering policy",
// reported in anthropics/claude-code#43487, #37547, #58367 and #6195; see
// testdata/error_400_output_blocked_content_filter.meta.yaml), and
// outputBlockedReason the Result.Reason it is kept as.
const (
	outputBlockedMessage = "output blocked by content filtering policy"
	outputBlockedReason  = "output_blocked"
)

// isOutputBlocked reports whether e is the output content filter's error:
// type invalid_request_error and exactly that message, case-insensitively,
// with runs of white space read as one space and trailing punctuation
// ignored. Nothing
// looser: another 400 that mentions content is our request's problem.
func isOutputBlocked(e apiError) bool {
	if e.Type != "invalid_request_error" {
		return false
	}
	m := strings.Join(strings.Fields(e.Message), " ")
	m = strings.TrimRightFunc(m, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	return strings.EqualFold(m, outputBlockedMessage)
}

// retryAfter reads Retry-After / retry-after-ms; on a 429 without them it
// falls back to the anthropic-ratelimit-*-reset RFC 3339 timestamps,
// preferring the limits whose -remaining is 0 and taking the latest reset.
func retryAfter(h http.Header, now time.Time, status int) time.Duration {
	if d := wire.RetryAfter(h, now); d > 0 || status != 429 {
		return d
	}
	var exhausted, latest time.Duration
	for k, vs := range h {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, "anthropic-ratelimit-") || !strings.HasSuffix(lk, "-reset") || len(vs) == 0 {
			continue
		}
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(vs[0]))
		if err != nil {
			continue
		}
		d := t.Sub(now)
		if d <= 0 {
			continue
		}
		latest = max(latest, d)
		if strings.TrimSpace(h.Get(strings.TrimSuffix(lk, "-reset")+"-remaining")) == "0" {
			exhausted = max(exhausted, d)
		}
	}
	if exhausted > 0 {
		return exhausted
	}
	return latest
}

func classifyMessage(r probes.Result, body []byte, mr *messageResponse) probes.Result {
	if mr.Type == "" && mr.StopReason == nil && mr.Content == nil && mr.Model == "" {
		// Valid JSON but not a message (null, {}, another object).
		r.Class, r.Reason = probes.Transient, "malformed_response"
		return r
	}
	r.ModelID = wire.Truncate(mr.Model, 200)
	r.ModelFP = r.ModelID
	if mr.Usage != nil {
		r.TokensIn, r.TokensOut = mr.Usage.InputTokens, mr.Usage.OutputTokens
	}
	r.Unknown = append(r.Unknown, wire.UnknownKeys(body, knownTop, "field:")...)
	if mr.Type != "" && mr.Type != "message" {
		r.Unknown = append(r.Unknown, "type:"+mr.Type)
	}
	var text strings.Builder
	for _, c := range mr.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
		if !knownContent[c.Type] {
			r.Unknown = append(r.Unknown, "content_type:"+c.Type)
		}
	}
	stop := ""
	if mr.StopReason != nil {
		stop = *mr.StopReason
	}
	if stop == "refusal" {
		r.Class, r.Stage, r.Reason = probes.BlockedOutput, probes.StageOutput, "refusal"
		if d := mr.StopDetails; d != nil {
			var raw struct {
				StopDetails json.RawMessage `json:"stop_details"`
			}
			if json.Unmarshal(body, &raw) == nil {
				r.Unknown = append(r.Unknown, wire.UnknownKeys(raw.StopDetails, knownStopDetails, "stop_details.")...)
			}
			if d.Type != "" && d.Type != "refusal" {
				r.Unknown = append(r.Unknown, "stop_details.type:"+d.Type)
			}
			if d.Category != nil && *d.Category != "" {
				cat, known := NormalizeCategory(*d.Category)
				if !known {
					r.Unknown = append(r.Unknown, "category:"+*d.Category)
				}
				r.Signals = append(r.Signals, probes.Signal{Category: cat, Raw: *d.Category, Fired: true})
			}
			if d.Explanation != nil {
				r.Message = *d.Explanation
			}
		}
		return r
	}
	switch {
	case stop == "":
		r.Unknown = append(r.Unknown, "stop_reason:<none>")
	case !allowedStops[stop]:
		r.Unknown = append(r.Unknown, "stop_reason:"+stop)
	}
	if wire.IsRefusal(text.String()) {
		r.Class, r.Stage, r.Reason, r.Heuristic = probes.ModelRefusal, probes.StageOutput, "refusal_text", true
		r.Message = text.String()
		return r
	}
	r.Class, r.Reason = probes.Allowed, stop
	return r
}

// keyRE matches Anthropic API keys, should a provider message ever echo one.
var keyRE = regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]+`)

// redact removes the configured key (and anything shaped like an Anthropic
// key) from provider text kept in a result.
func redact(s, key string) string {
	if key != "" && len(key) >= 4 {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	return keyRE.ReplaceAllString(s, "[redacted]")
}
