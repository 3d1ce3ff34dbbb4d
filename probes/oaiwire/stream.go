package oaiwire

// The reader of a chat-completions answer sent as a server-sent event
// stream. driftprobe asks for "stream": false (by leaving it out), but a
// gateway in front of a provider (LiteLLM, proxies) may stream regardless.
// A complete stream (a finish reason, then "[DONE]") is read as the
// non-streamed answer it describes; a cut or failed one is never a
// verdict, except that a choice that finished with content_filter is a
// block wherever the stream ends (never re-sent), as is a cut body that
// still spells "finish_reason":"content_filter" (the rule the
// non-streamed reader has too).
//
// Only classifyChatSlow calls it: the fast reader declines every body
// that does not open with '{', which no stream does, so the common
// non-streamed answer pays nothing for it.

import (
	"bytes"
	"encoding/json"
	"mime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// StreamMarker is the Result.Unknown entry of an answer read from an event
// stream, the same one the anthropic adapter records.
const StreamMarker = "response:event_stream"

// Known keys of a stream chunk beyond those of a non-streamed answer; other
// keys are recorded as "key:NAME", "choice_key:NAME" (choices[0] of the
// rebuilt answer) and "message_key:NAME" (its deltas), as chatNewKeys does.
var (
	// obfuscation: OpenAI's random padding of every chunk
	// (stream_options.include_obfuscation, on by default).
	knownStreamKeys = wire.Set("obfuscation")
	// delta: the chunk's part of the message; content_filter_offsets and
	// content_filter_raw: Azure's asynchronous filter annotations.
	knownStreamChoiceKeys = wire.Set("delta", "content_filter_offsets", "content_filter_raw")
)

// isChatStream reports whether a 2xx answer is an event stream to read
// with classifyChatStream: declared text/event-stream and opening like one
// (an SSE field line or a comment), or, with no Content-Type at all (replay
// reads stored bodies without headers), opening with a "data:" line after
// blank and comment lines. A body that opens with '{' is never a stream,
// whatever its Content-Type says: it is read as JSON.
func isChatStream(resp *probes.Response) bool {
	body := bytes.TrimPrefix(resp.Body, []byte("\xef\xbb\xbf"))
	if ct := strings.TrimSpace(resp.Header.Get("Content-Type")); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "text/event-stream" {
			return false
		}
		t := bytes.TrimLeft(body, " \t\r\n")
		for _, p := range []string{"data:", "event:", "id:", "retry:", ":"} {
			if bytes.HasPrefix(t, []byte(p)) {
				return true
			}
		}
		return false
	}
	for {
		body = bytes.TrimLeft(body, " \t\r\n")
		if len(body) == 0 || body[0] != ':' {
			return bytes.HasPrefix(body, []byte("data:"))
		}
		i := bytes.IndexAny(body, "\r\n")
		if i < 0 {
			return false
		}
		body = body[i:]
	}
}

// sseData is the data of one event; unterminated says the body ended
// before the blank line that ends it.
type sseData struct {
	data         []byte
	unterminated bool
}

