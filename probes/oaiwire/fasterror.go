package oaiwire

// The single-pass reader of an error body, ClassifyError's fast path.
//
// It reads the body once with the typed reads of fastchat.go (tokReader, on
// the strict scanner of scan.go), gathers what decodeError
// would (errFields, plus the innererror's filter signals as readFilters
// would read them), and lets errorResult, the switch classifyErrorSlow runs
// too, decide the verdict.
//
// The contract: for every response, classifyErrorFast either returns ok
// false (declines) or returns a Result reflect.DeepEqual to
// classifyErrorSlow's. It declines whenever it could not be sure of that:
// any syntax error, invalid UTF-8, duplicate object member name (at any
// depth; see scan.go for the scanner's rules), a top level that is neither an object nor null,
// a member name that is not exactly a known one but equal to one under
// encoding/json's case folding (at the top level, in the error object, in
// innererror and in a filter entry), an innererror that is not an object or
// null, an innererror code that is not a string or null, a filter set that
// is not an object or null, a filter entry that is not an object or that
// carries a non-null "error" (or whose fields have unexpected types), a
// set-level filter "error", the same category name in both
// content_filter_result and content_filter_results, a metadata or
// provider_specific_fields member of the error object (gateways' additions,
// which the reference reads with gatewayFields), and any body that does
// not parse as sent nor after ParseLenient's repairs. It never reads a body
// the reference cannot parse (decodeError's error), so the unparseable
// branches of errorResult stay with classifyErrorSlow. Declining is always
// safe; a different answer is a bug, which FuzzClassify's error target (on
// every fuzzed input), FuzzFastError and the TestFastError* tests
// (fixtures, simulator answers, edge cases) look for.
//
// Where it mirrors the reference: text() of a message, type, code, detail
// or request_id reads a string as itself, null as "", a number or true or
// false as its literal and an object or array as its compact JSON
// (json.Compact, as text does). ParseLenient's repairs are reproduced by
// trying them in its order, each only when encoding/json would have failed
// on the previous form (json.Valid false: encoding/json checks the whole
// input before it decodes anything, so a failed attempt leaves nothing
// behind): the body as sent, then with raw line breaks and tabs escaped
// (wire.EscapeRawNewlines), then, for a body opening with a quote, wrapped
// in braces. Azure's documented error bodies need both repairs. (A valid
// body whose top level is not an object also fails encoding/json, with a
// type error; decode declines it rather than try the repairs.)
//
// On the simulator's content_filter 400 (as on any such body that needs no
// repair) it allocates only the Result's Signals and Categories: readers come from a sync.Pool, the
// scanner reads the body in place, known names and enum values are
// interned, the message reuses the previous body's string when equal, and
// finish builds the categories without probes.SortedUnique's map.

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// errReader is the pooled state of one fast read of an error body.
type errReader struct {
	tokReader

	fixBuf []byte // the body wrapped in braces (ParseLenient's last repair)

	// The body as decodeError reads it: text() of the error object's
	// message, type and code (or of the error string), and of the top-level
	// fallbacks.
	errMessage, errType, errCode      string
	message, typ, code, detail, reqID string
	inner, innerRAI                   bool // see errFields
	sets                              int  // innererror filter set members read
	sigs                              []probes.Signal
	unk                               []string // category:/severity: entries of sigs
	cats                              []string // finish's scratch
	lastMessage                       string   // outlives a read (see cachedString)
}

var errReaders = sync.Pool{New: func() any { return &errReader{} }}

