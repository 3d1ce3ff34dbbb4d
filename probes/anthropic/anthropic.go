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
//     stop_reason is allowed (or model_refusal by the same heuristic) and
//     recorded in Result.Unknown ("stop_reason:<value>").
//   - A 200 Messages answer always carries a stop_reason and a content array
//     (empty on a refusal). One without a stop_reason (absent, null or "")
//     or without a content array (absent or null) — {"type":"message"},
//     {"content":[]}, {"stop_reason":"end_turn"} — is a skeleton, not an
//     answer: transient "malformed_response", with "stop_reason:<none>" /
//     "content:<none>" in Result.Unknown (a refusal stop_reason without
//     content is still a block).
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
//     account-stage abuse_block. A 429 rate_limit_error whose
//     error.details.error_code is enforced_spend_limit_reached is the usage
//     tier's monthly spend cap (no retry-after; retrying fails until next
//     month): client_error, reason
//     "429:rate_limit_error:enforced_spend_limit_reached", sent once.
//   - Request id: the request-id header, else the body's request_id. Model:
//     the response model id, used as the model fingerprint too (Anthropic
//     sends no separate fingerprint). Tokens: usage.input_tokens and
//     usage.output_tokens. These bookkeeping fields (and id,
//     stop_details.type, stop_details.explanation) are read leniently: a
//     wrong type never fails the answer and is noted in Result.Unknown as
//     "<field>:bad_type" ("usage.input_tokens:bad_type"); an odd model,
//     request id or explanation is not kept, a count sent as a numeric
//     string ("12") is.
//     The fields a verdict is read from (type, content, stop_reason,
//     stop_details.category, error) stay strictly typed.
//
// Anthropic has no input-side filter signal and reports no scores. The
// anthropic-version header is pinned (probes.Request.Pinned): it is part of
// the request fingerprint. A 200 whose
// body is not a Messages object (garbage, a cut body, an incomplete or
// malformed SSE stream) is transient "malformed_response" (or
// "truncated_response"), never a verdict. The adapter never asks for a
// stream, but a complete one (message_start … message_delta …
// message_stop, body not cut) is rebuilt into the message it describes
// and read like it, with "response:event_stream" in Result.Unknown; a
// stream with an error event is read as the error envelope that event
// carries, as a 200 carrying one is ("Output blocked by content filtering
// policy" is blocked_output, an overloaded_error transient). A body is taken for a stream when its Content-Type is
// text/event-stream, or, only when the response declares no Content-Type
// at all (a stored answer re-read by replay, whose headers are not kept),
// when the body opens like one (an SSE field line or comment after any
// leading white space); a declared type always decides, and a JSON body is
// always read as JSON. So replay reads a stored stream as the run did.
// The API key is added by Authorize as x-api-key and is never part of the
// rendered request; it is redacted from any provider message kept.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
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
			"429 rate_limit_error with error.details.error_code=enforced_spend_limit_reached (monthly spend cap: client_error, sent once)",
		},
		Input: false, Output: true, Scores: false,
		RequestID: "request-id header (fallback: body request_id)",
		ModelFP:   "response model id (no separate fingerprint)",
		Options:   []string{OptVersion},
		Check:     Check,
		Warn:      Warn,
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

