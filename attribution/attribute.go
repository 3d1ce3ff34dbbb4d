package attribution

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/storage"
)

// Attributions.
const (
	Provider     = "provider"
	Traffic      = "traffic"
	Inconclusive = "inconclusive"
)

// Run-target statuses and event kinds and directions, as driftprobe's
// storage and diff packages write them.
const (
	StatusComplete = storage.TargetComplete

	KindScoreDrift     = diff.KindScoreDrift
	KindNondeterminism = diff.KindNondeterminism

	Tightened = diff.Tightened
	Loosened  = diff.Loosened
	Mixed     = diff.Mixed
)

// Run is one run of the probe history.
type Run struct {
	ID        int64
	StartedAt time.Time
	// Aborted runs confirm nothing, whatever their targets' statuses.
	Aborted bool
	// Targets maps each target the run probed to its run-target status
	// (complete, degraded or aborted).
	Targets map[string]string
}

// Verdict is one side of a probe flip.
type Verdict struct {
	Blocked    bool     // the class is a block (input, output, refusal)
	Categories []string // normalized categories the provider reported
}

// Flip is one flipped probe of an event, on one target.
type Flip struct {
	Target        string
	ProbeID       string
	Tags          []string // the probe's corpus tags
	Before, After Verdict
	FirstRun      int64 // the run in which the new verdict was first seen
	// LastRunBefore is the last run before FirstRun in which the probe, on
	// the same request bytes and at the endpoint of the flip, answered its
	// Before verdict (diff.EventProbe.LastRunBefore): the flip's window
	// opens there. 0 when unknown.
	LastRunBefore int64
	// BeforeRun is the run of the answer the probe's baseline rests on
	// (diff.EventProbe.BeforeRun): where the window opens when
	// LastRunBefore is unknown. 0 when unknown.
	BeforeRun   int64
	RevertedRun int64 // the run in which it left the event (0: it did not)
	// Withdrawn: detection withdrew the flip in RevertedRun because the
	// probe was marked nondeterministic. A withdrawn flip is no evidence
	// of anything: neither the flip nor its withdrawal counts.
	Withdrawn bool
	// MovedOn: the probe left the event in RevertedRun without flipping
	// back to Before (its verdict moved on). The flip still counts for its
	// own window; leaving is no flip back (the move on is a flip of its
	// own, recorded by the event that holds it).
	MovedOn bool
	// ScoreDirs, for a score_drift flip (Before and After are the same
	// verdict), maps each normalized category whose scores moved to the
	// way they moved: Up, Down, or "" when they moved both ways. Nil when
	// unknown: the event's direction stands for every category.
	ScoreDirs map[string]string
}

// Event is a confirmed change event of the probe history.
type Event struct {
	ID            int64
	Kind          string // policy_change, model_change, score_drift, nondeterminism
	Direction     string // tightened, loosened, recategorized, mixed
	Targets       []string
	NewCategories []string
	Flips         []Flip
}

// History is the probe history attribution reads.
type History struct {
	Runs   []Run   // ascending id (= start order)
	Events []Event // ascending id
	// Coverage counts the corpus probes tagged with each category.
	Coverage map[string]int
	// CorpusProbes is the number of probes in the corpus: the control
	// group of the empty category (all blocks).
	CorpusProbes int
	// ConfirmRuns is the config's confirm_runs (default 2).
	ConfirmRuns int
	// Verdicts holds, per target and run id, the verdicts the target's
	// probes answered in that run (LoadVerdicts reads them): what decides
	// whether the probes held still around a change. Nil when not read:
	// then only events and nondeterminism marks are checked, and a
	// traffic reason says the verdicts were not read. AttributeStore
	// ignores it and reads what a change needs from its store instead.
	Verdicts map[string]map[int64][]ProbeVerdict
	// ProbeTags maps probe ids to their corpus tags (LoadVerdicts fills
	// it): which probes of Verdicts belong to a category. AttributeStore
	// ignores it too.
	ProbeTags map[string][]string
}

// Options tune Attribute.
type Options struct {
	Detect DetectOptions
	// Tolerance widens the flip window on each side; 0: twice the series'
	// step (2h when the series has a single point).
	Tolerance time.Duration
}

// DefaultTolerance is the tolerance for a series without a step.
const DefaultTolerance = 2 * time.Hour

