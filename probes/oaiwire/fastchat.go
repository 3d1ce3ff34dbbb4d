package oaiwire

// The single-pass reader of a 2xx chat-completions answer.
//
// It reads the body once with scanner (scan.go), a small strict JSON
// scanner written for these readers: it walks the body in place and
// rejects, at every nesting level, whatever jsontext's strict defaults
// reject (syntax errors, invalid UTF-8, lone surrogate escapes, duplicate
// member names, nesting past 10000, data after the top-level value), plus
// objects of more than 256 members. (It replaced a
// github.com/go-json-experiment/json/jsontext Decoder, whose per-token
// bookkeeping was most of this reader's cost; scan_test.go still compares
// the two, TestScanner and FuzzScanner.) tokReader's typed reads sit on it.
//
// The contract: for every 2xx response, classifyChatFast either returns ok
// false (declines) or returns a Result reflect.DeepEqual to
// classifyChatSlow's. It declines whenever it could not be sure of that:
// any syntax error, invalid UTF-8, duplicate object member name (at any
// depth, skipped values included), a body ParseLenient would have to repair, a
// member name that is not exactly a known one but equal to one under
// encoding/json's case folding, a value of a type the reference decodes
// differently or rejects (a string where a number is expected, a number
// that is not an int for an int field, a float out of range; among them
// every bookkeeping field of an odd type — id, created, model,
// system_fingerprint, usage and its counts, index, prompt_index — which
// the reference reads leniently and notes in Unknown), a filter
// entry that is not an object or carries an "error", a set-level filter
// "error", and a body with neither choices nor prompt_filter_results (the
// error-shaped bodies). Declining is always safe; a different answer is a
// bug, which FuzzClassify (on every fuzzed 2xx input) and the
// TestFastChat* tests (fixtures, simulator answers, edge cases) look for.
//
// Where it mirrors encoding/json (v1) semantics: null into a string leaves
// "", null into a pointer leaves nil, null into a struct, map or slice
// leaves it zero (a null choice is a zero choice), strings are unescaped,
// unknown members are skipped, numbers are read as ParseInt/ParseFloat
// read them. The unknown-key record is chatNewKeys's: every top-level key,
// and the keys of choices[0] and of its message (not of the other choices)
// outside the known sets. The reference is encoding/json as the toolchain
// builds it; under GOEXPERIMENT=jsonv2 encoding/json is reimplemented on
// v2, and the differential tests are what says the two still agree.
//
// It allocates only the Result's Signals (and strings it cannot intern):
// readers come from a sync.Pool, the scanner reads the body in place, known
// names and enum values are interned, and the model and system fingerprint
// reuse the previous answer's strings when equal.

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// fastChoice is one choice as the fast reader keeps it.
type fastChoice struct {
	finish                          string
	hasMessage                      bool // a message object (not absent, not null)
	hasContent, hasRefusal, hasText bool // the *string fields are non-nil
	content, refusal, text          []byte
	sigs                            []probes.Signal // content_filter_results, sorted by key
	unk                             []string        // category:/severity: entries of sigs
}

func (c *fastChoice) reset() {
	clear(c.sigs)
	clear(c.unk)
	*c = fastChoice{content: c.content[:0], refusal: c.refusal[:0], text: c.text[:0], sigs: c.sigs[:0], unk: c.unk[:0]}
}

// tokReader is the tokenizer state the single-pass readers share (the
// chat reader here and the error reader of fasterror.go): the scanner,
// which reads the body in place, and scratch for unescaping. Its methods are
// the typed reads both build on (object members, strings, numbers, filter
// sets), each reproducing how encoding/json (v1) decodes that field type
// or reporting ok false.
type tokReader struct {
	s      scanner // reads the body in place (scan.go)
	valBuf []byte  // unescaping scratch for values
}

// start points the scanner at body, read in place.
func (c *tokReader) start(body []byte) { c.s.reset(body) }

