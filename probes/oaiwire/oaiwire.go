// Package oaiwire renders and reads the OpenAI wire formats shared by several
// providers: chat completions (with the Azure OpenAI dialect: content_filter
// errors, prompt and completion filter results; non-streamed, or streamed as
// server-sent events by a gateway that streams regardless), the error
// envelope in its OpenAI, Azure, Mistral and FastAPI-style variants, and
// moderation responses ({results:[{flagged?, categories, category_scores,
// category_applied_input_types?}]}, spoken by OpenAI and Mistral). The
// openai, azure, openai_compatible, mistral and sim providers share it.
package oaiwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// ChatRequest is the canonical chat-completions body. Field order is the
// wire order; temperature is always present so "0" is explicit.
type ChatRequest struct {
	Model     string           `json:"model,omitempty"` // omitted for Azure (the deployment is in the path)
	Messages  []probes.Message `json:"messages"`
	MaxTokens int              `json:"max_tokens,omitempty"`
	// MaxCompletionTokens replaces MaxTokens for models that reject
	// max_tokens (OpenAI reasoning models); see TokenParam.
	MaxCompletionTokens int     `json:"max_completion_tokens,omitempty"`
	Temperature         float64 `json:"temperature"`
	Seed                *int64  `json:"seed,omitempty"`
	N                   int     `json:"n,omitempty"`
}

// NewChatRequest builds the canonical body for p on t.
func NewChatRequest(t probes.Target, p probes.Probe, withModel bool) ChatRequest {
	r := ChatRequest{Messages: p.Messages, MaxTokens: t.MaxTokens, Temperature: t.Temperature, Seed: t.Seed}
	if withModel {
		r.Model = t.Model
	}
	return r
}

// TokenParamOption is the target option choosing the body field that
// carries the token limit: "max_tokens" (default) or
// "max_completion_tokens" (required by OpenAI and Azure reasoning models).
const TokenParamOption = "token_param"

// CheckTokenParam validates the token_param option value.
func CheckTokenParam(v string) error {
	switch v {
	case "", "max_tokens", "max_completion_tokens":
		return nil
	}
	return fmt.Errorf("%q: want max_tokens or max_completion_tokens", v)
}

// WithTokenParam moves the token limit to max_completion_tokens when the
// target's token_param option asks for it.
func (r ChatRequest) WithTokenParam(t probes.Target) ChatRequest {
	if t.Options[TokenParamOption] == "max_completion_tokens" {
		r.MaxCompletionTokens, r.MaxTokens = r.MaxTokens, 0
	}
	return r
}

// Render renders a POST of body to base+path, with path (not the base's own
// path) as the fingerprinted Path. The sim uses it; adapters whose base URL
// carries a path prefix use RenderURL.
func Render(base, path string, body any) (*probes.Request, error) {
	b, err := wire.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("render body: %w", err)
	}
	return &probes.Request{
		Method: http.MethodPost,
		URL:    strings.TrimSuffix(base, "/") + path,
		Path:   path,
		Header: wire.JSONHeader(),
		Body:   b,
	}, nil
}

// ErrBaseURL is returned by RenderURL and CheckBaseURL for a base URL that
// is not an absolute http(s) URL with a host, without credentials, query or
// fragment, and with a port, if any, from 1 to 65535. Its message never
// repeats the URL (it could carry userinfo).
var ErrBaseURL = errors.New("base_url must be an absolute http:// or https:// URL with a host (and a port, if any, from 1 to 65535), without credentials, query or fragment")

// Endpoints are the OpenAI API endpoints a base_url may end in by mistake
// (a full endpoint URL pasted where the API root belongs), for
// probes.PastedEndpoint: the chat, legacy completions, responses,
// moderation and embeddings endpoints, most specific first.
var Endpoints = []string{"/chat/completions", "/completions", "/responses", "/moderations", "/embeddings"}

// CheckBaseURL validates a base URL as RenderURL will use it.
func CheckBaseURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(base, "#") {
		return ErrBaseURL
	}
	if !wire.PortInRange(u.Port()) {
		return ErrBaseURL
	}
	return nil
}

// RenderURL renders a POST of body to base+suffix (suffix may carry a
// query). The fingerprinted Path is the resulting URL's path and query, so a
// path prefix in the base ("https://api.openai.com/v1") is part of the
// fingerprint while the scheme and host are not: the same request sent to a
// loopback test server and to the real API has the same fingerprint.
func RenderURL(base, suffix string, body any) (*probes.Request, error) {
	if err := CheckBaseURL(base); err != nil {
		return nil, err
	}
	b, err := wire.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("render body: %w", err)
	}
	full := strings.TrimRight(base, "/") + suffix
	u, err := url.Parse(full)
	if err != nil {
		return nil, fmt.Errorf("render url: bad path %q", suffix)
	}
	return &probes.Request{
		Method: http.MethodPost,
		URL:    full,
		Path:   u.RequestURI(),
		Header: wire.JSONHeader(),
		Body:   b,
	}, nil
}

