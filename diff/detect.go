package diff

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// Params tune detection (see config.Detection).
type Params struct {
	ConfirmRuns           int
	NondeterministicFlips int
	ScoreTolerance        float64
	WindowRuns            int
	// Enqueue reports whether an event of a kind is queued for GitHub
	// delivery (an issue), asked once, when the event opens, with the kind
	// it opens as; nil queues nothing. An event queued when it opened has
	// every later change queued too (comments, the revert that closes it),
	// whatever its kind has become meanwhile (a policy_change turned
	// model_change keeps its issue up to date); an event not queued when it
	// opened stays unqueued, whatever its kind becomes (no comments on an
	// issue that was never opened).
	Enqueue func(kind string) bool
}

// TargetRun is one target's part of a run, as the runner saw it.
type TargetRun struct {
	ID             int64
	Name           string
	Provider       string
	Status         string // storage.TargetComplete | TargetDegraded | TargetAborted
	ConfirmSamples int
	Observations   []*storage.Observation // nil: read from the database
}

// Input is one run to apply.
type Input struct {
	RunID         int64
	CorpusVersion string
	CorpusHash    string
	Targets       []TargetRun
	Params        Params
}

// Change is something that happened to an event in a run.
type Change struct {
	EventID int64  `json:"event_id"`
	Change  string `json:"change"`
	Detail  string `json:"detail,omitempty"`
}

// TargetStats summarizes detection on one target in one run.
type TargetStats struct {
	Target           string `json:"target"`
	Candidates       int    `json:"candidates"`
	Confirmed        int    `json:"confirmed"`
	InputChanges     int    `json:"input_changes"`
	Nondeterministic int    `json:"nondeterministic"`
	Degraded         bool   `json:"degraded"`
}

// Result is what Apply did.
type Result struct {
	Changes []Change
	Stats   []TargetStats
}

// EventIDs returns the distinct events changed, in order.
func (r *Result) EventIDs() []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, c := range r.Changes {
		if !seen[c.EventID] {
			seen[c.EventID] = true
			out = append(out, c.EventID)
		}
	}
	return out
}

// state mirrors a probe_state row.
type state struct {
	probeID          string
	sha              string
	sinceRun         int64
	baseline         string
	baselineRun      int64
	baselineModel    string
	baselineObs      int64
	baselineScores   string
	candidate        string
	candidateRun     int64
	candidateRuns    int
	candidateModel   string
	candidateObs     int64
	driftScores      string
	driftRuns        int
	driftRun         int64
	lastVerdict      string
	changes          int
	reverts          int
	lastRevertRun    int64  // run of the latest revert; 0: none recorded
	prevCandidate    string // the candidate the current one replaced (a change in stages)
	nondeterministic bool
	dirty            bool
	isNew            bool
}

// flip is a confirmed change of one probe's verdict.
type flip struct {
	probeID     string
	sha         string
	before      string
	after       string
	beforeObs   int64
	afterObs    int64
	firstRun    int64
	modelBefore string
	modelAfter  string
	flipRate    float64
	scores      string // for score drift: "before -> after"
	moves       string // for score drift: the keys that moved past the tolerance (scoreMoves)
}

func modelOf(r probes.Result) string { return r.ModelID + "|" + r.ModelFP }

