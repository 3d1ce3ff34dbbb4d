// Package oaiwire renders and reads the OpenAI chat-completions wire format
// and its Azure OpenAI dialect (content_filter errors and filter results).
// The openai, azure, openai_compatible and sim providers share it.
package oaiwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// ChatRequest is the canonical chat-completions body. Field order is the
// wire order; temperature is always present so "0" is explicit.
type ChatRequest struct {
	Model       string           `json:"model,omitempty"` // omitted for Azure (the deployment is in the path)
	Messages    []probes.Message `json:"messages"`
	MaxTokens   int              `json:"max_tokens,omitempty"`
	Temperature float64          `json:"temperature"`
	Seed        *int64           `json:"seed,omitempty"`
	N           int              `json:"n,omitempty"`
}

// NewChatRequest builds the canonical body for p on t.
func NewChatRequest(t probes.Target, p probes.Probe, withModel bool) ChatRequest {
	r := ChatRequest{Messages: p.Messages, MaxTokens: t.MaxTokens, Temperature: t.Temperature, Seed: t.Seed}
	if withModel {
		r.Model = t.Model
	}
	return r
}

// Render renders a POST of body to base+path.
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

// FilterResult is one category entry of Azure's content filter results. The
// sim also sends Score.
type FilterResult struct {
	Filtered *bool    `json:"filtered,omitempty"`
	Detected *bool    `json:"detected,omitempty"`
	Severity string   `json:"severity,omitempty"`
	Score    *float64 `json:"score,omitempty"`
}

// filterSet is a content_filter_results object: category name to result,
// plus an optional error saying the filter did not run.
type filterSet map[string]json.RawMessage

type chatResponse struct {
	ID                string `json:"id"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           []struct {
		Index        int    `json:"index"`
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		Text                 *string   `json:"text"`
		ContentFilterResults filterSet `json:"content_filter_results"`
	} `json:"choices"`
	PromptFilterResults []struct {
		PromptIndex          int       `json:"prompt_index"`
		ContentFilterResults filterSet `json:"content_filter_results"`
	} `json:"prompt_filter_results"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *apiError `json:"error"`
}

type apiError struct {
	Message    string          `json:"message"`
	Type       json.RawMessage `json:"type"`
	Code       json.RawMessage `json:"code"`
	Param      json.RawMessage `json:"param"`
	InnerError *struct {
		Code                 string    `json:"code"`
		ContentFilterResult  filterSet `json:"content_filter_result"`
		ContentFilterResults filterSet `json:"content_filter_results"`
	} `json:"innererror"`
}

// str reads a JSON string-or-null-or-number as a string.
func str(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.Trim(string(raw), `"`)
}

var knownFinish = map[string]bool{"stop": true, "length": true, "tool_calls": true, "function_call": true, "content_filter": true, "": true}

// NormalizeAzure maps an Azure (or OpenAI moderation, or sim) category name
// to the normalized vocabulary. ok is false for names it does not know; they
// map to "other".
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

// readFilters appends signals from a filter set. It reports whether the set
// says the filter did not run (an "error" entry).
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
			var e struct{ Code, Message string }
			_ = json.Unmarshal(raw, &e)
			r.Reason = "filter_error:" + e.Code
			r.Message = e.Message
			continue
		}
		var fr FilterResult
		if err := json.Unmarshal(raw, &fr); err != nil {
			// Not a per-category object (e.g. a citation block); keep the key.
			r.Unknown = append(r.Unknown, "filter_key:"+k)
			continue
		}
		cat, known := NormalizeAzure(k)
		if !known {
			r.Unknown = append(r.Unknown, "category:"+k)
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
		switch fr.Severity {
		case "", "safe", "low", "medium", "high":
		default:
			r.Unknown = append(r.Unknown, "severity:"+fr.Severity)
		}
		r.Signals = append(r.Signals, s)
	}
	return unavailable
}

// ParseLenient decodes body into v, repairing two shapes seen in the wild:
// raw newlines inside strings and a top-level fragment missing its braces.
func ParseLenient(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	fixed := escapeRawNewlines(body)
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

func escapeRawNewlines(b []byte) []byte {
	out := make([]byte, 0, len(b))
	in, esc := false, false
	for _, c := range b {
		if in {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			case c == '\n':
				out = append(out, '\\', 'n')
				continue
			case c == '\r' || c == '\t':
				out = append(out, ' ')
				continue
			}
		} else if c == '"' {
			in = true
		}
		out = append(out, c)
	}
	return out
}

// RequestID returns the provider request id from the usual headers.
func RequestID(h http.Header) string {
	for _, k := range []string{"x-request-id", "apim-request-id", "x-ms-request-id", "request-id"} {
		if v := h.Get(k); v != "" {
			return wire.Truncate(v, 200)
		}
	}
	return ""
}