// UserText is the text a moderation endpoint classifies for p: the contents
// of its user messages joined with "\n", in order. It errors when p has no
// user message.
func UserText(p probes.Probe) (string, error) {
	var parts []string
	for _, m := range p.Messages {
		if m.Role == "user" {
			parts = append(parts, m.Content)
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("probe %s has no user message to moderate", p.ID)
	}
	return strings.Join(parts, "\n"), nil
}

// FilterResult is one category entry of Azure's content filter results. The
// sim also sends Score. Error is set when this one filter did not run.
type FilterResult struct {
	Filtered *bool          `json:"filtered,omitempty"`
	Detected *bool          `json:"detected,omitempty"`
	Severity string         `json:"severity,omitempty"`
	Score    *float64       `json:"score,omitempty"`
	Error    *FilterFailure `json:"error,omitempty"`
}

// FilterFailure is Azure's "the filter did not run" entry.
type FilterFailure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// filterSet is a content_filter_results object: category name to result,
// plus an optional error saying the filter did not run.
type filterSet map[string]json.RawMessage

// A chat answer is read in two kinds of fields. The ones the verdict is
// read from (finish_reason, message and its content and refusal, text,
// the filter results, the shape of choices and prompt_filter_results) are
// strictly typed: a value of the wrong type makes the answer malformed.
// The bookkeeping ones (id, created, model, system_fingerprint, usage and
// its counts, a choice's index, a prompt_index) are wire.Text, wire.Count
// or chatUsage, which never fail: a value of the wrong type is noted in
// Unknown as "NAME:bad_type" (oddFields) and the verdict stands.

type chatMessage struct {
	Content *string `json:"content"`
	Refusal *string `json:"refusal"`
}

type chatChoice struct {
	Index        wire.Count `json:"index"`
	FinishReason string     `json:"finish_reason"`
	// Message is nil when the choice has no message object (absent or
	// null).
	Message              *chatMessage `json:"message"`
	Text                 *string      `json:"text"`
	ContentFilterResults filterSet    `json:"content_filter_results"`
	// Error is a gateway's report that generation failed after the
	// answer started (OpenRouter: HTTP 200, finish_reason "error" and
	// an ErrorResponse on the choice); nil when absent or null.
	Error *choiceError `json:"error"`
}

// choiceError is the error member a gateway puts on a choice. It says the
// generation failed (Failed) only when it says something: an object with
// a message or a code, a non-empty string, or true. A gateway that always
// sends the member may say "no error" with false, "", 0, {} or []: no
// failure. It never fails the answer's decoding.
type choiceError struct {
	Message wire.Text
	Failed  bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (e *choiceError) UnmarshalJSON(b []byte) error {
	var v struct {
		Message wire.Text       `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	var str string
	switch t := bytes.TrimSpace(b); {
	case json.Unmarshal(t, &v) == nil && len(t) > 0 && t[0] == '{':
		code := string(bytes.TrimSpace(v.Code))
		e.Message = v.Message
		e.Failed = v.Message.S != "" || (code != "" && code != "null" && code != `""` && code != "0")
	case json.Unmarshal(t, &str) == nil:
		e.Message, e.Failed = wire.Text{S: str}, str != ""
	default:
		e.Failed = string(t) == "true"
	}
	return nil
}

type chatResponse struct {
	ID                  wire.Text    `json:"id"`
	Created             wire.Count   `json:"created"`
	Model               wire.Text    `json:"model"`
	SystemFingerprint   wire.Text    `json:"system_fingerprint"`
	Choices             []chatChoice `json:"choices"`
	PromptFilterResults []struct {
		PromptIndex          wire.Count `json:"prompt_index"`
		ContentFilterResults filterSet  `json:"content_filter_results"`
	} `json:"prompt_filter_results"`
	Usage chatUsage       `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// chatUsage is the usage object, read leniently: null or absence leaves it
// zero, a value that is not an object sets Odd, and the counts are
// wire.Counts. Its UnmarshalJSON never fails.
type chatUsage struct {
	PromptTokens     wire.Count `json:"prompt_tokens"`
	CompletionTokens wire.Count `json:"completion_tokens"`
	Odd              bool       `json:"-"`
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (u *chatUsage) UnmarshalJSON(b []byte) error {
	*u = chatUsage{}
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	type plain chatUsage // without the method
	var p plain
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &p) != nil {
		u.Odd = true
		return nil
	}
	*u = chatUsage(p)
	return nil
}

// oddFields returns the "NAME:bad_type" Unknown entries of cr's
// bookkeeping fields of an unexpected type (every choice's index and every
// prompt_index count, not only the answer's).
func (cr *chatResponse) oddFields() []string {
	var index, promptIndex bool
	for i := range cr.Choices {
		index = index || cr.Choices[i].Index.Odd
	}
	for i := range cr.PromptFilterResults {
		promptIndex = promptIndex || cr.PromptFilterResults[i].PromptIndex.Odd
	}
	return wire.OddFields(
		"id", cr.ID.Odd,
		"created", cr.Created.Odd,
		"model", cr.Model.Odd,
		"system_fingerprint", cr.SystemFingerprint.Odd,
		"usage", cr.Usage.Odd,
		"usage.prompt_tokens", cr.Usage.PromptTokens.Odd,
		"usage.completion_tokens", cr.Usage.CompletionTokens.Odd,
		"choices.index", index,
		"prompt_filter_results.prompt_index", promptIndex,
	)
}

// Known keys of a chat response; others are recorded as "key:NAME",
// "choice_key:NAME" or "message_key:NAME" in Result.Unknown.
var (
	knownChatKeys    = wire.Set("id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier", "prompt_filter_results", "error")
	knownChoiceKeys  = wire.Set("index", "message", "finish_reason", "logprobs", "content_filter_results", "text", "stop_reason", "error")
	knownMessageKeys = wire.Set("role", "content", "refusal", "annotations", "audio", "tool_calls", "function_call", "reasoning_content")
)

// newKeys returns prefix+key for every key of the JSON object raw that is
// not in known, sorted. Anything that is not an object yields nothing.
func newKeys(raw []byte, known map[string]bool, prefix string) []string {
	var m map[string]json.RawMessage
	if ParseLenient(raw, &m) != nil {
		return nil
	}
	return wire.KeysNotIn(m, known, prefix)
}

// sanitize keeps Unknown entries free of the list separator used in
// storage and of control characters: wire.SanitizeUnknown, the sanitizer
// every adapter shares.
func sanitize(s string) string { return wire.SanitizeUnknown(s) }

func chatNewKeys(body []byte) []string {
	// One pass over the top level; choices and message are sub-slices.
	var m map[string]json.RawMessage
	if ParseLenient(body, &m) != nil {
		return nil
	}
	out := wire.KeysNotIn(m, knownChatKeys, "key:")
	var choices []json.RawMessage
	if json.Unmarshal(m["choices"], &choices) != nil || len(choices) == 0 {
		return out
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(choices[0], &c) != nil {
		return out
	}
	out = append(out, wire.KeysNotIn(c, knownChoiceKeys, "choice_key:")...)
	var msg map[string]json.RawMessage
	if raw := c["message"]; len(raw) > 0 && json.Unmarshal(raw, &msg) == nil {
		out = append(out, wire.KeysNotIn(msg, knownMessageKeys, "message_key:")...)
	}
	return out
}

// text reads a JSON string as itself, null as "", and anything else (a
// number, an object) as its compact JSON.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return strings.Trim(string(raw), `"`)
}

var knownFinish = map[string]bool{"stop": true, "length": true, "tool_calls": true, "function_call": true, "content_filter": true, "error": true, "abort": true, "": true}

// failedFinish holds the finish reasons that say generation failed rather
// than ended: "error" (OpenRouter's normalized reason when the upstream
// failed mid-answer), "abort" (vLLM, a request the engine aborted). The
// text before the failure, if any, is no verdict: transient, retried.
var failedFinish = map[string]bool{"error": true, "abort": true}

// NormalizeAzure maps an Azure (or sim) content-filter category name to the
// normalized vocabulary. ok is false for names it does not know; they map to
// "other".
func NormalizeAzure(raw string) (string, bool) {
	k := strings.ToLower(raw)
	switch k {
	case "self-harm", "selfharm", "self_harm":
		return probes.CatSelfHarm, true
	case "indirect_attack", "jailbreak":
		return probes.CatJailbreak, true
	case "profanity", "protected_material_text", "protected_material_code", "custom_blocklists", "ungrounded_material":
		return probes.CatOther, true
	}
	if probes.ValidCategory(k) {
		return k, true
	}
	return probes.CatOther, false
}

var knownSeverity = wire.Set("", "safe", "low", "medium", "high")

// readFilters appends signals from a filter set. It reports whether the set
// (or one of its filters) says the filter did not run: a set-level "error"
// entry, or an "error" inside a category.
func readFilters(fs filterSet, r *probes.Result) (unavailable bool) {
	keys := make([]string, 0, len(fs))
	for k := range fs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := fs[k]
		if k == "error" {
			unavailable = true
			var e FilterFailure
			_ = json.Unmarshal(raw, &e)
			r.Reason = "filter_error:" + e.Code
			r.Message = e.Message
			continue
		}
		var fr FilterResult
		if err := json.Unmarshal(raw, &fr); err != nil {
			if s, ok := readBlocklists(k, raw); ok {
				if _, known := NormalizeAzure(k); !known {
					r.Unknown = append(r.Unknown, "category:"+sanitize(k))
				}
				r.Signals = append(r.Signals, s)
				continue
			}
			// Not a per-category object (e.g. a citation block); keep the key.
			r.Unknown = append(r.Unknown, "filter_key:"+sanitize(k))
			continue
		}
		if fr.Error != nil {
			unavailable = true
			r.Reason = "filter_error:" + fr.Error.Code
			r.Message = fr.Error.Message
		}
		cat, known := NormalizeAzure(k)
		if !known {
			r.Unknown = append(r.Unknown, "category:"+sanitize(k))
		}
		s := probes.Signal{Category: cat, Raw: k, Severity: fr.Severity}
		if fr.Score != nil {
			s.Score, s.HasScore = *fr.Score, true
		}
		if fr.Filtered != nil && *fr.Filtered {
			s.Fired = true
		}
		if fr.Severity == "" && fr.Detected != nil {
			if *fr.Detected {
				s.Severity = "detected"
			} else {
				s.Severity = "not_detected"
			}
		}
		if !knownSeverity[fr.Severity] {
			r.Unknown = append(r.Unknown, "severity:"+sanitize(fr.Severity))
		}
		r.Signals = append(r.Signals, s)
	}
	return unavailable
}

// readBlocklists reads a filter entry that is an array of blocklist
// results, as Azure documents custom_blocklists
// ([{"filtered":true,"id":"NAME"}], learn.microsoft.com "Use blocklists"):
// one signal for the entry, fired when any blocklist filtered, under the
// entry's category (custom_blocklists → other). ok is false for anything
// else.
func readBlocklists(k string, raw json.RawMessage) (probes.Signal, bool) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return probes.Signal{}, false
	}
	cat, _ := NormalizeAzure(k)
	s := probes.Signal{Category: cat, Raw: k}
	entries := 0
	for _, e := range list {
		// Entries are {"filtered": bool, "id": "NAME"}; anything else in
		// the array is skipped, never a reason to drop the ones that are.
		var b struct {
			Filtered *bool   `json:"filtered"`
			ID       *string `json:"id"`
		}
		if json.Unmarshal(e, &b) != nil || (b.Filtered == nil && b.ID == nil) {
			continue
		}
		entries++
		s.Fired = s.Fired || (b.Filtered != nil && *b.Filtered)
	}
	// An empty array is a blocklist check that matched nothing; an array
	// holding no blocklist entry at all is something else.
	if len(list) > 0 && entries == 0 {
		return probes.Signal{}, false
	}
	return s, true
}

// ParseLenient decodes body into v, repairing two shapes seen in the wild:
// raw newlines inside strings and a top-level fragment missing its braces.
func ParseLenient(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	fixed := wire.EscapeRawNewlines(body)
	if e2 := json.Unmarshal(fixed, v); e2 == nil {
		return nil
	}
	t := bytes.TrimSpace(fixed)
	if len(t) > 0 && t[0] == '"' {
		wrapped := append(append([]byte("{"), t...), '}')
		if e3 := json.Unmarshal(wrapped, v); e3 == nil {
			return nil
		}
	}
	return err
}

// requestIDHeaders are read in order: OpenAI and Azure (x-request-id,
// apim-request-id), Azure management, generic, Mistral.
var requestIDHeaders = []string{"x-request-id", "apim-request-id", "x-ms-request-id", "request-id", "mistral-correlation-id"}

// requestIDKeys are requestIDHeaders in canonical form, so RequestID reads
// what h.Get would without canonicalizing (allocating) on every call.
var requestIDKeys = func() []string {
	out := make([]string, len(requestIDHeaders))
	for i, k := range requestIDHeaders {
		out[i] = http.CanonicalHeaderKey(k)
	}
	return out
}()

// RequestID returns the provider request id from the usual headers.
func RequestID(h http.Header) string {
	for _, k := range requestIDKeys {
		if v := h[k]; len(v) > 0 && v[0] != "" {
			return wire.Truncate(v[0], 200)
		}
	}
	return ""
}

// RetryWait is the provider's requested wait for a non-2xx answer: an
// explicit retry-after-ms or Retry-After header wins; on a 429 without one,
// OpenAI's x-ratelimit-reset-requests / x-ratelimit-reset-tokens durations
// ("6m0s", "20ms") are read, the one matching the error type ("requests" or
// "tokens") when it is known, else the longer.
func RetryWait(h http.Header, status int, errType string, now time.Time) time.Duration {
	if hasRetryAfter(h) {
		if d := wire.RetryAfter(h, now); d > 0 {
			return d
		}
	}
	if status != http.StatusTooManyRequests || h == nil {
		return 0
	}
	keys := []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"}
	switch errType {
	case "requests":
		keys = keys[:1]
	case "tokens":
		keys = keys[1:]
	}
	var max time.Duration
	for _, k := range keys {
		v := strings.TrimSpace(h.Get(k))
		d, err := time.ParseDuration(v)
		if err != nil {
			// Some gateways send plain seconds.
			if s, e2 := strconv.ParseFloat(v, 64); e2 == nil {
				d, err = wire.Duration(s, time.Second), nil
			}
		}
		if err == nil && d > max {
			max = d
		}
	}
	return max
}

// hasRetryAfter reports whether h carries either header wire.RetryAfter
// reads. That function only reads h.Get("retry-after-ms") and
// h.Get("Retry-After") and returns 0 when both are empty, so skipping it
// without them changes nothing; it spares the error readers the
// canonicalization of "retry-after-ms" (an allocation) on every answer.
func hasRetryAfter(h http.Header) bool {
	return len(h["Retry-After-Ms"]) > 0 || len(h["Retry-After"]) > 0
}

// apiError is the error object in its several dialects. Metadata
// (OpenRouter) and ProviderSpecific (LiteLLM's provider_specific_fields)
// are read again by gatewayFields; as raw values, a shape they do not
// expect never fails the error object's decoding.
type apiError struct {
	Message          json.RawMessage `json:"message"`
	Type             json.RawMessage `json:"type"`
	Code             json.RawMessage `json:"code"`
	Param            json.RawMessage `json:"param"`
	InnerError       *innerError     `json:"innererror"`
	Metadata         json.RawMessage `json:"metadata"`
	ProviderSpecific json.RawMessage `json:"provider_specific_fields"`
}

// innerError is Azure's innererror object.
type innerError struct {
	Code                 string    `json:"code"`
	ContentFilterResult  filterSet `json:"content_filter_result"`
	ContentFilterResults filterSet `json:"content_filter_results"`
}

// errInfo is an error body read into plain fields.
type errInfo struct {
	Message, Type, Code, RequestID string
	Inner                          *innerError
	present                        bool // an error was found in the body

	moderation bool     // OpenRouter's moderation metadata (see gatewayFields)
	reasons    []string // its reasons
}

// gatewayFields reads what gateways add to the error object: LiteLLM's
// provider_specific_fields.innererror (Azure's innererror, forwarded:
// BerriAI/litellm#12324, #16231), taken when the error object has no
// innererror of its own, and OpenRouter's moderation metadata
// ({reasons: [...], flagged_input, provider_name, model_slug}:
// openrouter.ai/docs/api-reference/errors), which is a moderation verdict
// when it carries reasons (an array) or flagged_input (a string). Only
// the reasons are kept; flagged_input (the probe's own text, echoed) never
// is. Shapes it does not expect are ignored.
func gatewayFields(e *errInfo, ae *apiError) {
	if ae.InnerError == nil && len(ae.ProviderSpecific) > 0 {
		var psf struct {
			InnerError json.RawMessage `json:"innererror"`
		}
		if json.Unmarshal(ae.ProviderSpecific, &psf) == nil {
			if raw := bytes.TrimSpace(psf.InnerError); len(raw) > 0 && raw[0] == '{' {
				var in innerError
				if json.Unmarshal(raw, &in) == nil {
					e.Inner = &in
				}
			}
		}
	}
	if len(ae.Metadata) > 0 {
		var md struct {
			Reasons      json.RawMessage `json:"reasons"`
			FlaggedInput json.RawMessage `json:"flagged_input"`
		}
		if json.Unmarshal(ae.Metadata, &md) != nil {
			return
		}
		var reasons []json.RawMessage
		if raw := bytes.TrimSpace(md.Reasons); len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &reasons) == nil {
			e.moderation = true
			for _, r := range reasons {
				var s string
				if json.Unmarshal(r, &s) == nil && s != "" {
					e.reasons = append(e.reasons, s)
				}
			}
		}
		if raw := bytes.TrimSpace(md.FlaggedInput); len(raw) > 0 && raw[0] == '"' {
			e.moderation = true
		}
	}
}

