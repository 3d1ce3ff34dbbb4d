// Package diff turns stored verdicts on byte-identical requests into
// evidence that a provider changed: per-(target, probe) baselines keyed by
// request fingerprint, flip confirmation across runs or in-run samples,
// nondeterminism, score drift, events with kinds and directions, the
// per-run diff between two runs, and the model-upgrade comparison.
//
// Detection rules (docs/ARCHITECTURE.md lists them, docs/DESIGN-NOTES.md
// has the long form):
//   - A verdict is class + sorted normalized categories. It is compared only
//     with the baseline of the same target on the same request SHA-256; a
//     new fingerprint is an input change that resets the baseline.
//   - A differing verdict is a candidate, confirmed after confirm_runs
//     consecutive runs or at once when confirm_samples extra in-run samples
//     agree. A candidate that goes back, or samples that disagree, count
//     toward nondeterminism; a nondeterministic probe's flips never count as
//     policy evidence.
//   - Degraded or aborted target-runs confirm nothing and break no streak.
//   - Confirmed flips on one target within window_runs of an open event's
//     last confirmed flip join it (a flip back never extends the window);
//     the same probes flipping on another target of the same provider join
//     it as one provider-wide event. Flips back to the before-verdict revert
//     the event (whatever stages the probe went through in between), and a
//     row whose change no longer holds leaves it. Every target's reverts of
//     a run are applied before any target's new flips of that run open or
//     join an event, so the order targets are detected in changes nothing.
//   - A probe that leaves the corpus keeps its state: restored with the
//     same request bytes, it is compared with its old baseline.
//   - abuse_block is account-level, not a per-request verdict: it never
//     enters baselines (it pages on its own).
//
// Each run's detection reads and writes only current state per (target,
// probe): O(probes × targets), independent of history length.
package diff

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/driftprobe/driftprobe/probes"
)

// Verdict is a class and its sorted normalized categories.
type Verdict struct {
	Class      probes.Class `json:"verdict"`
	Categories []string     `json:"categories"`
}

// Key encodes v as "class|cat1,cat2".
func (v Verdict) Key() string { return string(v.Class) + "|" + strings.Join(v.Categories, ",") }

// String renders v for humans: "blocked_output[violence]".
func (v Verdict) String() string {
	if len(v.Categories) == 0 {
		return string(v.Class)
	}
	return string(v.Class) + "[" + strings.Join(v.Categories, ",") + "]"
}

// ParseKey decodes a Key.
func ParseKey(k string) Verdict {
	c, cats, _ := strings.Cut(k, "|")
	v := Verdict{Class: probes.Class(c), Categories: []string{}}
	if cats != "" {
		v.Categories = strings.Split(cats, ",")
	}
	return v
}

// VerdictOf returns the verdict of a result.
func VerdictOf(r probes.Result) Verdict {
	cats := probes.SortedUnique(r.Categories)
	if cats == nil {
		cats = []string{}
	}
	return Verdict{Class: r.Class, Categories: cats}
}

// Directions.
const (
	Tightened     = "tightened"
	Loosened      = "loosened"
	Recategorized = "recategorized"
	Mixed         = "mixed"
	Unchanged     = "unchanged"
)

// Kinds.
const (
	KindPolicy           = "policy_change"
	KindModel            = "model_change"
	KindScoreDrift       = "score_drift"
	KindNondeterminism   = "nondeterminism"
	StatusOpen           = "open"
	StatusReverted       = "reverted"
	ChangeOpened         = "opened"
	ChangeProbesAdded    = "probes_added"
	ChangeTargetJoined   = "target_joined"
	ChangeReverted       = "reverted"
	ChangePartialRevert  = "partially_reverted"
	ChangeKindEscalation = "kind_changed"
	// ChangeWithdrawn: probes of the event were marked nondeterministic
	// and left its evidence; others remain.
	ChangeWithdrawn = "withdrawn"
	// ChangeRetracted: every probe left of the event was marked
	// nondeterministic: it is closed (status reverted), though the
	// provider reverted nothing.
	ChangeRetracted = "retracted"
)