// Apply runs detection for one stored run in a single transaction: state
// updates, events, and outbox rows commit together or not at all.
func Apply(ctx context.Context, db *storage.DB, in Input) (*Result, error) {
	p := in.Params
	if p.ConfirmRuns < 1 {
		p.ConfirmRuns = 2
	}
	if p.NondeterministicFlips < 1 {
		p.NondeterministicFlips = 2
	}
	if p.WindowRuns < 1 {
		p.WindowRuns = 3
	}
	if p.ScoreTolerance <= 0 {
		p.ScoreTolerance = 0.15
	}
	res := &Result{}
	now := db.Now()
	// Read any observations not handed in before the transaction starts:
	// the store has a single connection, which the transaction holds.
	obsOf := make([][]*storage.Observation, len(in.Targets))
	for i, t := range in.Targets {
		obsOf[i] = t.Observations
		if obsOf[i] == nil {
			var err error
			if obsOf[i], err = db.Observations(ctx, in.RunID, t.ID); err != nil {
				return nil, err
			}
		}
	}
	err := db.Tx(ctx, func(tx *sql.Tx) error {
		for i, t := range in.Targets {
			d := &detector{tx: tx, ctx: ctx, in: &in, p: p, t: t, now: now, res: res}
			if err := d.run(obsOf[i]); err != nil {
				return fmt.Errorf("detect %s: %w", t.Name, err)
			}
		}
		// With the state and events: a run is never left finished but
		// undetected (storage.UndetectedRuns) once this commits.
		return storage.MarkDetected(ctx, tx, in.RunID)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

type detector struct {
	model      string // model the target reports now (id|fingerprint)
	prevModel  string // the one before it
	modelSince int64  // run the current model was first seen
	tx         *sql.Tx
	ctx        context.Context
	in         *Input
	p          Params
	t          TargetRun
	now        time.Time
	res        *Result
}

func (d *detector) run(obs []*storage.Observation) error {
	run := d.in.RunID
	states, err := loadStates(d.ctx, d.tx, d.t.ID)
	if err != nil {
		return err
	}
	known, err := loadCategories(d.ctx, d.tx, d.t.ID)
	if err != nil {
		return err
	}
	stats := TargetStats{Target: d.t.Name, Degraded: d.t.Status != storage.TargetComplete}
	if err := d.trackModel(obs); err != nil {
		return err
	}

	// Group samples by probe (sample 0 first).
	byProbe := map[string][]*storage.Observation{}
	var order []string
	for _, o := range obs {
		if _, ok := byProbe[o.ProbeID]; !ok {
			order = append(order, o.ProbeID)
		}
		byProbe[o.ProbeID] = append(byProbe[o.ProbeID], o)
	}
	sort.Strings(order)

	var flips, ndFlips, drifts []flip
	var newlyND []string
	// other: per probe, a verdict this run that differs from the one it
	// is compared with (a disagreeing sample, or the candidate it left):
	// what a probe newly marked nondeterministic went back and forth with.
	other := map[string]string{}
	markND := func(st *state) {
		if !st.nondeterministic && st.reverts >= d.p.NondeterministicFlips {
			st.nondeterministic = true
			newlyND = append(newlyND, st.probeID)
		}
	}
	// revert counts one going back (a candidate that did not hold,
	// samples of identical bytes that disagree) toward nondeterminism.
	// Reverts add up only while each comes within ndWindowRuns runs of the
	// one before: two blips months apart are two blips, not a noisy probe.
	revert := func(st *state) {
		// (A state written before reverts were dated has lastRevertRun 0:
		// its reverts are of unknown age and start over.)
		if st.lastRevertRun == 0 || run-st.lastRevertRun > ndWindowRuns {
			st.reverts = 0
		}
		st.reverts++
		st.lastRevertRun = run
		st.dirty = true
	}
	for _, pid := range order {
		samples := byProbe[pid]
		sort.Slice(samples, func(a, b int) bool { return samples[a].Sample < samples[b].Sample })
		first := samples[0]
		c := first.Result.Class
		if first.Sample != 0 || !c.IsVerdict() || c == probes.AbuseBlock {
			continue // not a verdict: never a flip, never breaks a streak
		}
		v := VerdictOf(first.Result).Key()
		model := modelOf(first.Result)
		if model == "|" {
			// An answer that names no model (an input block's error) was
			// answered by the model the target reports this run.
			model = d.model
		}
		scores := scoreString(first.Result)
		st := states[pid]
		if st == nil || st.sha != first.RequestSHA256 {
			if st != nil {
				// Input change: the bytes differ, so nothing is comparable.
				if _, err := d.tx.ExecContext(d.ctx, `INSERT INTO input_changes (run_id, target_id, probe_id, old_sha256, new_sha256) VALUES (?, ?, ?, ?, ?)`,
					run, d.t.ID, pid, st.sha, first.RequestSHA256); err != nil {
					return err
				}
				stats.InputChanges++
			}
			// New bytes: no baseline yet. The first verdict is a candidate
			// that must hold like any other before it becomes the baseline,
			// so one noisy first answer never becomes the reference.
			st = &state{probeID: pid, sha: first.RequestSHA256, sinceRun: run, lastVerdict: v, dirty: true}
			states[pid] = st
			if stats.Degraded {
				continue // a degraded run starts no candidate and confirms no baseline
			}
		} else if stats.Degraded {
			continue // confirms nothing, breaks no streak
		} else if v != st.lastVerdict {
			st.changes++
			st.lastVerdict = v
			st.dirty = true
		}
		agree, n := true, 1
		for _, s := range samples[1:] {
			if !s.Result.Class.IsVerdict() || s.Result.Class == probes.AbuseBlock {
				continue // account-level enforcement is no answer about these bytes
			}
			n++
			if k := VerdictOf(s.Result).Key(); k != v {
				agree = false
				other[pid] = k
			}
		}
		if st.baseline == "" {
			// Establishing the baseline.
			switch {
			case !agree:
				revert(st)
				st.candidate, st.candidateRun, st.candidateRuns = "", 0, 0
				markND(st)
			case st.candidate == v && st.candidateRun != run:
				st.candidateRuns++
			case st.candidate != v:
				if st.candidate != "" {
					other[pid] = st.candidate
					revert(st)
					markND(st)
				}
				st.candidate, st.candidateRun, st.candidateRuns = v, run, 1
			}
			st.dirty = true
			if agree && (st.candidateRuns >= d.p.ConfirmRuns || (d.t.ConfirmSamples > 0 && n-1 >= d.t.ConfirmSamples)) {
				st.baseline, st.baselineRun, st.baselineModel, st.baselineObs, st.baselineScores = v, run, model, first.ID, scores
				st.candidate, st.candidateRun, st.candidateRuns = "", 0, 0
				d.learnCategories(known, v)
			}
			continue
		}
		if v == st.baseline {
			if st.candidate != "" {
				other[pid] = st.candidate
				revert(st)
				st.candidate, st.candidateRun, st.candidateRuns = "", 0, 0
			}
			if !agree {
				revert(st)
			}
			if modelChanged(st.baselineModel, model) {
				// The baseline held under another model: a later flip is
				// judged against the model it last held under (a model
				// change long before a flip is not the flip's cause), and
				// its evidence cites this answer.
				st.baselineModel, st.baselineObs = model, first.ID
				st.dirty = true
			}
			markND(st)
			if err := d.scoreDrift(st, first, scores, &drifts); err != nil {
				return err
			}
			continue
		}
		stats.Candidates++
		if !agree {
			// The identical bytes got different answers within one run.
			revert(st)
			st.candidate, st.candidateRun, st.candidateRuns = "", 0, 0
			markND(st)
			continue
		}
		switch {
		case st.candidate == v:
			st.candidateRuns++
		case st.candidate != "" && v == st.prevCandidate:
			// Back to the verdict it just left, without the baseline in
			// between: back and forth, not a change in stages.
			other[pid] = st.candidate
			revert(st)
			markND(st)
			st.prevCandidate = st.candidate
			st.candidate, st.candidateRun, st.candidateRuns = v, run, 1
			st.candidateModel, st.candidateObs = model, first.ID
		case st.candidate != "":
			// Moved on from one candidate to a new one, never back to the
			// baseline: a change in stages (tightened twice), not back and
			// forth. The new verdict must hold on its own, but the change
			// started when the probe first left its baseline, under the
			// model it had then.
			st.prevCandidate = st.candidate
			st.candidate, st.candidateRuns, st.candidateObs = v, 1, first.ID
		default:
			st.prevCandidate = ""
			st.candidate, st.candidateRun, st.candidateRuns = v, run, 1
			st.candidateModel, st.candidateObs = model, first.ID
		}
		st.dirty = true
		byRuns := st.candidateRuns >= d.p.ConfirmRuns
		bySamples := d.t.ConfirmSamples > 0 && n-1 >= d.t.ConfirmSamples
		if !byRuns && !bySamples {
			continue
		}
		// modelAfter is the model the probe first answered differently
		// under: the model changed with the flip only when that differs
		// from the one its baseline last held under.
		f := flip{probeID: pid, sha: st.sha, before: st.baseline, after: v, beforeObs: st.baselineObs, afterObs: first.ID,
			firstRun: st.candidateRun, modelBefore: st.baselineModel, modelAfter: st.candidateModel, flipRate: flipRate(st, run)}
		if f.modelAfter == "" {
			f.modelAfter = model
		}
		if st.nondeterministic {
			ndFlips = append(ndFlips, f)
		} else {
			flips = append(flips, f)
		}
		stats.Confirmed++
		st.baseline, st.baselineRun, st.baselineModel, st.baselineObs, st.baselineScores = v, run, model, first.ID, scores
		st.candidate, st.candidateRun, st.candidateRuns, st.candidateModel, st.candidateObs = "", 0, 0, "", 0
		st.driftRuns, st.driftScores = 0, ""
	}
	for _, st := range states {
		if st.nondeterministic {
			stats.Nondeterministic++
		}
	}
	// A complete target-run answered every probe of the corpus: state kept
	// for probes no longer in it (removed from the corpus) is dropped, so
	// they stop counting in composition metrics.
	pruned := false
	if !stats.Degraded && len(byProbe) > 0 {
		for id := range states {
			if _, ok := byProbe[id]; !ok {
				delete(states, id)
				pruned = true
			}
		}
	}
	if err := saveStates(d.ctx, d.tx, d.t.ID, run, states, pruned); err != nil {
		return err
	}

	// Events.
	if err := d.policyEvents(flips, known, states); err != nil {
		return err
	}
	// A probe marked nondeterministic — in this run, or before (in a
	// database an older driftprobe, which withdrew nothing, wrote) — is no
	// policy evidence: its flips leave the target's open policy events.
	// One indexed query per target, and only while some probe is marked.
	marked := map[string]string{}
	for pid, st := range states {
		if st.nondeterministic {
			marked[pid] = st.sha
		}
	}
	if err := d.withdraw(marked); err != nil {
		return err
	}
	if len(newlyND) > 0 || len(ndFlips) > 0 {
		for _, pid := range newlyND {
			st := states[pid]
			// byProbe[pid] was sorted by sample above: [0] is this run's
			// observation the probe was marked on. Before and after are
			// the two verdicts it went back and forth between: its
			// baseline (else this run's answer) and the other one.
			before, after := st.baseline, other[pid]
			if before == "" {
				before = st.lastVerdict
			}
			if after == "" || after == before {
				after = st.lastVerdict
			}
			ndFlips = append(ndFlips, flip{probeID: pid, sha: st.sha, before: before, after: after, firstRun: run,
				beforeObs: st.baselineObs, afterObs: byProbe[pid][0].ID, modelBefore: st.baselineModel, modelAfter: st.baselineModel, flipRate: flipRate(st, run)})
		}
		if err := d.event(KindNondeterminism, ndFlips, nil, nil, states); err != nil {
			return err
		}
	}
	if len(drifts) > 0 {
		if err := d.event(KindScoreDrift, drifts, nil, nil, states); err != nil {
			return err
		}
	}
	for _, f := range flips {
		d.learnCategories(known, f.after)
	}
	if err := saveCategories(d.ctx, d.tx, d.t.ID, known, run); err != nil {
		return err
	}
	d.res.Stats = append(d.res.Stats, stats)
	return nil
}

func flipRate(st *state, run int64) float64 {
	n := run - st.sinceRun + 1
	if n <= 1 {
		return 0
	}
	return float64(st.changes) / float64(n-1)
}

// scoreDrift tracks scores on an unchanged verdict.
func (d *detector) scoreDrift(st *state, o *storage.Observation, scores string, out *[]flip) error {
	if scores == "" || scores == st.baselineScores {
		if st.driftRuns != 0 {
			st.driftRuns, st.driftScores, st.dirty = 0, "", true
		}
		return nil
	}
	if st.baselineScores == "" {
		st.baselineScores, st.dirty = scores, true
		return nil
	}
	if maxScoreDelta(st.baselineScores, scores) <= d.p.ScoreTolerance {
		if st.driftRuns != 0 {
			st.driftRuns, st.driftScores, st.dirty = 0, "", true
		}
		return nil
	}
	if st.driftRuns == 0 || maxScoreDelta(st.driftScores, scores) > d.p.ScoreTolerance {
		st.driftRuns, st.driftRun = 0, d.in.RunID
	}
	st.driftRuns++
	st.driftScores, st.dirty = scores, true
	if st.driftRuns >= d.p.ConfirmRuns {
		*out = append(*out, flip{probeID: st.probeID, sha: st.sha, before: st.baseline, after: st.baseline, beforeObs: st.baselineObs,
			afterObs: o.ID, firstRun: st.driftRun, modelBefore: st.baselineModel, modelAfter: modelOf(o.Result),
			scores: st.baselineScores + " -> " + scores, moves: scoreMoves(st.baselineScores, scores, d.p.ScoreTolerance)})
		st.baselineScores, st.driftRuns, st.driftScores = scores, 0, ""
	}
	return nil
}

// learnCategories records the categories of a verdict key as seen.
func (d *detector) learnCategories(known map[string]int64, key string) {
	v := ParseKey(key)
	if !v.Class.IsBlock() {
		return
	}
	for _, c := range v.Categories {
		if _, ok := known[c]; !ok {
			known[c] = -d.in.RunID // negative: new in this run, to be saved
		}
	}
}

// policyEvents turns confirmed non-noise flips into reverts, additions to
// open events, provider-wide joins, or new events.
func (d *detector) policyEvents(flips []flip, known map[string]int64, states map[string]*state) error {
	if len(flips) == 0 {
		return nil
	}
	// Reverts first: a flip back to an open event's before-verdict. The
	// candidates are read in one query (this target's unreverted event
	// probes), not one per flip.
	type open struct {
		eid                int64
		sha, before, after string
	}
	opens := map[string][]open{}
	rows, err := d.tx.QueryContext(d.ctx, `SELECT ep.probe_id, ep.event_id, ep.request_sha256, ep.before, ep.after FROM event_probes ep JOIN events e ON e.id = ep.event_id
		WHERE ep.target_id = ? AND ep.reverted_run = 0 AND e.kind IN ('policy_change', 'model_change') ORDER BY ep.event_id DESC`, d.t.ID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var pid string
		var o open
		if err := rows.Scan(&pid, &o.eid, &o.sha, &o.before, &o.after); err != nil {
			rows.Close()
			return err
		}
		opens[pid] = append(opens[pid], o)
	}
	rows.Close()
	var rest []flip
	reverted := map[int64][]string{}
	for _, f := range flips {
		var eid int64
		for _, o := range opens[f.probeID] {
			// Only the same bytes can flip back: a verdict on edited
			// bytes says nothing about the change the event recorded.
			if o.sha == f.sha && o.before == f.after && o.after == f.before {
				eid = o.eid
				break
			}
		}
		if eid == 0 {
			rest = append(rest, f)
			continue
		}
		if _, err := d.tx.ExecContext(d.ctx, `UPDATE event_probes SET reverted_run = ? WHERE event_id = ? AND target_id = ? AND probe_id = ?`, d.in.RunID, eid, d.t.ID, f.probeID); err != nil {
			return err
		}
		reverted[eid] = append(reverted[eid], f.probeID)
	}
	if err := d.closeProbes(reverted, "flipped back", ChangePartialRevert); err != nil {
		return err
	}
	if len(rest) == 0 {
		return nil
	}
	kind := KindPolicy
	for _, f := range rest {
		// The model changed between the last answer that held the
		// baseline and the first that differed (an answer naming no
		// model, such as an input block's error, counts as the target's
		// model that run): a model change long before the flip, or after
		// it began, did not come with it.
		if modelChanged(f.modelBefore, f.modelAfter) {
			kind = KindModel
		}
	}
	var newCats []string
	for _, f := range rest {
		v := ParseKey(f.after)
		if !v.Class.IsBlock() {
			continue
		}
		for _, c := range v.Categories {
			if r, ok := known[c]; !ok || r < 0 {
				newCats = append(newCats, c)
			}
		}
	}
	newCats = probes.SortedUnique(newCats)
	// Categories whose every firing probe stopped firing.
	active := map[string]bool{}
	for _, st := range states {
		v := ParseKey(st.baseline)
		if v.Class.IsBlock() {
			for _, c := range v.Categories {
				active[c] = true
			}
		}
	}
	var vanished []string
	for _, f := range rest {
		for _, c := range ParseKey(f.before).Categories {
			if !active[c] {
				vanished = append(vanished, c)
			}
		}
	}
	vanished = probes.SortedUnique(vanished)
	return d.event(kind, rest, newCats, vanished, states)
}

// closeProbes records that the probes in reverted (event id → probe ids,
// already marked reverted_run) left their events for reason why: change
// partial while some are left; when none is, the event closes as
// reverted, recorded as ChangeRetracted when every one of its probes was
// withdrawn, else as ChangeReverted.
func (d *detector) closeProbes(reverted map[int64][]string, why, partial string) error {
	eids := make([]int64, 0, len(reverted))
	for id := range reverted {
		eids = append(eids, id)
	}
	sort.Slice(eids, func(a, b int) bool { return eids[a] < eids[b] })
	for _, eid := range eids {
		var left, total, withdrawn int
		if err := d.tx.QueryRowContext(d.ctx, `SELECT COUNT(*) FILTER (WHERE reverted_run = 0), COUNT(*), COUNT(*) FILTER (WHERE withdrawn = 1) FROM event_probes WHERE event_id = ?`, eid).
			Scan(&left, &total, &withdrawn); err != nil {
			return err
		}
		detail := fmt.Sprintf("%d probe(s) on %s %s: %s", len(reverted[eid]), d.t.Name, why, strings.Join(reverted[eid], ", "))
		change := partial
		if left == 0 {
			// The event ends: retracted when every probe of it was
			// withdrawn (no change is left to speak of), reverted when
			// some flipped back (the provider undid what they showed).
			change = ChangeReverted
			if withdrawn == total {
				change = ChangeRetracted
			}
			if _, err := d.tx.ExecContext(d.ctx, `UPDATE events SET status = 'reverted', reverted_run = ?, last_run = ?, updated_at = ? WHERE id = ?`, d.in.RunID, d.in.RunID, ts(d.now), eid); err != nil {
				return err
			}
		} else if _, err := d.tx.ExecContext(d.ctx, `UPDATE events SET last_run = ?, updated_at = ? WHERE id = ?`, d.in.RunID, ts(d.now), eid); err != nil {
			return err
		}
		if left > 0 && partial == ChangeWithdrawn {
			// What is left of the evidence sets the direction.
			dir, err := d.eventDirection(eid)
			if err != nil {
				return err
			}
			if _, err := d.tx.ExecContext(d.ctx, `UPDATE events SET direction = ? WHERE id = ?`, dir, eid); err != nil {
				return err
			}
		}
		kind, err := d.eventKind(eid)
		if err != nil {
			return err
		}
		if err := d.record(eid, kind, change, detail); err != nil {
			return err
		}
	}
	return nil
}

// withdraw takes probes just marked nondeterministic (probe id → the
// request fingerprint they were marked on) out of this target's open
// policy and model events: their flips on those bytes are no longer
// evidence of a change (an event left without evidence is retracted).
// Flips on bytes the probe sent before an input change stay.
func (d *detector) withdraw(marked map[string]string) error {
	if len(marked) == 0 {
		return nil
	}
	rows, err := d.tx.QueryContext(d.ctx, `SELECT ep.event_id, ep.probe_id, ep.request_sha256 FROM event_probes ep JOIN events e ON e.id = ep.event_id
		WHERE ep.target_id = ? AND ep.reverted_run = 0 AND e.status = 'open' AND e.kind IN ('policy_change', 'model_change') ORDER BY ep.event_id, ep.probe_id`, d.t.ID)
	if err != nil {
		return err
	}
	withdrawn := map[int64][]string{}
	for rows.Next() {
		var eid int64
		var pid, sha string
		if err := rows.Scan(&eid, &pid, &sha); err != nil {
			rows.Close()
			return err
		}
		if s, ok := marked[pid]; ok && s == sha {
			withdrawn[eid] = append(withdrawn[eid], pid)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for eid, ps := range withdrawn {
		for _, pid := range ps {
			if _, err := d.tx.ExecContext(d.ctx, `UPDATE event_probes SET reverted_run = ?, withdrawn = 1 WHERE event_id = ? AND target_id = ? AND probe_id = ?`, d.in.RunID, eid, d.t.ID, pid); err != nil {
				return err
			}
		}
	}
	return d.closeProbes(withdrawn, "marked nondeterministic, withdrawn from the evidence", ChangeWithdrawn)
}

// ndWindowRuns is how close reverts must come to add up toward
// nondeterminism (see revert in run): a day of hourly runs.
const ndWindowRuns = 24

// flipModels returns the most common (before, after) model pair among
// flips whose model changed (on a tie, the pair that reached the count
// first).
func flipModels(flips []flip) (before, after string, ok bool) {
	count := map[[2]string]int{}
	best := 0
	for _, f := range flips {
		if !modelChanged(f.modelBefore, f.modelAfter) {
			continue
		}
		k := [2]string{f.modelBefore, f.modelAfter}
		count[k]++
		if count[k] > best {
			best, before, after = count[k], k[0], k[1]
		}
	}
	return before, after, best > 0
}

func modelChanged(a, b string) bool {
	if a == b {
		return false
	}
	aid, afp, _ := strings.Cut(a, "|")
	bid, bfp, _ := strings.Cut(b, "|")
	return (aid != "" && bid != "" && aid != bid) || (afp != "" && bfp != "" && afp != bfp)
}

func (d *detector) eventKind(id int64) (string, error) {
	var k string
	err := d.tx.QueryRowContext(d.ctx, `SELECT kind FROM events WHERE id = ?`, id).Scan(&k)
	return k, err
}

// event joins flips to an open event (this target, or provider-wide) or
// opens a new one.
func (d *detector) event(kind string, flips []flip, newCats, vanished []string, states map[string]*state) error {
	run := d.in.RunID
	since := run - int64(d.p.WindowRuns)
	family := []string{kind}
	if kind == KindPolicy || kind == KindModel {
		family = []string{KindPolicy, KindModel}
	}
	in := "'" + strings.Join(family, "','") + "'"
	// 1. An open event on this target within the window.
	var eid int64
	err := d.tx.QueryRowContext(d.ctx, `SELECT e.id FROM events e JOIN event_targets et ON et.event_id = e.id
		WHERE et.target_id = ? AND e.status = 'open' AND e.kind IN (`+in+`) AND e.last_run >= ? ORDER BY e.id DESC LIMIT 1`, d.t.ID, since).Scan(&eid)
	if err != nil && err != sql.ErrNoRows {
		return err
	}
	change := ChangeProbesAdded
	var same int // joining: this target's flips that moved as the event's did
	if eid == 0 && kind != KindNondeterminism && kind != KindScoreDrift {
		// 2. A provider-wide change: an open event of the same provider on
		// another target, within the window, flipping the same probes.
		eid, same, err = d.providerWide(in, since, flips)
		if err != nil {
			return err
		}
		change = ChangeTargetJoined
	}
	if eid == 0 {
		return d.open(kind, flips, newCats, vanished)
	}
	// Probes of this target the event has already (a probe that moved
	// again, a nondeterministic one marked again) are not "more probes".
	had := map[string]bool{}
	rows, err := d.tx.QueryContext(d.ctx, `SELECT probe_id FROM event_probes WHERE event_id = ? AND target_id = ?`, eid, d.t.ID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var pid string
		if err := rows.Scan(&pid); err != nil {
			rows.Close()
			return err
		}
		had[pid] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, f := range flips {
		if err := d.addProbe(eid, f); err != nil {
			return err
		}
	}
	if _, err := d.tx.ExecContext(d.ctx, `INSERT OR IGNORE INTO event_targets (event_id, target_id, joined_run) VALUES (?, ?, ?)`, eid, d.t.ID, run); err != nil {
		return err
	}
	// Merge kind, direction and categories.
	var oldKind, oldNew, oldVan string
	if err := d.tx.QueryRowContext(d.ctx, `SELECT kind, new_categories, vanished_categories FROM events WHERE id = ?`, eid).Scan(&oldKind, &oldNew, &oldVan); err != nil {
		return err
	}
	newKind := oldKind
	if kind == KindModel {
		newKind = KindModel
	}
	dir, err := d.eventDirection(eid)
	if err != nil {
		return err
	}
	mergedNew := probes.SortedUnique(append(splitList(oldNew), newCats...))
	mergedVan := probes.SortedUnique(append(splitList(oldVan), vanished...))
	// model_before and model_after describe one target, the one that
	// opened the event: a target that joined it (now or in an earlier run)
	// reports its own model, and pairing it with the opener's would show a
	// model change no target made. For the opener, as when opening: a model
	// change seen only on the flips keeps naming their model, not the
	// target's unchanged one.
	var opener int64
	var modelBefore, modelAfter string
	if err := d.tx.QueryRowContext(d.ctx, `SELECT target_id, model_before, model_after FROM events WHERE id = ?`, eid).Scan(&opener, &modelBefore, &modelAfter); err != nil {
		return err
	}
	switch {
	case opener != d.t.ID:
	case newKind != KindModel || modelChanged(modelBefore, d.model):
		modelAfter = d.model
	default:
		if _, a, ok := flipModels(flips); ok {
			modelAfter = a
		}
	}
	if _, err := d.tx.ExecContext(d.ctx, `UPDATE events SET kind = ?, direction = ?, new_categories = ?, vanished_categories = ?, last_run = ?, model_after = ?, updated_at = ? WHERE id = ?`,
		newKind, dir, strings.Join(mergedNew, ","), strings.Join(mergedVan, ","), run, modelAfter, ts(d.now), eid); err != nil {
		return err
	}
	var added, again []string
	for _, f := range flips {
		if had[f.probeID] {
			again = append(again, f.probeID)
		} else {
			added = append(added, f.probeID)
		}
	}
	if len(added) == 0 && kind == KindNondeterminism && change == ChangeProbesAdded {
		// Marked again, nothing new: the rows are updated, nobody told.
		return nil
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, fmt.Sprintf("%d more probe(s) on %s: %s", len(added), d.t.Name, strings.Join(added, ", ")))
	}
	if len(again) > 0 {
		parts = append(parts, fmt.Sprintf("%d probe(s) on %s changed again: %s", len(again), d.t.Name, strings.Join(again, ", ")))
	}
	detail := strings.Join(parts, "; ")
	if change == ChangeTargetJoined {
		detail = fmt.Sprintf("target %s changed the same way (%d probes, %d of them moved as the event's did): provider-wide change", d.t.Name, len(flips), same)
	}
	if kind == KindModel && opener != d.t.ID {
		// The event's model fields are the opener's: name this target's
		// own model change here.
		if b, a, ok := flipModels(flips); ok {
			detail += fmt.Sprintf("; model on %s: %s → %s", d.t.Name, b, a)
		} else if modelChanged(d.prevModel, d.model) {
			detail += fmt.Sprintf("; model on %s: %s → %s", d.t.Name, d.prevModel, d.model)
		}
	}
	if newKind != oldKind {
		detail += fmt.Sprintf("; kind is now %s", newKind)
	}
	return d.record(eid, newKind, change, detail)
}

func (d *detector) providerWide(kindsIn string, since int64, flips []flip) (eid int64, same int, err error) {
	rows, err := d.tx.QueryContext(d.ctx, `SELECT e.id FROM events e WHERE e.provider = ? AND e.status = 'open' AND e.kind IN (`+kindsIn+`) AND e.last_run >= ?
		AND NOT EXISTS (SELECT 1 FROM event_targets et WHERE et.event_id = e.id AND et.target_id = ?) ORDER BY e.id DESC`, d.t.Provider, since, d.t.ID)
	if err != nil {
		return 0, 0, err
	}
	var cands []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, 0, err
		}
		cands = append(cands, id)
	}
	rows.Close()
	// A probe changed "the same way" on both targets when its verdict moved
	// in the same direction (tightened, loosened, recategorized) and ends
	// blocked on both or on neither: a stage change on one target does not
	// join an allowed→blocked event on another.
	type move struct{ before, after string }
	mine := map[string]move{}
	for _, f := range flips {
		mine[f.probeID] = move{f.before, f.after}
	}
	// Both sides are counted in probes: the event's distinct probes (over
	// all its targets) and this target's flips; a probe counts once as the
	// same, however many of the event's targets moved it (in however many
	// ways), so one shared probe cannot count as two.
	for _, id := range cands {
		rows, err := d.tx.QueryContext(d.ctx, `SELECT DISTINCT probe_id, before, after FROM event_probes WHERE event_id = ?`, id)
		if err != nil {
			return 0, 0, err
		}
		theirs, same := map[string]bool{}, map[string]bool{}
		for rows.Next() {
			var pid, before, after string
			if err := rows.Scan(&pid, &before, &after); err != nil {
				rows.Close()
				return 0, 0, err
			}
			theirs[pid] = true
			m, ok := mine[pid]
			if ok && ParseKey(m.after).Class.IsBlock() == ParseKey(after).Class.IsBlock() &&
				direction(ParseKey(m.before), ParseKey(m.after)) == direction(ParseKey(before), ParseKey(after)) {
				same[pid] = true
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, 0, err
		}
		smaller := min(len(theirs), len(mine))
		if smaller > 0 && len(same)*2 >= smaller {
			return id, len(same), nil
		}
	}
	return 0, 0, nil
}

func (d *detector) open(kind string, flips []flip, newCats, vanished []string) error {
	run := d.in.RunID
	firstRun := run
	dirs := make([]string, len(flips))
	ids := make([]string, len(flips))
	for i, f := range flips {
		if f.firstRun < firstRun {
			firstRun = f.firstRun
		}
		dirs[i] = direction(ParseKey(f.before), ParseKey(f.after))
		ids[i] = f.probeID
	}
	dir := combine(dirs)
	if kind == KindScoreDrift || dir == Unchanged {
		dir = Mixed
		if kind == KindScoreDrift {
			dir = scoreDirection(flips)
		}
	}
	sort.Strings(ids)
	// Unique across databases filing into one repository: the target's
	// name, the kind, the runs, the probes and the creation time.
	h := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%s|%d|%s|%s", d.t.Provider, d.t.Name, kind, firstRun, strings.Join(ids, ","), ts(d.now))))
	fp := hex.EncodeToString(h[:])[:20]
	// The target's most common model, unless it stayed the same while the
	// flipped probes' models changed (a model change seen only on some
	// answers): then the event names the flips' models, never "the same
	// model before and after" under a model_change.
	modelBefore, modelAfter := d.modelBefore(firstRun), d.model
	if kind == KindModel && !modelChanged(modelBefore, modelAfter) {
		if b, a, ok := flipModels(flips); ok {
			modelBefore, modelAfter = b, a
		}
	}
	res, err := d.tx.ExecContext(d.ctx, `INSERT INTO events (fingerprint, target_id, provider, kind, direction, opened_kind, opened_direction, new_categories, vanished_categories, first_run, confirmed_run, last_run,
		model_before, model_after, corpus_version, corpus_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		fp, d.t.ID, d.t.Provider, kind, dir, kind, dir, strings.Join(newCats, ","), strings.Join(vanished, ","), firstRun, run, run,
		modelBefore, modelAfter, d.in.CorpusVersion, d.in.CorpusHash, ts(d.now), ts(d.now))
	if err != nil {
		return fmt.Errorf("open event: %w", err)
	}
	eid, _ := res.LastInsertId()
	if _, err := d.tx.ExecContext(d.ctx, `INSERT INTO event_targets (event_id, target_id, joined_run) VALUES (?, ?, ?)`, eid, d.t.ID, run); err != nil {
		return err
	}
	for _, f := range flips {
		if err := d.addProbe(eid, f); err != nil {
			return err
		}
	}
	detail := fmt.Sprintf("%s on %s: %d probe(s) %s", kind, d.t.Name, len(flips), dir)
	if len(newCats) > 0 {
		detail += "; new categories: " + strings.Join(newCats, ", ")
	}
	return d.record(eid, kind, ChangeOpened, detail)
}

// scoreDirection is the direction of the score moves past the tolerance
// (the moves a score-drift event reports): moves within the tolerance are
// noise and never make a one-way drift "mixed".
func scoreDirection(flips []flip) string {
	up, down := 0, 0
	for _, f := range flips {
		for _, m := range parseScoreMoves(f.moves) {
			if m.After > m.Before {
				up++
			} else if m.After < m.Before {
				down++
			}
		}
	}
	switch {
	case up > 0 && down == 0:
		return Tightened
	case down > 0 && up == 0:
		return Loosened
	}
	return Mixed
}

func (d *detector) addProbe(eid int64, f flip) error {
	_, err := d.tx.ExecContext(d.ctx, `INSERT INTO event_probes (event_id, target_id, probe_id, request_sha256, before, after, before_obs, after_obs, first_run, confirmed_run, flip_rate, score_moves)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (event_id, target_id, probe_id) DO UPDATE SET after = excluded.after, after_obs = excluded.after_obs, confirmed_run = excluded.confirmed_run, flip_rate = excluded.flip_rate, reverted_run = 0, withdrawn = 0,
			score_moves = CASE WHEN excluded.score_moves != '' THEN excluded.score_moves ELSE score_moves END`,
		eid, d.t.ID, f.probeID, f.sha, f.before, f.after, f.beforeObs, f.afterObs, f.firstRun, d.in.RunID, f.flipRate, f.moves)
	return err
}

func (d *detector) eventDirection(eid int64) (string, error) {
	// Withdrawn probes (marked nondeterministic) are no evidence of the
	// change: they do not steer its direction.
	rows, err := d.tx.QueryContext(d.ctx, `SELECT before, after FROM event_probes WHERE event_id = ? AND withdrawn = 0`, eid)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var dirs []string
	for rows.Next() {
		var b, a string
		if err := rows.Scan(&b, &a); err != nil {
			return "", err
		}
		dirs = append(dirs, direction(ParseKey(b), ParseKey(a)))
	}
	dir := combine(dirs)
	if dir == Unchanged {
		dir = Mixed
	}
	return dir, rows.Err()
}

// record logs an event change and queues its delivery: an opening when
// Enqueue takes the kind it opens as, a later change when the event's
// opening was queued (see Params.Enqueue).
func (d *detector) record(eid int64, kind, change, detail string) error {
	res, err := d.tx.ExecContext(d.ctx, `INSERT INTO event_updates (event_id, run_id, change, detail, at, target_id, kind) VALUES (?, ?, ?, ?, ?, ?, ?)`, eid, d.in.RunID, change, detail, ts(d.now), d.t.ID, kind)
	if err != nil {
		return err
	}
	uid, _ := res.LastInsertId()
	d.res.Changes = append(d.res.Changes, Change{EventID: eid, Change: change, Detail: detail})
	if d.p.Enqueue == nil {
		return nil
	}
	if change == ChangeOpened {
		if !d.p.Enqueue(kind) {
			return nil
		}
	} else {
		// Its first update is its opening: queued or not, that decided.
		var queued bool
		if err := d.tx.QueryRowContext(d.ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE update_id = (SELECT MIN(id) FROM event_updates WHERE event_id = ?))`, eid).Scan(&queued); err != nil {
			return err
		}
		if !queued {
			return nil
		}
	}
	action := "comment"
	switch change {
	case ChangeOpened:
		action = "open"
	case ChangeReverted, ChangeRetracted:
		action = "revert"
	}
	_, err = d.tx.ExecContext(d.ctx, `INSERT INTO outbox (event_id, update_id, action, created_at) VALUES (?, ?, ?, ?)`, eid, uid, action, ts(d.now))
	return err
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// trackModel records the model the target reported in this run: the most
// common non-empty model id|fingerprint among answered observations.
func (d *detector) trackModel(obs []*storage.Observation) error {
	type mk struct{ id, fp string }
	counts := map[mk]int{}
	var bestK mk
	for _, o := range obs {
		if o.Result.ModelID == "" && o.Result.ModelFP == "" {
			continue
		}
		k := mk{o.Result.ModelID, o.Result.ModelFP}
		counts[k]++
		if n, b := counts[k], counts[bestK]; n > b || (n == b && k.id+"|"+k.fp < bestK.id+"|"+bestK.fp) {
			bestK = k
		}
	}
	best := ""
	if counts[bestK] > 0 {
		best = bestK.id + "|" + bestK.fp
	}
	var cur, prev string
	var since int64
	err := d.tx.QueryRowContext(d.ctx, `SELECT model, prev_model, since_run FROM target_models WHERE target_id = ?`, d.t.ID).Scan(&cur, &prev, &since)
	if err != nil && err != sql.ErrNoRows {
		return err
	}
	switch {
	case best == "":
		err = nil
	case err == sql.ErrNoRows:
		cur, prev, since = best, "", d.in.RunID
		_, err = d.tx.ExecContext(d.ctx, `INSERT INTO target_models (target_id, model, prev_model, since_run) VALUES (?, ?, '', ?)`, d.t.ID, best, since)
	case best != cur:
		prev, cur, since = cur, best, d.in.RunID
		_, err = d.tx.ExecContext(d.ctx, `UPDATE target_models SET model = ?, prev_model = ?, since_run = ? WHERE target_id = ?`, cur, prev, since, d.t.ID)
	default:
		err = nil
	}
	d.model, d.prevModel, d.modelSince = cur, prev, since
	return err
}

// modelBefore is the model in force before a change that started at run.
func (d *detector) modelBefore(run int64) string {
	if d.modelSince >= run && d.prevModel != "" {
		return d.prevModel
	}
	return d.model
}
