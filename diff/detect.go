package diff

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	// WindowRuns: a target's confirmed flips extend its open event whose
	// last confirmed flip is at most this many runs before (windowSQL);
	// flips back and other closures do not count as flips here.
	WindowRuns int
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
	// Reclassify, when set, reads an answer with the classifier the
	// target has now (runner.Classify on its prober). A probe's verdict
	// is compared with the baseline's answer as this classifier reads
	// it: when a driftprobe upgrade reads some answers differently (a
	// category a provider documents newly mapped, a failure no longer
	// taken for an answer), the stored baseline and candidate verdicts,
	// and the baseline's scores, are re-read from their stored answers
	// before they are compared, so the same answers read anew are never a
	// flip nor a score drift. nil: stored verdicts are compared as they
	// are (an answer whose body was pruned, or that does not verify
	// against its fingerprints, is always compared as stored).
	Reclassify func(req *probes.Request, resp *probes.Response) probes.Result
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
	// Reread counts the probes whose stored baseline, candidate or
	// baseline scores this run re-read differently with the current
	// classifier (TargetRun.Reclassify): a classifier change, never a
	// flip. Callers should log it.
	Reread int `json:"reread,omitempty"`
	// Renamed lists probe ids new to the target whose request bytes are
	// those of a probe no longer in the corpus: most likely that probe,
	// renamed. Detection does not guess identities: the new id establishes
	// its own baseline (the old id's history, and the events citing it, do
	// not carry over) and the old id's state is kept in case it returns.
	// Callers should log these.
	Renamed []ProbeRename `json:"renamed,omitempty"`
	// OriginChange is set when the target's requests went to another
	// endpoint than in its previous run (another resource, region,
	// gateway or server under the same target name): every probe's state
	// was reset as an input change (counted in InputChanges), since the
	// request fingerprint, which leaves hosts out, cannot tell. Callers
	// should log it.
	OriginChange *OriginChange `json:"origin_change,omitempty"`
	// StateLost is set when the detection state the target had (at the
	// endpoint of this run) was missing: removed from the database (the
	// row db check tells to delete when it no longer decodes) or lost,
	// though an earlier run had established it (stateEstablished). Every
	// probe's baseline restarted, recorded as input changes with cause
	// state (counted in InputChanges). With OriginChange, the target moved
	// back to an endpoint whose parked state was missing. Callers should
	// log it.
	StateLost bool `json:"state_lost,omitempty"`
}

// OriginChange is a target's endpoint moving between two runs
// (storage.RunTarget.Origin).
type OriginChange struct {
	From    string `json:"from"`
	To      string `json:"to"`
	FromRun int64  `json:"from_run"` // the last run at From
	// Resumed: the target was at To before, and the detection state it
	// left there resumed (no baseline restarts; InputChanges counts none).
	Resumed bool `json:"resumed"`
}

// ProbeRename is a probe id that appeared with the request bytes of a
// probe id no longer in the corpus.
type ProbeRename struct {
	From          string `json:"from"`
	To            string `json:"to"`
	RequestSHA256 string `json:"request_sha256"`
}

// Result is what Apply did.
type Result struct {
	Changes []Change
	// Stats has one entry per target detected (none for a target in
	// Failed).
	Stats []TargetStats
	// Failed lists the targets whose detection failed in this run because
	// their detection state, or the state parked at the endpoint they
	// returned to, does not decode (DamagedStateError): each target's
	// writes of this run were rolled back and its answers of this run are
	// not detected (they never will be: the run is marked detected with the
	// other targets'), until the damaged row is removed (then its baselines
	// restart, input changes with cause state). The other targets of the
	// run were detected as if it were not in it. Callers must report them:
	// the run did not do its work for these targets.
	Failed []TargetFailure
}

// TargetFailure is a target whose detection failed in a run (Result.Failed).
type TargetFailure struct {
	Target string `json:"target"`
	// Err says what failed and how to recover: which row does not decode
	// and the statement that removes it (as db check says).
	Err string `json:"error"`
}

// DamagedStateError is a target's detection failing because its detection
// state (probe_states) or the state parked at the endpoint it returned to
// (parked_states) does not decode: Apply leaves that target out of the run
// (Result.Failed) and detects the others. Its message names the row and
// how to remove it.
type DamagedStateError struct {
	TargetID int64
	// Origin is the endpoint of a parked state; "" for the target's
	// detection state.
	Origin string
	Err    error // wraps errCorruptState
	msg    string
}

func (e *DamagedStateError) Error() string { return e.msg }
func (e *DamagedStateError) Unwrap() error { return e.Err }

// damagedState wraps a decoding failure (errCorruptState) of the target's
// state (origin "") or of the state parked at origin.
func damagedState(target int64, origin string, err error) *DamagedStateError {
	what := "detection state"
	if origin != "" {
		what = "parked detection state"
	}
	return &DamagedStateError{TargetID: target, Origin: origin, Err: err, msg: damagedStateMessage(what, target, origin, err)}
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
	probeID string
	sha     string
	// sinceRun is where the probe's flip rate counts from: the run its
	// request bytes were first seen in on the target, advanced by one for
	// every run since that did not compare its first answer with the one
	// before (the target away — disabled, removed, at another endpoint —,
	// the probe out of the corpus or unanswered, the run degraded), so that
	// run − sinceRun is the number of run-to-run transitions compared
	// (flipRate; states written before it was advanced count the runs
	// before their first detection by this driftprobe as compared).
	sinceRun       int64
	baseline       string
	baselineRun    int64
	baselineModel  string
	baselineObs    int64
	baselineScores string
	// scoresObs and scoresModel: the answer that carries baselineScores and
	// its model (a score drift's before side: baselineObs and
	// baselineModel follow the verdict, and move to answers under a new
	// model whose scores may already have moved); 0 and "" in states
	// written before format 4.
	scoresObs        int64
	scoresModel      string
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
	absentSince      int64  // first complete run that did not answer the probe (it left the corpus; state kept); 0: in it
	nondeterministic bool
	dirty            bool
	isNew            bool // no state existed for the probe id before this run
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
	// settled: a probe marked nondeterministic whose new verdict held
	// confirm_runs runs (a change reported as nondeterminism, never as
	// a policy change), not a re-marking.
	settled bool
}

func modelOf(r probes.Result) string { return JoinModel(r.ModelID, r.ModelFP) }

// JoinModel composes the "model id|fingerprint" string an answer's model
// is stored and compared as (probe states, the target's model, an event's
// model_before and model_after). The fingerprint's "%" and "|" are escaped
// (%25, %7C), so the last "|" always separates the two and SplitModel
// gives back both parts, even for a model id that holds "|": a provider
// that names its model "gpt-4o|fp_x" cannot pass "fp_x" off as the
// fingerprint. An id and fingerprint holding neither (every pair of real
// providers' so far) compose as before: id + "|" + fingerprint.
func JoinModel(id, fp string) string { return id + "|" + fpEscaper.Replace(fp) }

// SplitModel splits a string JoinModel composed into the model id and the
// fingerprint: at the last "|", the fingerprint unescaped. A string
// without "|" is an id without a fingerprint. Strings stored before
// JoinModel escaped the fingerprint read as they always did unless they
// held more than one "|" (only an id or a fingerprint holding one makes
// that); such a string is read as an id holding "|".
func SplitModel(s string) (id, fp string) {
	i := strings.LastIndexByte(s, '|')
	if i < 0 {
		return s, ""
	}
	return s[:i], fpUnescaper.Replace(s[i+1:])
}

// ModelText is a JoinModel string for people: as it is ("id|fp") when
// neither part holds "|" or "%" (every real provider's so far), else
// spelled out unambiguously: `id "…" fingerprint "…"`.
func ModelText(s string) string {
	id, fp := SplitModel(s)
	if !strings.ContainsAny(id, "|%") && !strings.ContainsAny(fp, "|%") {
		return s
	}
	return fmt.Sprintf("id %q fingerprint %q", id, fp)
}

var (
	fpEscaper   = strings.NewReplacer("%", "%25", "|", "%7C")
	fpUnescaper = strings.NewReplacer("%25", "%", "%7C", "|")
)