// sseDataEvents splits an event stream into the data of its events as the
// SSE specification reads them: lines end with CRLF, LF or CR; an event
// ends at a blank line; lines opening with ':' are comments; a field's
// value loses one leading space; data lines are joined with "\n"; fields
// other than data (event, id, retry) are ignored, and so is an event
// without data. A last event the body ends inside is kept, marked
// unterminated (the specification drops it; here it may still be a
// complete chunk or "[DONE]" of a body stored without its last line end,
// and is otherwise the cut tail).
func sseDataEvents(body []byte) []sseData {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	var out []sseData
	var cur []byte
	has := false
	for len(body) > 0 {
		i := bytes.IndexAny(body, "\r\n")
		line, ended := body, false
		if i >= 0 {
			line, ended = body[:i], true
			if body[i] == '\r' && i+1 < len(body) && body[i+1] == '\n' {
				i++
			}
			body = body[i+1:]
		} else {
			body = nil
		}
		if len(line) == 0 {
			if has {
				out = append(out, sseData{data: cur})
			}
			cur, has = nil, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		if string(field) != "data" {
			continue
		}
		if has {
			cur = append(cur, '\n')
		}
		cur, has = append(cur, value...), true
		if !ended {
			break
		}
	}
	if has {
		out = append(out, sseData{data: cur, unterminated: true})
	}
	return out
}

// streamChoice is one choice of a stream, gathered over its chunks.
type streamChoice struct {
	index                  json.RawMessage // as first sent (nil: absent or null, read as 0)
	finish                 string
	content, refusal, text strings.Builder
	hasMessage             bool // a delta (or message) object was sent
	hasContent, hasRefusal bool // a string content / refusal delta was sent
	hasText                bool
	filters                filterSet
	keys, messageKeys      map[string]bool // unknown choice and delta keys
	// err is the choice's error member (OpenRouter's failed generation,
	// sent on the chunk that ends it): a failure, once sent, stays.
	err *choiceError
}

// streamPrompt is one prompt_filter_results entry, gathered over chunks.
type streamPrompt struct {
	index   json.RawMessage
	filters filterSet
}

// chatStream is what a stream says, gathered by readChatStream.
type chatStream struct {
	top      map[string]json.RawMessage // bookkeeping fields (id, model, ...): the last non-empty value
	keys     map[string]bool            // unknown top-level keys
	choices  []*streamChoice            // in the order first sent
	prompts  []*streamPrompt
	byIndex  map[string]*streamChoice // choices by indexKey
	byPrompt map[string]*streamPrompt

	done     bool   // "[DONE]" was read
	bad      bool   // an event that is not a chunk (not a JSON object, or a verdict field of the wrong type)
	cut      []byte // the data of a last, unterminated event that does not parse
	errEvent []byte // the first chunk that carries only an error (reading stops there)
}

// readChatStream reads the events of body until "[DONE]" or an error
// chunk. Each chunk must be a JSON object whose verdict fields have the
// types a non-streamed answer's have; a chunk that is not marks the stream
// bad (a last, unterminated event that does not parse is the cut tail
// instead). Per choice (grouped by index), delta.content, delta.refusal
// and text are concatenated; finish_reason is taken from the chunks that
// carry one (a later one replaces an earlier one, except that
// content_filter is never replaced); content_filter_results are merged
// (mergeFilters). prompt_filter_results entries are merged per
// prompt_index the same way. id, created, model, system_fingerprint,
// usage and service_tier are taken from the last chunk that carries a
// value (null, "" and 0 are no value: Azure's annotation chunks send
// "id":"", "model":"", "created":0).
func readChatStream(body []byte) *chatStream {
	s := &chatStream{top: map[string]json.RawMessage{}, keys: map[string]bool{}, byIndex: map[string]*streamChoice{}, byPrompt: map[string]*streamPrompt{}}
	for _, ev := range sseDataEvents(body) {
		d := bytes.TrimSpace(ev.data)
		if len(d) == 0 {
			continue
		}
		if string(d) == "[DONE]" {
			s.done = true
			return s // the end: what follows is not read
		}
		var chunk map[string]json.RawMessage
		if d[0] != '{' || json.Unmarshal(d, &chunk) != nil || chunk == nil {
			if ev.unterminated { // only the last event can be
				s.cut = d
			} else {
				s.bad = true
			}
			continue
		}
		if isErrorChunk(chunk) {
			s.errEvent = d
			return s
		}
		if !s.add(chunk) {
			s.bad = true
		}
	}
	return s
}

// isErrorChunk reports whether a chunk carries an error and no answer
// (OpenAI's and LiteLLM's mid-stream error: {"error":{...}}).
func isErrorChunk(chunk map[string]json.RawMessage) bool {
	e := bytes.TrimSpace(chunk["error"])
	if len(e) == 0 || string(e) == "null" {
		return false
	}
	var choices []json.RawMessage
	_ = json.Unmarshal(chunk["choices"], &choices)
	var prompts []json.RawMessage
	_ = json.Unmarshal(chunk["prompt_filter_results"], &prompts)
	return len(choices) == 0 && len(prompts) == 0
}

// streamBookkeeping are the top-level fields taken from the last chunk
// that carries a value.
var streamBookkeeping = wire.Set("id", "created", "model", "system_fingerprint", "usage", "service_tier")

// add merges one chunk into s. It reports false when a verdict field has
// the wrong type (then nothing of the chunk is kept).
func (s *chatStream) add(chunk map[string]json.RawMessage) bool {
	var choices, prompts []json.RawMessage
	if !arrayOrNull(chunk["choices"], &choices) || !arrayOrNull(chunk["prompt_filter_results"], &prompts) {
		return false
	}
	type choiceChunk struct {
		raw             map[string]json.RawMessage
		delta           []map[string]json.RawMessage
		finish          *string
		text            *string
		content, refuse []*string
		filters         filterSet
	}
	// Check the whole chunk before keeping any of it.
	var cs []choiceChunk
	for _, raw := range choices {
		var c choiceChunk
		if !objectOrNull(raw, &c.raw) {
			return false
		}
		if c.raw == nil {
			continue // a null choice says nothing
		}
		if !stringOrNull(c.raw["finish_reason"], &c.finish) || !stringOrNull(c.raw["text"], &c.text) ||
			!objectOrNull(c.raw["content_filter_results"], (*map[string]json.RawMessage)(&c.filters)) {
			return false
		}
		for _, k := range []string{"delta", "message"} {
			var m map[string]json.RawMessage
			if !objectOrNull(c.raw[k], &m) {
				return false
			}
			if m == nil {
				continue
			}
			var content, refusal *string
			if !stringOrNull(m["content"], &content) || !stringOrNull(m["refusal"], &refusal) {
				return false
			}
			c.delta = append(c.delta, m)
			c.content = append(c.content, content)
			c.refuse = append(c.refuse, refusal)
		}
		cs = append(cs, c)
	}
	var ps []streamPrompt
	for _, raw := range prompts {
		var m map[string]json.RawMessage
		if !objectOrNull(raw, &m) {
			return false
		}
		if m == nil {
			continue
		}
		p := streamPrompt{index: nonNull(m["prompt_index"])}
		if !objectOrNull(m["content_filter_results"], (*map[string]json.RawMessage)(&p.filters)) {
			return false
		}
		ps = append(ps, p)
	}

	for k, v := range chunk {
		switch {
		case streamBookkeeping[k]:
			if !emptyValue(v) || s.top[k] == nil {
				s.top[k] = v
			}
		case !knownChatKeys[k] && !knownStreamKeys[k]:
			s.keys[k] = true
		}
	}
	for _, c := range cs {
		sc := s.choice(nonNull(c.raw["index"]))
		if c.finish != nil && *c.finish != "" && sc.finish != "content_filter" {
			sc.finish = *c.finish
		}
		if c.text != nil {
			sc.hasText = true
			sc.text.WriteString(*c.text)
		}
		if v := nonNull(c.raw["error"]); v != nil && (sc.err == nil || !sc.err.Failed) {
			sc.err = &choiceError{}
			_ = sc.err.UnmarshalJSON(v) // never fails
		}
		sc.filters = mergeFilters(sc.filters, c.filters)
		for k := range c.raw {
			if !knownChoiceKeys[k] && !knownStreamChoiceKeys[k] {
				sc.keys[k] = true
			}
		}
		for i, m := range c.delta {
			sc.hasMessage = true
			if p := c.content[i]; p != nil {
				sc.hasContent = true
				sc.content.WriteString(*p)
			}
			if p := c.refuse[i]; p != nil {
				sc.hasRefusal = true
				sc.refusal.WriteString(*p)
			}
			for k := range m {
				if !knownMessageKeys[k] {
					sc.messageKeys[k] = true
				}
			}
		}
	}
	for _, p := range ps {
		sp := s.prompt(p.index)
		sp.filters = mergeFilters(sp.filters, p.filters)
	}
	return true
}

// choice returns the choice of the given index (nil: 0), adding it.
func (s *chatStream) choice(index json.RawMessage) *streamChoice {
	key := indexKey(index)
	if c := s.byIndex[key]; c != nil {
		return c
	}
	c := &streamChoice{index: index, keys: map[string]bool{}, messageKeys: map[string]bool{}}
	s.choices = append(s.choices, c)
	s.byIndex[key] = c
	return c
}

// prompt returns the prompt_filter_results entry of the given
// prompt_index (nil: 0), adding it.
func (s *chatStream) prompt(index json.RawMessage) *streamPrompt {
	key := indexKey(index)
	if p := s.byPrompt[key]; p != nil {
		return p
	}
	p := &streamPrompt{index: index}
	s.prompts = append(s.prompts, p)
	s.byPrompt[key] = p
	return p
}

// indexKey is the grouping key of an index value: absent and null are 0.
func indexKey(raw json.RawMessage) string {
	if raw == nil {
		return "0"
	}
	return string(raw)
}

// nonNull returns raw trimmed, or nil when it is absent or null.
func nonNull(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// emptyValue reports whether a bookkeeping value carries nothing: null,
// "" or 0.
func emptyValue(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", `""`, "0":
		return true
	}
	return false
}

// arrayOrNull decodes an array (or absent/null: none); false for another
// type.
func arrayOrNull(raw json.RawMessage, dst *[]json.RawMessage) bool {
	raw = nonNull(raw)
	if raw == nil {
		return true
	}
	return raw[0] == '[' && json.Unmarshal(raw, dst) == nil
}

// objectOrNull decodes an object (or absent/null: nil); false for another
// type.
func objectOrNull(raw json.RawMessage, dst *map[string]json.RawMessage) bool {
	raw = nonNull(raw)
	if raw == nil {
		return true
	}
	return raw[0] == '{' && json.Unmarshal(raw, dst) == nil
}

// stringOrNull decodes a string (or absent/null: nil); false for another
// type.
func stringOrNull(raw json.RawMessage, dst **string) bool {
	raw = nonNull(raw)
	if raw == nil {
		return true
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return false
	}
	*dst = &s
	return true
}

// mergeFilters merges the content_filter_results of a later chunk into
// those gathered so far. Per category the stronger entry is kept
// (filterRank: one that fired or says its filter did not run, then one
// that detected something, then the higher severity, then the higher
// score), the later one on a tie. Azure's asynchronous filter annotates
// the stream in ranges, so a category flagged in one range stays flagged
// and a set-level "error" (the filter did not run on a range) stays too.
func mergeFilters(into, from filterSet) filterSet {
	if len(from) == 0 {
		return into
	}
	if into == nil {
		into = filterSet{}
	}
	for k, v := range from {
		if old, ok := into[k]; ok && filterRank(k, old).beats(filterRank(k, v)) {
			continue
		}
		into[k] = v
	}
	return into
}

// rank orders filter entries for mergeFilters.
type rank struct {
	fired, failed, detected bool
	severity                int
	score                   float64
}

func (a rank) beats(b rank) bool {
	if a.fired != b.fired {
		return a.fired
	}
	if a.failed != b.failed {
		return a.failed
	}
	if a.detected != b.detected {
		return a.detected
	}
	if a.severity != b.severity {
		return a.severity > b.severity
	}
	return a.score > b.score
}

var severityRank = map[string]int{"safe": 1, "low": 2, "medium": 3, "high": 4}

// filterRank is the rank of one entry of a filter set (its key k: a
// set-level "error" is a failed filter).
func filterRank(k string, raw json.RawMessage) rank {
	if k == "error" {
		return rank{failed: true}
	}
	var fr FilterResult
	if json.Unmarshal(raw, &fr) != nil {
		return rank{severity: -1}
	}
	r := rank{severity: severityRank[fr.Severity], failed: fr.Error != nil}
	r.fired = fr.Filtered != nil && *fr.Filtered
	r.detected = fr.Detected != nil && *fr.Detected
	if fr.Score != nil {
		r.score = *fr.Score
	}
	return r
}

// sorted returns the choices in index order: integer indexes ascending,
// then any other in the order first sent.
func (s *chatStream) sorted() []*streamChoice {
	out := append([]*streamChoice(nil), s.choices...)
	num := func(c *streamChoice) (int, bool) {
		n, err := strconv.Atoi(indexKey(c.index))
		return n, err == nil
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, aok := num(out[i])
		b, bok := num(out[j])
		if aok != bok {
			return aok
		}
		return aok && a < b
	})
	return out
}