// Warn reports a base_url ending in /v1, or in the endpoint (/v1/messages,
// /messages): the adapter appends /v1/messages to base_url, so that base
// would request /v1/v1/messages or /v1/messages/v1/messages.
func Warn(t probes.Target) []probes.FieldError {
	if w := probes.PastedEndpoint(t.BaseURL, Path, "anthropic", DefaultBaseURL, "/v1/messages", "/messages"); w != nil {
		return w
	}
	return probes.DoubledVersion(t.BaseURL, Path, "anthropic", DefaultBaseURL, "v1")
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

// stopDetails is read strictly where the verdict comes from (category);
// type and explanation are only noted and kept as the message, so they are
// decoded leniently.
type stopDetails struct {
	Type        wire.Text `json:"type"`
	Category    *string   `json:"category"`
	Explanation wire.Text `json:"explanation"`
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	// Details is kept raw: only its error_code is read (spendCapReached),
	// and a details of another shape never fails the envelope.
	Details json.RawMessage `json:"details"`
}

// messageResponse is a Messages object or an error envelope. The fields a
// verdict is read from (type, content, stop_reason, stop_details.category,
// error) are strictly typed: a wrong type there makes the answer
// unreadable. Bookkeeping fields (id, model, usage, request_id) are lenient:
// a wrong type is noted in Result.Unknown ("model:bad_type") and never
// fails the answer.
type messageResponse struct {
	ID          wire.Text      `json:"id"`
	Type        string         `json:"type"`
	Model       wire.Text      `json:"model"`
	Content     []contentBlock `json:"content"`
	StopReason  *string        `json:"stop_reason"`
	StopDetails *stopDetails   `json:"stop_details"`
	Usage       usage          `json:"usage"`
	Error       *apiError      `json:"error"`
	RequestID   wire.Text      `json:"request_id"`
}

// usage is the token accounting: bookkeeping, decoded leniently. A usage
// that is not an object (nor null) sets Odd; a count of the wrong type sets
// that count's Odd.
type usage struct {
	InputTokens  wire.Count
	OutputTokens wire.Count
	Odd          bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (u *usage) UnmarshalJSON(b []byte) error {
	*u = usage{}
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	var v struct {
		InputTokens  wire.Count `json:"input_tokens"`
		OutputTokens wire.Count `json:"output_tokens"`
	}
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &v) != nil {
		u.Odd = true
		return nil
	}
	u.InputTokens, u.OutputTokens = v.InputTokens, v.OutputTokens
	return nil
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
	// A UTF-8 byte order mark before the body is skipped (the stored body
	// keeps it).
	resp = wire.SkipBOM(resp)
	var r probes.Result
	r.RequestID = wire.Truncate(resp.Header.Get("Request-Id"), 200)
	body := resp.Body
	var mr messageResponse
	perr := json.Unmarshal(body, &mr)
	ok2xx := resp.Status >= 200 && resp.Status < 300
	if ok2xx && perr != nil && !resp.Truncated && isEventStream(resp.Header, body) {
		// We never ask for a stream; a complete one (message_start …
		// message_stop) is read as the message it describes, anything
		// less stays malformed.
		if msg, unknown, ok := streamMessage(body); ok {
			var smr messageResponse
			if json.Unmarshal(msg, &smr) == nil {
				body, mr, perr = msg, smr, nil
				r.Unknown = append(r.Unknown, "response:event_stream")
				r.Unknown = append(r.Unknown, unknown...)
			}
		}
	}
	if perr == nil {
		if r.RequestID == "" && !mr.RequestID.Odd {
			r.RequestID = wire.Truncate(mr.RequestID.S, 200)
		}
		r.Unknown = append(r.Unknown, wire.OddFields("request_id", mr.RequestID.Odd)...)
	}
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
		r = classifyMessage(r, body, &mr)
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
	case status == 429 && spendCapReached(e):
		// The tier's monthly spend cap: no retry-after, and retrying
		// fails until next month. Sent once, like OpenAI's
		// insufficient_quota.
		r.Class = probes.ClientError
		r.Reason += ":" + spendCapCode
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

// spendCapCode is the error.details.error_code of the 429 Anthropic answers
// once an organization reaches its usage tier's monthly spend cap
// (platform.claude.com/docs/api/rate-limits: "the response has no
// retry-after header. Retrying, including the SDKs' automatic retries,
// fails" until access resumes next month; see
// testdata/error_429_enforced_spend_limit_docs.meta.yaml).
const spendCapCode = "enforced_spend_limit_reached"

// spendCapReached reports whether e carries the spend cap's error code in
// error.details.error_code (an object); a details of any other shape is not
// it.
func spendCapReached(e apiError) bool {
	var d struct {
		ErrorCode wire.Text `json:"error_code"`
	}
	if len(e.Details) == 0 || json.Unmarshal(e.Details, &d) != nil || d.ErrorCode.Odd {
		return false
	}
	return d.ErrorCode.S == spendCapCode
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
	if !mr.Model.Odd {
		r.ModelID = wire.Truncate(mr.Model.S, 200)
		r.ModelFP = r.ModelID
	}
	r.TokensIn, r.TokensOut = mr.Usage.InputTokens.N, mr.Usage.OutputTokens.N
	r.Unknown = append(r.Unknown, wire.OddFields("id", mr.ID.Odd, "model", mr.Model.Odd, "usage", mr.Usage.Odd,
		"usage.input_tokens", mr.Usage.InputTokens.Odd, "usage.output_tokens", mr.Usage.OutputTokens.Odd)...)
	r.Unknown = append(r.Unknown, wire.UnknownKeys(body, knownTop, "field:")...)
	if mr.Type != "" && mr.Type != "message" {
		r.Unknown = append(r.Unknown, "type:"+mr.Type)
	}
	stop := ""
	if mr.StopReason != nil {
		stop = *mr.StopReason
	}
	// A non-streaming Messages answer always carries a stop_reason and a
	// content array (empty on a refusal). Without either it is a skeleton
	// ({"type":"message"}, {"content":[]}, a proxy's stub), not an answer:
	// reading it as allowed after a block would confirm a fake loosening.
	// A refusal is unmistakable without content (a proxy re-encoding with
	// omitempty drops the empty array): it stays a block.
	if stop == "" || mr.Content == nil && stop != "refusal" {
		if stop == "" {
			r.Unknown = append(r.Unknown, "stop_reason:<none>")
		}
		if mr.Content == nil {
			r.Unknown = append(r.Unknown, "content:<none>")
		}
		r.Class, r.Reason = probes.Transient, "malformed_response"
		return r
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
	if stop == "refusal" {
		r.Class, r.Stage, r.Reason = probes.BlockedOutput, probes.StageOutput, "refusal"
		if d := mr.StopDetails; d != nil {
			var raw struct {
				StopDetails json.RawMessage `json:"stop_details"`
			}
			if json.Unmarshal(body, &raw) == nil {
				r.Unknown = append(r.Unknown, wire.UnknownKeys(raw.StopDetails, knownStopDetails, "stop_details.")...)
			}
			r.Unknown = append(r.Unknown, wire.OddFields("stop_details.type", d.Type.Odd, "stop_details.explanation", d.Explanation.Odd)...)
			if !d.Type.Odd && d.Type.S != "" && d.Type.S != "refusal" {
				r.Unknown = append(r.Unknown, "stop_details.type:"+d.Type.S)
			}
			if d.Category != nil && *d.Category != "" {
				cat, known := NormalizeCategory(*d.Category)
				if !known {
					r.Unknown = append(r.Unknown, "category:"+*d.Category)
				}
				r.Signals = append(r.Signals, probes.Signal{Category: cat, Raw: *d.Category, Fired: true})
			}
			if !d.Explanation.Odd {
				r.Message = d.Explanation.S
			}
		}
		return r
	}
	if !allowedStops[stop] {
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

// isEventStream reports whether a response is a text/event-stream body.
// A declared Content-Type decides (a stream served as application/json is
// not one). Without any (nil or empty headers: replay re-classifies stored
// bodies, and response headers are not stored) the body decides
// (opensLikeEventStream), so a stored stream reads as it did when the
// response still carried its text/event-stream header.
func isEventStream(h http.Header, body []byte) bool {
	if ct := strings.TrimSpace(h.Get("Content-Type")); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		return err == nil && mt == "text/event-stream"
	}
	return opensLikeEventStream(body)
}

// opensLikeEventStream reports whether body, after a UTF-8 byte order mark
// and leading white space (blank lines, which an SSE reader skips), opens
// with an SSE field line ("event:", "data:", "id:", "retry:") or a comment
// (":"). No JSON text opens like that, so a JSON body never reads as a
// stream; sseEvents reads the untrimmed body either way.
func opensLikeEventStream(body []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), " \t\r\n")
	for _, p := range []string{"event:", "data:", "id:", "retry:", ":"} {
		if bytes.HasPrefix(t, []byte(p)) {
			return true
		}
	}
	return false
}

// sseEvent is one Server-Sent Event: its event name and joined data.
type sseEvent struct{ name, data string }

// sseEvents splits an event stream into events, as the SSE specification
// reads one: lines end with CRLF, LF or CR (an unterminated last line is
// dropped); an event ends at a blank line (a last event without one is
// incomplete and dropped); lines starting
// with ':' are comments; data lines are joined with "\n"; an event with
// no data is skipped.
func sseEvents(body []byte) []sseEvent {
	text := strings.ReplaceAll(strings.ReplaceAll(string(body), "\r\n", "\n"), "\r", "\n")
	var out []sseEvent
	var name string
	var data []string
	hasData := false
	lines := strings.Split(text, "\n")
	// The last piece is not a line: it has no line ending (empty when the
	// body ends with one, an unterminated line when it was cut).
	for _, line := range lines[:len(lines)-1] {
		if line == "" {
			if hasData {
				out = append(out, sseEvent{name, strings.Join(data, "\n")})
			}
			name, data, hasData = "", nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data, hasData = append(data, value), true
		}
	}
	return out
}

// streamMessage rebuilds the Messages object that a complete Messages
// event stream describes, for classify to read like a non-streaming
// answer. Complete means: every event's data is a JSON object with a type
// (matching the event name when one is given); message_start comes first
// (pings aside) with a message object; content blocks start in index
// order, and deltas and stops touch only open blocks; message_delta fields
// (stop_reason, stop_sequence, stop_details, usage) are merged into the
// message; message_stop comes last with every block closed. An error
// event (wherever it comes) is returned as msg itself: the error envelope
// the stream ended with, which classify reads as it reads one in a
// non-streamed 200. Anything else returns ok false: a cut or malformed
// stream is never a verdict. Unknown event types are skipped (Anthropic documents
// that new ones may appear) and returned as "stream_event:<type>" entries.
func streamMessage(body []byte) (msg []byte, unknown []string, ok bool) {
	type block struct {
		raw  map[string]json.RawMessage
		text strings.Builder
		open bool
	}
	var (
		message        map[string]json.RawMessage
		blocks         []*block
		started, ended bool
	)
	for _, ev := range sseEvents(body) {
		var e struct {
			Type         string                     `json:"type"`
			Message      map[string]json.RawMessage `json:"message"`
			Index        *int                       `json:"index"`
			ContentBlock map[string]json.RawMessage `json:"content_block"`
			Delta        map[string]json.RawMessage `json:"delta"`
			Usage        json.RawMessage            `json:"usage"`
		}
		d := strings.TrimSpace(ev.data)
		if !strings.HasPrefix(d, "{") || json.Unmarshal([]byte(d), &e) != nil {
			return nil, nil, false
		}
		if e.Type == "" || ev.name != "" && ev.name != e.Type {
			return nil, nil, false
		}
		if e.Type == "ping" {
			continue
		}
		if e.Type == "error" {
			// The stream failed: its error event carries the envelope a
			// non-streamed answer would ({"type":"error","error":{…}}),
			// read like one ("Output blocked by content filtering
			// policy" is a block, whatever text came before it; an
			// overloaded_error is transient).
			return []byte(d), unknown, true
		}
		if ended || (!started && e.Type != "message_start") {
			return nil, nil, false
		}
		var cur *block
		if e.Index != nil && *e.Index >= 0 && *e.Index < len(blocks) {
			cur = blocks[*e.Index]
		}
		switch e.Type {
		case "message_start":
			if t, has := e.Message["type"]; started || e.Message == nil || has && string(t) != `"message"` {
				return nil, nil, false
			}
			message, started = e.Message, true
		case "content_block_start":
			if e.Index == nil || *e.Index != len(blocks) || e.ContentBlock == nil {
				return nil, nil, false
			}
			b := &block{raw: e.ContentBlock, open: true}
			if t, has := e.ContentBlock["text"]; has {
				var s string
				if json.Unmarshal(t, &s) != nil {
					return nil, nil, false
				}
				b.text.WriteString(s)
			}
			blocks = append(blocks, b)
		case "content_block_delta":
			if cur == nil || !cur.open || e.Delta == nil {
				return nil, nil, false
			}
			// Only text reaches the classifier; other deltas (tool input,
			// thinking, signatures, citations) are checked for a type and
			// otherwise skipped.
			var typ, text string
			if json.Unmarshal(e.Delta["type"], &typ) != nil {
				return nil, nil, false
			}
			if typ == "text_delta" {
				if json.Unmarshal(e.Delta["text"], &text) != nil {
					return nil, nil, false
				}
				cur.text.WriteString(text)
			}
		case "content_block_stop":
			if cur == nil || !cur.open {
				return nil, nil, false
			}
			cur.open = false
		case "message_delta":
			if e.Delta == nil {
				return nil, nil, false
			}
			for k, v := range e.Delta {
				if k != "type" && k != "content" {
					message[k] = v
				}
			}
			if u := bytes.TrimSpace(e.Usage); len(u) > 0 && string(u) != "null" {
				message["usage"] = mergeObjects(message["usage"], u)
			}
		case "message_stop":
			for _, b := range blocks {
				if b.open {
					return nil, nil, false
				}
			}
			ended = true
		default:
			unknown = append(unknown, "stream_event:"+e.Type)
		}
	}
	if !ended {
		return nil, nil, false
	}
	content := make([]map[string]json.RawMessage, len(blocks))
	for i, b := range blocks {
		if _, has := b.raw["text"]; has {
			t, err := json.Marshal(b.text.String())
			if err != nil {
				return nil, nil, false
			}
			b.raw["text"] = t
		}
		content[i] = b.raw
	}
	c, err := json.Marshal(content)
	if err != nil {
		return nil, nil, false
	}
	message["content"] = c
	if msg, err = json.Marshal(message); err != nil {
		return nil, nil, false
	}
	return msg, unknown, true
}

// mergeObjects overlays the keys of the JSON object over on base (when
// both are objects); otherwise over replaces base.
func mergeObjects(base, over json.RawMessage) json.RawMessage {
	var b, o map[string]json.RawMessage
	if json.Unmarshal(over, &o) != nil || o == nil {
		return over
	}
	if json.Unmarshal(base, &b) != nil || b == nil {
		return over
	}
	for k, v := range o {
		b[k] = v
	}
	m, err := json.Marshal(b)
	if err != nil {
		return over
	}
	return m
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
