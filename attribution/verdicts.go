package attribution

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// ProbeVerdict is one verdict a probe answered on a target in one run.
type ProbeVerdict struct {
	ProbeID       string
	RequestSHA256 string
	// Verdict is the class and sorted normalized categories, as detection
	// keys them (diff.Verdict.Key: "blocked_output|hate").
	Verdict string
}

// VerdictStore is what LoadVerdicts reads; *storage.DB implements it.
type VerdictStore interface {
	Targets(ctx context.Context) ([]storage.TargetRow, error)
	// ObservationsWithDamage returns a run's sound observations of a
	// target and its damaged rows apart: a damaged row gives no verdict
	// (its probe reads as not observed that run), never a failed report.
	ObservationsWithDamage(ctx context.Context, runID, targetID int64) ([]*storage.Observation, []storage.DamagedObservation, error)
	ProbeTags(ctx context.Context) (map[string][]string, error)
}

// LoadVerdicts fills h.Verdicts and h.ProbeTags from st, so that Attribute
// can tell whether the probes actually held still: for every target with a
// series in p, the verdicts its probes answered (every sample) in each of
// its complete runs that started within the span of one of its series.
// Answers that are not verdicts (transient, client_error,
// filter_unavailable) and account-level abuse_block are left out, as
// detection leaves them out. A run whose observations retention deleted
// contributes the few it kept (the evidence events pin), possibly none.
// ProbeTags are the tags the store kept for every probe it saw, overlaid
// with corpusTags (probe id → corpus tags; nil: the store's alone).
//
// It reads every verdict of the span whether or not a change needs it;
// AttributeStore gives the same report reading only what the changes'
// held-still checks need.
func LoadVerdicts(ctx context.Context, st VerdictStore, p *Production, h *History, corpusTags map[string][]string) error {
	tags, err := probeTags(ctx, st, corpusTags)
	if err != nil {
		return err
	}
	ids, err := targetIDs(ctx, st)
	if err != nil {
		return err
	}
	type span struct{ start, end time.Time }
	spans := map[string][]span{}
	for _, s := range p.Series {
		start, end := s.Span()
		spans[s.Target] = append(spans[s.Target], span{start, end})
	}
	h.ProbeTags = tags
	h.Verdicts = map[string]map[int64][]ProbeVerdict{}
	in := newInterner()
	for target, ss := range spans {
		byRun := map[int64][]ProbeVerdict{}
		h.Verdicts[target] = byRun
		tid, ok := ids[target]
		if !ok {
			continue // configured but never run: no verdicts
		}
		var runs []int64
		for _, r := range h.Runs {
			if r.Aborted || r.Targets[target] != StatusComplete {
				continue
			}
			inSpan := false
			for _, sp := range ss {
				if !r.StartedAt.Before(sp.start) && r.StartedAt.Before(sp.end) {
					inSpan = true
					break
				}
			}
			if inSpan {
				runs = append(runs, r.ID)
			}
		}
		if err := readVerdicts(ctx, st, target, tid, runs, byRun, in); err != nil {
			return err
		}
	}
	return nil
}

// probeTags returns the tags st kept for every probe it saw, overlaid
// with corpusTags, never nil.
func probeTags(ctx context.Context, st VerdictStore, corpusTags map[string][]string) (map[string][]string, error) {
	tags, err := st.ProbeTags(ctx)
	if err != nil {
		return nil, fmt.Errorf("probe verdicts: %w", err)
	}
	if tags == nil {
		tags = map[string][]string{}
	}
	for id, t := range corpusTags {
		tags[id] = t
	}
	return tags, nil
}

// targetIDs maps the names of the targets st knows to their ids.
func targetIDs(ctx context.Context, st VerdictStore) (map[string]int64, error) {
	rows, err := st.Targets(ctx)
	if err != nil {
		return nil, fmt.Errorf("probe verdicts: targets: %w", err)
	}
	ids := make(map[string]int64, len(rows))
	for _, t := range rows {
		ids[t.Name] = t.ID
	}
	return ids, nil
}