// filtered reports whether a choice finished with content_filter.
func (s *chatStream) filtered() bool {
	for _, c := range s.choices {
		if c.finish == "content_filter" {
			return true
		}
	}
	return false
}

// promptFired reports whether a prompt_filter_results entry of the
// stream has a filter that fired.
func (s *chatStream) promptFired() bool {
	for _, p := range s.prompts {
		var tmp probes.Result
		readFilters(p.filters, &tmp)
		if anyFired(tmp.Signals) {
			return true
		}
	}
	return false
}

// complete reports whether the stream ended ("[DONE]") with an answer
// (the choice of the lowest index) that has a finish reason. A finish
// reason alone is not enough: a later chunk may still finish a choice
// with content_filter (Azure's asynchronous filter sends it after the
// model's stop; with n > 1 another choice may), so a stream cut after a
// stop could read as allowed where the whole stream is a block. Without a
// finish reason, "[DONE]" is not enough either: some gateways end a
// failed stream with it.
func (s *chatStream) complete() bool {
	cs := s.sorted()
	return s.done && len(cs) > 0 && cs[0].finish != ""
}

// response is the non-streamed answer the stream describes, and the
// Unknown entries of its unknown keys.
func (s *chatStream) response() (chatResponse, []string) {
	var cr chatResponse
	for k, dst := range map[string]json.Unmarshaler{"id": &cr.ID, "created": &cr.Created, "model": &cr.Model, "system_fingerprint": &cr.SystemFingerprint, "usage": &cr.Usage} {
		if v := s.top[k]; v != nil {
			_ = dst.UnmarshalJSON(v) // never fails
		}
	}
	cs := s.sorted()
	for _, c := range cs {
		cc := chatChoice{FinishReason: c.finish, ContentFilterResults: c.filters, Error: c.err}
		if c.index != nil {
			_ = cc.Index.UnmarshalJSON(c.index)
		}
		if c.hasMessage {
			cc.Message = &chatMessage{}
			if c.hasContent {
				v := c.content.String()
				cc.Message.Content = &v
			}
			if c.hasRefusal {
				v := c.refusal.String()
				cc.Message.Refusal = &v
			}
		}
		if c.hasText {
			v := c.text.String()
			cc.Text = &v
		}
		cr.Choices = append(cr.Choices, cc)
	}
	for _, p := range s.prompts {
		var pr struct {
			PromptIndex          wire.Count `json:"prompt_index"`
			ContentFilterResults filterSet  `json:"content_filter_results"`
		}
		if p.index != nil {
			_ = pr.PromptIndex.UnmarshalJSON(p.index)
		}
		pr.ContentFilterResults = p.filters
		cr.PromptFilterResults = append(cr.PromptFilterResults, pr)
	}
	var unk []string
	add := func(keys map[string]bool, prefix string) {
		for k := range keys {
			unk = append(unk, prefix+wire.Truncate(sanitize(k), 64))
		}
	}
	add(s.keys, "key:")
	if len(cs) > 0 {
		add(cs[0].keys, "choice_key:")
		add(cs[0].messageKeys, "message_key:")
	}
	return cr, unk
}