// drop forgets the body, so a pooled reader does not keep it alive, and
// reports whether the scratch grew past what a pooled reader may keep.
func (c *tokReader) drop() (big bool) {
	c.s.reset(nil)
	return cap(c.valBuf) > maxPooledBytes || cap(c.s.nameBuf) > maxPooledBytes ||
		cap(c.s.stack) > maxPooledFrames || cap(c.s.names) > maxPooledFrames
}

// chatReader is the pooled state of one fast read.
type chatReader struct {
	tokReader

	id, model, fingerprint string

	// lastModel and lastFingerprint outlive a read (see repeatedString).
	lastModel, lastFingerprint string
	tokensIn, tokensOut        int
	nChoices, nPrompts         int

	prompt    []probes.Signal // every prompt filter signal, Raw prefixed "prompt."
	promptUnk []string
	newKeys   []string // key:/choice_key:/message_key: entries

	sel, cur *fastChoice // the choice read so far as the answer, and the one being read
	choices  [2]fastChoice
}

var chatReaders = sync.Pool{New: func() any {
	c := &chatReader{}
	c.sel, c.cur = &c.choices[0], &c.choices[1]
	return c
}}

// Pooled scratch larger than this is dropped rather than kept.
const (
	maxPooledBytes   = 64 << 10
	maxPooledSignals = 256
	maxPooledFrames  = 1024 // scanner stack and name records
)

func (c *chatReader) release() {
	// Drop the body and every string before pooling.
	big := c.drop()
	c.id, c.model, c.fingerprint = "", "", ""
	clear(c.prompt)
	clear(c.promptUnk)
	clear(c.newKeys)
	c.prompt, c.promptUnk, c.newKeys = c.prompt[:0], c.promptUnk[:0], c.newKeys[:0]
	// Everything an odd body can grow counts: a pooled reader must not keep
	// a huge model string or thousands of unknown keys alive.
	big = big || cap(c.prompt) > maxPooledSignals ||
		cap(c.promptUnk) > maxPooledSignals || cap(c.newKeys) > maxPooledSignals ||
		len(c.lastModel) > maxPooledBytes || len(c.lastFingerprint) > maxPooledBytes
	for i := range c.choices {
		ch := &c.choices[i]
		ch.reset()
		big = big || cap(ch.content) > maxPooledBytes || cap(ch.refusal) > maxPooledBytes || cap(ch.text) > maxPooledBytes ||
			cap(ch.sigs) > maxPooledSignals || cap(ch.unk) > maxPooledSignals
	}
	if !big {
		chatReaders.Put(c)
	}
}

// classifyChatFast reads a 2xx chat-completions answer in one pass. ok is
// false when it declines (see the contract at the top of this file); the
// caller then uses classifyChatSlow, whose result it otherwise equals.
func classifyChatFast(resp *probes.Response) (probes.Result, bool) {
	c := chatReaders.Get().(*chatReader)
	defer c.release()
	var r probes.Result
	r.RequestID = RequestID(resp.Header)
	if !c.read(resp.Body, r.RequestID == "") {
		return probes.Result{}, false
	}
	if c.nChoices == 0 && c.nPrompts == 0 {
		// Error-shaped or empty: the slow path decides between an error
		// body and a malformed one.
		return probes.Result{}, false
	}
	if r.RequestID == "" {
		r.RequestID = wire.Truncate(c.id, 200)
	}
	r = c.classify(r)
	if len(c.newKeys) > 0 {
		r.Unknown = append(r.Unknown, c.newKeys...)
	}
	if resp.Truncated {
		r.Unknown = append(r.Unknown, "truncated_body")
	}
	return finish(r), true
}