// rateLimitWait reads OpenAI's x-ratelimit-reset-* durations ("6m0s", "20ms").
func rateLimitWait(h http.Header) time.Duration {
	var max time.Duration
	for _, k := range []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"} {
		if d, err := time.ParseDuration(strings.TrimSpace(h.Get(k))); err == nil && d > max {
			max = d
		}
	}
	return max
}

// ClassifyChat reads a chat-completions response in the OpenAI or Azure
// dialect. now is used only to read an HTTP-date Retry-After.
func ClassifyChat(resp *probes.Response, now time.Time) probes.Result {
	if resp.Err != nil {
		return wire.Transport(resp)
	}
	var r probes.Result
	r.RequestID = RequestID(resp.Header)
	var cr chatResponse
	perr := ParseLenient(resp.Body, &cr)
	if resp.Status >= 200 && resp.Status < 300 {
		if perr != nil {
			r.Class, r.Reason = probes.Transient, "malformed_response"
			if resp.Truncated {
				r.Reason = "truncated_response"
			}
			return wire.Finish(r)
		}
		return wire.Finish(classifyOK(&cr, r))
	}
	r.RetryAfter = wire.RetryAfter(resp.Header, now)
	if d := rateLimitWait(resp.Header); d > r.RetryAfter && resp.Status == 429 {
		r.RetryAfter = d
	}
	var e apiError
	if perr == nil && cr.Error != nil {
		e = *cr.Error
	}
	typ, code := str(e.Type), str(e.Code)
	r.Message = e.Message
	r.Reason = strings.Trim(fmt.Sprintf("%d:%s:%s", resp.Status, typ, code), ":")
	switch {
	case resp.Status == 400 && (code == "content_filter" || (e.InnerError != nil && e.InnerError.Code == "ResponsibleAIPolicyViolation")):
		r.Class, r.Stage = probes.BlockedInput, probes.StageInput
		r.Reason = "content_filter"
		if e.InnerError != nil {
			fs := e.InnerError.ContentFilterResults
			if len(fs) == 0 {
				fs = e.InnerError.ContentFilterResult
			}
			if readFilters(fs, &r) {
				r.Class, r.Stage = probes.FilterUnavailable, probes.StageNone
			}
		}
	case perr != nil && resp.Status == 400 && bytes.Contains(resp.Body, []byte("content_filter")):
		// Unparseable but unmistakable: keep the block, categories unknown.
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "content_filter"
		r.Unknown = append(r.Unknown, "unparseable_body")
	case resp.Status >= 400 && resp.Status < 500 && wire.IsAbuse(typ, code, e.Message):
		r.Class, r.Stage = probes.AbuseBlock, probes.StageAccount
	case resp.Status == 429 && (code == "insufficient_quota" || typ == "insufficient_quota"):
		r.Class = probes.ClientError
	default:
		r.Class = wire.StatusClass(resp.Status)
	}
	return wire.Finish(r)
}

func classifyOK(cr *chatResponse, r probes.Result) probes.Result {
	r.ModelID = cr.Model
	r.ModelFP = cr.SystemFingerprint
	if cr.Usage != nil {
		r.TokensIn, r.TokensOut = cr.Usage.PromptTokens, cr.Usage.CompletionTokens
	}
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
		r.Class, r.Reason = probes.Transient, "no_choices"
		return r
	}
	c := cr.Choices[0]
	var out probes.Result
	if readFilters(c.ContentFilterResults, &out) {
		unavailable = true
		r.Reason, r.Message = out.Reason, out.Message
	}
	r.Signals = append(r.Signals, out.Signals...)
	r.Unknown = append(r.Unknown, out.Unknown...)
	if !knownFinish[c.FinishReason] {
		r.Unknown = append(r.Unknown, "finish_reason:"+c.FinishReason)
	}
	content := ""
	if c.Message.Content != nil {
		content = *c.Message.Content
	} else if c.Text != nil {
		content = *c.Text
	}
	switch {
	case c.FinishReason == "content_filter":
		r.Class, r.Stage, r.Reason = probes.BlockedOutput, probes.StageOutput, "content_filter"
		for _, s := range out.Signals {
			if s.Fired {
				r.Categories = append(r.Categories, s.Category)
			}
		}
		if len(r.Categories) == 0 {
			r.Categories = nil
		}
		return r
	case c.Message.Refusal != nil && *c.Message.Refusal != "":
		r.Class, r.Stage, r.Reason = probes.ModelRefusal, probes.StageOutput, "message.refusal"
		r.Message = *c.Message.Refusal
	case unavailable:
		r.Class, r.Stage = probes.FilterUnavailable, probes.StageNone
	case wire.IsRefusal(content):
		r.Class, r.Stage, r.Reason, r.Heuristic = probes.ModelRefusal, probes.StageOutput, "refusal_text", true
		r.Message = content
	default:
		r.Class, r.Reason = probes.Allowed, c.FinishReason
	}
	// Scores on an allowed or refused answer are kept as signals; only a
	// block names categories.
	r.Categories = nil
	return r
}