// Report is the outcome of an attribution: the JSON contract of
// `driftprobe attribute --json`.
type Report struct {
	Series    int               `json:"series"`
	Changes   []ChangeReport    `json:"changes"`
	Uncovered []UncoveredReport `json:"uncovered_categories"`
	Skipped   []SkippedSeries   `json:"skipped_series"`
	Warnings  []string          `json:"warnings"`
}

// ChangeReport is one production change and its attribution.
type ChangeReport struct {
	Target   string    `json:"target"`
	Category string    `json:"category"` // "" = all blocks on the target
	ChangeAt time.Time `json:"change_at"`
	// ChangeFrom is the earliest time the change can have happened: the
	// end of the last interval before the split. It equals ChangeAt unless
	// production data is missing before ChangeAt (a gap), in which case the
	// change happened somewhere in between. Zero (omitted) in reports
	// stored before it existed.
	ChangeFrom time.Time `json:"change_from,omitzero"`
	// BeforeRate and AfterRate are blocked/total with totals
	// (RateUnit "share"), else mean blocked per interval
	// (RateUnit "blocked_per_interval").
	BeforeRate  float64  `json:"before_rate"`
	AfterRate   float64  `json:"after_rate"`
	RateUnit    string   `json:"rate_unit"`
	Direction   string   `json:"direction"`
	Z           *float64 `json:"z,omitempty"`
	Attribution string   `json:"attribution"`
	Reason      string   `json:"reason"`
	Events      []int64  `json:"events"`
	RunsBefore  int      `json:"runs_before"`
	RunsAfter   int      `json:"runs_after"`
	Tolerance   string   `json:"tolerance"`
}

// UncoveredReport is a category production blocks on a target that no
// corpus probe is tagged with: a gap in the control group.
type UncoveredReport struct {
	Target   string  `json:"target"`
	Category string  `json:"category"`
	Blocked  float64 `json:"blocked"`
}

// Attribute detects the change of every series of p and attributes it
// against h, with the per-run verdicts h holds (h.Verdicts; nil: not
// read). The report's lists are never nil and are ordered by target, then
// category.
func Attribute(p *Production, h *History, o Options) *Report {
	r, _ := attribute(p, newAttributor(h, nil), o) // no loader: no error
	return r
}

// AttributeStore is Attribute with the per-run verdicts (and the probe
// tags that place them in a category) read from st, and only when a
// change needs them: when its attribution reaches the held-still check
// (no event in its window, the category covered, enough complete runs on
// both sides; see attributor.stillness). It then reads the verdicts of
// the change's target in the compared runs — the target's complete runs
// that started within the series' span, which the rule checks pairwise
// end to end, so no smaller set gives the same answer — each run once per
// call (a target's verdicts are kept while its series are attributed:
// Production.Series is sorted by target). A report without such a change
// reads nothing from st. The report is Attribute's after LoadVerdicts(st,
// corpusTags) on h, to the byte; h.Verdicts and h.ProbeTags are ignored
// and h is not modified. An error is a failed read of st, wrapped.
func AttributeStore(ctx context.Context, st VerdictStore, p *Production, h *History, corpusTags map[string][]string, o Options) (*Report, error) {
	return attribute(p, newAttributor(h, newStoreVerdicts(ctx, st, corpusTags)), o)
}

func attribute(p *Production, a *attributor, o Options) (*Report, error) {
	h := a.h
	r := &Report{Series: len(p.Series), Changes: []ChangeReport{}, Uncovered: []UncoveredReport{}, Skipped: p.Skipped, Warnings: []string{}}
	if r.Skipped == nil {
		r.Skipped = []SkippedSeries{}
	}
	r.Warnings = append(r.Warnings, p.Warnings...)
	if len(h.Runs) == 0 {
		r.Warnings = append(r.Warnings, "the database has no runs: nothing can be attributed to the provider or to traffic (run driftprobe on a schedule first)")
	}
	do := o.Detect.withDefaults()
	for _, s := range p.Series {
		if s.Category != "" && h.Coverage[s.Category] == 0 && s.Blocked() > 0 {
			r.Uncovered = append(r.Uncovered, UncoveredReport{Target: s.Target, Category: s.Category, Blocked: s.Blocked()})
		}
		if n := s.usablePoints(); n < 2*do.MinPoints {
			what := "point(s)"
			if s.HasTotals() {
				what = "point(s) with requests"
			}
			r.Warnings = append(r.Warnings, fmt.Sprintf("target %s, category %s: %d %s, a change needs %d on each side (--min-points): not analyzed",
				s.Target, catName(s.Category), n, what, do.MinPoints))
			continue
		}
		c, ok := Detect(s, do)
		if !ok {
			continue
		}
		tol := o.Tolerance
		if tol <= 0 {
			tol = 2 * s.Step
			if s.Step <= 0 {
				tol = DefaultTolerance
			}
		}
		cr, err := a.attribute(s, c, tol)
		if err != nil {
			return nil, err
		}
		r.Changes = append(r.Changes, cr)
	}
	return r, nil
}