// readVerdicts sets byRun[run], for every run of runs, to the verdicts of
// target (id tid) in that run, read from st: through VerdictRows in one
// query per chunk of runs when st has it, else run by run through
// ObservationsWithDamage. Both give the same verdicts.
func readVerdicts(ctx context.Context, st VerdictStore, target string, tid int64, runs []int64, byRun map[int64][]ProbeVerdict, in *interner) error {
	if rr, ok := st.(verdictRowReader); ok {
		if err := loadRows(ctx, rr, tid, runs, byRun, in); err != nil {
			return fmt.Errorf("probe verdicts on %s: %w", target, err)
		}
		return nil
	}
	for _, run := range runs {
		obs, _, err := st.ObservationsWithDamage(ctx, run, tid)
		if err != nil {
			return fmt.Errorf("probe verdicts of run %d on %s: %w", run, target, err)
		}
		vs := make([]ProbeVerdict, 0, len(obs))
		for _, o := range obs {
			if c := o.Result.Class; !c.IsVerdict() || c == probes.AbuseBlock {
				continue
			}
			vs = append(vs, ProbeVerdict{ProbeID: o.ProbeID, RequestSHA256: o.RequestSHA256, Verdict: diff.VerdictOf(o.Result).Key()})
		}
		byRun[run] = vs
	}
	return nil
}

// storeVerdicts reads per-run verdicts for AttributeStore on demand. It
// keeps one target's verdicts at a time: the runs read so far for the
// target of the latest read, so that the changes of one target's several
// series read each run once.
type storeVerdicts struct {
	ctx        context.Context
	st         VerdictStore
	corpusTags map[string][]string

	tags   map[string][]string // the probe tags (probeTags), set by the first read
	ids    map[string]int64    // target ids (targetIDs), nil until the first read
	target string              // the target byRun holds
	byRun  map[int64][]ProbeVerdict
	in     *interner
}

func newStoreVerdicts(ctx context.Context, st VerdictStore, corpusTags map[string][]string) *storeVerdicts {
	return &storeVerdicts{ctx: ctx, st: st, corpusTags: corpusTags}
}