func (c *errReader) release() {
	// Drop the body and every string before pooling.
	big := c.drop()
	clear(c.fixBuf)
	c.fixBuf = c.fixBuf[:0]
	c.errMessage, c.errType, c.errCode = "", "", ""
	c.message, c.typ, c.code, c.detail, c.reqID = "", "", "", "", ""
	clear(c.sigs)
	clear(c.unk)
	clear(c.cats)
	c.sigs, c.unk, c.cats = c.sigs[:0], c.unk[:0], c.cats[:0]
	// Everything an odd body can grow counts (see chatReader.release).
	big = big || cap(c.fixBuf) > maxPooledBytes || len(c.lastMessage) > maxPooledBytes ||
		cap(c.sigs) > maxPooledSignals || cap(c.unk) > maxPooledSignals || cap(c.cats) > maxPooledSignals
	if !big {
		errReaders.Put(c)
	}
}

// classifyErrorFast reads an error body in one pass. ok is false when it
// declines (see the contract at the top of this file); the caller then uses
// classifyErrorSlow, whose result it otherwise equals.
func classifyErrorFast(resp *probes.Response, now time.Time) (probes.Result, bool) {
	if resp.Err != nil {
		return probes.Result{}, false
	}
	c := errReaders.Get().(*errReader)
	defer c.release()
	r := probes.Result{RequestID: RequestID(resp.Header)}
	if !c.decode(resp.Body, r.RequestID == "") {
		return probes.Result{}, false
	}
	e := c.fields()
	return c.finish(errorResult(resp, now, r, &e, false, innerFilters{fast: c})), true
}

// fields resolves what was read as decodeError does: the error object's
// (or error string's) fields first, then the top-level ones for those
// still empty.
func (c *errReader) fields() errFields {
	e := errFields{Message: c.errMessage, Type: c.errType, Code: c.errCode, RequestID: wire.Truncate(c.reqID, 200), inner: c.inner, innerRAI: c.innerRAI}
	if e.Message == "" {
		e.Message = c.message
	}
	if e.Message == "" {
		e.Message = c.detail
	}
	if e.Type == "" {
		e.Type = c.typ
	}
	if e.Code == "" {
		e.Code = c.code
	}
	return e
}

// filters is innerFilters.read for the fast reader: readFilters over the
// merged sets, read in place (no name is in both sets, and they are sorted by name). The fast
// reader declines every filter error, so no filter says it did not run.
func (c *errReader) filters(r *probes.Result) bool {
	if len(c.sigs) > 0 {
		r.Signals = append(r.Signals, c.sigs...)
	}
	if len(c.unk) > 0 {
		r.Unknown = append(r.Unknown, c.unk...)
	}
	return false
}

// finish is finish(r), the Unknown clean-up and wire.Finish, for a Result
// without Categories: a block's categories (the sorted unique categories of
// its fired signals) are built in the reader's scratch and copied into one
// exact slice, where probes.SortedUnique would build a map and a slice.
// TestErrFinish compares the two.
func (c *errReader) finish(r probes.Result) probes.Result {
	if len(r.Categories) > 0 {
		return finish(r)
	}
	if len(r.Unknown) > 0 {
		u := probes.SortedUnique(wire.CleanUnknown(r.Unknown))
		for i, s := range u {
			u[i] = wire.Truncate(s, 120)
		}
		r.Unknown = u
	}
	r.Categories = nil
	if r.Class.IsBlock() {
		cats, fired := c.cats[:0], false
		for _, s := range r.Signals {
			if s.Fired {
				fired = true
				if s.Category != "" {
					cats = append(cats, s.Category)
				}
			}
		}
		slices.Sort(cats)
		cats = slices.Compact(cats)
		c.cats = cats
		if fired {
			// Non-nil even when empty, as SortedUnique's is.
			r.Categories = append(make([]string, 0, len(cats)), cats...)
		}
	}
	r.Message = wire.Truncate(r.Message, wire.MaxMessage)
	r.Reason = wire.Truncate(r.Reason, 200)
	return r
}