type attributor struct {
	h       *History
	runs    map[int64]int       // run id → index in h.Runs
	runsOf  map[string][]int    // target → indexes of runs that probed it
	byTgt   map[string][]*Event // target → events involving it
	confirm int
	// store, when set, reads the per-run verdicts and probe tags on
	// demand (AttributeStore); else they are h.Verdicts and h.ProbeTags.
	store *storeVerdicts
}

// newAttributor indexes h; store (nil: use h.Verdicts) reads the per-run
// verdicts when a change needs them.
func newAttributor(h *History, store *storeVerdicts) *attributor {
	a := &attributor{h: h, runs: map[int64]int{}, runsOf: map[string][]int{}, byTgt: map[string][]*Event{}, confirm: h.ConfirmRuns, store: store}
	if a.confirm < 1 {
		a.confirm = 2
	}
	for i, r := range h.Runs {
		a.runs[r.ID] = i
		for t := range r.Targets {
			a.runsOf[t] = append(a.runsOf[t], i)
		}
	}
	for i := range h.Events {
		e := &h.Events[i]
		if e.Kind == KindNondeterminism {
			continue // never policy evidence
		}
		for _, t := range e.Targets {
			a.byTgt[t] = append(a.byTgt[t], e)
		}
	}
	return a
}

func (a *attributor) complete(i int, target string) bool {
	r := a.h.Runs[i]
	return !r.Aborted && r.Targets[target] == StatusComplete
}

// window is the span of production times a flip explains, widened by
// tol on each side. For the flip itself (revert false): from the start of
// the last run in which the probe answered its old verdict
// (Flip.LastRunBefore; Flip.BeforeRun when that is unknown; else the
// target's last complete run before the flip) to the start of the run
// that first saw the new verdict. For its revert (revert true): from the
// start of the confirm_runs-th complete run of the target before the run
// that recorded the revert to the start of that run.
func (a *attributor) window(target string, f *Flip, revert bool, tol time.Duration) (time.Time, time.Time, bool) {
	id := f.FirstRun
	if revert {
		id = f.RevertedRun
	}
	i, ok := a.runs[id]
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	hi := a.h.Runs[i].StartedAt
	if !revert {
		if j, ok := a.beforeRun(f); ok {
			return a.h.Runs[j].StartedAt.Add(-tol), hi.Add(tol), true
		}
	}
	back := 1
	if revert {
		back = a.confirm
	}
	lo := a.completeBefore(target, i, back)
	return lo.Add(-tol), hi.Add(tol), true
}

// completeBefore returns the start of the back-th complete run of target
// before run h.Runs[i] (of the earliest there is when there are fewer;
// run i's own start when there is none).
func (a *attributor) completeBefore(target string, i, back int) time.Time {
	lo := a.h.Runs[i].StartedAt
	idx := a.runsOf[target]
	pos := sort.SearchInts(idx, i)
	for j := pos - 1; j >= 0 && back > 0; j-- {
		if a.complete(idx[j], target) {
			lo = a.h.Runs[idx[j]].StartedAt
			back--
		}
	}
	return lo
}

// openedEarly returns the run flip f's window opens at when that is
// earlier than the target's last complete run before the flip (the probe
// had no verdict in the runs between), else 0.
func (a *attributor) openedEarly(target string, f *Flip) int64 {
	j, ok := a.beforeRun(f)
	i, ok2 := a.runs[f.FirstRun]
	if !ok || !ok2 || !a.h.Runs[j].StartedAt.Before(a.completeBefore(target, i, 1)) {
		return 0
	}
	return a.h.Runs[j].ID
}