// classify is classifyOK over what read gathered. Nothing the fast reader
// accepts says a filter did not run (it declines filter errors), so the
// filter_unavailable branches of classifyOK cannot be taken here.
func (c *chatReader) classify(r probes.Result) probes.Result {
	r.ModelID = wire.Truncate(c.model, 200)
	r.ModelFP = wire.Truncate(c.fingerprint, 200)
	r.TokensIn, r.TokensOut = c.tokensIn, c.tokensOut
	n := len(c.prompt)
	if c.nChoices > 0 {
		n += len(c.sel.sigs)
	}
	if n > 0 {
		r.Signals = make([]probes.Signal, 0, n)
		r.Signals = append(r.Signals, c.prompt...)
	}
	if len(c.promptUnk) > 0 {
		r.Unknown = append(r.Unknown, c.promptUnk...)
	}
	if c.nChoices == 0 {
		if anyFired(c.prompt) {
			// The categories are the fired ones (wire.Finish).
			r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, "prompt_filter_no_choices"
			return r
		}
		r.Class, r.Reason = probes.Transient, "no_choices"
		return r
	}
	ch := c.sel
	r.Signals = append(r.Signals, ch.sigs...)
	if len(ch.unk) > 0 {
		r.Unknown = append(r.Unknown, ch.unk...)
	}
	if !knownFinish[ch.finish] {
		r.Unknown = append(r.Unknown, "finish_reason:"+sanitize(ch.finish))
	}
	content := ch.content
	if !ch.hasContent {
		content = ch.text // empty when text is absent too
	}
	switch {
	case ch.finish == "" && len(ch.content) == 0 && len(ch.text) == 0 && len(ch.refusal) == 0:
		r.Class, r.Reason = probes.Transient, "empty_choice"
	case ch.finish == "content_filter":
		r.Class, r.Stage, r.Reason = probes.BlockedOutput, probes.StageOutput, "content_filter"
		r.Message = ""
		r.Categories = nil
		for _, s := range ch.sigs {
			if s.Fired {
				r.Categories = append(r.Categories, s.Category)
			}
		}
		return r
	case failedFinish[ch.finish]:
		r.Class, r.Stage, r.Reason = probes.Transient, probes.StageNone, "choice_"+ch.finish
	case !ch.hasMessage && !ch.hasText:
		r.Class, r.Reason = probes.Transient, "no_message"
	case !ch.hasContent && !ch.hasText && len(ch.refusal) == 0:
		r.Class, r.Reason = probes.Transient, "no_content"
	case ch.hasRefusal && len(ch.refusal) > 0:
		r.Class, r.Stage, r.Reason = probes.ModelRefusal, probes.StageOutput, "message.refusal"
		r.Message = string(ch.refusal)
	case mayBeRefusal(content) && wire.IsRefusal(string(content)):
		r.Class, r.Stage, r.Reason, r.Heuristic = probes.ModelRefusal, probes.StageOutput, "refusal_text", true
		r.Message = string(content)
	default:
		r.Class, r.Reason = probes.Allowed, ch.finish
		r.Unknown = filteredButAnswered(r.Signals, r.Unknown)
	}
	r.Categories = nil
	return r
}

// mayBeRefusal is false only where wire.IsRefusal(string(text)) is
// certainly false, so the common answer skips that call's allocations.
// IsRefusal trims white space, folds curly apostrophes, lower-cases and
// trims `"'*_ ` before matching openers that all begin "i " or "i'" or
// "so" (sorry). Trimming here is a superset of that, so the first two
// runes that remain are the ones IsRefusal's first two letters come from
// (or IsRefusal is false anyway), and the only runes lower-casing to i or
// s or o are I, İ (U+0130), S and O (TestMayBeRefusal checks every rune).
func mayBeRefusal(text []byte) bool {
	for len(text) > 0 {
		r, n := utf8.DecodeRune(text)
		if !unicode.IsSpace(r) && !strings.ContainsRune("\"'*_\u2018\u2019", r) {
			break
		}
		text = text[n:]
	}
	first, n := utf8.DecodeRune(text)
	second, _ := utf8.DecodeRune(text[n:])
	switch first {
	case 'i', 'I', '\u0130':
		switch second {
		case ' ', '\'', '\u2018', '\u2019':
			return true
		}
	case 's', 'S':
		return second == 'o' || second == 'O'
	}
	return false
}