// decodeError reads an error body: {"error":{message,type,code,param,
// innererror}} (OpenAI, Azure), {"error":"text"}, top-level
// {message,type,code,request_id} (Mistral; message may be an object) and
// {"detail":...} (FastAPI-style servers such as vLLM).
func decodeError(body []byte) (errInfo, error) {
	var env struct {
		Error     json.RawMessage `json:"error"`
		Message   json.RawMessage `json:"message"`
		Type      json.RawMessage `json:"type"`
		Code      json.RawMessage `json:"code"`
		Detail    json.RawMessage `json:"detail"`
		RequestID json.RawMessage `json:"request_id"`
	}
	if err := ParseLenient(body, &env); err != nil {
		return errInfo{}, err
	}
	var e errInfo
	e.RequestID = wire.Truncate(text(env.RequestID), 200)
	raw := bytes.TrimSpace(env.Error)
	switch {
	case len(raw) > 0 && raw[0] == '{':
		var ae apiError
		if json.Unmarshal(raw, &ae) == nil {
			e.Message, e.Type, e.Code, e.Inner = text(ae.Message), text(ae.Type), text(ae.Code), ae.InnerError
			e.present = true
			gatewayFields(&e, &ae)
		}
	case len(raw) > 0 && raw[0] == '"':
		e.Message, e.present = text(raw), true
	}
	if e.Message == "" {
		e.Message = text(env.Message)
	}
	if e.Message == "" {
		e.Message = text(env.Detail)
	}
	if e.Type == "" {
		e.Type = text(env.Type)
	}
	if e.Code == "" {
		e.Code = text(env.Code)
	}
	if e.Message != "" || e.Type != "" || e.Code != "" {
		e.present = true
	}
	return e, nil
}