// beforeRun returns the index in h.Runs of the run in which flip f's probe
// is known to have answered its old verdict last (Flip.LastRunBefore, else
// Flip.BeforeRun), and false when neither is a stored run before the
// flip's.
func (a *attributor) beforeRun(f *Flip) (int, bool) {
	for _, id := range []int64{f.LastRunBefore, f.BeforeRun} {
		if id <= 0 || id >= f.FirstRun {
			continue
		}
		if j, ok := a.runs[id]; ok {
			return j, true
		}
	}
	return 0, false
}

// eventMatch is what one event says about a change. A flip is "in the
// window" when its window (widened by the tolerance) meets the span of
// time the change can have happened in ([Change.From, Change.At]).
type eventMatch struct {
	ev        *Event
	same      int      // flips in the window, touching the category, the change's way
	opposite  int      // ... the other way
	neutral   int      // ... touching it without changing whether it blocks
	others    []string // categories of flips in the window that do not touch it
	firstRun  int64    // earliest run of a matching flip
	revert    bool     // ... which was a revert
	anyInWind bool
	// covers: a matching flip's window holds the whole span of the
	// change, so the flip explains the change wherever in the span it
	// happened. Without a gap in production the span is one instant and
	// every matching flip covers it.
	covers bool
	// lo, hi: the window of the matching flip of firstRun.
	lo, hi time.Time
	// coverLo, coverHi: the window (widened by the tolerance) of the
	// earliest matching flip whose window covers the change, when covers.
	coverLo, coverHi time.Time
	coverRun         int64
	// opened: the earliest run a matching flip's window opened at, when
	// earlier than the target's last complete run before the flip (its
	// probe had no verdict in the runs between); 0: none did.
	opened int64
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// flipDir is the way a flip moved blocking for category c ("" = any):
// Up, Down or "".
func flipDir(before, after Verdict, c string) string {
	switch {
	case !before.Blocked && after.Blocked:
		return Up
	case before.Blocked && !after.Blocked:
		return Down
	case c != "" && before.Blocked && after.Blocked:
		inB, inA := has(before.Categories, c), has(after.Categories, c)
		switch {
		case !inB && inA:
			return Up
		case inB && !inA:
			return Down
		}
	}
	return ""
}

// scoreDir is the way a score_drift flip moved scores for category c: when
// the flip carries per-category directions, c's own (for "", all blocks,
// the one all its categories share); else the event's. "" when the scores
// moved in no single direction (a mixed event matches neither) or c's
// scores did not move.
func scoreDir(e *Event, f *Flip, c string) string {
	if f.ScoreDirs != nil {
		if c != "" {
			return f.ScoreDirs[c]
		}
		d, first := "", true
		for _, x := range f.ScoreDirs {
			if first {
				d, first = x, false
			} else if x != d {
				d = ""
			}
		}
		if !first {
			return d
		}
	}
	switch e.Direction {
	case Tightened:
		return Up
	case Loosened:
		return Down
	}
	return ""
}

func reverse(d string) string {
	switch d {
	case Up:
		return Down
	case Down:
		return Up
	}
	return ""
}

func touches(f *Flip, c string) bool {
	return c == "" || has(f.Before.Categories, c) || has(f.After.Categories, c) || has(f.Tags, c)
}

func (a *attributor) match(e *Event, target string, c Change, tol time.Duration) eventMatch {
	m := eventMatch{ev: e}
	var flips []*Flip
	for _, f := range a.flipsOn(e, target) {
		// A flip detection withdrew (its probe was marked
		// nondeterministic) is no evidence, nor is its withdrawal.
		if !f.Withdrawn {
			flips = append(flips, f)
		}
	}
	other := map[string]bool{}
	for _, f := range flips {
		type side struct {
			run    int64
			revert bool
		}
		sides := []side{{f.FirstRun, false}}
		// A probe that moved on did not flip back: its leaving is no
		// flip the other way (where its verdict went is another row's).
		if f.RevertedRun != 0 && !f.MovedOn {
			sides = append(sides, side{f.RevertedRun, true})
		}
		for _, sd := range sides {
			lo, hi, ok := a.window(target, f, sd.revert, tol)
			if !ok || c.At.Before(lo) || c.From.After(hi) {
				continue
			}
			m.anyInWind = true
			if !touches(f, c.Category) {
				for _, x := range append(append(append([]string{}, f.Before.Categories...), f.After.Categories...), f.Tags...) {
					other[x] = true
				}
				continue
			}
			var d string
			switch {
			case e.Kind == KindScoreDrift:
				d = scoreDir(e, f, c.Category)
				if sd.revert {
					d = reverse(d)
				}
			case sd.revert:
				d = flipDir(f.After, f.Before, c.Category)
			default:
				d = flipDir(f.Before, f.After, c.Category)
			}
			switch {
			case d == c.Direction:
				m.same++
				if m.firstRun == 0 || sd.run < m.firstRun {
					m.firstRun, m.revert, m.lo, m.hi = sd.run, sd.revert, lo, hi
				}
				if o := a.openedEarly(target, f); !sd.revert && o != 0 && (m.opened == 0 || o < m.opened) {
					m.opened = o
				}
				if !c.From.Before(lo) && !c.At.After(hi) {
					if !m.covers || sd.run < m.coverRun {
						m.coverRun, m.coverLo, m.coverHi = sd.run, lo, hi
					}
					m.covers = true
				}
			case d != "":
				m.opposite++
			default:
				m.neutral++
			}
		}
	}
	for x := range other {
		m.others = append(m.others, x)
	}
	sort.Strings(m.others)
	return m
}

// attribute attributes change c of series s. An error is a failed read
// of the per-run verdicts (a.store), wrapped.
func (a *attributor) attribute(s *Series, c Change, tol time.Duration) (ChangeReport, error) {
	cr := ChangeReport{Target: c.Target, Category: c.Category, ChangeAt: c.At, ChangeFrom: c.From, BeforeRate: c.Before, AfterRate: c.After,
		RateUnit: "blocked_per_interval", Direction: c.Direction, Events: []int64{}, Tolerance: fmtDuration(tol)}
	if c.HasTotal {
		z := c.Z
		cr.Z, cr.RateUnit = &z, "share"
	}
	start, end := s.Span()
	// Runs count on a side only when they lie outside the span the change
	// can have happened in: a run inside a production gap saw the probes
	// at a time production says nothing about.
	var degBefore, degAfter, inGap int
	for _, i := range a.runsOf[c.Target] {
		r := a.h.Runs[i]
		if r.StartedAt.Before(start) || !r.StartedAt.Before(end) {
			continue
		}
		before := r.StartedAt.Before(c.From)
		after := !r.StartedAt.Before(c.At)
		ok := a.complete(i, c.Target)
		switch {
		case !before && !after:
			if ok {
				inGap++
			}
		case before && ok:
			cr.RunsBefore++
		case before:
			degBefore++
		case ok:
			cr.RunsAfter++
		default:
			degAfter++
		}
	}
	var same, partial, opposite, neutral, others []eventMatch
	for _, e := range a.byTgt[c.Target] {
		m := a.match(e, c.Target, c, tol)
		switch {
		case m.same > 0 && m.covers:
			same = append(same, m)
		case m.same > 0:
			partial = append(partial, m)
		case m.opposite > 0:
			opposite = append(opposite, m)
		case m.neutral > 0:
			neutral = append(neutral, m)
		case m.anyInWind:
			others = append(others, m)
		}
	}
	cat := catLabel(c.Category)
	at := "at " + rfc3339(c.At)
	if c.From.Before(c.At) {
		at = fmt.Sprintf("between %s and %s", rfc3339(c.From), rfc3339(c.At))
	}
	// A wide gap in production is said in every reason.
	gap, suffix := gapNote(c, s.Step), ""
	if gap != "" {
		suffix = "; " + gap + ": the change happened somewhere in it"
		if inGap > 0 {
			suffix += fmt.Sprintf(" (%d complete run(s) of %s within it count on neither side)", inGap, c.Target)
		}
	}
	set := func(attr string, ms []eventMatch, format string, args ...any) (ChangeReport, error) {
		cr.Attribution, cr.Reason = attr, fmt.Sprintf(format, args...)+suffix
		for _, m := range ms {
			cr.Events = append(cr.Events, m.ev.ID)
		}
		return cr, nil
	}
	// holds says, for an event whose flip window covers the change, that
	// it is that window, widened by the tolerance, that holds the change
	// time, not the run the flip was seen in.
	holds := func(m eventMatch) string {
		if !m.covers {
			return ""
		}
		lo, hi := m.coverLo.Add(tol), m.coverHi.Add(-tol)
		win := rfc3339(lo) + " to " + rfc3339(hi)
		if !lo.Before(hi) {
			win = rfc3339(hi)
		}
		return fmt.Sprintf(", whose flip window (%s ±%s) holds the change %s", win, fmtDuration(tol), at)
	}
	describe := func(ms []eventMatch) string {
		var parts []string
		for _, m := range ms {
			r := a.h.Runs[a.runs[m.firstRun]]
			note := ""
			if m.opposite > 0 {
				note = fmt.Sprintf("; %d of its flips went the other way", m.opposite)
			}
			from := "from run"
			if m.revert {
				from = "reverting, confirmed in run"
			}
			started := rfc3339(r.StartedAt)
			if m.opened != 0 {
				// The probe had no verdict in the runs just before: its
				// window opens where it last answered the old verdict.
				started += fmt.Sprintf("; last seen with the old verdict in run %d, started %s", m.opened, rfc3339(a.h.Runs[a.runs[m.opened]].StartedAt))
			}
			if m.ev.Kind == KindScoreDrift {
				parts = append(parts, fmt.Sprintf("event %d (%s, %s%s) moved the scores of %d probe(s) on %s %s, on identical probe bytes and without a verdict flip, %s %d (started %s)",
					m.ev.ID, m.ev.Kind, m.ev.Direction, note, m.same, c.Target, c.Direction, from, m.firstRun, started))
				continue
			}
			parts = append(parts, fmt.Sprintf("event %d (%s, %s%s) flipped %d probe(s) on %s %s %s %d (started %s)",
				m.ev.ID, m.ev.Kind, m.ev.Direction, note, m.same, c.Target, wayOf(c.Direction), from, m.firstRun, started))
		}
		return strings.Join(parts, "; ")
	}
	if len(same) > 0 {
		parts := make([]string, len(same))
		for i, m := range same {
			parts[i] = describe([]eventMatch{m}) + holds(m)
		}
		return set(Provider, same, "%s: the provider changed %s on identical probe bytes", strings.Join(parts, "; "), cat)
	}
	if len(partial) > 0 {
		// Production is missing around the change and the flips explain
		// only part of the gap: the change may be the provider's (inside
		// their windows) or the customers' (in the rest, where the probes
		// held still). Neither is claimed.
		if gap == "" {
			gap = fmt.Sprintf("production data is missing between %s and %s", rfc3339(c.From), rfc3339(c.At))
		}
		suffix = ""
		var windows []string
		for _, m := range partial {
			// m.lo and m.hi are widened by the tolerance: shown without
			// it, the tolerance said once after them.
			windows = append(windows, fmt.Sprintf("%s and %s", rfc3339(m.lo.Add(tol)), rfc3339(m.hi.Add(-tol))))
		}
		return set(Inconclusive, partial, "%s and the change happened somewhere in it: %s, which explains a change between %s (the flips' window, ±%s) but not one in the rest of the gap, where the probes held still and the customers' content may have moved instead: fill in the production data to tell",
			gap, describe(partial), strings.Join(windows, " or "), fmtDuration(tol))
	}
	if len(opposite) > 0 {
		return set(Inconclusive, opposite, "%s in the same window moved %s on %s the other way (%s): the probes do not explain a move %s",
			eventList(opposite), cat, c.Target, eventDirs(opposite), c.Direction)
	}
	if len(neutral) > 0 && allScoreDrift(neutral) {
		return set(Inconclusive, neutral, "%s in the same window moved the scores of %s probes on %s, on identical probe bytes and without a verdict flip, in no single direction (%s): no direction to set against the move %s",
			eventList(neutral), cat, c.Target, eventDirs(neutral), c.Direction)
	}
	if len(neutral) > 0 {
		return set(Inconclusive, neutral, "%s in the same window touched %s on %s without changing whether its probes block (%s)",
			eventList(neutral), cat, c.Target, eventDirs(neutral))
	}
	if c.Category != "" && a.h.Coverage[c.Category] == 0 {
		return set(Inconclusive, nil, "the corpus covers no %s: no probe is tagged with it, so the control group says nothing (add probes for it)", c.Category)
	}
	if c.Category == "" && a.h.CorpusProbes == 0 {
		return set(Inconclusive, nil, "no corpus probes: the control group says nothing")
	}
	if len(others) > 0 {
		var parts []string
		for _, m := range others {
			cats := "uncategorized probes"
			if len(m.others) > 0 {
				cats = strings.Join(m.others, ", ")
			}
			parts = append(parts, fmt.Sprintf("event %d (%s, %s: %s)", m.ev.ID, m.ev.Kind, m.ev.Direction, cats))
		}
		return set(Inconclusive, others, "the %s probes held still, but the provider changed other categories on %s in the same window: %s",
			cat, c.Target, strings.Join(parts, "; "))
	}
	switch {
	case cr.RunsBefore == 0 && degBefore > 0:
		return set(Inconclusive, nil, "the %d run(s) of %s before the change within the series were degraded or aborted: they confirm nothing", degBefore, c.Target)
	case cr.RunsBefore == 0:
		return set(Inconclusive, nil, "no complete run of %s between the series' start (%s) and the change: the probes' state before it is unknown",
			c.Target, start.UTC().Format(time.RFC3339))
	case cr.RunsAfter < a.confirm && degAfter > 0:
		return set(Inconclusive, nil, "%d complete run(s) of %s after the change within the series (%d degraded or aborted); a flip needs %d (confirm_runs) to be confirmed",
			cr.RunsAfter, c.Target, degAfter, a.confirm)
	case cr.RunsAfter < a.confirm:
		return set(Inconclusive, nil, "%d complete run(s) of %s after the change within the series (until %s); a flip needs %d (confirm_runs) to be confirmed",
			cr.RunsAfter, c.Target, end.UTC().Format(time.RFC3339), a.confirm)
	}
	// "Held still" is checked, not assumed: see attributor.stillness.
	st, err := a.stillness(c, start, end, tol)
	if err != nil {
		return ChangeReport{}, err
	}
	if st.unstable() {
		reason, evs := describeUnstable(st, c)
		cr.Events = append(cr.Events, evs...)
		return set(Inconclusive, nil, "%s", reason)
	}
	if st.read && st.witnesses == 0 {
		return set(Inconclusive, nil, "none of the %s on %s has a verdict on the same request bytes both before and after the change within the series (no verdicts stored for those runs — retention deleted them, or every answer was an error — or the request bytes changed across it): nothing shows that the probes held still",
			probesOf(c.Category), c.Target)
	}
	held := fmt.Sprintf("the %d corpus probe(s) tagged %s", a.h.Coverage[c.Category], c.Category)
	if c.Category == "" {
		held = fmt.Sprintf("the corpus's %d probes", a.h.CorpusProbes)
	}
	check, note := "", " (per-run verdicts not read: only events and nondeterminism marks were checked)"
	if st.read {
		note = ""
		check = fmt.Sprintf(", %d probe(s) with identical verdicts on identical request bytes before and after it and none that flipped at random", st.witnesses)
		if st.explained > 0 {
			check += fmt.Sprintf(" (%d of them changed elsewhere in the series only through confirmed flips outside the window)", st.explained)
		}
	}
	return set(Traffic, nil, "%s held still on %s: %d complete run(s) before and %d after the change, no event in the window%s: the customers' content changed%s",
		held, c.Target, cr.RunsBefore, cr.RunsAfter, check, note)
}

// gapNote says that production data is missing around a change when the
// span it can have happened in is at least two steps wide ("" when it is
// narrower): the change is placed only to that span.
func gapNote(c Change, step time.Duration) string {
	gap := c.At.Sub(c.From)
	if gap <= 0 || step <= 0 || gap < 2*step {
		return ""
	}
	return fmt.Sprintf("production data is missing between %s and %s (%s, %d × the %s step)",
		rfc3339(c.From), rfc3339(c.At), fmtDuration(gap), int64((gap+step/2)/step), fmtDuration(step))
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// fmtDuration renders d without zero trailing units: 2h, 90m, 1h30m.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func catLabel(c string) string {
	if c == "" {
		return "all categories"
	}
	return c
}

func wayOf(dir string) string {
	if dir == Up {
		return "to stricter"
	}
	return "to looser"
}

func allScoreDrift(ms []eventMatch) bool {
	for _, m := range ms {
		if m.ev.Kind != KindScoreDrift {
			return false
		}
	}
	return true
}

func eventList(ms []eventMatch) string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = strconv.FormatInt(m.ev.ID, 10)
	}
	if len(ids) == 1 {
		return "event " + ids[0]
	}
	return "events " + strings.Join(ids, ", ")
}

func eventDirs(ms []eventMatch) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%d: %s %s", m.ev.ID, m.ev.Kind, m.ev.Direction)
	}
	return strings.Join(parts, "; ")
}