// Member names, by object, that the fast reader handles, and for each object
// every name the reference treats specially (a struct field, matched case
// insensitively by encoding/json, or a known key that chatNewKeys does not
// report). A name equal to one of these under case folding but not exactly
// one makes the reader decline.
var (
	foldTop     = foldSet("id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier", "prompt_filter_results", "error")
	foldChoice  = foldSet("index", "message", "finish_reason", "logprobs", "content_filter_results", "text", "stop_reason", "error")
	foldMessage = foldSet("role", "content", "refusal", "annotations", "audio", "tool_calls", "function_call", "reasoning_content")
	foldPrompt  = foldSet("prompt_index", "content_filter_results")
	foldUsage   = foldSet("prompt_tokens", "completion_tokens")
	foldFilter  = foldSet("filtered", "detected", "severity", "score", "error")
)

func foldSet(names ...string) [][]byte {
	out := make([][]byte, len(names))
	for i, n := range names {
		out[i] = []byte(n)
	}
	return out
}

// folds reports whether name equals one of set under Unicode case folding
// (bytes.EqualFold, which encoding/json's field matching is equivalent to).
func folds(name []byte, set [][]byte) bool {
	for _, k := range set {
		if bytes.EqualFold(name, k) {
			return true
		}
	}
	return false
}

// filterName is a category name as read: its Raw (plain and prompt.), and
// NormalizeAzure of it, computed once for the names providers send so that
// reading them allocates nothing.
type filterName struct {
	raw, prompt, cat string
	known            bool
}

// filterNameList are the category names interned by lookupFilterName: the
// normalized vocabulary and every other name NormalizeAzure knows
// (TestLookupFilterName checks both).
var filterNameList = [...]string{"hate", "harassment", "self_harm", "sexual", "sexual_minors", "violence", "illicit", "weapons", "privacy", "jailbreak", "other", "self-harm", "selfharm", "indirect_attack", "profanity", "protected_material_text", "protected_material_code", "custom_blocklists", "ungrounded_material"}

// filterNames holds the filterName of each of filterNameList, in order.
var filterNames = func() (out [len(filterNameList)]filterName) {
	for i, n := range filterNameList {
		cat, known := NormalizeAzure(n)
		out[i] = filterName{raw: n, prompt: "prompt." + n, cat: cat, known: known}
	}
	return out
}()

// lookupFilterName returns the interned filterName of k, or nil. (A switch:
// cheaper than a map here.)
func lookupFilterName(k []byte) *filterName {
	i := -1
	switch string(k) {
	case "hate":
		i = 0
	case "harassment":
		i = 1
	case "self_harm":
		i = 2
	case "sexual":
		i = 3
	case "sexual_minors":
		i = 4
	case "violence":
		i = 5
	case "illicit":
		i = 6
	case "weapons":
		i = 7
	case "privacy":
		i = 8
	case "jailbreak":
		i = 9
	case "other":
		i = 10
	case "self-harm":
		i = 11
	case "selfharm":
		i = 12
	case "indirect_attack":
		i = 13
	case "profanity":
		i = 14
	case "protected_material_text":
		i = 15
	case "protected_material_code":
		i = 16
	case "custom_blocklists":
		i = 17
	case "ungrounded_material":
		i = 18
	}
	if i < 0 {
		return nil
	}
	return &filterNames[i]
}

// finishString and severityString intern the usual values of those fields.
func finishString(b []byte) (string, bool) {
	switch string(b) {
	case "stop":
		return "stop", true
	case "length":
		return "length", true
	case "content_filter":
		return "content_filter", true
	case "tool_calls":
		return "tool_calls", true
	case "function_call":
		return "function_call", true
	}
	return "", false
}

func severityString(b []byte) (string, bool) {
	switch string(b) {
	case "safe":
		return "safe", true
	case "low":
		return "low", true
	case "medium":
		return "medium", true
	case "high":
		return "high", true
	}
	return "", false
}