// promptBlockCodes are OpenAI error codes on a 400 that mean the prompt was
// rejected by a safety check before the model ran: "invalid_prompt" (the
// reasoning models' "your prompt was flagged as potentially violating our
// usage policy") and "content_policy_violation".
var promptBlockCodes = wire.Set("invalid_prompt", "content_policy_violation")

// ClassifyError reads a non-2xx answer (or a 2xx carrying only an error) in
// any of the dialects decodeError knows: Azure's content_filter 400 is an
// input block (or filter_unavailable when the filter says it did not run and
// nothing fired), OpenAI's invalid_prompt 400 is an input block, account
// enforcement (wire.IsAbuse) is abuse_block, insufficient_quota is a client
// error, and anything else follows wire.StatusClass. The raw reason is kept
// as "STATUS:TYPE:CODE".
//
// Gateways in front of providers are read too: LiteLLM's
// ContentPolicyViolationError (or Azure's prompt-filter message without
// its code; GatewayContentPolicy) on a 400 is an input block
// ("content_policy_violation"), with Azure's per-category results when
// LiteLLM forwards the innererror in error.provider_specific_fields (then
// read exactly as Azure's, "content_filter"); OpenAI's "Invalid prompt:
// your prompt was flagged" message (wire.IsPromptFlagged) is an input
// block ("invalid_prompt") under any status and whatever the code, and
// never abuse_block (an enforcement type or code, or account wording, on
// a 2xx or 4xx still is); OpenRouter's moderation error (403, error.metadata with
// reasons or flagged_input) is an input block ("moderation") whose reasons
// are the categories (NormalizeReason), flagged_input never kept.
//
// OpenAI-compatible providers that say it only in words: xAI's safety
// check (403 or 400, "Content violates usage guidelines. ... Failed check:
// SAFETY_CHECK_TYPE_BIO"; IsUsageGuidelinesBlock) is an input block
// ("safety_check") whose named check is the category (BIO weapons, CSAM
// sexual_minors, others other); DeepSeek's 400 "Content Exists Risk"
// (IsContentExistsRisk, the whole message) is an input block
// ("content_exists_risk") with no category. Account enforcement in the
// same body wins, as above.
//
// The body is first given to the single-pass reader classifyErrorFast
// (fasterror.go), which either returns exactly what classifyErrorSlow
// returns or declines; anything it declines is read by classifyErrorSlow.
//
// A UTF-8 byte order mark before the body is skipped (wire.SkipBOM).
func ClassifyError(resp *probes.Response, now time.Time) probes.Result {
	if resp.Err != nil {
		return wire.Transport(resp)
	}
	return classifyError(wire.SkipBOM(resp), now)
}

