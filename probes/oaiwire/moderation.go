package oaiwire

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// ModerationRequest is the canonical body of OpenAI's /moderations: one
// string input.
type ModerationRequest struct {
	Model string `json:"model"`
	Input string `json:"input"`
}

type moderationResponse struct {
	ID      wire.Text          `json:"id"`    // bookkeeping: lenient
	Model   wire.Text          `json:"model"` // bookkeeping: lenient
	Results []moderationResult `json:"results"`
}

type moderationResult struct {
	Flagged      *bool                      `json:"flagged"`
	Categories   map[string]json.RawMessage `json:"categories"`
	Scores       map[string]json.RawMessage `json:"category_scores"`
	AppliedTypes map[string]json.RawMessage `json:"category_applied_input_types"`
}

var (
	knownModerationKeys = wire.Set("id", "model", "results")
	knownResultKeys     = wire.Set("flagged", "categories", "category_scores", "category_applied_input_types")
)

// Normalizer maps a provider's raw category name to the normalized
// vocabulary; known is false for a name it has never seen.
type Normalizer func(raw string) (cat string, known bool)

// ClassifyModeration reads a moderation response ({id, model, results:
// [{flagged?, categories, category_scores, category_applied_input_types?}]})
// as OpenAI's /moderations and Mistral's /v1/moderations and
// /v1/chat/moderations return it. A moderation endpoint's flag is the
// classifier's verdict on the input: flagged (or, without a flagged field,
// any category true) is blocked_input at stage input, otherwise allowed.
//
// Every category becomes a Signal (Fired = categories[name] true, Score from
// category_scores with HasScore). category_applied_input_types is recorded in
// Severity as "applied:" plus the sorted input types joined with "+" (e.g.
// "applied:image+text"; "applied:none" for an empty list). With several
// results (several inputs) they are merged: fired if any fired, the highest
// score, and "results:N" is noted in Unknown. Unknown category names map to
// "other" with "category:NAME" in Unknown; non-numeric scores and new keys
// are noted there too. A category value that is not true or false (a
// string such as "true", a number, an object, null: "value:NAME" in
// Unknown), or a result with neither flagged nor a categories object,
// makes the answer unreadable: transient "malformed_response", never a
// verdict, whatever flagged says (the categories are half the verdict).
// Non-2xx answers are read by ClassifyError. A UTF-8 byte order mark
// before the body is skipped (wire.SkipBOM).
func ClassifyModeration(resp *probes.Response, now time.Time, norm Normalizer) probes.Result {
	if resp.Err != nil {
		return wire.Transport(resp)
	}
	resp = wire.SkipBOM(resp)
	if resp.Status < 200 || resp.Status >= 300 {
		return classifyError(resp, now)
	}
	r := probes.Result{RequestID: RequestID(resp.Header)}
	var mr moderationResponse
	if err := ParseLenient(resp.Body, &mr); err != nil {
		return malformed(resp, r)
	}
	if len(mr.Results) == 0 {
		if e, err := decodeError(resp.Body); err == nil && e.present {
			return classifyError(resp, now)
		}
		r.Reason = "no_results"
		if mr.ID.S == "" && mr.Model.S == "" {
			r.Reason = "malformed_response"
		}
		r.Class = probes.Transient
		return finish(r)
	}
	if r.RequestID == "" {
		r.RequestID = wire.Truncate(mr.ID.S, 200)
	}
	r.ModelID = wire.Truncate(mr.Model.S, 200)
	r.Unknown = append(r.Unknown, wire.OddFields("id", mr.ID.Odd, "model", mr.Model.Odd)...)
	r.Unknown = append(r.Unknown, moderationNewKeys(resp.Body)...)
	if resp.Truncated {
		r.Unknown = append(r.Unknown, "truncated_body")
	}
	if len(mr.Results) != 1 {
		r.Unknown = append(r.Unknown, "results:"+strconv.Itoa(len(mr.Results)))
	}

	type acc struct {
		fired, hasScore bool
		score           float64
		applied         map[string]bool
		hasApplied      bool
	}
	merged := map[string]*acc{}
	get := func(k string) *acc {
		a := merged[k]
		if a == nil {
			a = &acc{applied: map[string]bool{}}
			merged[k] = a
		}
		return a
	}
	flagKnown, flagged := false, false
	// unreadable: a category value that is not true or false (a string, a
	// number, an object, null), or a result with neither a flag nor a
	// categories object. What the classifier decided cannot be read from
	// such an answer, so it is no verdict (see below).
	unreadable := false
	for _, res := range mr.Results {
		if res.Flagged != nil {
			flagKnown = true
			flagged = flagged || *res.Flagged
		} else if res.Categories == nil {
			unreadable = true
		}
		for k, raw := range res.Categories {
			a := get(k)
			var b *bool
			if err := json.Unmarshal(raw, &b); err != nil || b == nil {
				r.Unknown = append(r.Unknown, "value:"+sanitize(k))
				unreadable = true
				continue
			}
			if *b {
				a.fired = true
			}
		}
		for k, raw := range res.Scores {
			a := get(k)
			var f *float64
			if err := json.Unmarshal(raw, &f); err != nil {
				r.Unknown = append(r.Unknown, "score:"+sanitize(k))
				continue
			}
			if f != nil && (!a.hasScore || *f > a.score) {
				a.score, a.hasScore = *f, true
			}
		}
		for k, raw := range res.AppliedTypes {
			a := get(k)
			var types []string
			if err := json.Unmarshal(raw, &types); err != nil {
				r.Unknown = append(r.Unknown, "applied:"+sanitize(k))
				continue
			}
			a.hasApplied = true
			for _, t := range types {
				a.applied[t] = true
			}
		}
	}
	names := make([]string, 0, len(merged))
	for k := range merged {
		names = append(names, k)
	}
	sort.Strings(names)
	anyFired := false
	for _, k := range names {
		a := merged[k]
		cat, known := norm(k)
		if !known {
			r.Unknown = append(r.Unknown, "category:"+sanitize(k))
		}
		s := probes.Signal{Category: cat, Raw: k, Score: a.score, HasScore: a.hasScore, Fired: a.fired}
		if a.hasApplied {
			types := make([]string, 0, len(a.applied))
			for t := range a.applied {
				types = append(types, t)
			}
			sort.Strings(types)
			if len(types) == 0 {
				s.Severity = "applied:none"
			} else {
				s.Severity = "applied:" + strings.Join(types, "+")
			}
		}
		anyFired = anyFired || a.fired
		r.Signals = append(r.Signals, s)
	}
	if len(r.Signals) == 0 && !flagKnown {
		// Results without a single category or flag say nothing.
		r.Class, r.Reason = probes.Transient, "malformed_response"
		return finish(r)
	}
	if unreadable {
		// Parser garbage never becomes a verdict: the answer reads as
		// malformed (transient), its signals and Unknown entries kept.
		r.Class, r.Reason = probes.Transient, "malformed_response"
		return finish(r)
	}
	block := anyFired
	if flagKnown {
		block = flagged
		if flagged != anyFired {
			r.Unknown = append(r.Unknown, "flagged_mismatch")
		}
	}
	switch {
	case block:
		r.Class, r.Stage = probes.BlockedInput, probes.StageInput
		r.Reason = "flagged"
		if !flagKnown {
			r.Reason = "category_true"
		}
	default:
		r.Class, r.Reason = probes.Allowed, "not_flagged"
	}
	return finish(r)
}

func moderationNewKeys(body []byte) []string {
	out := newKeys(body, knownModerationKeys, "key:")
	var top struct {
		Results []json.RawMessage `json:"results"`
	}
	if ParseLenient(body, &top) == nil {
		seen := map[string]bool{}
		for _, res := range top.Results {
			for _, k := range newKeys(res, knownResultKeys, "result_key:") {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	return out
}