// knownSeverityString is knownSeverity[s], without the map.
func knownSeverityString(s string) bool {
	switch s {
	case "", "safe", "low", "medium", "high":
		return true
	}
	return false
}

// unquote returns the unescaped text of the JSON string v, in place when it
// has no escapes, else in *buf. The scanner has validated v.
func unquote(v []byte, buf *[]byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	in := v[1 : len(v)-1]
	if !hasBackslash(in) {
		return in, true
	}
	*buf = appendUnescaped((*buf)[:0], in)
	return *buf, true
}

// hasBackslash is bytes.IndexByte(b, '\\') >= 0, eight bytes at a time
// (the classic test for a zero byte in a word, on b XOR backslashes): for
// the short strings read here (names, enum values) the call to IndexByte
// costs more than the search.
func hasBackslash(b []byte) bool {
	const ones, highs, backslashes = 0x0101010101010101, 0x8080808080808080, 0x5c5c5c5c5c5c5c5c
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b) ^ backslashes
		if (x-ones)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// next reads the next member name of the object being read (unescaped,
// valid until the next start), or its closing brace (done).
func (c *tokReader) next() (name []byte, done, ok bool) { return c.s.name() }

// members reads the members of the object whose opening brace was just
// read, through its closing brace. field reads the value of a name it
// knows and returns handled; a name it does not handle is declined when it
// equals one in fold under case folding (encoding/json would have matched
// it to a field) and is otherwise given to other (when non-nil) and
// skipped.
func (c *tokReader) members(fold [][]byte, field func(k []byte) (handled, ok bool), other func(k []byte)) bool {
	for {
		k, done, ok := c.next()
		if !ok || done {
			return ok
		}
		handled, ok := field(k)
		if !handled {
			if folds(k, fold) {
				return false
			}
			if other != nil {
				other(k)
			}
			ok = c.skip()
		}
		if !ok {
			return false
		}
	}
}

// skip reads past the next value.
func (c *tokReader) skip() bool {
	_, ok := c.s.value()
	return ok
}

// open consumes the opening delimiter of an object or array (delim '{' or
// '['). null is open false with ok true: the reference leaves the
// destination zero. Anything else is not ok.
func (c *tokReader) open(delim byte) (open, ok bool) { return c.s.open(delim) }

// elements reads an array (null: none), calling elem to read each element
// in turn, through its closing bracket.
func (c *tokReader) elements(elem func() bool) bool {
	if open, ok := c.open('['); !open || !ok {
		return ok
	}
	for {
		done, ok := c.s.elem()
		if !ok || done {
			return ok
		}
		if !elem() {
			return false
		}
	}
}

// str reads a string or null (isNull), unescaped into *buf when needed; the
// bytes are valid until the next read. Any other value is not ok.
func (c *tokReader) str(buf *[]byte) (s []byte, isNull, ok bool) {
	switch c.s.peek() {
	case '"':
		start, end, esc, ok := c.s.str()
		if !ok {
			return nil, false, false
		}
		s = c.s.buf[start:end]
		if esc {
			*buf = appendUnescaped((*buf)[:0], s)
			s = *buf
		}
		return s, false, true
	case 'n':
		return nil, true, c.s.literal("null")
	}
	return nil, false, false
}

// num reads a number or null (isNull) and returns the number's literal.
// Any other value is not ok.
func (c *tokReader) num() (v []byte, isNull, ok bool) {
	switch ch := c.s.peek(); {
	case ch == 'n':
		return nil, true, c.s.literal("null")
	case ch == '-' || ('0' <= ch && ch <= '9'):
		v, ok = c.s.number()
		return v, false, ok
	}
	return nil, false, false
}

// optString reads a string field: null leaves "". vals interns values.
func (c *tokReader) optString(dst *string, vals func([]byte) (string, bool)) bool {
	s, isNull, ok := c.str(&c.valBuf)
	if ok && !isNull {
		if vals != nil {
			if v, found := vals(s); found {
				*dst = v
				return true
			}
		}
		*dst = string(s)
	}
	return ok
}