// classifyError is ClassifyError on a body whose byte order mark, if any,
// was skipped: the fast reader, else the reference.
func classifyError(resp *probes.Response, now time.Time) probes.Result {
	if r, ok := classifyErrorFast(resp, now); ok {
		return r
	}
	return classifyErrorSlow(resp, now)
}

// classifyErrorSlow is the reference reader of an error body: decodeError
// (encoding/json, leniently, into json.RawMessage fields read again by
// text), then, for a content_filter block, readFilters over the merged
// innererror filter sets (every entry decoded on its own). It reads every
// body, including the ones classifyErrorFast declines and the ones that do
// not parse at all, and defines the result classifyErrorFast must
// reproduce; the differential tests (fasterror_test.go, FuzzClassify's error
// target, FuzzFastError) compare the two.
func classifyErrorSlow(resp *probes.Response, now time.Time) probes.Result {
	r := probes.Result{RequestID: RequestID(resp.Header)}
	e, perr := decodeError(resp.Body)
	f := errFields{Message: e.Message, Type: e.Type, Code: e.Code, RequestID: e.RequestID, moderation: e.moderation, reasons: e.reasons}
	if e.Inner != nil {
		f.inner, f.innerRAI = true, e.Inner.Code == "ResponsibleAIPolicyViolation"
	}
	return finish(errorResult(resp, now, r, &f, perr != nil, innerFilters{inner: e.Inner}))
}

// innerFilters reads the innererror's filter sets for errorResult: the
// ones decodeError read (inner), or the signals the fast reader read
// (fast).
type innerFilters struct {
	inner *innerError
	fast  *errReader
}

// read appends the signals of the merged sets (content_filter_result and
// content_filter_results, the latter winning on a name in both) as
// readFilters does, and reports whether a filter says it did not run.
func (f innerFilters) read(r *probes.Result) (unavailable bool) {
	if f.fast != nil {
		return f.fast.filters(r)
	}
	if f.inner == nil {
		return false
	}
	fs := filterSet{}
	for k, v := range f.inner.ContentFilterResult {
		fs[k] = v
	}
	for k, v := range f.inner.ContentFilterResults {
		fs[k] = v
	}
	return readFilters(fs, r)
}

// errFields is what ClassifyError's verdict depends on in a decoded error
// body (decodeError's errInfo, or what classifyErrorFast read).
type errFields struct {
	Message, Type, Code, RequestID string

	inner    bool // the error object has an innererror object (its own, or LiteLLM's provider_specific_fields one)
	innerRAI bool // whose code is ResponsibleAIPolicyViolation

	moderation bool     // OpenRouter's moderation metadata (the fast reader declines it)
	reasons    []string // its reasons
}

// errorResult is ClassifyError's verdict on a decoded error body, before
// finish. r carries the request id header. unparsed says the body did not
// parse (e is then empty). filters is read only for a content_filter block
// with an innererror. (A concrete type rather than a func, so that r stays
// on the stack.)
func errorResult(resp *probes.Response, now time.Time, r probes.Result, e *errFields, unparsed bool, filters innerFilters) probes.Result {
	if r.RequestID == "" {
		r.RequestID = e.RequestID
	}
	r.RetryAfter = RetryWait(resp.Header, resp.Status, e.Type, now)
	r.Message = e.Message
	ok2xx := resp.Status >= 200 && resp.Status < 300
	switch {
	case (resp.Status == 400 || ok2xx) && (e.Code == "content_filter" || e.innerRAI || GatewayContentPolicy(e.Message)):
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "content_filter"
		if e.Code != "content_filter" && !e.innerRAI {
			r.Reason = "content_policy_violation"
		}
		if e.inner && filters.read(&r) && !anyFired(r.Signals) {
			// The filter did not run and nothing it did run fired.
			r.Class, r.Stage = probes.FilterUnavailable, probes.StageNone
		}
	case unparsed && resp.Status == 400 && cutJSON(resp.Body, '{', '"') && bytes.Contains(resp.Body, []byte("content_filter")):
		// Unparseable but unmistakable: keep the block, categories unknown.
		// Only a body that opens like a JSON error does; a plain-text or
		// HTML 400 that mentions content_filter is an ordinary client error.
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "content_filter"
		r.Unknown = append(r.Unknown, "unparseable_body")
	case (resp.Status == 400 || ok2xx) && promptBlockCodes[e.Code]:
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, e.Code
	case (resp.Status >= 400 && resp.Status < 500 || ok2xx) && wire.IsAbuse(e.Type, e.Code, e.Message):
		// Before the message-based input blocks: an enforcement type or
		// code is account enforcement whatever the message says (IsAbuse
		// itself ignores the usage-policy words of an invalid-prompt
		// message).
		r.Class, r.Stage = probes.AbuseBlock, probes.StageAccount
		r.Reason = statusReason(resp.Status, e)
	case wire.IsPromptFlagged(e.Message) && !wire.IsAbuse(e.Type, e.Code, e.Message):
		// OpenAI's invalid-prompt input block forwarded by a gateway
		// without its code (LiteLLM: code "400"): per request, never
		// account enforcement, though it speaks of the usage policy. Under
		// any status: the wording is OpenAI's own and nothing else says it
		// (no rate-limit, quota or server error does), so a gateway that
		// wraps it in a 429 or a 5xx still forwards a block. Enforcement
		// (IsAbuse) in the same body is abuse_block on a 4xx or 2xx (the
		// case above) and never this block under other statuses.
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "invalid_prompt"
	case (resp.Status == 403 || resp.Status == 400 || ok2xx) && IsUsageGuidelinesBlock(e.Message):
		// xAI's safety check (403, the check named in the message): a
		// per-request input block, categories from the check's name.
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "safety_check"
		r.Signals, r.Unknown = safetyCheckSignals(e.Message, r.Signals, r.Unknown)
	case (resp.Status == 400 || ok2xx) && IsContentExistsRisk(e.Message):
		// DeepSeek's input moderation (400 invalid_request_error): no
		// category named.
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "content_exists_risk"
	case (resp.Status == 403 || resp.Status == 400 || ok2xx) && e.moderation:
		// OpenRouter's moderation: the input was flagged before any model
		// ran; the reasons are the categories.
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "moderation"
		r.Signals, r.Unknown = moderationSignals(e.reasons, r.Signals, r.Unknown)
	case resp.Status == 429 && (e.Code == "insufficient_quota" || e.Type == "insufficient_quota"):
		r.Class = probes.ClientError
		r.Reason = statusReason(resp.Status, e)
	case ok2xx:
		// A 2xx carrying an error and no answer: a gateway's failure.
		r.Class = probes.Transient
		r.Reason = strings.Trim(fmt.Sprintf("error_body:%s:%s", e.Type, e.Code), ":")
	default:
		r.Class = wire.StatusClass(resp.Status)
		r.Reason = statusReason(resp.Status, e)
	}
	if unparsed && resp.Truncated {
		r.Unknown = append(r.Unknown, "truncated_body")
	}
	return r
}