// classifyChatStream classifies a 2xx chat-completions event stream
// (isChatStream). A choice that finished with content_filter is
// blocked_output, whatever else the stream holds. Otherwise: a cut stream
// (Truncated) whose cut tail spells "finish_reason":"content_filter" is
// blocked_output, as a cut non-streamed body is (malformed); an error
// chunk is read by ClassifyError (a 2xx carrying an error); an event that
// is not a chunk is transient "malformed_response"; a stream that is not
// complete (no "[DONE]", or an answer without a finish reason) is
// transient "incomplete_stream", except that one that ended ("[DONE]")
// with no choices and a prompt filter that fired is read by classifyOK
// (blocked_input, as the non-streamed answer); a complete stream is read
// by classifyOK as the non-streamed answer it describes. A Truncated
// stream that is no verdict is transient
// "truncated_response". Every result carries StreamMarker in Unknown (and
// "truncated_body" when Truncated).
func classifyChatStream(resp *probes.Response, now time.Time) probes.Result {
	s := readChatStream(resp.Body)
	r := probes.Result{RequestID: RequestID(resp.Header)}
	switch {
	case s.filtered():
		return s.classify(resp, r)
	case resp.Truncated && s.cut != nil && finishContentFilter.Match(s.cut):
		r.Class, r.Stage, r.Reason = probes.BlockedOutput, probes.StageOutput, "content_filter"
	case s.errEvent != nil:
		return streamFinish(resp, classifyError(&probes.Response{Status: resp.Status, Header: resp.Header, Body: s.errEvent}, now))
	case s.bad:
		r.Class, r.Reason = probes.Transient, "malformed_response"
	case s.done && len(s.choices) == 0 && s.promptFired():
		// The non-streamed answer it describes: no choices, the prompt
		// filter fired (blocked_input, never retried; classifyOK).
		return s.classify(resp, r)
	case !s.complete():
		r.Class, r.Reason = probes.Transient, "incomplete_stream"
	default:
		return s.classify(resp, r)
	}
	if resp.Truncated && r.Class == probes.Transient {
		r.Reason = "truncated_response"
	}
	return streamFinish(resp, r)
}

// classify reads the answer the stream describes, as classifyChatSlow
// reads a non-streamed one.
func (s *chatStream) classify(resp *probes.Response, r probes.Result) probes.Result {
	cr, unk := s.response()
	if r.RequestID == "" {
		r.RequestID = wire.Truncate(cr.ID.S, 200)
	}
	r = classifyOK(&cr, r)
	r.Unknown = append(r.Unknown, unk...)
	return streamFinish(resp, r)
}

// streamFinish adds the stream's Unknown entries and finishes r.
func streamFinish(resp *probes.Response, r probes.Result) probes.Result {
	r.Unknown = append(r.Unknown, StreamMarker)
	if resp.Truncated {
		r.Unknown = append(r.Unknown, "truncated_body")
	}
	return finish(r)
}