// read returns target's verdicts by run, every run of runs among them,
// reading from the store only the runs not read before.
func (sv *storeVerdicts) read(target string, runs []int64) (map[int64][]ProbeVerdict, error) {
	if sv.ids == nil {
		tags, err := probeTags(sv.ctx, sv.st, sv.corpusTags)
		if err != nil {
			return nil, err
		}
		if sv.ids, err = targetIDs(sv.ctx, sv.st); err != nil {
			return nil, err
		}
		sv.tags = tags
	}
	if sv.byRun == nil || target != sv.target {
		sv.target, sv.byRun, sv.in = target, map[int64][]ProbeVerdict{}, newInterner()
	}
	tid, ok := sv.ids[target]
	if !ok {
		return sv.byRun, nil // configured but never run: no verdicts
	}
	var missing []int64
	for _, r := range runs {
		if _, ok := sv.byRun[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return sv.byRun, nil
	}
	if err := readVerdicts(sv.ctx, sv.st, target, tid, missing, sv.byRun, sv.in); err != nil {
		return nil, err
	}
	return sv.byRun, nil
}

// verdictRowReader is the narrow read LoadVerdicts prefers when st has it
// (*storage.DB does): the few columns a verdict needs, for all of a
// target's runs in one query, rather than every column of every
// observation, run by run.
type verdictRowReader interface {
	VerdictRows(ctx context.Context, targetID int64, runIDs []int64, fn func(*storage.VerdictRow) error) error
}

// loadRows fills byRun with the verdicts of target tid in runs (each of
// them present, empty when it kept none), as the ObservationsWithDamage
// path would: sound rows only, verdict classes but abuse_block, each
// run's verdicts in the store's order (probe, sample).
func loadRows(ctx context.Context, rr verdictRowReader, tid int64, runs []int64, byRun map[int64][]ProbeVerdict, in *interner) error {
	for _, r := range runs {
		byRun[r] = []ProbeVerdict{}
	}
	if len(runs) == 0 {
		return nil
	}
	// buf collects the current run's verdicts; each run keeps an exact
	// copy, so a window's verdicts carry no spare capacity.
	var buf []ProbeVerdict
	cur := int64(0)
	flush := func() {
		if len(buf) > 0 {
			byRun[cur] = slices.Clone(buf)
		}
		buf = buf[:0]
	}
	err := rr.VerdictRows(ctx, tid, runs, func(row *storage.VerdictRow) error {
		if row.RunID != cur {
			flush()
			cur = row.RunID
		}
		if c := row.Class; !c.IsVerdict() || c == probes.AbuseBlock {
			return nil
		}
		buf = append(buf, ProbeVerdict{ProbeID: in.str(row.ProbeID), RequestSHA256: in.str(row.RequestSHA256), Verdict: in.key(row.Class, row.Categories)})
		return nil
	})
	if err != nil {
		return err
	}
	flush()
	return nil
}

// interner shares the strings of one LoadVerdicts call: probe ids,
// request fingerprints and verdict keys repeat across runs and samples,
// so the verdicts of a window hold each once.
type interner struct {
	strs map[string]string
	keys map[[2]string]string // class, stored categories → verdict key
}

func newInterner() *interner {
	return &interner{strs: map[string]string{}, keys: map[[2]string]string{}}
}

func (in *interner) str(s string) string {
	if v, ok := in.strs[s]; ok {
		return v
	}
	s = strings.Clone(s)
	in.strs[s] = s
	return s
}

// key is diff.VerdictOf(...).Key() of a result of class c whose
// categories column holds cats.
func (in *interner) key(c probes.Class, cats string) string {
	k := [2]string{string(c), cats}
	if v, ok := in.keys[k]; ok {
		return v
	}
	r := probes.Result{Class: c}
	if cats != "" {
		r.Categories = strings.Split(cats, ",")
	}
	v := diff.VerdictOf(r).Key()
	in.keys[[2]string{strings.Clone(string(c)), strings.Clone(cats)}] = v
	return v
}

// stillness is whether the probes of a category held still on a target
// around a change (see attributor.stillness for the rule).
type stillness struct {
	// read: the per-run verdicts were read (History.Verdicts set).
	read bool
	// marked: nondeterminism events → the category's probes they mark
	// within the compared runs.
	marked map[int64][]string
	// changed: probes whose verdict changed on identical bytes with no
	// confirmed flip to explain it, each described ("p: v1 in run 2,
	// v2 in run 3"), sorted.
	changed []string
	// witnesses: probes with verdicts on identical bytes in a run before
	// the change and a run after it, with no change in between.
	witnesses int
	// explained: probes whose verdict changed in the compared runs only
	// through confirmed flips (outside the change's window).
	explained int
}

func (s stillness) unstable() bool { return len(s.marked) > 0 || len(s.changed) > 0 }

// runVerdict is what one probe answered in one compared run.
type runVerdict struct {
	idx      int // index in History.Runs
	sha      string
	verdict  string
	disagree string // another verdict a sample of the same run gave ("": none)
}

// stillness decides whether the probes of c.Category ("" = every probe)
// held still on c.Target around the change, over the compared runs: the
// target's complete runs that started within the series' span [start,
// end) — those counted before and after the change and those inside a
// production gap.
//
// A probe of the category (tagged with it, or with a verdict naming it;
// any probe for all blocks) is unstable, and the probes cannot show that
// the provider held still, when
//   - a nondeterminism event involving the target marks it (its flip
//     there touches the category) from a run no later than the last
//     compared run, and it had not left the event (RevertedRun) by the
//     first compared run; or
//   - two samples of one compared run gave different verdicts on the same
//     request bytes; or
//   - its verdicts in two consecutive compared runs in which it answered,
//     on the same request bytes, differ, and no confirmed flip explains
//     it: a flip of that probe on the target, of an event that is not
//     nondeterminism and not withdrawn, first seen in the later run (or,
//     for a revert that is not a move on, whose revert window — the
//     confirm_runs complete runs up to the revert's run — holds the later
//     run), whose window also reaches back to the earlier run (see
//     attributor.explained: a probe with no verdict in the runs between
//     did not hold still there unless the span between its two answers,
//     widened by the tolerance, misses the change). Flips in the change's
//     window were weighed as events before this rule runs; explained ones
//     lie outside it, are evidence of their own time, and cut the probe's
//     runs into stretches.
//
// A probe is a witness when it is not unstable and one stretch of its
// verdicts on the same request bytes reaches from a run before the change
// (started before From) to a run after it (from At on): its verdict was
// identical across the change. Request bytes that changed between two
// runs (an input change) also cut a stretch: verdicts on different bytes
// are never compared. Without per-run verdicts (History.Verdicts nil,
// no store) only the nondeterminism marks are checked and witnesses are
// not counted. With a store (AttributeStore) the verdicts of the compared
// runs are read here, and only here: an error is a failed read.
func (a *attributor) stillness(c Change, start, end time.Time, tol time.Duration) (stillness, error) {
	s := stillness{marked: map[int64][]string{}}
	var compared []int
	for _, i := range a.runsOf[c.Target] {
		r := a.h.Runs[i]
		if a.complete(i, c.Target) && !r.StartedAt.Before(start) && r.StartedAt.Before(end) {
			compared = append(compared, i)
		}
	}
	if len(compared) == 0 {
		return s, nil
	}
	firstID, lastID := a.h.Runs[compared[0]].ID, a.h.Runs[compared[len(compared)-1]].ID
	for i := range a.h.Events {
		e := &a.h.Events[i]
		if e.Kind != KindNondeterminism || !has(e.Targets, c.Target) {
			continue
		}
		for _, f := range a.flipsOn(e, c.Target) {
			if !touches(f, c.Category) || f.FirstRun > lastID || (f.RevertedRun != 0 && f.RevertedRun <= firstID) {
				continue
			}
			if !has(s.marked[e.ID], f.ProbeID) {
				s.marked[e.ID] = append(s.marked[e.ID], f.ProbeID)
			}
		}
	}
	for id := range s.marked {
		sort.Strings(s.marked[id])
	}
	byRun, tags := a.h.Verdicts[c.Target], a.h.ProbeTags
	switch {
	case a.store != nil:
		ids := make([]int64, len(compared))
		for k, i := range compared {
			ids[k] = a.h.Runs[i].ID
		}
		var err error
		if byRun, err = a.store.read(c.Target, ids); err != nil {
			return s, err
		}
		tags = a.store.tags
	case a.h.Verdicts == nil:
		return s, nil
	}
	s.read = true
	seq := map[string][]runVerdict{}
	for _, i := range compared {
		for _, v := range byRun[a.h.Runs[i].ID] {
			rv := seq[v.ProbeID]
			if n := len(rv); n > 0 && rv[n-1].idx == i {
				// Another sample of the same run.
				if rv[n-1].sha == v.RequestSHA256 && rv[n-1].verdict != v.Verdict && rv[n-1].disagree == "" {
					rv[n-1].disagree = v.Verdict
				}
				continue
			}
			seq[v.ProbeID] = append(rv, runVerdict{idx: i, sha: v.RequestSHA256, verdict: v.Verdict})
		}
	}
	ids := make([]string, 0, len(seq))
	for id := range seq {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		rv := seq[id]
		if !relevant(tags[id], rv, c.Category) {
			continue
		}
		changed, cut := "", false
		before := false // the current stretch holds a run before the change
		witness := false
		for k, v := range rv {
			if v.disagree != "" && changed == "" {
				changed = fmt.Sprintf("%s: %s and %s in run %d", id, verdictText(v.verdict), verdictText(v.disagree), a.h.Runs[v.idx].ID)
			}
			if k > 0 {
				p := rv[k-1]
				switch {
				case p.sha != v.sha:
					before = false // input change: a new stretch
				case p.verdict != v.verdict && a.explained(c, id, p.idx, v.idx, tol):
					before, cut = false, true
				case p.verdict != v.verdict:
					if changed == "" {
						changed = fmt.Sprintf("%s: %s in run %d, %s in run %d", id, verdictText(p.verdict), a.h.Runs[p.idx].ID, verdictText(v.verdict), a.h.Runs[v.idx].ID)
					}
				}
			}
			at := a.h.Runs[v.idx].StartedAt
			switch {
			case at.Before(c.From):
				before = true
			case !at.Before(c.At) && before:
				witness = true
			}
		}
		switch {
		case changed != "":
			s.changed = append(s.changed, changed)
		case witness:
			s.witnesses++
			if cut {
				s.explained++
			}
		}
	}
	return s, nil
}

// flipsOn returns e's flips on target, or all of them when e lists the
// target without probes of its own (as match reads it).
func (a *attributor) flipsOn(e *Event, target string) []*Flip {
	var out []*Flip
	for i := range e.Flips {
		if e.Flips[i].Target == target {
			out = append(out, &e.Flips[i])
		}
	}
	if len(out) == 0 {
		for i := range e.Flips {
			out = append(out, &e.Flips[i])
		}
	}
	return out
}

// relevant reports whether a probe with tags and verdicts rv belongs to
// category c's control group on the target: tagged with c, or a verdict
// of it names c; every probe for c == "" (all blocks).
func relevant(tags []string, rv []runVerdict, c string) bool {
	if c == "" || has(tags, c) {
		return true
	}
	for _, v := range rv {
		for _, k := range []string{v.verdict, v.disagree} {
			if k != "" && has(diff.ParseKey(k).Categories, c) {
				return true
			}
		}
	}
	return false
}

// explained reports whether a confirmed flip of probe id on c.Target (an
// event other than nondeterminism; withdrawn flips aside) accounts for a
// verdict change between the probe's answers in runs h.Runs[prev] and
// h.Runs[idx]: the flip was first seen in run idx, or it was a revert (not
// a move on) whose window (the confirm_runs complete runs up to the
// revert's run) holds run idx; and its window reaches back to the answer
// in run prev, so that the change was weighed, as an event, wherever
// between the two runs it happened. A flip's window reaches back when it
// opens at a run in which the probe is known to have answered its old
// verdict (Flip.LastRunBefore or BeforeRun) or at run prev or earlier.
// When it does not (the probe had no verdict in the runs before the
// window: a transient, say), the change explains itself only if the span
// between the two runs, widened by tol, does not meet the change's span
// [c.From, c.At]: otherwise the probe may have changed with production
// and did not hold still.
func (a *attributor) explained(c Change, id string, prev, idx int, tol time.Duration) bool {
	target := c.Target
	runID, at, prevAt := a.h.Runs[idx].ID, a.h.Runs[idx].StartedAt, a.h.Runs[prev].StartedAt
	// apart: the span between the two answers, widened by tol, misses
	// the change.
	apart := c.At.Before(prevAt.Add(-tol)) || c.From.After(at.Add(tol))
	for _, e := range a.byTgt[target] {
		if e.Kind == KindScoreDrift {
			continue // scores moved, the verdict did not
		}
		for i := range e.Flips {
			f := &e.Flips[i]
			if f.Target != target || f.ProbeID != id || f.Withdrawn {
				continue
			}
			if f.FirstRun == runID {
				if _, known := a.beforeRun(f); known || apart {
					return true
				}
				if lo, _, ok := a.window(target, f, false, 0); ok && !lo.After(prevAt) {
					return true
				}
			}
			if f.RevertedRun != 0 && !f.MovedOn {
				if lo, hi, ok := a.window(target, f, true, 0); ok && at.After(lo) && !at.After(hi) && (apart || !lo.After(prevAt)) {
					return true
				}
			}
		}
	}
	return false
}

// verdictText renders a verdict key for humans: "blocked_output[hate]".
func verdictText(k string) string { return diff.ParseKey(k).String() }

// describeUnstable is the reason a change whose category's probes did
// not hold still is inconclusive, and the nondeterminism events in the way.
func describeUnstable(s stillness, c Change) (string, []int64) {
	var parts []string
	var evs []int64
	for id := range s.marked {
		evs = append(evs, id)
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i] < evs[j] })
	if len(evs) > 0 {
		n := 0
		var per []string
		for _, id := range evs {
			n += len(s.marked[id])
			per = append(per, fmt.Sprintf("event %d: %s", id, listSome(s.marked[id], 5, ", ")))
		}
		parts = append(parts, fmt.Sprintf("%d probe(s) marked nondeterministic (%s)", n, strings.Join(per, "; ")))
	}
	if len(s.changed) > 0 {
		parts = append(parts, fmt.Sprintf("%d probe(s) whose verdict changed on identical request bytes with no confirmed flip to explain it (%s)",
			len(s.changed), listSome(s.changed, 3, "; ")))
	}
	return fmt.Sprintf("the %s on %s did not hold still in the runs around the change: %s; a probe that flips at random cannot show that the provider held still (nor that it changed)",
		probesOf(c.Category), c.Target, strings.Join(parts, "; ")), evs
}

// probesOf names the control group of category c: "violence probes", or
// "corpus probes" for all blocks.
func probesOf(c string) string {
	if c == "" {
		return "corpus probes"
	}
	return c + " probes"
}

// listSome joins the first n items of list with sep, counting the rest.
func listSome(list []string, n int, sep string) string {
	if len(list) <= n {
		return strings.Join(list, sep)
	}
	return strings.Join(list[:n], sep) + fmt.Sprintf(" and %d more", len(list)-n)
}