// direction of one flip.
func direction(before, after Verdict) string {
	b, a := before.Class.IsBlock(), after.Class.IsBlock()
	switch {
	case !b && a:
		return Tightened
	case b && !a:
		return Loosened
	case before.Key() != after.Key():
		return Recategorized
	}
	return Unchanged
}

// combine folds flip directions into an event direction: tightened or
// loosened when every flip that changed whether the probe is blocked went
// that way (stage or category moves among blocks ride along), mixed when
// both happened, recategorized when only stages or categories moved.
func combine(dirs []string) string {
	set := map[string]bool{}
	for _, d := range dirs {
		if d != Unchanged {
			set[d] = true
		}
	}
	switch {
	case set[Tightened] && set[Loosened]:
		return Mixed
	case set[Tightened]:
		return Tightened
	case set[Loosened]:
		return Loosened
	case set[Recategorized]:
		return Recategorized
	}
	return Unchanged
}

// scoreString encodes the scored signals of r canonically:
// "key=score;..." sorted, each key (the provider's raw name) escaped by
// keyEscaper so that '=' and ';' in it cannot split it.
func scoreString(r probes.Result) string {
	var parts []string
	for _, s := range r.Signals {
		if s.HasScore {
			parts = append(parts, keyEscaper.Replace(s.Raw)+"="+trimFloat(s.Score))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

func trimFloat(f float64) string {
	s := strings.TrimRight(strings.TrimRight(formatFloat(f), "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}

func parseScores(s string) map[string]float64 {
	out := map[string]float64{}
	if s == "" {
		return out
	}
	for _, p := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(p, "=")
		if ok {
			out[k] = parseFloat(v)
		}
	}
	return out
}

// maxScoreDelta is the largest absolute score move over raw names present
// in both encodings.
func maxScoreDelta(a, b string) float64 {
	if a == b {
		return 0
	}
	am, bm := parseScores(a), parseScores(b)
	var max float64
	for k, av := range am {
		if bv, ok := bm[k]; ok {
			d := av - bv
			if d < 0 {
				d = -d
			}
			if d > max {
				max = d
			}
		}
	}
	return max
}

// keyEscaper and keyUnescaper escape the score-string separators in keys
// (keys without them, every key providers send today, are unchanged).
var (
	keyEscaper   = strings.NewReplacer("%", "%25", "=", "%3D", ";", "%3B")
	keyUnescaper = strings.NewReplacer("%25", "%", "%3D", "=", "%3B", ";")
)

// ScoreMove is one score a score-drift event saw move on a probe.
type ScoreMove struct {
	Key    string  `json:"key"` // the provider's score key, as the signal names it
	Before float64 `json:"before"`
	After  float64 `json:"after"`
}

// scoreMoves encodes the keys of two score strings (scoreString) whose
// values differ by more than tol, largest move first:
// "key=before->after;...".
func scoreMoves(before, after string, tol float64) string {
	bm, am := parseScores(before), parseScores(after)
	var moves []ScoreMove
	for k, bv := range bm {
		if av, ok := am[k]; ok && math.Abs(av-bv) > tol {
			moves = append(moves, ScoreMove{Key: k, Before: bv, After: av})
		}
	}
	sort.Slice(moves, func(i, j int) bool {
		di, dj := math.Abs(moves[i].After-moves[i].Before), math.Abs(moves[j].After-moves[j].Before)
		if di != dj {
			return di > dj
		}
		return moves[i].Key < moves[j].Key
	})
	parts := make([]string, len(moves))
	for i, m := range moves {
		parts[i] = m.Key + "=" + trimFloat(m.Before) + "->" + trimFloat(m.After)
	}
	return strings.Join(parts, ";")
}

// parseScoreMoves reads scoreMoves' encoding; malformed parts are skipped.
func parseScoreMoves(s string) []ScoreMove {
	if s == "" {
		return nil
	}
	var out []ScoreMove
	for _, p := range strings.Split(s, ";") {
		i := strings.LastIndexByte(p, '=')
		if i < 0 {
			continue
		}
		b, a, ok := strings.Cut(p[i+1:], "->")
		if !ok {
			continue
		}
		bv, err1 := strconv.ParseFloat(b, 64)
		av, err2 := strconv.ParseFloat(a, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, ScoreMove{Key: keyUnescaper.Replace(p[:i]), Before: bv, After: av})
	}
	return out
}