// repeatedString reads a string field (null leaves "") whose value is
// usually the same from one answer to the next (the model, the system
// fingerprint): *last keeps the previous value, reused when equal instead
// of allocating a copy.
func (c *tokReader) repeatedString(dst, last *string) bool {
	s, isNull, ok := c.str(&c.valBuf)
	if ok && !isNull {
		if string(s) != *last {
			*last = string(s)
		}
		*dst = *last
	}
	return ok
}

// ptrString reads a *string field into set and dst: null leaves it nil.
func (c *tokReader) ptrString(set *bool, dst *[]byte) bool {
	s, isNull, ok := c.str(&c.valBuf)
	if !ok {
		return false
	}
	*set = !isNull
	*dst = append((*dst)[:0], s...)
	return true
}

// maxIntDigits bounds the integers read without overflow checks; a longer
// one (even one that would fit) makes the reader decline.
const maxIntDigits = 9 + 9*(strconv.IntSize/64)

// intField reads an int field: null leaves it 0; a number that is not an
// integer literal, or is too long, declines (encoding/json rejects the
// former and may reject the latter).
func (c *tokReader) intField(dst *int) bool {
	v, isNull, ok := c.num()
	if !ok || isNull {
		return ok
	}
	neg := v[0] == '-'
	if neg {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > maxIntDigits {
		return false
	}
	n := 0
	for _, d := range v {
		if d < '0' || d > '9' {
			return false
		}
		n = n*10 + int(d-'0')
	}
	if neg {
		n = -n
	}
	*dst = n
	return true
}

// boolField reads a *bool field: null leaves it unset.
func (c *tokReader) boolField(set, val *bool) bool {
	switch c.s.peek() {
	case 't':
		*set, *val = true, true
		return c.s.literal("true")
	case 'f':
		*set, *val = true, false
		return c.s.literal("false")
	case 'n':
		*set, *val = false, false
		return c.s.literal("null")
	}
	return false
}

// null reads a value that must be null.
func (c *tokReader) null() bool { return c.s.peek() == 'n' && c.s.literal("null") }

// floatField reads a *float64 field as encoding/json does (ParseFloat of
// the literal; out of range is an error): null leaves it unset.
func (c *tokReader) floatField(set *bool, val *float64) bool {
	v, isNull, ok := c.num()
	if !ok {
		return false
	}
	if isNull {
		*set, *val = false, 0
		return true
	}
	f, ok := parseFloat(v)
	if !ok {
		return false
	}
	*set, *val = true, f
	return true
}

// float64pow10 are the powers of ten a float64 holds exactly.
var float64pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat is strconv.ParseFloat(string(v), 64) of a JSON number literal,
// ok false where that errors (out of range). A plain decimal of at most 15
// digits (the simulator's and Azure's scores) is m / 10^k with m and 10^k
// exact float64s, whose quotient IEEE division rounds correctly, hence is
// the one value ParseFloat returns; anything else goes to ParseFloat.
func parseFloat(v []byte) (float64, bool) {
	if len(v) <= 17 {
		neg := v[0] == '-'
		b := v
		if neg {
			b = b[1:]
		}
		var m uint64
		digits, frac, dot := 0, 0, false
		plain := len(b) > 0
		for _, ch := range b {
			switch {
			case '0' <= ch && ch <= '9':
				m = m*10 + uint64(ch-'0')
				digits++
				if dot {
					frac++
				}
			case ch == '.' && !dot:
				dot = true
			default:
				plain = false
			}
			if !plain {
				break
			}
		}
		if plain && digits <= 15 {
			f := float64(m) / float64pow10[frac]
			if neg {
				f = -f
			}
			return f, true
		}
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// read reads the whole body. wantID says the id is needed (no request id
// header).
func (c *chatReader) read(body []byte, wantID bool) bool {
	c.start(body)
	c.id, c.model, c.fingerprint = "", "", ""
	c.tokensIn, c.tokensOut, c.nChoices, c.nPrompts = 0, 0, 0, 0
	// The rest of the state was cleared by release (or is new).
	if open, ok := c.open('{'); !open || !ok {
		return false
	}
	ok := c.members(foldTop, func(k []byte) (bool, bool) {
		switch string(k) {
		case "id":
			if wantID {
				return true, c.optString(&c.id, nil)
			}
			_, _, ok := c.str(&c.valBuf)
			return true, ok
		case "model":
			return true, c.repeatedString(&c.model, &c.lastModel)
		case "system_fingerprint":
			return true, c.repeatedString(&c.fingerprint, &c.lastFingerprint)
		case "choices":
			return true, c.readChoices()
		case "prompt_filter_results":
			return true, c.readPrompts()
		case "usage":
			return true, c.readUsage()
		case "created":
			// Read only to decline a value the reference notes as odd.
			var created int
			return true, c.intField(&created)
		case "object", "service_tier", "error":
			// Read by nobody on an answer (error only matters without
			// choices, which declines).
			return true, c.skip()
		}
		return false, true
	}, func(k []byte) {
		c.newKeys = append(c.newKeys, "key:"+wire.Truncate(sanitize(string(k)), 64))
	})
	if !ok {
		return false
	}
	// Exactly one value: anything after it is the reference's error.
	return c.s.end()
}

// readChoices reads the choices array, keeping in c.sel the choice
// classifyOK answers with: choices[0], unless a later one finished with
// content_filter and it did not.
func (c *chatReader) readChoices() bool {
	return c.elements(func() bool {
		c.cur.reset()
		if !c.readChoice(c.cur, c.nChoices == 0) {
			return false
		}
		if c.nChoices == 0 || (c.cur.finish == "content_filter" && c.sel.finish != "content_filter") {
			c.sel, c.cur = c.cur, c.sel
		}
		c.nChoices++
		return true
	})
}

// readChoice reads one choice; first records its unknown keys and its
// message's as chatNewKeys does for choices[0].
func (c *chatReader) readChoice(ch *fastChoice, first bool) bool {
	if open, ok := c.open('{'); !open || !ok {
		return ok // null: a zero choice
	}
	return c.members(foldChoice, func(k []byte) (bool, bool) {
		switch string(k) {
		case "index":
			var idx int
			return true, c.intField(&idx)
		case "finish_reason":
			return true, c.optString(&ch.finish, finishString)
		case "message":
			return true, c.readMessage(ch, first)
		case "text":
			return true, c.ptrString(&ch.hasText, &ch.text)
		case "content_filter_results":
			return true, c.readFilterSet(&ch.sigs, &ch.unk, false)
		case "logprobs", "stop_reason":
			return true, c.skip()
		case "error":
			return true, false // a failed choice: the reference reads it
		}
		return false, true
	}, func(k []byte) {
		if first {
			c.newKeys = append(c.newKeys, "choice_key:"+wire.Truncate(sanitize(string(k)), 64))
		}
	})
}

func (c *chatReader) readMessage(ch *fastChoice, first bool) bool {
	if open, ok := c.open('{'); !open || !ok {
		return ok
	}
	ch.hasMessage = true
	return c.members(foldMessage, func(k []byte) (bool, bool) {
		switch string(k) {
		case "content":
			return true, c.ptrString(&ch.hasContent, &ch.content)
		case "refusal":
			return true, c.ptrString(&ch.hasRefusal, &ch.refusal)
		case "role", "annotations", "audio", "tool_calls", "function_call", "reasoning_content":
			return true, c.skip()
		}
		return false, true
	}, func(k []byte) {
		if first {
			c.newKeys = append(c.newKeys, "message_key:"+wire.Truncate(sanitize(string(k)), 64))
		}
	})
}

func (c *chatReader) readPrompts() bool {
	return c.elements(func() bool {
		c.nPrompts++
		return c.readPrompt()
	})
}

// readPrompt reads one prompt_filter_results entry (null is a zero one).
func (c *chatReader) readPrompt() bool {
	if open, ok := c.open('{'); !open || !ok {
		return ok
	}
	return c.members(foldPrompt, func(k []byte) (bool, bool) {
		switch string(k) {
		case "prompt_index":
			var idx int
			return true, c.intField(&idx)
		case "content_filter_results":
			return true, c.readFilterSet(&c.prompt, &c.promptUnk, true)
		}
		return false, true
	}, nil)
}

func (c *chatReader) readUsage() bool {
	if open, ok := c.open('{'); !open || !ok {
		return ok
	}
	return c.members(foldUsage, func(k []byte) (bool, bool) {
		switch string(k) {
		case "prompt_tokens":
			return true, c.intField(&c.tokensIn)
		case "completion_tokens":
			return true, c.intField(&c.tokensOut)
		}
		return false, true
	}, nil)
}

// readFilterSet reads a content_filter_results object as readFilters does,
// appending to *sigs (sorted by key within this set) and *unk. prompt
// prefixes Raw with "prompt.".
func (c *tokReader) readFilterSet(sigs *[]probes.Signal, unk *[]string, prompt bool) bool {
	if open, ok := c.open('{'); !open || !ok {
		return ok
	}
	start := len(*sigs)
	sorted := true
	for {
		k, done, ok := c.next()
		if !ok {
			return false
		}
		if done {
			break
		}
		if string(k) == "error" {
			return false // the filter did not run: the slow path reads it
		}
		fn := lookupFilterName(k)
		if fn == nil {
			raw := string(k)
			cat, known := NormalizeAzure(raw)
			fn = &filterName{raw: raw, prompt: "prompt." + raw, cat: cat, known: known}
		}
		// The signal is read in place, at the end of *sigs.
		*sigs = append(*sigs, probes.Signal{})
		n := len(*sigs)
		s := &(*sigs)[n-1]
		sev, ok := c.readFilterEntry(s)
		if !ok {
			return false
		}
		if !fn.known {
			*unk = append(*unk, "category:"+sanitize(fn.raw))
		}
		if !knownSeverityString(sev) {
			*unk = append(*unk, "severity:"+sanitize(sev))
		}
		s.Category, s.Raw = fn.cat, fn.raw
		if prompt {
			s.Raw = fn.prompt
		}
		if n-1 > start && (*sigs)[n-2].Raw > s.Raw {
			sorted = false
		}
	}
	if !sorted {
		slices.SortFunc((*sigs)[start:], func(a, b probes.Signal) int { return strings.Compare(a.Raw, b.Raw) })
	}
	return true
}

// readFilterEntry reads one per-category FilterResult into *s, a zero
// Signal (all but Category and Raw), and returns its severity as sent. It
// declines an entry that is not an object or has a non-null error.
func (c *tokReader) readFilterEntry(s *probes.Signal) (severity string, ok bool) {
	if open, ok := c.open('{'); !open || !ok {
		return "", false
	}
	var filteredSet, filtered, detectedSet, detected bool
	ok = c.members(foldFilter, func(k []byte) (bool, bool) {
		switch string(k) {
		case "filtered":
			return true, c.boolField(&filteredSet, &filtered)
		case "detected":
			return true, c.boolField(&detectedSet, &detected)
		case "severity":
			return true, c.optString(&severity, severityString)
		case "score":
			return true, c.floatField(&s.HasScore, &s.Score)
		case "error":
			return true, c.null()
		}
		return false, true
	}, nil)
	if !ok {
		return "", false
	}
	s.Fired = filteredSet && filtered
	s.Severity = severity
	if severity == "" && detectedSet {
		if detected {
			s.Severity = "detected"
		} else {
			s.Severity = "not_detected"
		}
	}
	return severity, true
}