// statusReason is the raw reason "STATUS:TYPE:CODE", colons trimmed at
// both ends: strings.Trim(fmt.Sprintf("%d:%s:%s", ...), ":"), which
// TestStatusReason checks, built with one allocation. (Only the branches
// that keep it build it: the content_filter block, the common error, then
// costs none.)
func statusReason(status int, e *errFields) string {
	var a [64]byte
	b := strconv.AppendInt(a[:0], int64(status), 10)
	b = append(append(append(append(b, ':'), e.Type...), ':'), e.Code...)
	return string(bytes.Trim(b, ":"))
}

// GatewayContentPolicy reports whether an error message is a gateway's
// rendering of a provider's content-policy input block without the
// provider's code: LiteLLM's ContentPolicyViolationError
// ("litellm.BadRequestError: litellm.ContentPolicyViolationError: ...",
// code "400", meta-llama/PurpleLlama#109) or Azure's prompt-filter message
// ("The response was filtered due to the prompt triggering Azure OpenAI's
// content management policy") forwarded on its own.
func GatewayContentPolicy(message string) bool {
	m := strings.ToLower(message)
	return strings.Contains(m, "contentpolicyviolationerror") ||
		strings.Contains(m, "response was filtered due to the prompt triggering")
}

// IsUsageGuidelinesBlock reports whether an error message is xAI's
// safety-check input block: HTTP 403, {"code":"The caller does not have
// permission to execute the specified operation","error":"Content violates
// usage guidelines. Team: ..., API key ID: ..., Model: ..., Failed check:
// SAFETY_CHECK_TYPE_BIO"} (UKGovernmentBEIS/inspect_ai#2267,
// theopenco/llmgateway#1785, also seen with SAFETY_CHECK_TYPE_CSAM). The
// message must open with "Content violates usage guidelines" (after white
// space), or carry it after a gateway's " - " separator (LiteLLM's
// "...Exception - <message>"): the same words quoted elsewhere in a
// message are not it.
func IsUsageGuidelinesBlock(message string) bool {
	const phrase = "content violates usage guidelines"
	m := strings.ToLower(strings.TrimSpace(message))
	return strings.HasPrefix(m, phrase) || strings.Contains(m, " - "+phrase)
}

// safetyCheck matches the check an xAI safety-check message names
// ("Failed check: SAFETY_CHECK_TYPE_BIO").
var safetyCheck = regexp.MustCompile(`(?i)\bfailed check:\s*(safety_check_type_[a-z0-9_]+)`)

// safetyCheckCategories maps the xAI checks seen so far to the normalized
// vocabulary (BIO as Anthropic's bio: weapons); any other check is "other"
// with "category:NAME" in Unknown.
var safetyCheckCategories = map[string]string{
	"SAFETY_CHECK_TYPE_BIO":  probes.CatWeapons,
	"SAFETY_CHECK_TYPE_CSAM": probes.CatSexualMinors,
}

// safetyCheckSignals appends a fired signal per check an xAI safety-check
// message names (sorted, unique; upper-cased as xAI spells them), and a
// "category:NAME" Unknown entry for each check safetyCheckCategories does
// not know. A message that names none adds nothing: the block then has no
// category.
func safetyCheckSignals(message string, sigs []probes.Signal, unk []string) ([]probes.Signal, []string) {
	var checks []string
	for _, m := range safetyCheck.FindAllStringSubmatch(message, -1) {
		checks = append(checks, strings.ToUpper(m[1]))
	}
	for _, raw := range probes.SortedUnique(checks) {
		cat, known := safetyCheckCategories[raw]
		if !known {
			cat = probes.CatOther
			unk = append(unk, "category:"+sanitize(raw))
		}
		sigs = append(sigs, probes.Signal{Category: cat, Raw: raw, Fired: true})
	}
	return sigs, unk
}

// IsContentExistsRisk reports whether an error message is DeepSeek's input
// moderation block: HTTP 400 {"error":{"message":"Content Exists
// Risk","type":"invalid_request_error","code":"invalid_request_error"}}
// (earlier {"detail":"Content Exists Risk"}; deepseek-ai/DeepSeek-V2#30,
// deepseek-ai/awesome-deepseek-integration#13). The whole message must be
// those words (case and surrounding white space aside).
func IsContentExistsRisk(message string) bool {
	return strings.EqualFold(strings.TrimSpace(message), "content exists risk")
}

// NormalizeReason maps a moderation reason a gateway names (OpenRouter's
// metadata.reasons: OpenAI moderation categories, or Azure-style names) to
// the normalized vocabulary: NormalizeModeration, else NormalizeAzure.
func NormalizeReason(raw string) (string, bool) {
	if c, ok := NormalizeModeration(raw); ok {
		return c, true
	}
	return NormalizeAzure(raw)
}

// moderationSignals appends a fired signal per reason (sorted, unique) and
// a "category:NAME" Unknown entry per reason NormalizeReason does not know.
func moderationSignals(reasons []string, sigs []probes.Signal, unk []string) ([]probes.Signal, []string) {
	for _, raw := range probes.SortedUnique(reasons) {
		cat, known := NormalizeReason(raw)
		if !known {
			unk = append(unk, "category:"+sanitize(raw))
		}
		sigs = append(sigs, probes.Signal{Category: cat, Raw: raw, Fired: true})
	}
	return sigs, unk
}