// decode reads body as ParseLenient would: as sent, then repaired. A
// repair is tried only when encoding/json would fail on the form before it
// (json.Valid false), since ParseLenient only repairs then; when the fast
// read fails on a form encoding/json accepts, the reference reads that form
// and decode declines. wantID says the body's request_id is needed.
func (c *errReader) decode(body []byte, wantID bool) bool {
	if c.read(body, wantID) {
		return true
	}
	t := bytes.TrimSpace(body)
	if len(t) == 0 || (t[0] != '{' && t[0] != '"') {
		return false // nothing a repair could turn into an object
	}
	fixed := body
	if rawBreakInString(body) {
		// A raw line break or tab inside a string: not JSON, so
		// encoding/json failed on the body as sent (no need to ask
		// json.Valid), and the first repair changes it.
		fixed = wire.EscapeRawNewlines(body)
		if c.read(fixed, wantID) {
			return true
		}
		if json.Valid(fixed) {
			return false
		}
	} else if json.Valid(body) {
		return false // encoding/json reads the body as sent
	}
	// Else the first repair leaves the body as it is, and it failed.
	t = bytes.TrimSpace(fixed)
	if len(t) == 0 || t[0] != '"' {
		return false
	}
	c.fixBuf = append(append(append(c.fixBuf[:0], '{'), t...), '}')
	return c.read(c.fixBuf, wantID)
}

// rawBreakInString reports whether wire.EscapeRawNewlines would change b:
// whether b has a raw line feed, carriage return or tab inside what that
// function's scan (the same as this one) takes for a string. In a JSON
// text that scan follows the strings exactly, and a string holds no raw
// control character, so b is then not JSON. TestRawBreakInString compares
// it with EscapeRawNewlines.
func rawBreakInString(b []byte) bool {
	if bytes.IndexAny(b, "\n\r\t") < 0 {
		return false
	}
	in, esc := false, false
	for _, ch := range b {
		if in {
			switch {
			case esc:
				esc = false
			case ch == '\\':
				esc = true
			case ch == '"':
				in = false
			case ch == '\n' || ch == '\r' || ch == '\t':
				return true
			}
		} else if ch == '"' {
			in = true
		}
	}
	return false
}

// Member names, by object, that the reference decodes into a struct field
// (matched case insensitively by encoding/json). A name equal to one of
// these under case folding but not exactly one makes the reader decline.
var (
	foldErrTop   = foldSet("error", "message", "type", "code", "detail", "request_id")
	foldAPIError = foldSet("message", "type", "code", "param", "innererror", "metadata", "provider_specific_fields")
	foldInner    = foldSet("code", "content_filter_result", "content_filter_results")
)

// read reads one form of the body: an object (or null, which the
// reference reads as an empty envelope) and nothing after it.
func (c *errReader) read(body []byte, wantID bool) bool {
	c.start(body)
	c.errMessage, c.errType, c.errCode = "", "", ""
	c.message, c.typ, c.code, c.detail, c.reqID = "", "", "", "", ""
	c.inner, c.innerRAI, c.sets = false, false, 0
	clear(c.sigs)
	clear(c.unk)
	c.sigs, c.unk = c.sigs[:0], c.unk[:0]
	open, ok := c.open('{')
	if !ok {
		return false
	}
	if open && !c.members(foldErrTop, func(k []byte) (bool, bool) {
		switch string(k) {
		case "error":
			return true, c.readError()
		case "message":
			return true, c.text(&c.message, &c.lastMessage)
		case "detail":
			return true, c.text(&c.detail, &c.lastMessage)
		case "type":
			return true, c.text(&c.typ, nil)
		case "code":
			return true, c.text(&c.code, nil)
		case "request_id":
			if wantID {
				return true, c.text(&c.reqID, nil)
			}
			return true, c.skip()
		}
		return false, true
	}, nil) {
		return false
	}
	// Exactly one value: anything after it is the reference's error.
	return c.s.end()
}

// readError reads the top-level error member: an object is the apiError
// (an error object the reference cannot decode declines), a string is the
// message, anything else is ignored as decodeError ignores it.
func (c *errReader) readError() bool {
	switch c.s.peek() {
	case '{':
		return c.readAPIError()
	case '"':
		return c.text(&c.errMessage, &c.lastMessage)
	}
	return c.skip()
}