// Apply runs detection for one stored run in a single transaction: state
// updates, events, and outbox rows commit together or not at all.
//
// A target whose detection state (or the state parked at the endpoint it
// returns to) does not decode is left out: its part of the first phase
// runs in a savepoint, rolled back when it fails so (a parking done before
// the parked state failed to decode is undone too), and it takes no part
// in the later phases; it is listed in Result.Failed, and the run is
// detected (and marked so) for the other targets. Any other error fails
// the whole run's detection, as before: nothing is written.
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
		// Two phases, so that what a run finds does not depend on the
		// order its targets are detected in. First every target's answers
		// update its state and close what they end in open events (flips
		// back, probes that moved on, probes withdrawn as
		// nondeterministic); only then do new flips open, extend or join
		// events, target by target. An event every probe of which flipped
		// back in this run is closed before any target's flips of this run
		// could join it, whichever target's name sorts first.
		//
		// Each target's first phase runs in a savepoint: a target whose
		// detection state does not decode (errCorruptState) is rolled back
		// to it and left out of the later phases (Result.Failed), so that a
		// damaged row stops that target's detection, not every target's.
		ds := make([]*detector, 0, len(in.Targets))
		for i, t := range in.Targets {
			d := &detector{tx: tx, ctx: ctx, in: &in, p: p, t: t, now: now, res: res}
			if _, err := tx.ExecContext(ctx, `SAVEPOINT detect_target`); err != nil {
				return fmt.Errorf("detect %s: %w", t.Name, err)
			}
			changes := len(res.Changes)
			err := d.observe(obsOf[i])
			if err == nil {
				err = d.settle()
			}
			if err != nil && !errors.Is(err, errCorruptState) {
				return fmt.Errorf("detect %s: %w", t.Name, err)
			}
			if err != nil {
				if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO detect_target`); rerr != nil {
					return fmt.Errorf("detect %s: %w (rolling back its detection: %w)", t.Name, err, rerr)
				}
				res.Changes = res.Changes[:changes]
				res.Failed = append(res.Failed, TargetFailure{Target: t.Name, Err: err.Error()})
			} else {
				ds = append(ds, d)
			}
			if _, err := tx.ExecContext(ctx, `RELEASE detect_target`); err != nil {
				return fmt.Errorf("detect %s: %w", t.Name, err)
			}
		}
		// The second phase in two steps: flips extending their own
		// target's open event first, every target, then flips joining
		// another target's event or opening one. A provider-wide join is
		// thus decided against events already extended by this run's flips
		// of their own targets, whichever target's name sorts first.
		for _, d := range ds {
			if err := d.extend(); err != nil {
				return fmt.Errorf("detect %s: %w", d.t.Name, err)
			}
		}
		// Then the flips left (joining other targets' events, or opening
		// events), grouped across targets first, so that which targets
		// end up in one event does not depend on their names either.
		order, err := groupProviderWide(ds)
		if err != nil {
			return fmt.Errorf("detect: %w", err)
		}
		for _, d := range order {
			if _, err := d.policyEvents(d.flips, d.known, d.states, false); err != nil {
				return fmt.Errorf("detect %s: %w", d.t.Name, err)
			}
		}
		for _, d := range ds {
			if err := d.report(); err != nil {
				return fmt.Errorf("detect %s: %w", d.t.Name, err)
			}
		}
		// With the state and events: a run is never left finished but
		// undetected (storage.UndetectedRuns) once this commits. Its
		// targets detected are marked so (run_targets.detected), those
		// in Result.Failed are not: their answers of this run established
		// nothing (stateEstablished).
		detected := make([]int64, len(ds))
		for i, d := range ds {
			detected[i] = d.t.ID
		}
		return storage.MarkDetected(ctx, tx, in.RunID, detected)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// detector detects one target's part of a run, in the phases Apply runs:
// observe and settle, then extend, then report.
type detector struct {
	origin    string // the endpoint this run answered at (run_targets.origin; "" when not known)
	noState   bool   // the target had no detection state (probe_states row) when this run's detection began
	model     string // model the target reports now (id|fingerprint)
	prevModel string // the one before it
	tx        *sql.Tx
	ctx       context.Context
	in        *Input
	p         Params
	t         TargetRun
	now       time.Time
	res       *Result

	// Carried from the first phase to the second.
	states  map[string]*state
	known   map[string]int64 // category → first run (negative: new in this run)
	stats   TargetStats
	byProbe map[string][]*storage.Observation // this run's samples per probe, sample 0 first
	flips   []flip                            // confirmed policy flips (after settle: those left to report)
	pending bool                              // flips hold changes extend did not record (Apply records them as groupProviderWide decides)
	// Set by groupProviderWide for a target with pending flips: group, the
	// flips go where it decided (joinEvent, an open event; joinVia, the
	// event that target opens in this run; neither: open one); opened, the
	// policy event this target opened in this run.
	group     bool
	joinEvent int64
	joinVia   *detector
	same      int // joining: its flips that moved as the rest of its group did
	opened    int64
	ndFlips   []flip   // confirmed flips of nondeterministic probes
	drifts    []flip   // confirmed score drift
	newlyND   []string // probes marked nondeterministic in this run
	// other: per probe, a verdict this run that differs from the one it
	// is compared with (a disagreeing sample, or the candidate it left),
	// with the observation that carries it: what a probe newly marked
	// nondeterministic went back and forth with.
	other map[string]otherAnswer
	// reads caches rereadObs by observation id for this run; rereadIDs
	// are the probes whose stored verdicts or scores it changed
	// (TargetStats.Reread).
	reads     map[int64]reading
	rereadIDs map[string]bool
}

func (d *detector) markReread(pid string) {
	if d.rereadIDs == nil {
		d.rereadIDs = map[string]bool{}
	}
	d.rereadIDs[pid] = true
}

// reading is a stored answer as the current classifier reads it (key,
// scores), with the scores it was stored with (stored).
type reading struct {
	key, scores, stored string
	ok                  bool
}

// rereadObs reads the stored answer id with t.Reclassify: its verdict key
// and score string. ok is false when there is nothing to re-read with, or
// nothing trustworthy to re-read: no classifier, no answer (id 0, no
// HTTP status), a pruned or cut body, a body or request that does not
// match its recorded fingerprint, a damaged row, or an answer the
// classifier now reads as no verdict (or as account-level enforcement).
func (d *detector) rereadObs(id int64) (key, scores string, ok bool) {
	if d.t.Reclassify == nil || id == 0 {
		return "", "", false
	}
	if r, seen := d.reads[id]; seen {
		return r.key, r.scores, r.ok
	}
	var r reading
	defer func() {
		if d.reads == nil {
			d.reads = map[int64]reading{}
		}
		d.reads[id] = r
	}()
	o, reqBody, body, err := storage.StoredAnswer(d.ctx, d.tx, id)
	if err != nil || o.HTTPStatus == 0 || o.BodiesPruned || (o.BodyTruncated && o.Result.Reason != "truncated_response") {
		return "", "", false
	}
	if !o.BodyIntact(body) || o.RequestFingerprint(reqBody) != o.RequestSHA256 {
		return "", "", false
	}
	res := d.t.Reclassify(o.Request(reqBody), &probes.Response{Status: o.HTTPStatus, Body: body, Truncated: o.BodyTruncated})
	if !res.Class.IsVerdict() || res.Class == probes.AbuseBlock {
		return "", "", false
	}
	r = reading{key: VerdictOf(res).Key(), scores: scoreString(res), stored: scoreString(o.Result), ok: true}
	return r.key, r.scores, true
}

// reread brings st's stored verdicts up to the current classifier when
// that explains v, this run's verdict (answer obs): when v differs from
// the baseline (or the candidate), the answer that carried it is read
// again, and if it now reads as v, the stored verdict becomes v and the
// state cites obs for it, an answer stored with that very verdict (so
// what an event later claims for the side is what its cited row holds,
// as evidence verifies). A reading that does not explain v is left: v is
// a change either way, judged against the verdict as stored and cited.
// It reports whether the baseline changed, and whether the candidate did.
func (d *detector) reread(st *state, v string, obs int64) (baseline, candidate bool) {
	if st.baseline != "" && v != st.baseline {
		if k, _, ok := d.rereadObs(st.baselineObs); ok && k == v {
			st.baseline, st.baselineObs, st.dirty, baseline = k, obs, true, true
		}
	}
	if st.candidate != "" && v != st.candidate {
		if k, _, ok := d.rereadObs(st.candidateObs); ok && k == v {
			st.candidate, st.candidateObs, st.dirty, candidate = k, obs, true, true
		}
	}
	return baseline, candidate
}

// otherAnswer is a verdict key and the observation that answered it; obs
// is 0 when not known: a candidate left in the state by a driftprobe that
// kept no observation for candidates while a baseline was established.
type otherAnswer struct {
	key string
	obs int64
}

// observe updates the target's detection state with this run's answers
// and stores it; the flips it confirms wait for settle and report.
func (d *detector) observe(obs []*storage.Observation) error {
	run := d.in.RunID
	states, err := loadStates(d.ctx, d.tx, d.t.ID)
	if errors.Is(err, errCorruptState) {
		return damagedState(d.t.ID, "", err)
	}
	if err != nil {
		return err
	}
	known, err := loadCategories(d.ctx, d.tx, d.t.ID)
	if err != nil {
		return err
	}
	stats := TargetStats{Target: d.t.Name, Degraded: d.t.Status != storage.TargetComplete}
	// Before a move parks them: a state parked now, with what it left
	// pending long ago, must not resume it later.
	if len(states) > 0 {
		prev, prevDetected, err := d.previousRuns()
		if err != nil {
			return err
		}
		d.dropStaleCandidates(states, prev)
		// Nor do the runs the target was away from count toward its
		// probes' flip rates (a state parked now keeps that, too).
		d.skipAwayRuns(states, prevDetected)
	}
	states, originReset, foreign, err := d.moveOrigin(states, obs, &stats)
	if err != nil {
		return err
	}
	if foreign {
		obs = nil // another endpoint's answers: none reaches this state
	}
	d.states, d.known = states, known
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
	d.byProbe = byProbe
	// A probe answered in this run is in the corpus: one that was absent
	// from it (removed by an earlier corpus version) is back, and is
	// compared below with the state it left with when its bytes are the
	// same (a flip that happened while it was away is seen; back on an
	// open event's before-verdict, it reverts it).
	for _, pid := range order {
		if st := states[pid]; st != nil && st.absentSince > 0 {
			// The runs it was absent from compared nothing (flipRate).
			st.sinceRun += run - st.absentSince
			st.absentSince, st.dirty = 0, true
		}
	}
	// compared: the probes whose first answer this run compared with the
	// one before (or that started their state in it); every other probe in
	// the corpus has the run left out of its flip rate (sinceRun).
	compared := make(map[string]bool, len(order))

	var flips, ndFlips, drifts []flip
	var newlyND []string
	other := map[string]otherAnswer{}
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
		isNew := st == nil
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
			st = &state{probeID: pid, sha: first.RequestSHA256, sinceRun: run, lastVerdict: v, dirty: true, isNew: isNew}
			states[pid] = st
			compared[pid] = true
			if stats.Degraded {
				continue // a degraded run starts no candidate and confirms no baseline
			}
		} else if stats.Degraded {
			continue // confirms nothing, breaks no streak
		} else if compared[pid] = true; v != st.lastVerdict { // (compared: whether it changed or not)
			prevLast := st.lastVerdict
			st.changes++
			st.lastVerdict = v
			st.dirty = true
			if prevLast == st.baseline && st.baseline != "" {
				// The answer the previous run gave was the baseline's:
				// read anew to this very verdict, it is no change.
				if k, _, ok := d.rereadObs(st.baselineObs); ok && k == v {
					st.changes--
				}
			}
		}
		agree, n := true, 1
		for _, s := range samples[1:] {
			if !s.Result.Class.IsVerdict() || s.Result.Class == probes.AbuseBlock {
				continue // account-level enforcement is no answer about these bytes
			}
			n++
			if k := VerdictOf(s.Result).Key(); k != v {
				agree = false
				other[pid] = otherAnswer{k, s.ID}
			}
		}
		if baselineMoved, other := d.reread(st, v, first.ID); baselineMoved || other {
			d.markReread(pid)
			if baselineMoved {
				// Its categories have held as the baseline's, read anew:
				// known on the target, never new in a later event.
				d.learnCategories(known, st.baseline)
			}
		}
		if st.baseline == "" {
			// Establishing the baseline. The candidate's observation is
			// kept (candidateObs), as for a candidate against a baseline:
			// a probe marked nondeterministic when it leaves the candidate
			// cites it as the answer that carried the verdict it went back
			// and forth with (ndFlip).
			switch {
			case !agree:
				revert(st)
				st.candidate, st.candidateRun, st.candidateRuns, st.candidateObs = "", 0, 0, 0
				markND(st)
			case st.candidate == v && st.candidateRun != run:
				st.candidateRuns++
			case st.candidate != v:
				// As against a baseline: back to the verdict the candidate
				// replaced is back and forth; a new verdict replacing the
				// candidate is a change (the provider moved while the
				// baseline formed), never a revert.
				if st.candidate != "" && v == st.prevCandidate {
					other[pid] = otherAnswer{st.candidate, st.candidateObs}
					revert(st)
					markND(st)
				}
				st.prevCandidate = st.candidate
				st.candidate, st.candidateRun, st.candidateRuns, st.candidateObs = v, run, 1, first.ID
			}
			st.dirty = true
			if agree && (st.candidateRuns >= d.p.ConfirmRuns || (d.t.ConfirmSamples > 0 && n-1 >= d.t.ConfirmSamples)) {
				st.baseline, st.baselineRun, st.baselineModel, st.baselineObs, st.baselineScores = v, run, model, first.ID, scores
				st.setScores(scores, first.ID, model)
				st.candidate, st.candidateRun, st.candidateRuns, st.candidateObs, st.prevCandidate = "", 0, 0, 0, ""
				d.learnCategories(known, v)
			}
			continue
		}
		if v == st.baseline {
			if st.candidate != "" {
				other[pid] = otherAnswer{st.candidate, st.candidateObs}
				revert(st)
				st.candidate, st.candidateRun, st.candidateRuns, st.candidateModel, st.candidateObs = "", 0, 0, "", 0
			}
			if !agree {
				revert(st)
			}
			if modelChanged(st.baselineModel, model) {
				// The baseline held under another model: a later flip is
				// judged against the model it last held under (a model
				// change long before a flip is not the flip's cause), and
				// its evidence cites this answer. (A score drift's before
				// side stays with the answer carrying the baseline's
				// scores: scoresObs.)
				st.baselineModel, st.baselineObs = model, first.ID
				st.dirty = true
			}
			markND(st)
			if err := d.scoreDrift(st, first, scores, model, &drifts); err != nil {
				return err
			}
			continue
		}
		stats.Candidates++
		if !agree {
			// The identical bytes got different answers within one run.
			revert(st)
			st.candidate, st.candidateRun, st.candidateRuns, st.candidateModel, st.candidateObs = "", 0, 0, "", 0
			markND(st)
			continue
		}
		switch {
		case st.candidate == v:
			st.candidateRuns++
		case st.candidate != "" && v == st.prevCandidate:
			// Back to the verdict it just left, without the baseline in
			// between: back and forth, not a change in stages.
			other[pid] = otherAnswer{st.candidate, st.candidateObs}
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
			f.settled = true
			ndFlips = append(ndFlips, f)
		} else {
			flips = append(flips, f)
		}
		stats.Confirmed++
		st.baseline, st.baselineRun, st.baselineModel, st.baselineObs, st.baselineScores = v, run, model, first.ID, scores
		st.setScores(scores, first.ID, model)
		st.candidate, st.candidateRun, st.candidateRuns, st.candidateModel, st.candidateObs = "", 0, 0, "", 0
		st.driftRuns, st.driftScores = 0, ""
	}
	// A complete target-run answered every probe of the corpus: a probe it
	// did not answer has left the corpus (a new corpus version removed
	// it). Its state is kept, marked absent from this run on: it no
	// longer counts in the target's composition (States, metrics), and
	// restored later with the same request bytes it is compared with its
	// old baseline instead of taking its answer then as a new one.
	if !stats.Degraded && len(byProbe) > 0 {
		for id, st := range states {
			if _, ok := byProbe[id]; !ok && st.absentSince == 0 {
				st.absentSince, st.dirty = run, true
				// A pending candidate (or score drift) does not survive
				// the absence: consecutive runs are consecutive answers,
				// so one differing answer before it left and one after
				// it returns, weeks apart, never confirm a flip.
				st.candidate, st.candidateRun, st.candidateRuns, st.candidateModel, st.candidateObs = "", 0, 0, "", 0
				st.driftRuns, st.driftScores = 0, ""
			}
		}
	}
	// A probe in the corpus whose first answer this run did not compare
	// (unanswered, not a verdict, the run degraded, another endpoint's
	// answers) has the run left out of its flip rate. (One that left the
	// corpus has the runs it is away from left out when it returns.)
	for id, st := range states {
		if st.absentSince == 0 && !compared[id] {
			st.sinceRun++
			st.dirty = true
		}
	}
	if d.noState && len(states) > 0 {
		// The target's first detection state is written below. When an
		// earlier run established one, it was removed or lost since: every
		// probe's baseline restarts, as at an input change (a provider
		// change at this moment is absorbed into the new baselines), and
		// is recorded as one (cause state) for each probe this run sent,
		// its old request bytes unknown (''). A run that answers no probe
		// with a verdict writes no state, and records nothing: the first
		// one that does records it, once.
		lost, err := d.stateEstablished("")
		if err != nil {
			return err
		}
		if lost {
			stats.StateLost = true
			for _, pid := range order {
				if _, err := d.tx.ExecContext(d.ctx, `INSERT INTO input_changes (run_id, target_id, probe_id, old_sha256, new_sha256, cause) VALUES (?, ?, ?, '', ?, 'state')`,
					run, d.t.ID, pid, byProbe[pid][0].RequestSHA256); err != nil {
					return err
				}
				stats.InputChanges++
			}
		}
	}
	stats.Renamed = renames(states, byProbe)
	for _, st := range states {
		if st.nondeterministic && st.absentSince == 0 {
			stats.Nondeterministic++
		}
	}
	if err := saveStates(d.ctx, d.tx, d.t.ID, run, states, originReset); err != nil {
		return err
	}
	if d.origin != "" && originReset {
		// The state is now the one at this origin.
		if _, err := d.tx.ExecContext(d.ctx, `UPDATE probe_states SET origin = ? WHERE target_id = ?`, d.origin, d.t.ID); err != nil {
			return err
		}
	}
	stats.Reread = len(d.rereadIDs)
	d.stats, d.flips, d.ndFlips, d.drifts, d.newlyND, d.other = stats, flips, ndFlips, drifts, newlyND, other
	return nil
}

// moveOrigin keeps detection per endpoint. It reads the origin the target's
// requests went to in this run (run_targets.origin, into d.origin) and the
// one its detection state belongs to (probe_states.origin), and returns
// the states to go on with and whether they changed hands:
//   - The same origin, or either unknown (states written before origins
//     were kept, a target none of whose probes rendered): states as they
//     are. A state without an origin takes this run's.
//   - Another origin, in a run that can speak for it (not degraded, and at
//     least one verdict: a mistyped URL answering nothing is no move): the
//     target moved. Its states are parked under the origin they belong to
//     (parked_states, pending candidates included: the next answer at
//     that endpoint continues them), and the states parked at the new origin, if
//     it was visited before, resume; otherwise every probe starts a new
//     baseline there, recorded as an input change caused by the origin
//     (by the state, when the target was there before and the state it
//     left there is missing: removed or lost, see stateEstablished).
//   - Another origin in a run that cannot speak for it: states as they are,
//     untouched (the run confirms nothing there anyway).
//   - A state recorded before origins named the account (schema 22, the
//     target listed in origin_scope_unnamed) at this run's endpoint, now
//     with an account named: the same endpoint and account, now named. Its
//     first run that speaks for it adopts the state, and the target's event
//     rows and runs at that endpoint take the named origin; no move.
//
// Events are endpoint-scoped through their rows (event_probes.origin): an
// answer at one endpoint never reverts, withdraws or extends a change seen
// at another.
func (d *detector) moveOrigin(states map[string]*state, obs []*storage.Observation, stats *TargetStats) (_ map[string]*state, changed, foreign bool, _ error) {
	var cur, prev string
	err := d.tx.QueryRowContext(d.ctx, `SELECT origin FROM run_targets WHERE run_id = ? AND target_id = ?`, d.in.RunID, d.t.ID).Scan(&cur)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, false, false, err
	}
	err = d.tx.QueryRowContext(d.ctx, `SELECT origin FROM probe_states WHERE target_id = ?`, d.t.ID).Scan(&prev)
	noState := errors.Is(err, sql.ErrNoRows)
	if err != nil && !noState {
		return nil, false, false, err
	}
	d.noState = noState
	// Unless the target moves below, this run's detection is the state's:
	// its event rows are those at the state's origin.
	d.origin = prev
	if cur == "" {
		return states, false, false, nil
	}
	if !noState && prev == cur {
		// Nothing of a state recorded before origins named the account
		// is left to adopt.
		return states, false, false, d.accountNamed()
	}
	speaks := d.t.Status == storage.TargetComplete
	if speaks {
		speaks = false
		for _, o := range obs {
			if c := o.Result.Class; o.Sample == 0 && c.IsVerdict() && c != probes.AbuseBlock {
				speaks = true
				break
			}
		}
	}
	switch {
	case !speaks && !noState && prev != "":
		// The answers are another endpoint's, and say nothing for it:
		// none of them reaches the state (foreign), and the run is
		// degraded for detection.
		stats.Degraded = true
		return states, false, true, nil
	case !speaks:
		return states, false, false, nil
	case noState || prev == "":
		// The first state, or one written before origins were kept:
		// it belongs here, and so do the target's event rows recorded
		// before origins were kept.
		d.origin = cur
		if _, err := d.tx.ExecContext(d.ctx, `UPDATE event_probes SET origin = ? WHERE target_id = ? AND origin = ''`, cur, d.t.ID); err != nil {
			return nil, false, false, err
		}
		return states, true, false, d.accountNamed()
	}
	// A state recorded before origins named the account (schema 22), at
	// this endpoint, now with an account named: the same endpoint and
	// account, now named, is no move. The state and the target's event
	// rows there take the named origin.
	unnamed := false
	if err := d.tx.QueryRowContext(d.ctx, `SELECT EXISTS (SELECT 1 FROM origin_scope_unnamed WHERE target_id = ?)`, d.t.ID).Scan(&unnamed); err != nil {
		return nil, false, false, err
	}
	if unnamed {
		if err := d.accountNamed(); err != nil {
			return nil, false, false, err
		}
		if probes.UnscopedOrigin(prev) == prev && probes.UnscopedOrigin(cur) == prev {
			d.origin = cur
			// The target's runs there, too: evidence, diffs and an
			// event's last run before its flip compare run origins.
			for _, q := range []string{
				`UPDATE event_probes SET origin = ? WHERE target_id = ? AND origin = ?`,
				`UPDATE run_targets SET origin = ? WHERE target_id = ? AND origin = ?`,
			} {
				if _, err := d.tx.ExecContext(d.ctx, q, cur, d.t.ID, prev); err != nil {
					return nil, false, false, err
				}
			}
			return states, true, false, nil
		}
	}
	d.origin = cur
	var prevRun int64
	if err := d.tx.QueryRowContext(d.ctx, `SELECT COALESCE(MAX(run_id), 0) FROM run_targets WHERE target_id = ? AND run_id < ? AND origin = ?`,
		d.t.ID, d.in.RunID, prev).Scan(&prevRun); err != nil {
		return nil, false, false, err
	}
	oc := &OriginChange{From: prev, To: cur, FromRun: prevRun}
	stats.OriginChange = oc
	// Park the states at the origin they belong to, pending candidates
	// and score drift included: they count answers at that endpoint, and
	// the next answer there continues them (a target alternating between
	// two endpoints still confirms a change at either).
	if len(states) > 0 {
		if _, err := d.tx.ExecContext(d.ctx, `INSERT OR REPLACE INTO parked_states (target_id, origin, states, parked_run) VALUES (?, ?, ?, ?)`,
			d.t.ID, prev, encodeStates(states), d.in.RunID); err != nil {
			return nil, false, false, err
		}
	}
	// Resume the states parked here, if the target was here before.
	var blob []byte
	var parkedRun int64
	err = d.tx.QueryRowContext(d.ctx, `SELECT states, parked_run FROM parked_states WHERE target_id = ? AND origin = ?`, d.t.ID, cur).Scan(&blob, &parkedRun)
	switch {
	case err == nil:
		resumed, err := decodeStates(blob)
		if err != nil {
			return nil, false, false, damagedState(d.t.ID, cur, err)
		}
		if _, err := d.tx.ExecContext(d.ctx, `DELETE FROM parked_states WHERE target_id = ? AND origin = ?`, d.t.ID, cur); err != nil {
			return nil, false, false, err
		}
		stale := d.in.RunID-parkedRun > d.staleRuns()
		for _, st := range resumed {
			st.dirty = true
			if st.absentSince == 0 {
				// The runs at other endpoints since it was parked
				// compared none of its probes (flipRate).
				st.sinceRun += d.in.RunID - parkedRun
			}
			if stale {
				// Answers weeks apart are not consecutive answers: a
				// candidate left pending long ago does not survive (as
				// for a probe absent from the corpus).
				st.candidate, st.candidateRun, st.candidateRuns, st.candidateModel, st.candidateObs = "", 0, 0, "", 0
				st.driftRuns, st.driftScores = 0, ""
			}
		}
		oc.Resumed = true
		return resumed, true, false, nil
	case !errors.Is(err, sql.ErrNoRows):
		return nil, false, false, err
	}
	// No state parked here: every probe starts a new baseline. The
	// target was never here (cause origin), or it was and the state it
	// left here is missing: removed from the database (the parked_states
	// row db check tells to delete when it no longer decodes) or lost
	// (cause state).
	cause := "origin"
	lost, err := d.stateEstablished(cur)
	if err != nil {
		return nil, false, false, err
	}
	if lost {
		cause = "state"
		stats.StateLost = true
	}
	now := map[string]string{} // this run's request fingerprint per probe
	for _, o := range obs {
		if o.Sample == 0 {
			now[o.ProbeID] = o.RequestSHA256
		}
	}
	ids := make([]string, 0, len(states))
	for id := range states {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		old := states[id].sha
		sha, ok := now[id]
		if !ok {
			sha = old
		}
		if _, err := d.tx.ExecContext(d.ctx, `INSERT INTO input_changes (run_id, target_id, probe_id, old_sha256, new_sha256, cause) VALUES (?, ?, ?, ?, ?, ?)`,
			d.in.RunID, d.t.ID, id, old, sha, cause); err != nil {
			return nil, false, false, err
		}
		stats.InputChanges++
	}
	return map[string]*state{}, true, false, nil
}

// stateEstablished reports whether an earlier run of the target
// established a detection state (at origin, when not ""), which detection
// finds missing now: it was removed from the database (db check tells the
// operator to delete a row that no longer decodes) or lost, and every
// probe's baseline restarts (input changes with cause state), where a
// target's first run restarts nothing (and its first at an endpoint is a
// move: cause origin).
//
// Detection writes a target's state in every run detected for it in which
// it answered a probe with a verdict other than account-level enforcement
// (degraded runs too: they start no candidate, but record the bytes), so
// such an earlier run is the proof: a finished run (complete or partial)
// marked detected (runs.detected) whose detection read this target's
// answers (run_targets.detected, schema 23: not when the target was left
// out of it — its state damaged, Result.Failed; disabled or removed when a
// missed run was detected late — nor when the run's detection was given
// up, storage.GiveUpDetection), whose run_targets row counts more verdicts
// than the abuse_block answers among its first samples. At an origin, the
// run must also have spoken for it (the target complete there, see
// moveOrigin): only such a run moves the state to that endpoint, to be
// parked there when the target leaves. It is asked only when there is no
// state to go on with, so once per target (its first run, a first run at
// an endpoint, or the run after a removal): a new target has no earlier
// run to read.
//
// Known limits, all erring towards a ticket: a run detected before schema
// 23 has run_targets.detected 1 for each of its targets (which were left
// out was not recorded: the run's flag decides for it, as it did for every
// run before), so one detected without this target counts as having
// established its state; a run whose observations retention deleted counts
// its verdicts whatever they were; and an endpoint left before states were
// parked there (schema 17) reads as one whose state is missing.
func (d *detector) stateEstablished(origin string) (bool, error) {
	q := `SELECT EXISTS (SELECT 1 FROM run_targets rt JOIN runs r ON r.id = rt.run_id
		WHERE rt.target_id = ? AND rt.run_id < ? AND r.status IN ('complete', 'partial') AND r.detected = 1 AND rt.detected = 1 AND rt.verdicts > 0`
	args := []any{d.t.ID, d.in.RunID}
	if origin != "" {
		q += ` AND rt.origin = ? AND rt.status = 'complete'`
		args = append(args, origin)
	}
	q += ` AND rt.verdicts > (SELECT COUNT(*) FROM observations o
			WHERE o.run_id = rt.run_id AND o.target_id = rt.target_id AND o.sample = 0 AND o.class = 'abuse_block'))`
	var ok bool
	err := d.tx.QueryRowContext(d.ctx, q, args...).Scan(&ok)
	return ok, err
}

// accountNamed records that the target's detection state now belongs to
// an origin that names its account when it has one (the first run that
// speaks for the state since schema 22): no state of it recorded before
// is left to adopt (origin_scope_unnamed; see moveOrigin).
func (d *detector) accountNamed() error {
	_, err := d.tx.ExecContext(d.ctx, `DELETE FROM origin_scope_unnamed WHERE target_id = ?`, d.t.ID)
	return err
}

// renames lists the probe ids new in this run (no state before) whose
// request bytes are those of a probe id this run did not answer (absent
// from the corpus): most likely one probe renamed. Each pair is reported,
// never merged: see TargetStats.Renamed.
func renames(states map[string]*state, byProbe map[string][]*storage.Observation) []ProbeRename {
	gone := map[string]string{} // request fingerprint → absent probe id (the least, when several)
	for id, st := range states {
		if _, ok := byProbe[id]; ok {
			continue
		}
		if old, ok := gone[st.sha]; !ok || id < old {
			gone[st.sha] = id
		}
	}
	if len(gone) == 0 {
		return nil
	}
	var out []ProbeRename
	for id, st := range states {
		if old, ok := gone[st.sha]; ok && st.isNew {
			out = append(out, ProbeRename{From: old, To: id, RequestSHA256: st.sha})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].To < out[j].To })
	return out
}

// settle closes, in the first phase, what this run ends in open events on
// the target: rows its flips leave (settleFlips) and probes marked
// nondeterministic (withdraw).
func (d *detector) settle() error {
	rest, err := d.settleFlips(d.flips)
	if err != nil {
		return err
	}
	d.flips = rest
	// A probe marked nondeterministic — in this run, or before (in a
	// database an older driftprobe, which withdrew nothing, wrote) — is no
	// policy evidence: its flips leave the target's open policy events.
	// One indexed query per target, and only while some probe is marked.
	marked := map[string]string{}
	for pid, st := range d.states {
		if st.nondeterministic {
			marked[pid] = st.sha
		}
	}
	return d.withdraw(marked)
}

// extend records, in the second phase, this run's new policy flips on the
// target when they extend its own open event inside the window; report
// records them otherwise.
func (d *detector) extend() error {
	done, err := d.policyEvents(d.flips, d.known, d.states, true)
	d.pending = len(d.flips) > 0 && !done
	return err
}

// report records, last, the target's nondeterminism and score drift, and
// the categories its flips made fire (its policy flips are recorded by
// then: extending its own event, or as groupProviderWide decided).
func (d *detector) report() error {
	run := d.in.RunID
	states, known, byProbe, other := d.states, d.known, d.byProbe, d.other
	flips, ndFlips, drifts, newlyND := d.flips, d.ndFlips, d.drifts, d.newlyND
	if len(newlyND) > 0 || len(ndFlips) > 0 {
		for _, pid := range newlyND {
			f := ndFlip(states[pid], byProbe[pid][0], other[pid], run)
			ndFlips = append(ndFlips, f)
		}
		rest, err := d.settleMarked(ndFlips)
		if err != nil {
			return err
		}
		if len(rest) > 0 {
			if _, err := d.event(KindNondeterminism, rest, nil, nil, states, false); err != nil {
				return err
			}
		}
	}
	if len(drifts) > 0 {
		if _, err := d.event(KindScoreDrift, drifts, nil, nil, states, false); err != nil {
			return err
		}
	}
	for _, f := range flips {
		d.learnCategories(known, f.after)
	}
	for _, f := range ndFlips {
		if f.settled {
			// A marked probe's change that held is its baseline now: its
			// categories fire on the target (no policy evidence, but a
			// later flip bringing them to another probe is no new
			// category).
			d.learnCategories(known, f.after)
		}
	}
	if err := saveCategories(d.ctx, d.tx, d.t.ID, known, run); err != nil {
		return err
	}
	d.res.Stats = append(d.res.Stats, d.stats)
	return nil
}

// settleMarked records the changes that held of probes marked
// nondeterministic (settled flips) in the open nondeterminism event at
// this endpoint that holds each probe, however long ago it was marked (not
// only within the window), and returns the flips left for event.
func (d *detector) settleMarked(flips []flip) ([]flip, error) {
	var rest []flip
	byEvent := map[int64][]flip{}
	var eids []int64
	for _, f := range flips {
		if !f.settled {
			rest = append(rest, f)
			continue
		}
		var eid int64
		err := d.tx.QueryRowContext(d.ctx, `SELECT ep.event_id FROM event_probes ep JOIN events e ON e.id = ep.event_id
			WHERE ep.target_id = ? AND ep.probe_id = ? AND ep.request_sha256 = ? AND e.kind = '`+KindNondeterminism+`' AND e.status = 'open' AND `+sameOrigin+` ORDER BY ep.event_id DESC LIMIT 1`,
			d.t.ID, f.probeID, f.sha, d.origin, d.origin).Scan(&eid)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			rest = append(rest, f)
		case err != nil:
			return nil, err
		default:
			if byEvent[eid] == nil {
				eids = append(eids, eid)
			}
			byEvent[eid] = append(byEvent[eid], f)
		}
	}
	sort.Slice(eids, func(a, b int) bool { return eids[a] < eids[b] })
	for _, eid := range eids {
		if err := d.merge(eid, ChangeProbesAdded, 0, KindNondeterminism, byEvent[eid], nil, nil); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// ndFlip is the event_probes row of a probe marked nondeterministic in
// run: st is its state after the run, first its sample 0 of the run (the
// samples were sorted above; markND is only reached on a run whose sample
// 0 is a verdict, which st.lastVerdict then holds), other what it went
// back and forth with (observe). Before and after are the two verdicts it
// moved between: its baseline (else this run's answer) and the other one
// (else this run's answer, when the other one is the baseline).
//
// Each side cites the observation that carries its verdict, so that the
// evidence record shows the answers the event claims: before the
// baseline's observation (st.baselineObs, which moves with st.baseline),
// or sample 0 when no baseline held; after the disagreeing sample or the
// left candidate's observation that answered it (other.obs), or sample 0.
// A side whose observation is not known (other.obs 0: a candidate an
// older driftprobe left in the state while establishing a baseline) cites
// none. Rows written by driftprobe versions that cited sample 0 whatever
// it answered, or no before observation, stay as they are: the evidence
// record looks for an answer carrying the claimed verdict in their place
// (evidence's pick), so no migration rewrites them.
func ndFlip(st *state, first *storage.Observation, other otherAnswer, run int64) flip {
	before, beforeObs := st.baseline, st.baselineObs
	if before == "" {
		before, beforeObs = st.lastVerdict, first.ID
	}
	after, afterObs := other.key, other.obs
	if after == "" || after == before {
		after, afterObs = st.lastVerdict, first.ID
	}
	return flip{probeID: st.probeID, sha: st.sha, before: before, after: after, firstRun: run,
		beforeObs: beforeObs, afterObs: afterObs, modelBefore: st.baselineModel, modelAfter: st.baselineModel, flipRate: flipRate(st, run)}
}

// flipRate is the share of the probe's run-to-run transitions, since its
// bytes were first seen on the target, in which its first answer's
// verdict changed: only runs that compared that answer with the one
// before count (see state.sinceRun), so runs in which the target was away
// or the probe was not answered do not dilute it; a change across such a
// gap is one transition.
func flipRate(st *state, run int64) float64 {
	n := run - st.sinceRun
	if n < int64(st.changes) {
		// Never above 1 (a run detected out of order).
		n = int64(st.changes)
	}
	if n <= 0 {
		return 0
	}
	return float64(st.changes) / float64(n)
}

// scoreDrift tracks scores on an unchanged verdict; model is the one o
// was answered under (the target's, when o names none). A confirmed
// drift's before side is the answer that carries exactly the scores it
// moved from (scoresObs), its after side o, and it names those two
// answers' models (scoresModel, model): both when they differ.
func (d *detector) scoreDrift(st *state, o *storage.Observation, scores, model string, out *[]flip) error {
	if scores == "" {
		if st.driftRuns != 0 {
			st.driftRuns, st.driftScores, st.dirty = 0, "", true
		}
		return nil
	}
	if st.baselineScores == "" {
		st.baselineScores, st.dirty = scores, true
		st.setScores(scores, o.ID, model)
		return nil
	}
	if scores != st.baselineScores && maxScoreDelta(st.baselineScores, scores) > d.p.ScoreTolerance {
		// Moved past the tolerance: first read the answer carrying the
		// baseline's scores with the current classifier. When it reads
		// them within the tolerance of this answer's, the classifier
		// moved, not the scores: this answer, stored with exactly these
		// scores, carries the baseline's scores from now on (a drift
		// cites the answer carrying exactly the scores it claims).
		if _, s, ok := d.rereadObs(st.scoresObs); ok && s != "" && s != st.baselineScores && maxScoreDelta(s, scores) <= d.p.ScoreTolerance {
			st.baselineScores, st.dirty = scores, true
			st.setScores(scores, o.ID, model)
			if st.driftRuns != 0 {
				st.driftRuns, st.driftScores = 0, ""
			}
			d.markReread(st.probeID)
			return nil
		}
	}
	if scores == st.baselineScores || maxScoreDelta(st.baselineScores, scores) <= d.p.ScoreTolerance {
		switch {
		case st.scoresObs == 0:
			// A state from before format 4 knows no answer carrying
			// its scores: this one is the score baseline, once.
			st.baselineScores, st.dirty = scores, true
			st.setScores(scores, o.ID, model)
		case scores == st.baselineScores && modelChanged(st.scoresModel, model):
			// The baseline's very scores under another model: a later
			// drift cites this answer, and names its model, as the one
			// it moved from. Scores only within tolerance move nothing:
			// drift is measured from the baseline's scores, so small
			// steps under model after model still add up to one, and
			// the answer cited carries exactly the scores claimed.
			st.dirty = true
			st.setScores(scores, o.ID, model)
		}
		if st.driftRuns != 0 {
			st.driftRuns, st.driftScores, st.dirty = 0, "", true
		}
		return nil
	}
	if st.driftRuns == 0 || (maxScoreDelta(st.driftScores, scores) > d.p.ScoreTolerance && !d.driftReadAnew(st, scores)) {
		st.driftRuns, st.driftRun = 0, d.in.RunID
	}
	st.driftRuns++
	st.driftScores, st.dirty = scores, true
	if st.driftRuns >= d.p.ConfirmRuns {
		// Its models are those of the two answers it cites: what the
		// record shows.
		f := flip{probeID: st.probeID, sha: st.sha, before: st.baseline, after: st.baseline, beforeObs: st.scoresObs,
			afterObs: o.ID, firstRun: st.driftRun, modelBefore: st.scoresModel, modelAfter: model,
			scores: st.baselineScores + " -> " + scores, moves: scoreMoves(st.baselineScores, scores, d.p.ScoreTolerance)}
		if st.scoresObs == 0 {
			// A state written before format 4 whose scores never held
			// since: the baseline's answer.
			f.beforeObs, f.modelBefore = st.baselineObs, st.baselineModel
		}
		*out = append(*out, f)
		st.baselineScores, st.driftRuns, st.driftScores = scores, 0, ""
		st.setScores(scores, o.ID, model)
	}
	return nil
}

// driftReadAnew reports whether a pending drift's latest answer (the
// probe's previous answer on these bytes), read with the current
// classifier, carries scores within the tolerance of this answer's while
// its stored scores (st.driftScores) are not: the classifier moved, not
// the scores, and the drift goes on rather than starting over.
func (d *detector) driftReadAnew(st *state, scores string) bool {
	if d.t.Reclassify == nil {
		return false
	}
	var id int64
	// The target's previous run (run_targets' (target_id, run_id) index;
	// observations are found by run): a drift's latest answer, unless the
	// probe went unanswered there, when the drift starts over as before.
	err := d.tx.QueryRowContext(d.ctx, `SELECT id FROM observations WHERE run_id = (SELECT MAX(run_id) FROM run_targets WHERE target_id = ? AND run_id < ?)
		AND target_id = ? AND probe_id = ? AND sample = 0 AND request_sha256 = ?`,
		d.t.ID, d.in.RunID, d.t.ID, st.probeID, st.sha).Scan(&id)
	if err != nil {
		return false
	}
	// Only the answer that set the drift's scores (stored with exactly
	// them) speaks for the drift: the previous run may have answered
	// another verdict (a candidate, which leaves the drift as it was) or
	// been degraded (skipped by detection), its scores then no part of it.
	_, s, ok := d.rereadObs(id)
	if ok && d.reads[id].stored == st.driftScores && s != "" && s != st.driftScores && maxScoreDelta(s, scores) <= d.p.ScoreTolerance {
		d.markReread(st.probeID)
		return true
	}
	return false
}

// setScores records the answer (obs, under model) that carries the
// baseline's scores, when it carries any.
func (st *state) setScores(scores string, obs int64, model string) {
	if scores != "" {
		st.scoresObs, st.scoresModel = obs, model
	}
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

// settleFlips applies this run's confirmed flips on the target to the open
// policy and model events that already hold their probes (the target's
// unreverted rows on the same request bytes; one query, not one per flip)
// and returns the flips left to report as new changes. For each flip:
//   - Back on a row's before-verdict, the probe reverts that row ("flipped
//     back"), whatever stages it went through in between (allowed →
//     blocked_output → blocked_input → allowed reverts the event of
//     allowed → blocked_output, opened before the stage change). Its other
//     open rows whose after-verdict it no longer has close with it ("moved
//     on": a later stage of the change it just undid no longer holds). The
//     flip is accounted for: it opens and extends nothing.
//   - Otherwise the flip is a new change, returned. A row of the probe in
//     an event other than the target's open event inside the window
//     (windowEvent, which the flip will extend) closes as moved on when the
//     probe's new verdict no longer lies in the row's direction from its
//     before-verdict: a probe of a tightened or recategorized row that is
//     now allowed, one of a loosened row blocked again differently. A row
//     whose direction still holds (a further stage of a tightening) stays
//     open, so that a later flip back to its before-verdict still reverts
//     it. A row in the window event stays too: the event records the
//     probe as changed again.
//
// An event whose every row is closed is reverted. Closing never moves an
// event's window (see windowSQL).
func (d *detector) settleFlips(flips []flip) ([]flip, error) {
	if len(flips) == 0 {
		return nil, nil
	}
	type row struct {
		eid, beforeObs     int64
		sha, before, after string
	}
	opens := map[string][]row{}
	rows, err := d.tx.QueryContext(d.ctx, `SELECT ep.probe_id, ep.event_id, ep.request_sha256, ep.before, ep.after, ep.before_obs FROM event_probes ep JOIN events e ON e.id = ep.event_id
		WHERE ep.target_id = ? AND ep.reverted_run = 0 AND e.kind IN ('policy_change', 'model_change') AND `+sameOrigin+` ORDER BY ep.event_id`, d.t.ID, d.origin, d.origin)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var pid string
		var r row
		if err := rows.Scan(&pid, &r.eid, &r.sha, &r.before, &r.after, &r.beforeObs); err != nil {
			rows.Close()
			return nil, err
		}
		opens[pid] = append(opens[pid], r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var rest []flip
	closed := map[int64][]leaving{}
	window, windowRead := int64(0), false
	for _, f := range flips {
		var mine []row
		back := false
		for _, r := range opens[f.probeID] {
			// Only the same bytes can flip back: a verdict on edited
			// bytes says nothing about the change the event recorded.
			if r.sha == f.sha {
				if r.before != f.after {
					// The row's before side as the current classifier
					// reads its answer: a provider undoing a change
					// recorded before an upgrade flips back to the same
					// answers, read anew.
					if k, _, ok := d.rereadObs(r.beforeObs); ok && k == f.after {
						r.before = k
					}
				}
				mine = append(mine, r)
				back = back || r.before == f.after
			}
		}
		if !back {
			rest = append(rest, f)
		}
		for _, r := range mine {
			switch {
			case r.before == f.after:
				closed[r.eid] = append(closed[r.eid], leaving{f.probeID, whyBack})
			case back:
				if r.after != f.after {
					closed[r.eid] = append(closed[r.eid], leaving{f.probeID, whyMovedOn})
				}
			default:
				from := ParseKey(r.before)
				if direction(from, ParseKey(f.after)) == direction(from, ParseKey(r.after)) {
					continue
				}
				if !windowRead {
					if window, err = d.windowEvent(policyFamily); err != nil {
						return nil, err
					}
					windowRead = true
				}
				if r.eid != window {
					closed[r.eid] = append(closed[r.eid], leaving{f.probeID, whyMovedOn})
				}
			}
		}
	}
	for eid, ls := range closed {
		for _, l := range ls {
			if _, err := d.tx.ExecContext(d.ctx, `UPDATE event_probes SET reverted_run = ? WHERE event_id = ? AND target_id = ? AND probe_id = ?`, d.in.RunID, eid, d.t.ID, l.probe); err != nil {
				return nil, err
			}
		}
	}
	if err := d.closeProbes(closed, ChangePartialRevert); err != nil {
		return nil, err
	}
	return rest, nil
}

// Why a probe leaves an event (closeProbes' detail).
const (
	whyBack     = "flipped back"
	whyMovedOn  = "moved on from the event's after-verdict (no longer holds)"
	whyWithdraw = "marked nondeterministic, withdrawn from the evidence"
)

// leaving is a probe of the target leaving an event, and why.
type leaving struct{ probe, why string }

// policyFamily is the kinds a policy or model flip extends or joins.
const policyFamily = "'" + KindPolicy + "','" + KindModel + "'"

// policyEvents turns the confirmed non-noise flips settleFlips left into
// additions to open events, provider-wide joins, or new events (with
// extendOnly, only an addition to the target's own open event in the
// window: done reports whether there was one).
func (d *detector) policyEvents(rest []flip, known map[string]int64, states map[string]*state, extendOnly bool) (done bool, err error) {
	if len(rest) == 0 {
		return true, nil
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
	// Categories whose every firing probe (in the corpus) stopped firing.
	active := map[string]bool{}
	for _, st := range states {
		if st.absentSince > 0 {
			continue
		}
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
	return d.event(kind, rest, newCats, vanished, states, extendOnly)
}

// closeProbes records that the probes in closed (event id → the target's
// probes leaving it, already marked reverted_run) left their events, one
// update per event naming each probe and why: change partial while some
// probes are left; when none is, the event closes as reverted, recorded as
// ChangeRetracted when every one of its probes was withdrawn, else as
// ChangeReverted. Closing sets the event's last_run (the last run that
// changed it) but never its window (windowSQL).
func (d *detector) closeProbes(closed map[int64][]leaving, partial string) error {
	eids := make([]int64, 0, len(closed))
	for id := range closed {
		eids = append(eids, id)
	}
	sort.Slice(eids, func(a, b int) bool { return eids[a] < eids[b] })
	for _, eid := range eids {
		var left, total, withdrawn int
		if err := d.tx.QueryRowContext(d.ctx, `SELECT COUNT(*) FILTER (WHERE reverted_run = 0), COUNT(*), COUNT(*) FILTER (WHERE withdrawn = 1) FROM event_probes WHERE event_id = ?`, eid).
			Scan(&left, &total, &withdrawn); err != nil {
			return err
		}
		// "N probe(s) on T why: a, b", one part per reason in the order
		// first given, joined by "; ".
		var whys []string
		byWhy := map[string][]string{}
		for _, l := range closed[eid] {
			if _, ok := byWhy[l.why]; !ok {
				whys = append(whys, l.why)
			}
			byWhy[l.why] = append(byWhy[l.why], l.probe)
		}
		parts := make([]string, len(whys))
		for i, why := range whys {
			parts[i] = fmt.Sprintf("%d probe(s) on %s %s: %s", len(byWhy[why]), d.t.Name, why, strings.Join(byWhy[why], ", "))
		}
		detail := strings.Join(parts, "; ")
		change := partial
		if left == 0 {
			// The event ends: retracted when every probe of it was
			// withdrawn (no change is left to speak of), reverted when
			// some flipped back or moved on (the provider undid, or
			// changed again, what they showed).
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

// withdraw takes probes marked nondeterministic (probe id → the request
// fingerprint they were marked on) out of this target's open policy and
// model events: their flips on those bytes are no longer evidence of a
// change (an event left without evidence is retracted). Flips on bytes the
// probe sent before an input change stay.
func (d *detector) withdraw(marked map[string]string) error {
	if len(marked) == 0 {
		return nil
	}
	rows, err := d.tx.QueryContext(d.ctx, `SELECT ep.event_id, ep.probe_id, ep.request_sha256 FROM event_probes ep JOIN events e ON e.id = ep.event_id
		WHERE ep.target_id = ? AND ep.reverted_run = 0 AND e.status = 'open' AND e.kind IN ('policy_change', 'model_change') AND `+sameOrigin+` ORDER BY ep.event_id, ep.probe_id`, d.t.ID, d.origin, d.origin)
	if err != nil {
		return err
	}
	withdrawn := map[int64][]leaving{}
	for rows.Next() {
		var eid int64
		var pid, sha string
		if err := rows.Scan(&eid, &pid, &sha); err != nil {
			rows.Close()
			return err
		}
		if s, ok := marked[pid]; ok && s == sha {
			withdrawn[eid] = append(withdrawn[eid], leaving{pid, whyWithdraw})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for eid, ls := range withdrawn {
		for _, l := range ls {
			if _, err := d.tx.ExecContext(d.ctx, `UPDATE event_probes SET reverted_run = ?, withdrawn = 1 WHERE event_id = ? AND target_id = ? AND probe_id = ?`, d.in.RunID, eid, d.t.ID, l.probe); err != nil {
				return err
			}
		}
	}
	return d.closeProbes(withdrawn, ChangeWithdrawn)
}

// staleRuns is how many runs of the database a target may stay out of
// before what it left pending (a candidate, a score drift) no longer
// continues: a state parked at an endpoint, or a target left out of runs.
func (d *detector) staleRuns() int64 { return int64(max(d.p.WindowRuns, ndWindowRuns)) }

// previousRuns returns the target's latest run before this one (prev)
// and its latest one before this one whose detection committed for it
// (prevDetected), 0 when there is none.
func (d *detector) previousRuns() (prev, prevDetected int64, err error) {
	err = d.tx.QueryRowContext(d.ctx, `SELECT COALESCE(MAX(run_id), 0), COALESCE(MAX(CASE WHEN detected = 1 THEN run_id END), 0)
		FROM run_targets WHERE target_id = ? AND run_id < ?`, d.t.ID, d.in.RunID).Scan(&prev, &prevDetected)
	return prev, prevDetected, err
}

// dropStaleCandidates drops the pending candidates and score drifts of a
// target that took part in no run for more than staleRuns runs before
// this one, prev being the latest it took part in (it was disabled, or
// removed from the config and put back): answers weeks apart are not
// consecutive answers, as for a probe absent from the corpus or a target
// back at an endpoint it left long ago. Runs it took part in count
// whatever they confirmed (a degraded or aborted run breaks no streak).
func (d *detector) dropStaleCandidates(states map[string]*state, prev int64) {
	if prev == 0 || d.in.RunID-prev <= d.staleRuns() {
		return
	}
	for _, st := range states {
		if st.candidate != "" || st.driftRuns != 0 || st.driftScores != "" {
			st.candidate, st.candidateRun, st.candidateRuns, st.candidateModel, st.candidateObs = "", 0, 0, "", 0
			st.driftRuns, st.driftScores = 0, ""
			st.dirty = true
		}
	}
}

// skipAwayRuns leaves the runs the target was away from since its last
// detected run, prevDetected (disabled, removed from the config, its
// answers never detected), out of the flip rates of its probes in the
// corpus (sinceRun): they compared nothing. Probes out of the corpus have
// theirs left out when they return (absentSince).
func (d *detector) skipAwayRuns(states map[string]*state, prevDetected int64) {
	if prevDetected == 0 || d.in.RunID-prevDetected <= 1 {
		return
	}
	for _, st := range states {
		if st.absentSince == 0 {
			st.sinceRun += d.in.RunID - prevDetected - 1
			st.dirty = true
		}
	}
}

// ndWindowRuns is how close reverts must come to add up toward
// nondeterminism (see revert in run): a day of hourly runs.
const ndWindowRuns = 24

// eventModels returns the model_before and model_after of an event
// opening with flips of kind: for a model_change the model change the
// flips came with (flipModels), else the model their baselines last held
// under and the model of their first differing answers, the most common
// pair (for a policy_change the same model: one whose change came with a
// flip would have made it a model_change). The model the target reports
// now plays no part: it may have changed after the flips began (a policy
// change confirmed under a new fingerprint is still a policy change, under
// the model it began under). fallback names a side no flip knows.
func eventModels(kind string, flips []flip, fallback string) (before, after string) {
	if kind == KindModel {
		if b, a, ok := flipModels(flips); ok {
			return b, a
		}
	}
	count := map[[2]string]int{}
	best := 0
	for _, f := range flips {
		k := [2]string{f.modelBefore, f.modelAfter}
		count[k]++
		if count[k] > best {
			best, before, after = count[k], k[0], k[1]
		}
	}
	if before == "" {
		before = fallback
	}
	if after == "" {
		after = before
	}
	if kind != KindModel && !(kind == KindScoreDrift && modelChanged(before, after)) {
		// The model did not change (modelChanged): the two strings can
		// still differ where one side lacks the id or fingerprint (an
		// input block's error names no model). Name the one model, as
		// fully as either side knows it. (Scores that moved with a
		// model change name both.)
		before = mergeModel(before, after)
		after = before
	}
	return before, after
}

// mergeModel combines two "id|fingerprint" strings of one model: each part
// from a, else from b.
func mergeModel(a, b string) string {
	if a == b || b == "" {
		return a
	}
	aid, afp := SplitModel(a)
	bid, bfp := SplitModel(b)
	if aid == "" {
		aid = bid
	}
	if afp == "" {
		afp = bfp
	}
	if aid == "" && afp == "" {
		return a
	}
	return JoinModel(aid, afp)
}

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
	aid, afp := SplitModel(a)
	bid, bfp := SplitModel(b)
	return (aid != "" && bid != "" && aid != bid) || (afp != "" && bfp != "" && afp != bfp)
}

func (d *detector) eventKind(id int64) (string, error) {
	var k string
	err := d.tx.QueryRowContext(d.ctx, `SELECT kind FROM events WHERE id = ?`, id).Scan(&k)
	return k, err
}

// windowSQL is the condition that event e is inside the window, with two
// arguments, both the first run of the window (this run - window_runs):
// the event's last confirmed flip — the latest confirmed_run over its
// probes not withdrawn, set when it opened, gained probes or a target, or
// a probe of it changed again — is in the window. Closing probes (flips
// back, probes moved on, probes withdrawn) records the run in last_run but
// never extends the window: an event quiet for longer than window_runs
// takes no new flip because part of it flipped back in the same or a
// recent run; the new flip opens an event of its own. (last_run is never
// below that latest confirmed_run: testing it first lets the index narrow.)
// sameOrigin filters event_probes rows (as ep) to those of this run's
// endpoint; it takes d.origin twice. A row or a run whose origin is not
// known ("": recorded before origins were kept) matches any.
const sameOrigin = `(? = '' OR ep.origin IN (?, ''))`

const windowSQL = `e.last_run >= ? AND (SELECT MAX(ep.confirmed_run) FROM event_probes ep WHERE ep.event_id = e.id AND ep.withdrawn = 0) >= ?`

// windowEvent returns the target's latest open event of the kinds in
// kindsIn (an SQL list) inside the window (windowSQL), 0 when none: the
// event its flips of those kinds extend. Policy and model flips extend
// either kind (policyFamily): flips within the window are one change, and
// a model change that came with any of them makes it a model_change.
func (d *detector) windowEvent(kindsIn string) (int64, error) {
	since := d.in.RunID - int64(d.p.WindowRuns)
	var eid int64
	// Only an event this target's changes at this endpoint are in (its
	// rows there): a change at another endpoint is another change.
	err := d.tx.QueryRowContext(d.ctx, `SELECT e.id FROM events e JOIN event_targets et ON et.event_id = e.id
		WHERE et.target_id = ? AND e.status = 'open' AND e.kind IN (`+kindsIn+`) AND `+windowSQL+`
		AND EXISTS (SELECT 1 FROM event_probes ep WHERE ep.event_id = e.id AND ep.target_id = et.target_id AND `+sameOrigin+`) ORDER BY e.id DESC LIMIT 1`,
		d.t.ID, since, since, d.origin, d.origin).Scan(&eid)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	return eid, err
}

// event joins flips to an open event (this target, or provider-wide) or
// opens a new one; with extendOnly it only extends this target's own open
// event in the window, and reports whether there was one (done).
func (d *detector) event(kind string, flips []flip, newCats, vanished []string, states map[string]*state, extendOnly bool) (done bool, err error) {
	in := "'" + kind + "'"
	if kind == KindPolicy || kind == KindModel {
		in = policyFamily
	}
	// 1. An open event on this target within the window.
	eid, err := d.windowEvent(in)
	if err != nil || (eid == 0 && extendOnly) {
		return false, err
	}
	change := ChangeProbesAdded
	var same int // joining: this target's flips that moved as the event's did
	if eid == 0 && d.group && kind != KindNondeterminism && kind != KindScoreDrift {
		// 2. A provider-wide change, as groupProviderWide decided: an open
		// event of the same provider on other targets, or the one a target
		// of this run that changed the same way opened.
		eid = d.joinEvent
		if d.joinVia != nil {
			eid = d.joinVia.opened
		}
		if eid != 0 {
			same, change = d.same, ChangeTargetJoined
		}
	}
	if eid == 0 {
		return true, d.open(kind, flips, newCats, vanished)
	}
	return true, d.merge(eid, change, same, kind, flips, newCats, vanished)
}

// merge records flips of kind on this target in event eid: more probes
// (change ChangeProbesAdded) or a target joining it (ChangeTargetJoined,
// same of its flips moving as the event's did).
func (d *detector) merge(eid int64, change string, same int, kind string, flips []flip, newCats, vanished []string) error {
	run := d.in.RunID
	// Probes of this target the event has already (a probe that moved
	// again, a nondeterministic one marked again) are not "more probes".
	had := map[string][3]string{} // probe -> its row's before, after and request bytes
	rows, err := d.tx.QueryContext(d.ctx, `SELECT probe_id, before, after, request_sha256 FROM event_probes WHERE event_id = ? AND target_id = ?`, eid, d.t.ID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var pid, b, a, sha string
		if err := rows.Scan(&pid, &b, &a, &sha); err != nil {
			rows.Close()
			return err
		}
		had[pid] = [3]string{b, a, sha}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// A marked probe's change that held (settled) leaves its row naming
	// the two verdicts it was marked going back and forth between (on the
	// same bytes), and is news only at a third: moving between those two
	// is the noise it was marked for. A row of other bytes is replaced.
	sameRow := func(f flip) bool {
		row, ok := had[f.probeID]
		return ok && row[2] == f.sha
	}
	news := func(f flip) bool {
		row := had[f.probeID]
		return !sameRow(f) || !f.settled || (f.after != row[0] && f.after != row[1])
	}
	var added, again, settled, rebytes []string
	for _, f := range flips {
		_, ok := had[f.probeID]
		switch {
		case ok && !sameRow(f):
			rebytes = append(rebytes, f.probeID)
		case ok && f.settled:
			if news(f) {
				settled = append(settled, fmt.Sprintf("%s → %s", f.probeID, ParseKey(f.after)))
			}
		case ok:
			again = append(again, f.probeID)
		default:
			added = append(added, f.probeID)
		}
	}
	// quiet: nothing to tell (a probe marked again, a marked probe moving
	// between the two verdicts it was marked for): no update is logged.
	quiet := len(added) == 0 && len(settled) == 0 && len(rebytes) == 0 && kind == KindNondeterminism && change == ChangeProbesAdded
	wrote := false
	for _, f := range flips {
		if sameRow(f) && f.settled {
			continue
		}
		if err := d.addProbe(eid, f); err != nil {
			return err
		}
		wrote = true
	}
	if quiet && !wrote {
		// Nothing of the event changed, not even a row: it must not look
		// updated (last_run drives `events --since` and "updated run N").
		// The window is unaffected: last_run stays at or above every
		// row's confirmed_run (windowSQL).
		return nil
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
	// The event's models are set when it opens (eventModels) and change
	// only when it turns into a model_change: then they name the model
	// change of the flips that made it one, on whichever target (the
	// opener's, or one joining it; its update records the target and the
	// kind). So a model_change always names two models and a
	// policy_change one: later flips, on the opener or on a target that
	// joined, under another model never rewrite them (each target's own
	// model change is named in the update that brought its flips).
	var opener int64
	var modelBefore, modelAfter string
	if err := d.tx.QueryRowContext(d.ctx, `SELECT target_id, model_before, model_after FROM events WHERE id = ?`, eid).Scan(&opener, &modelBefore, &modelAfter); err != nil {
		return err
	}
	if newKind != oldKind && newKind == KindModel {
		if b, a, ok := flipModels(flips); ok {
			modelBefore, modelAfter = b, a
		}
	}
	// A score drift event names the models of its latest drift's cited
	// answers (a drift joining it replaces its probes' rows: the event
	// tells what they show); the update says when they differ.
	driftModels := ""
	if newKind == KindScoreDrift {
		modelBefore, modelAfter = eventModels(KindScoreDrift, flips, d.model)
		if modelChanged(modelBefore, modelAfter) {
			driftModels = fmt.Sprintf("scores on %s moved with a model change: %s → %s", d.t.Name, ModelText(modelBefore), ModelText(modelAfter))
		}
	}
	// first_run is the run the event's earliest flip was first seen: a
	// target joining it may have flipped before the opener did (both
	// confirmed in one run, which target opens depends only on the order
	// targets are detected in).
	firstRun := run
	for _, f := range flips {
		firstRun = min(firstRun, f.firstRun)
	}
	if _, err := d.tx.ExecContext(d.ctx, `UPDATE events SET kind = ?, direction = ?, new_categories = ?, vanished_categories = ?, first_run = MIN(first_run, ?), last_run = ?, model_before = ?, model_after = ?, updated_at = ? WHERE id = ?`,
		newKind, dir, strings.Join(mergedNew, ","), strings.Join(mergedVan, ","), firstRun, run, modelBefore, modelAfter, ts(d.now), eid); err != nil {
		return err
	}
	if quiet {
		// Marked again, nothing new: the rows are updated (their latest
		// marking and flip rate, shown in `events`), and last_run with
		// them, which the window needs (windowSQL), but nobody is told.
		return nil
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, fmt.Sprintf("%d more probe(s) on %s: %s", len(added), d.t.Name, strings.Join(added, ", ")))
	}
	if len(again) > 0 {
		parts = append(parts, fmt.Sprintf("%d probe(s) on %s changed again: %s", len(again), d.t.Name, strings.Join(again, ", ")))
	}
	if len(rebytes) > 0 {
		parts = append(parts, fmt.Sprintf("%d probe(s) on %s again on new request bytes (their rows now describe those): %s", len(rebytes), d.t.Name, strings.Join(rebytes, ", ")))
	}
	noModel := ""
	if kind == KindPolicy && oldKind == KindModel && len(added)+len(again)+len(rebytes) > 0 {
		// Flips within the window (or a provider-wide join) join the
		// event, whatever their own cause: these came with no model
		// change of their own.
		noModel = fmt.Sprintf("no model change came with these flips on %s (their baselines held under the model they flipped on)", d.t.Name)
		parts = append(parts, noModel)
	}
	if driftModels != "" {
		parts = append(parts, driftModels)
	}
	if len(settled) > 0 {
		// A marked probe that changed and held: still no evidence of a
		// policy change (it answered at random before), but news.
		parts = append(parts, fmt.Sprintf("%d nondeterministic probe(s) on %s changed and the change held (still no policy change: they answered at random before): %s",
			len(settled), d.t.Name, strings.Join(settled, ", ")))
	}
	detail := strings.Join(parts, "; ")
	if change == ChangeTargetJoined {
		detail = fmt.Sprintf("target %s changed the same way (%d probes, %d of them moved as the event's did): provider-wide change", d.t.Name, len(flips), same)
		if noModel != "" {
			detail += "; " + noModel
		}
	}
	if kind == KindModel && opener != d.t.ID {
		// Name this target's own model change here (the event's model
		// fields name it too when it made the event a model_change).
		if b, a, ok := flipModels(flips); ok {
			detail += fmt.Sprintf("; model on %s: %s → %s", d.t.Name, ModelText(b), ModelText(a))
		} else if modelChanged(d.prevModel, d.model) {
			detail += fmt.Sprintf("; model on %s: %s → %s", d.t.Name, ModelText(d.prevModel), ModelText(d.model))
		}
	}
	if newKind != oldKind {
		detail += fmt.Sprintf("; kind is now %s", newKind)
	}
	return d.record(eid, newKind, change, detail)
}

// move is one probe's verdict change: its before and after keys, and what
// sameMove compares, parsed once (newMove).
type move struct {
	before, after string
	from          probes.Class // the before verdict's class
	blocked       bool         // the after verdict is a block
	dir           string       // direction(before, after)
}

func newMove(before, after string) move {
	b, a := ParseKey(before), ParseKey(after)
	return move{before: before, after: after, from: b.Class, blocked: a.Class.IsBlock(), dir: direction(b, a)}
}

// sameMove reports whether two moves of a probe (on two targets of one
// provider) changed it the same way: in the same direction (tightened,
// loosened, recategorized), ending blocked on both or on neither; a
// recategorization only when both moved from the same class to the same
// verdict (opposite stage moves, or categories swapped the other way, are
// not one change).
func sameMove(a, b move) bool {
	if a.blocked != b.blocked || a.dir != b.dir {
		return false
	}
	return a.dir != Recategorized || (a.from == b.from && a.after == b.after)
}

// sameWay counts the probes two sets of moves (per probe, every move made
// of it) both moved the same way, and reports whether that makes them one
// change: at least half of the smaller side. Both sides are counted in
// probes: a probe counts once as the same, however many targets moved it
// (in however many ways), so one shared probe cannot count as two.
func sameWay(a, b map[string][]move) (same int, ok bool) {
	if len(b) < len(a) {
		a, b = b, a
	}
	for pid, am := range a {
		bm, in := b[pid]
		if !in {
			continue
		}
	probe:
		for _, x := range am {
			for _, y := range bm {
				if sameMove(x, y) {
					same++
					break probe
				}
			}
		}
	}
	smaller := min(len(a), len(b))
	return same, smaller > 0 && same*2 >= smaller
}

// addMove adds m to ms (per probe) unless it is there.
func addMove(ms map[string][]move, pid string, m move) {
	for _, have := range ms[pid] {
		if have == m {
			return
		}
	}
	ms[pid] = append(ms[pid], m)
}

// flipMoves is flips as moves, per probe.
func flipMoves(flips []flip) map[string][]move {
	m := make(map[string][]move, len(flips))
	for _, f := range flips {
		addMove(m, f.probeID, newMove(f.before, f.after))
	}
	return m
}

// eventMoves reads the moves event eid holds as evidence, per probe: its
// rows, less those withdrawn as nondeterministic (never policy evidence).
func (d *detector) eventMoves(eid int64) (map[string][]move, error) {
	rows, err := d.tx.QueryContext(d.ctx, `SELECT DISTINCT probe_id, before, after FROM event_probes WHERE event_id = ? AND withdrawn = 0`, eid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	theirs := map[string][]move{}
	for rows.Next() {
		var pid, before, after string
		if err := rows.Scan(&pid, &before, &after); err != nil {
			return nil, err
		}
		addMove(theirs, pid, newMove(before, after))
	}
	return theirs, rows.Err()
}

// providerEvents returns the open events of the target's provider within
// the window, of the kinds in kindsIn, that the target is not in, newest
// first.
func (d *detector) providerEvents(kindsIn string, since int64) ([]int64, error) {
	rows, err := d.tx.QueryContext(d.ctx, `SELECT e.id FROM events e WHERE e.provider = ? AND e.status = 'open' AND e.kind IN (`+kindsIn+`) AND `+windowSQL+`
		AND NOT EXISTS (SELECT 1 FROM event_targets et WHERE et.event_id = e.id AND et.target_id = ?) ORDER BY e.id DESC`, d.t.Provider, since, since, d.t.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// groupProviderWide decides, once every target's flips extending its own
// events are recorded (extend) and before any other policy flip is, which
// event each target's remaining policy flips (pending) go to, so that the
// grouping depends neither on the order targets are detected in nor on
// their names. It starts from one group per such target and one per open
// event of their providers in the window (as they stand now, withdrawn
// rows aside), and merges, again and again, the two groups of one
// provider that changed the same probes the same way (sameWay over all
// the moves in each) with the most probes in common — then the larger
// share of the smaller side, then the pair whose names sort first (an
// event's before any target's, the oldest event first; then target
// names) — never two events, never a target with an event it is already
// in (another endpoint's change is another change). A group with an event
// joins its targets to it; a group without one opens one event, opened by
// the target with the most flips (then the first by name), which the
// others join. Each joining target's "same" count (its update's "N of
// them moved as the event's did") is taken against every other member of
// its final group, so it does not depend on the order joins are recorded
// in. The decisions are left in the detectors (group, joinEvent, joinVia,
// same); the returned order is the order to record them in: group by
// group, each opener before the targets that join its event.
func groupProviderWide(ds []*detector) ([]*detector, error) {
	type group struct {
		provider string
		event    int64       // an open event in it (0: none)
		targets  []*detector // in name order
		moves    map[string][]move
		name     string // what ties are broken by: the first target's name, or the event's id
		// allowed: the events every target in it may join (those it is
		// not in: a change at another endpoint is another change).
		allowed map[int64]bool
	}
	var groups []*group
	// Each target's and each event's own moves (a group's grow as it
	// merges).
	own := map[*detector]map[string][]move{}
	eventOwn := map[int64]map[string][]move{}
	for _, d := range ds {
		d.group, d.joinEvent, d.joinVia, d.same = false, 0, nil, 0
		if !d.pending {
			continue
		}
		own[d] = flipMoves(d.flips)
		g := &group{provider: d.t.Provider, targets: []*detector{d}, moves: maps.Clone(own[d]), name: "\x01" + d.t.Name, allowed: map[int64]bool{}}
		groups = append(groups, g)
		ids, err := d.providerEvents(policyFamily, d.in.RunID-int64(d.p.WindowRuns))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			g.allowed[id] = true
			if eventOwn[id] != nil {
				continue
			}
			theirs, err := d.eventMoves(id)
			if err != nil {
				return nil, err
			}
			eventOwn[id] = theirs
			groups = append(groups, &group{provider: d.t.Provider, event: id, moves: maps.Clone(theirs), name: fmt.Sprintf("\x00%020d", id)})
		}
	}
	if len(groups) == 0 {
		return nil, nil
	}
	// The groups in name order, so that no tie is broken by the order
	// targets came in.
	sort.Slice(groups, func(i, j int) bool { return groups[i].name < groups[j].name })
	type score struct {
		same, smaller int
		ok            bool
	}
	scores := map[[2]*group]score{}
	pair := func(a, b *group) score {
		k := [2]*group{a, b}
		if sc, ok := scores[k]; ok {
			return sc
		}
		var sc score
		if a.provider == b.provider && (a.event == 0 || b.event == 0) &&
			(a.event == 0 || b.allowed[a.event]) && (b.event == 0 || a.allowed[b.event]) {
			sc.same, sc.ok = sameWay(a.moves, b.moves)
			sc.smaller = min(len(a.moves), len(b.moves))
		}
		scores[k] = sc
		return sc
	}
	for {
		bi, bj := -1, -1
		var best score
		for i, a := range groups {
			for j := i + 1; j < len(groups); j++ {
				sc := pair(a, groups[j])
				if !sc.ok {
					continue
				}
				// Groups are in name order and i < j: the first pair found
				// among equals is the one whose names sort first.
				if bi < 0 || sc.same > best.same || (sc.same == best.same && sc.same*best.smaller > best.same*sc.smaller) {
					bi, bj, best = i, j, sc
				}
			}
		}
		if bi < 0 {
			break
		}
		a, b := groups[bi], groups[bj]
		for k := range scores {
			if k[0] == a || k[1] == a || k[0] == b || k[1] == b {
				delete(scores, k)
			}
		}
		switch {
		case a.event != 0:
		case b.event != 0:
			a.allowed = nil
		default:
			for id := range a.allowed {
				if !b.allowed[id] {
					delete(a.allowed, id)
				}
			}
		}
		a.event = max(a.event, b.event)
		a.targets = append(a.targets, b.targets...)
		sort.Slice(a.targets, func(i, j int) bool { return a.targets[i].t.Name < a.targets[j].t.Name })
		for pid, ms := range b.moves {
			for _, m := range ms {
				addMove(a.moves, pid, m)
			}
		}
		// a keeps its place: its name is the smaller of the two.
		groups = append(groups[:bj], groups[bj+1:]...)
	}
	var order []*detector
	for _, g := range groups {
		if len(g.targets) == 0 || (g.event == 0 && len(g.targets) == 1) {
			if len(g.targets) == 1 {
				order = append(order, g.targets[0]) // opens its own, as always
			}
			continue
		}
		// What each target has in common with the rest of its group.
		for _, d := range g.targets {
			rest := map[string][]move{}
			if g.event != 0 {
				for pid, ms := range eventOwn[g.event] {
					rest[pid] = slices.Clone(ms)
				}
			}
			for _, o := range g.targets {
				if o == d {
					continue
				}
				for pid, ms := range own[o] {
					for _, m := range ms {
						addMove(rest, pid, m)
					}
				}
			}
			d.same, _ = sameWay(own[d], rest)
		}
		if g.event != 0 {
			for _, d := range g.targets {
				d.group, d.joinEvent = true, g.event
				order = append(order, d)
			}
			continue
		}
		opener := g.targets[0]
		for _, d := range g.targets[1:] {
			if len(d.flips) > len(opener.flips) {
				opener = d
			}
		}
		opener.group = true
		order = append(order, opener)
		for _, d := range g.targets {
			if d != opener {
				d.group, d.joinVia = true, opener
				order = append(order, d)
			}
		}
	}
	return order, nil
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
	modelBefore, modelAfter := eventModels(kind, flips, d.model)
	res, err := d.tx.ExecContext(d.ctx, `INSERT INTO events (fingerprint, target_id, provider, kind, direction, opened_kind, opened_direction, new_categories, vanished_categories, first_run, confirmed_run, last_run,
		model_before, model_after, corpus_version, corpus_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		fp, d.t.ID, d.t.Provider, kind, dir, kind, dir, strings.Join(newCats, ","), strings.Join(vanished, ","), firstRun, run, run,
		modelBefore, modelAfter, d.in.CorpusVersion, d.in.CorpusHash, ts(d.now), ts(d.now))
	if err != nil {
		return fmt.Errorf("open event: %w", err)
	}
	eid, _ := res.LastInsertId()
	if kind == KindPolicy || kind == KindModel {
		d.opened = eid
	}
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

// addProbe records f in event eid. A probe the event already holds keeps
// its before side and first run and takes f's after side (it changed
// again, or was marked again), except a score drift's (its row names the
// moves between two answers, so both sides follow the latest moves) and a
// flip on other request bytes (a row describes one byte version: it is
// the new bytes' row now).
func (d *detector) addProbe(eid int64, f flip) error {
	_, err := d.tx.ExecContext(d.ctx, `INSERT INTO event_probes (event_id, target_id, probe_id, request_sha256, before, after, before_obs, after_obs, first_run, confirmed_run, flip_rate, score_moves, origin)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (event_id, target_id, probe_id) DO UPDATE SET after = excluded.after, after_obs = excluded.after_obs, confirmed_run = excluded.confirmed_run, flip_rate = excluded.flip_rate, reverted_run = 0, withdrawn = 0,
			score_moves = CASE WHEN excluded.score_moves != '' THEN excluded.score_moves ELSE score_moves END, origin = excluded.origin,
			before_obs = CASE WHEN excluded.score_moves != '' OR excluded.request_sha256 != event_probes.request_sha256 THEN excluded.before_obs ELSE before_obs END,
			first_run = CASE WHEN excluded.score_moves != '' OR excluded.request_sha256 != event_probes.request_sha256 THEN excluded.first_run ELSE first_run END,
			before = CASE WHEN excluded.score_moves != '' OR excluded.request_sha256 != event_probes.request_sha256 THEN excluded.before ELSE before END,
			request_sha256 = excluded.request_sha256`,
		eid, d.t.ID, f.probeID, f.sha, f.before, f.after, f.beforeObs, f.afterObs, f.firstRun, d.in.RunID, f.flipRate, f.moves, d.origin)
	return err
}

func (d *detector) eventDirection(eid int64) (string, error) {
	// Withdrawn probes (marked nondeterministic) are no evidence of the
	// change: they do not steer its direction. Probes that flipped back or
	// moved on do: each was a confirmed flip, the provider did change that
	// way (the direction is that of the change recorded; reverted_run says
	// what was undone since), so a reverted event keeps its direction.
	rows, err := d.tx.QueryContext(d.ctx, `SELECT ep.before, ep.after, ep.score_moves, e.kind FROM event_probes ep JOIN events e ON e.id = ep.event_id WHERE ep.event_id = ? AND ep.withdrawn = 0`, eid)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var dirs []string
	var drifts []flip
	scores := false
	for rows.Next() {
		var b, a, moves, kind string
		if err := rows.Scan(&b, &a, &moves, &kind); err != nil {
			return "", err
		}
		dirs = append(dirs, direction(ParseKey(b), ParseKey(a)))
		drifts = append(drifts, flip{moves: moves})
		scores = kind == KindScoreDrift
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if scores {
		// A score drift's verdicts held: its scores moved one way or both.
		return scoreDirection(drifts), nil
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
		if n, b := counts[k], counts[bestK]; n > b || (n == b && JoinModel(k.id, k.fp) < JoinModel(bestK.id, bestK.fp)) {
			bestK = k
		}
	}
	best := ""
	if counts[bestK] > 0 {
		best = JoinModel(bestK.id, bestK.fp)
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
	d.model, d.prevModel = cur, prev
	return err
}