// moderationCategories maps OpenAI moderation category names (omni and
// legacy text-moderation models) to the normalized vocabulary.
var moderationCategories = map[string]string{
	"harassment":             probes.CatHarassment,
	"harassment/threatening": probes.CatHarassment,
	"hate":                   probes.CatHate,
	"hate/threatening":       probes.CatHate,
	"self-harm":              probes.CatSelfHarm,
	"self-harm/intent":       probes.CatSelfHarm,
	"self-harm/instructions": probes.CatSelfHarm,
	"sexual":                 probes.CatSexual,
	"sexual/minors":          probes.CatSexualMinors,
	"violence":               probes.CatViolence,
	"violence/graphic":       probes.CatViolence,
	"illicit":                probes.CatIllicit,
	"illicit/violent":        probes.CatIllicit,
}

// NormalizeModeration maps an OpenAI moderation category; unknown names are
// "other" with known false.
func NormalizeModeration(raw string) (string, bool) {
	if c, ok := moderationCategories[raw]; ok {
		return c, true
	}
	return probes.CatOther, false
}

func anyFired(ss []probes.Signal) bool {
	for _, s := range ss {
		if s.Fired {
			return true
		}
	}
	return false
}

// finish sanitizes (wire.CleanUnknown: a backstop, entries are built
// sanitized), de-duplicates and sorts Unknown and applies wire.Finish.
func finish(r probes.Result) probes.Result {
	if len(r.Unknown) > 0 {
		u := probes.SortedUnique(wire.CleanUnknown(r.Unknown))
		for i, s := range u {
			u[i] = wire.Truncate(s, 120)
		}
		r.Unknown = u
	}
	return wire.Finish(r)
}

var finishContentFilter = regexp.MustCompile(`"finish_reason"\s*:\s*"content_filter"`)

// cutJSON reports whether body, after leading whitespace, opens with one of
// the given bytes: the start of a JSON body, however it was cut.
func cutJSON(body []byte, open ...byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && bytes.IndexByte(open, t[0]) >= 0
}

// malformed classifies a 2xx whose body could not be read.
func malformed(resp *probes.Response, r probes.Result) probes.Result {
	r.Class, r.Reason = probes.Transient, "malformed_response"
	if resp.Truncated {
		r.Reason = "truncated_response"
		r.Unknown = append(r.Unknown, "truncated_body")
		if cutJSON(resp.Body, '{') && finishContentFilter.Match(resp.Body) {
			// The cut body (a JSON object, not an HTML page that happens to
			// quote the field) still says the output was filtered.
			r.Class, r.Stage, r.Reason = probes.BlockedOutput, probes.StageOutput, "content_filter"
		}
	}
	return finish(r)
}

// ClassifyChat reads a chat-completions response in the OpenAI or Azure
// dialect. now is used only to read an HTTP-date Retry-After.
//
// The answer is choices[0] (or a later choice that finished with
// content_filter): finish_reason content_filter is blocked_output (with or
// without a message; categories from its fired filter results); a choice
// with no finish_reason and no text (content, refusal and text absent,
// null or "") is transient "empty_choice"; another finish_reason on a
// choice with no message object (absent or null) and no legacy text is
// transient "no_message"; a non-empty message.refusal is model_refusal; a
// filter that says it did not run is filter_unavailable; a short refusal
// text is model_refusal (heuristic); anything else is allowed. No choices
// is transient "no_choices", unless a prompt filter result fired: then the
// input filter withheld the answer, and it is blocked_input
// "prompt_filter_no_choices" with the fired categories. A body that does
// not parse, or whose verdict fields (choices, finish_reason, message,
// content, refusal, text, filter results) have the wrong type, is
// transient "malformed_response". A
// bookkeeping field of the wrong type (id, created, model,
// system_fingerprint, usage and its counts, index, prompt_index) leaves
// the verdict as it is and is noted in Unknown as "NAME:bad_type"
// ("usage.prompt_tokens:bad_type", "choices.index:bad_type"). An allowed
// answer whose filter results fired anyway (Azure's asynchronous filter
// flags content it returned; a prompt filter result may fire on an
// answered request) stays allowed and names each such category in Unknown
// as "filtered_but_answered:RAW" ("filtered_but_answered:hate",
// "filtered_but_answered:prompt.hate").
//
// A 2xx event stream (declared text/event-stream, or, without a
// Content-Type as replay reads stored bodies, a body opening with a data:
// line), which a gateway may send though no stream was asked for, is read
// as the non-streamed answer it describes (classifyChatStream, stream.go)
// and marked "response:event_stream" (StreamMarker) in Unknown: the delta
// contents and refusals concatenated, the finish reason, model, usage and
// filter results taken from the chunks that carry them. A stream that did
// not end with "[DONE]" after the answer's finish reason (cut, or failed)
// is transient "incomplete_stream"; a choice that finished with
// content_filter is blocked_output wherever the stream ends.
//
// A 2xx body is first given to the single-pass reader classifyChatFast
// (fastchat.go), which either returns exactly what classifyChatSlow
// returns or declines; anything it declines is read by classifyChatSlow.
// A UTF-8 byte order mark before the body is skipped first (wire.SkipBOM:
// the stored body keeps it).
func ClassifyChat(resp *probes.Response, now time.Time) probes.Result {
	if resp.Err != nil {
		return wire.Transport(resp)
	}
	resp = wire.SkipBOM(resp)
	if resp.Status < 200 || resp.Status >= 300 {
		return classifyError(resp, now)
	}
	if r, ok := classifyChatFast(resp); ok {
		return r
	}
	return classifyChatSlow(resp, now)
}

// classifyChatSlow is the reference reader of a 2xx chat-completions
// answer: encoding/json into chatResponse (leniently), the unknown keys
// from a second pass (chatNewKeys), every filter entry decoded on its own
// (readFilters). It reads every body, including the ones classifyChatFast
// declines, and defines the result classifyChatFast must reproduce; the
// differential tests (fastchat_test.go, FuzzClassify) compare the two.
// An event stream (isChatStream) is read by classifyChatStream: the fast
// reader declines every stream (none opens with '{').
func classifyChatSlow(resp *probes.Response, now time.Time) probes.Result {
	if isChatStream(resp) {
		return classifyChatStream(resp, now)
	}
	var r probes.Result
	r.RequestID = RequestID(resp.Header)
	var cr chatResponse
	if err := ParseLenient(resp.Body, &cr); err != nil {
		return malformed(resp, r)
	}
	if len(cr.Choices) == 0 && len(cr.PromptFilterResults) == 0 {
		if e, err := decodeError(resp.Body); err == nil && e.present {
			return classifyError(resp, now)
		}
		if cr.ID.S == "" && cr.Model.S == "" {
			return malformed(resp, r)
		}
	}
	if r.RequestID == "" {
		r.RequestID = wire.Truncate(cr.ID.S, 200)
	}
	r = classifyOK(&cr, r)
	r.Unknown = append(r.Unknown, chatNewKeys(resp.Body)...)
	if resp.Truncated {
		r.Unknown = append(r.Unknown, "truncated_body")
	}
	return finish(r)
}