func (c *errReader) readAPIError() bool {
	if open, ok := c.open('{'); !open || !ok {
		return false
	}
	return c.members(foldAPIError, func(k []byte) (bool, bool) {
		switch string(k) {
		case "message":
			return true, c.text(&c.errMessage, &c.lastMessage)
		case "type":
			return true, c.text(&c.errType, nil)
		case "code":
			return true, c.text(&c.errCode, nil)
		case "innererror":
			return true, c.readInner()
		case "param":
			return true, c.skip()
		case "metadata", "provider_specific_fields":
			// Gateways' additions (OpenRouter's moderation metadata,
			// LiteLLM's forwarded innererror): the reference reads them
			// (gatewayFields); decline.
			return true, false
		}
		return false, true
	}, nil)
}

// readInner reads the innererror object (null leaves none): its code and
// its filter sets, both read into c.sigs; with both present, their signals
// are sorted together and a name in both declines.
func (c *errReader) readInner() bool {
	open, ok := c.open('{')
	if !open {
		return ok
	}
	c.inner = true
	ok = c.members(foldInner, func(k []byte) (bool, bool) {
		switch string(k) {
		case "code":
			s, isNull, ok := c.str(&c.valBuf)
			c.innerRAI = ok && !isNull && string(s) == "ResponsibleAIPolicyViolation"
			return true, ok
		case "content_filter_result", "content_filter_results":
			c.sets++
			return true, c.readFilterSet(&c.sigs, &c.unk, false)
		}
		return false, true
	}, nil)
	if !ok {
		return false
	}
	if c.sets > 1 {
		slices.SortFunc(c.sigs, func(a, b probes.Signal) int { return strings.Compare(a.Raw, b.Raw) })
		for i := 1; i < len(c.sigs); i++ {
			if c.sigs[i].Raw == c.sigs[i-1].Raw {
				return false // the reference keeps content_filter_results' entry
			}
		}
	}
	return true
}

// text reads any value as text() reads it from a json.RawMessage: a string
// as itself, null as "", a number, true or false as its literal, an object
// or array as its compact JSON. A string is interned when it is a common
// type or code, or, with last, reused from the previous read when equal.
func (c *errReader) text(dst, last *string) bool {
	v, ok := c.s.value()
	if !ok {
		return false
	}
	switch v[0] {
	case 'n':
		*dst = ""
	case '"':
		s, ok := unquote(v, &c.valBuf)
		if !ok {
			return false
		}
		if last != nil {
			*dst = cachedString(s, last)
		} else if is, ok := errString(s); ok {
			*dst = is
		} else {
			*dst = string(s)
		}
	case '{', '[':
		var buf bytes.Buffer
		if json.Compact(&buf, v) != nil {
			return false
		}
		*dst = buf.String()
	default:
		*dst = string(v)
	}
	return true
}

// cachedString is string(b), reusing *last (and keeping the new value
// there) so that a value repeated from one body to the next, such as a
// provider's fixed error message, is not copied again.
func cachedString(b []byte, last *string) string {
	if string(b) != *last {
		*last = string(b)
	}
	return *last
}

// errString interns the usual error types and codes.
func errString(b []byte) (string, bool) {
	switch string(b) {
	case "content_filter":
		return "content_filter", true
	case "invalid_request_error":
		return "invalid_request_error", true
	case "invalid_prompt":
		return "invalid_prompt", true
	case "content_policy_violation":
		return "content_policy_violation", true
	case "rate_limit_exceeded":
		return "rate_limit_exceeded", true
	case "rate_limit_error":
		return "rate_limit_error", true
	case "server_error":
		return "server_error", true
	case "tokens":
		return "tokens", true
	case "requests":
		return "requests", true
	case "insufficient_quota":
		return "insufficient_quota", true
	}
	return "", false
}
