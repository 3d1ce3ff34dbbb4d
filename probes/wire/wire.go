// Package wire holds helpers shared by provider adapters: canonical JSON
// rendering, Retry-After parsing, default status classification, and the
// conservative account-enforcement and refusal heuristics.
package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/probes"
)

// Marshal renders v as canonical JSON: struct fields in declaration order,
// map keys sorted (encoding/json's rule), no HTML escaping, no trailing
// newline. Adapters render request bodies from structs, never from maps with
// dynamic iteration, so the bytes are stable across processes.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// JSONHeader is the header set every JSON request carries.
func JSONHeader() http.Header {
	return http.Header{"Content-Type": {"application/json"}}
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
const utf8BOM = "\xef\xbb\xbf"

// TrimBOM returns body without one leading UTF-8 byte order mark (RFC
// 8259 §8.1: a JSON parser may ignore it; .NET proxies and API gateways'
// policy bodies send one). Anything else, a mark after white space
// included, is returned as it is. It never copies.
func TrimBOM(body []byte) []byte {
	if len(body) >= len(utf8BOM) && string(body[:len(utf8BOM)]) == utf8BOM {
		return body[len(utf8BOM):]
	}
	return body
}

// SkipBOM returns the response an adapter reads: resp itself when its body
// does not open with a UTF-8 byte order mark, else a shallow copy whose
// Body is the same bytes after the mark (TrimBOM). resp and its Body are
// never modified: the runner stores and hashes the bytes received, mark
// and all, and replay reads them through the same call. Every adapter
// calls it once, where it starts reading an answer.
func SkipBOM(resp *probes.Response) *probes.Response {
	if resp == nil {
		return nil
	}
	b := TrimBOM(resp.Body)
	if len(b) == len(resp.Body) {
		return resp
	}
	c := *resp
	c.Body = b
	return &c
}

// RetryAfter reads the provider's requested wait from the standard
// Retry-After header (seconds or HTTP date) and the retry-after-ms variant.
// now is used only for the HTTP-date form.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			if d := Duration(ms, time.Millisecond); d > 0 {
				return d
			}
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return Duration(s, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Duration converts a provider-given count of units (seconds in
// Retry-After, milliseconds in retry-after-ms) to a Duration: 0 for NaN and
// values <= 0, saturated at the largest Duration for values beyond it
// (including +Inf). A plain conversion of an out-of-range float is
// implementation-defined and yields a huge negative Duration on amd64
// ("Retry-After: 1e10").
func Duration(v float64, unit time.Duration) time.Duration {
	if math.IsNaN(v) || v <= 0 {
		return 0
	}
	f := v * float64(unit)
	if f >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f)
}

// Redact replaces every secret (of 4 bytes or more) in the string fields of
// r — Reason, Message, RequestID, ModelID, ModelFP, Unknown and the Raw and
// Severity of each signal — with [REDACTED], in every spelling RedactBytes
// knows (a message decoded once may still hold a wrapped upstream's
// escapes), then re-applies the Message and Reason bounds. Adapters call it on every result with the target's
// credentials, since a provider (or a gateway) may echo a credential in any
// field it returns.
func Redact(r probes.Result, secrets ...string) probes.Result {
	var keep []string
	for _, s := range secrets {
		if len(s) >= 4 {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		return r
	}
	rep := func(s string) string { return RedactString(s, keep...) }
	r.Reason = Truncate(rep(r.Reason), 200)
	r.Message = Truncate(rep(r.Message), MaxMessage)
	r.RequestID = rep(r.RequestID)
	r.ModelID = rep(r.ModelID)
	r.ModelFP = rep(r.ModelFP)
	if len(r.Unknown) > 0 {
		u := make([]string, len(r.Unknown))
		for i, s := range r.Unknown {
			u[i] = rep(s)
		}
		r.Unknown = u
	}
	if len(r.Signals) > 0 {
		sig := make([]probes.Signal, len(r.Signals))
		for i, s := range r.Signals {
			s.Raw, s.Severity = rep(s.Raw), rep(s.Severity)
			sig[i] = s
		}
		r.Signals = sig
	}
	return r
}

// Transport classifies an attempt that produced no HTTP response.
func Transport(resp *probes.Response) probes.Result {
	reason := "transport_error"
	if resp.Err != nil {
		msg := resp.Err.Error()
		switch {
		case strings.Contains(msg, "deadline exceeded") || strings.Contains(msg, "Timeout"):
			reason = "timeout"
		case strings.Contains(msg, "connection reset"):
			reason = "connection_reset"
		case strings.Contains(msg, "connection refused"):
			reason = "connection_refused"
		}
	}
	return probes.Result{Class: probes.Transient, Reason: reason}
}

// StatusClass is the default class of an HTTP status that carried no
// provider-specific policy signal: 408, 409, 425, 429 and 5xx are transient;
// other 4xx are client errors.
func StatusClass(status int) probes.Class {
	switch {
	case status == 408 || status == 409 || status == 425 || status == 429:
		return probes.Transient
	case status >= 500:
		return probes.Transient
	case status >= 400:
		return probes.ClientError
	case status >= 200 && status < 300:
		return probes.Allowed
	}
	return probes.ClientError
}

// abusePhrases are fragments of providers' account-enforcement messages. The
// list is deliberately narrow: an ordinary 400 or 403 must not page. The
// enforced unit may be the account, the organization (also spelled
// "organisation") or, for suspension only, the workspace or project a key
// belongs to (Mistral: "Your workspace has been suspended. Please contact
// support."): a workspace or project that is merely archived, deleted or
// not found, and every authentication failure ("invalid api key"), is an
// ordinary client error. An organization may also be restricted (Groq:
// 400 code organization_restricted, "Organization has been restricted.
// Please reach out to support if you believe this was in error."): only
// the organization's own restriction, never a model or feature
// "restricted to" some plan.
var abusePhrases = []string{
	"account has been suspended",
	"account has been deactivated",
	"account has been disabled",
	"organization has been suspended",
	"organization has been disabled",
	"organization has been deactivated",
	"organisation has been suspended",
	"organisation has been disabled",
	"organisation has been deactivated",
	"organization has been restricted",
	"organisation has been restricted",
	"workspace has been suspended",
	"project has been suspended",
	"access has been terminated",
	"access was terminated",
	"access to this api has been disabled",
	"abuse monitoring",
	"abuse detected",
	"flagged for abuse",
	"repeated violations",
	"resource has been temporarily blocked",
	"key has been disabled",
	"key has been revoked due to",
	"violation of our usage polic",
	"violating our usage polic",
}

// abuseTypes are error type/code values that denote account enforcement.
var abuseTypes = map[string]bool{
	"account_deactivated":      true,
	"account_suspended":        true,
	"organization_deactivated": true,
	"organization_suspended":   true,
	"access_terminated":        true,
	"abuse_detected":           true,
	"user_suspended":           true,
	"organization_restricted":  true,
}

// promptFlaggedPhrases are the openings of OpenAI's per-request input
// blocks (400 invalid_request_error invalid_prompt): the reasoning models'
// "Invalid prompt: your prompt was flagged as potentially violating our
// usage policy. Please try again with a different prompt: ..." and the
// safety block of current models (GPT-5.x, o-series) "Invalid prompt:
// we've limited access to this content for safety reasons. ...". Gateways
// (LiteLLM: "litellm.BadRequestError: OpenAIException - Invalid prompt:
// ...", code "400") forward the message without the code. The phrases are
// anchored on OpenAI's "Invalid prompt:" opening, except the flagged
// wording's own continuation, which no other provider writes.
var promptFlaggedPhrases = []string{
	"invalid prompt: your prompt was flagged",
	"your prompt was flagged as potentially violating",
	"invalid prompt: we've limited access to this content for safety reasons",
}

// IsPromptFlagged reports whether message is OpenAI's invalid-prompt input
// block, whatever error code came with it. A typographic apostrophe
// ("we’ve") reads as a straight one.
func IsPromptFlagged(message string) bool {
	m := strings.ToLower(message)
	if strings.Contains(m, "\u2019") {
		m = strings.ReplaceAll(m, "\u2019", "'")
	}
	for _, p := range promptFlaggedPhrases {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// IsAbuse reports whether an error's type/code and message denote
// account-level enforcement rather than a per-request problem. OpenAI's
// invalid-prompt wording ("your prompt was flagged as potentially
// violating our usage policy", IsPromptFlagged) is a per-request input
// block, never enforcement, though it contains "violating our usage
// polic": in such a message the usage-policy phrases do not count (an
// enforcement type or code, or an account phrase, still does).
func IsAbuse(typ, code, message string) bool {
	if abuseTypes[strings.ToLower(typ)] || abuseTypes[strings.ToLower(code)] {
		return true
	}
	m := strings.ToLower(message)
	flagged := IsPromptFlagged(m)
	for _, p := range abusePhrases {
		if flagged && usagePolicyPhrases[p] {
			continue
		}
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// usagePolicyPhrases are the abusePhrases OpenAI's invalid-prompt message
// also contains.
var usagePolicyPhrases = map[string]bool{
	"violation of our usage polic": true,
	"violating our usage polic":    true,
}

// refusalOpeners are the openings of plain-text refusals. The heuristic is
// conservative: only a short answer that opens with one of them is a refusal,
// so a long helpful answer that mentions "I can't" later is not.
var refusalOpeners = []string{
	"i can't help with",
	"i cannot help with",
	"i can't assist with",
	"i cannot assist with",
	"i can't provide",
	"i cannot provide",
	"i'm not able to help",
	"i am not able to help",
	"i'm unable to help",
	"i am unable to help",
	"i'm unable to assist",
	"i won't be able to help",
	"i won't help with",
	"i will not help with",
	"i'm sorry, but i can't",
	"i'm sorry, but i cannot",
	"sorry, but i can't",
	"sorry, i can't",
	"i'm sorry, i can't",
	"i can't do that",
	"i cannot do that",
	"i must decline",
}

// RefusalMaxLen is the longest answer the refusal heuristic considers.
const RefusalMaxLen = 400

// IsRefusal reports whether text is a plain-text refusal: at most
// RefusalMaxLen bytes and opening (after whitespace and quotes) with a known
// refusal phrase, with curly apostrophes folded. Results decided this way are
// stored with Heuristic set.
func IsRefusal(text string) bool {
	t := strings.TrimSpace(text)
	if t == "" || len(t) > RefusalMaxLen {
		return false
	}
	t = strings.ToLower(strings.NewReplacer("\u2019", "'", "\u2018", "'").Replace(t))
	t = strings.TrimLeft(t, "\"'*_ ")
	for _, p := range refusalOpeners {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// Truncate cuts s to at most n bytes on a rune boundary.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Shorten returns s cut to at most n bytes on a rune boundary, marked
// with "…" when it was cut.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Truncate(s, n) + "…"
}

// MaxMessage bounds provider messages kept in results.
const MaxMessage = 1024

// Finish fills derived fields of r: for a block, sorted unique fired
// categories (from Signals when Categories is empty); for anything else, no
// categories; every Unknown entry sanitized (SanitizeUnknown, order kept);
// and a bounded message and reason.
func Finish(r probes.Result) probes.Result {
	if !r.Class.IsBlock() {
		r.Categories = nil
	} else if len(r.Categories) == 0 {
		var cats []string
		for _, s := range r.Signals {
			if s.Fired {
				cats = append(cats, s.Category)
			}
		}
		r.Categories = cats
	}
	r.Categories = probes.SortedUnique(r.Categories)
	r.Unknown = CleanUnknown(r.Unknown)
	r.Message = Truncate(r.Message, MaxMessage)
	r.Reason = Truncate(r.Reason, 200)
	return r
}

// PortInRange reports whether a URL's port (url.URL.Port: "" when none is
// given) is absent or a number from 1 to 65535, the ports a request can
// be sent to.
func PortInRange(port string) bool {
	if port == "" {
		return true
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}