func classifyOK(cr *chatResponse, r probes.Result) probes.Result {
	r.ModelID = wire.Truncate(cr.Model.S, 200)
	r.ModelFP = wire.Truncate(cr.SystemFingerprint.S, 200)
	r.TokensIn, r.TokensOut = cr.Usage.PromptTokens.N, cr.Usage.CompletionTokens.N
	r.Unknown = append(r.Unknown, cr.oddFields()...)
	unavailable := false
	for _, p := range cr.PromptFilterResults {
		// Input-side results on an answered request are scores, not blocks.
		var tmp probes.Result
		if readFilters(p.ContentFilterResults, &tmp) {
			unavailable = true
			r.Reason, r.Message = tmp.Reason, tmp.Message
		}
		for _, s := range tmp.Signals {
			s.Raw = "prompt." + s.Raw
			r.Signals = append(r.Signals, s)
		}
		r.Unknown = append(r.Unknown, tmp.Unknown...)
	}
	if len(cr.Choices) == 0 {
		if unavailable {
			r.Class = probes.FilterUnavailable
			return r
		}
		if anyFired(r.Signals) {
			// The categories are the fired ones (wire.Finish).
			r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "prompt_filter_no_choices"
			return r
		}
		r.Class, r.Reason = probes.Transient, "no_choices"
		return r
	}
	// The answer is choices[0]; a content_filter finish on any choice (n > 1)
	// still means the provider withheld output for these bytes.
	c := cr.Choices[0]
	for _, oc := range cr.Choices[1:] {
		if oc.FinishReason == "content_filter" && c.FinishReason != "content_filter" {
			c = oc
		}
	}
	var out probes.Result
	if readFilters(c.ContentFilterResults, &out) {
		unavailable = true
		r.Reason, r.Message = out.Reason, out.Message
	}
	r.Signals = append(r.Signals, out.Signals...)
	r.Unknown = append(r.Unknown, out.Unknown...)
	if !knownFinish[c.FinishReason] {
		r.Unknown = append(r.Unknown, "finish_reason:"+sanitize(c.FinishReason))
	}
	var msg chatMessage
	if c.Message != nil {
		msg = *c.Message
	}
	content := ""
	if msg.Content != nil {
		content = *msg.Content
	} else if c.Text != nil {
		content = *c.Text
	}
	switch {
	case c.FinishReason == "" && emptyText(msg.Content) && emptyText(c.Text) && emptyText(msg.Refusal) && !unavailable:
		// A choice with no text (absent, null or "") and no finish reason
		// says nothing: a non-streaming answer that ended has a finish
		// reason (vLLM, llama.cpp and Ollama set one too).
		r.Class, r.Reason = probes.Transient, "empty_choice"
	case c.FinishReason == "content_filter":
		r.Class, r.Stage, r.Reason = probes.BlockedOutput, probes.StageOutput, "content_filter"
		r.Message = ""
		r.Categories = nil
		for _, s := range out.Signals {
			if s.Fired {
				r.Categories = append(r.Categories, s.Category)
			}
		}
		return r
	case (c.Error != nil && c.Error.Failed) || failedFinish[c.FinishReason]:
		// Generation failed after the answer started: whatever text came
		// before the failure is not the provider's verdict.
		r.Class, r.Stage, r.Reason = probes.Transient, probes.StageNone, "choice_"+c.FinishReason
		if c.Error != nil && c.Error.Failed {
			r.Reason = "choice_error"
			r.Message = c.Error.Message.S
		}
	case c.Message == nil && c.Text == nil && !unavailable:
		// A finish reason other than content_filter on a choice with no
		// message object (and no legacy text): the answer is missing.
		r.Class, r.Reason = probes.Transient, "no_message"
	case msg.Content == nil && c.Text == nil && emptyText(msg.Refusal) && !unavailable:
		// A message object with no content at all (absent or null: {},
		// {"role":"assistant"}) and no refusal: the answer is missing,
		// whatever the finish reason ("tool_calls" too: a probe offers
		// no tools). An empty "" is an answer (a reasoning model that
		// spent its budget).
		r.Class, r.Reason = probes.Transient, "no_content"
	case msg.Refusal != nil && *msg.Refusal != "":
		r.Class, r.Stage, r.Reason = probes.ModelRefusal, probes.StageOutput, "message.refusal"
		r.Message = *msg.Refusal
	case unavailable:
		r.Class, r.Stage = probes.FilterUnavailable, probes.StageNone
	case wire.IsRefusal(content):
		r.Class, r.Stage, r.Reason, r.Heuristic = probes.ModelRefusal, probes.StageOutput, "refusal_text", true
		r.Message = content
	default:
		r.Class, r.Reason = probes.Allowed, c.FinishReason
		r.Unknown = filteredButAnswered(r.Signals, r.Unknown)
	}
	// Scores on an allowed or refused answer are kept as signals; only a
	// block names categories.
	r.Categories = nil
	return r
}

// filteredButAnswered appends a "filtered_but_answered:RAW" Unknown entry
// for every fired signal of an allowed answer (RAW is the provider's
// category name, "prompt."-prefixed on the input side): Azure flagged
// content (filtered true) yet returned it, as its asynchronous filter mode
// does, and a prompt filter result may fire on an answered request. The
// verdict stays allowed, since the content was delivered; the entry makes
// it visible (unknown-signals metric, replay). Nothing is appended, and
// nothing allocated, when no signal fired.
func filteredButAnswered(sigs []probes.Signal, unk []string) []string {
	for _, s := range sigs {
		if s.Fired {
			unk = append(unk, "filtered_but_answered:"+sanitize(s.Raw))
		}
	}
	return unk
}

// emptyText reports whether a text field is absent, null or "".
func emptyText(s *string) bool { return s == nil || *s == "" }

// Redact removes secret (the target's key) from every string field of r
// (see wire.Redact), in case an error message, a header or a gateway echoes
// the credential it was sent.
func Redact(r probes.Result, secret string) probes.Result {
	return wire.Redact(r, secret)
}
