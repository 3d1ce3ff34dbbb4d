package diff

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// Interval is a proportion with its Wilson 95% score interval.
type Interval struct {
	Blocked int     `json:"blocked"`
	Total   int     `json:"total"`
	Rate    float64 `json:"rate"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
}

// Wilson returns the Wilson score interval (95%, z = 1.96) for k of n.
func Wilson(k, n int) Interval {
	iv := Interval{Blocked: k, Total: n}
	if n == 0 {
		return iv
	}
	const z = 1.959963984540054
	p := float64(k) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	iv.Rate = p
	iv.Low = math.Max(0, center-half)
	iv.High = math.Min(1, center+half)
	return iv
}

// CategoryComparison is one category row of a comparison.
type CategoryComparison struct {
	Category string   `json:"category"`
	From     Interval `json:"from"`
	To       Interval `json:"to"`
}

// ProbeDiff is a probe the two targets disagree on.
type ProbeDiff struct {
	ProbeID string   `json:"probe_id"`
	Role    string   `json:"role"`
	Tags    []string `json:"tags"`
	From    Verdict  `json:"from"`
	To      Verdict  `json:"to"`
	// NondeterministicOn names the targets (from, to, or both) on which
	// the probe is known nondeterministic on the bytes the compared run
	// sent (see Compare): its difference is listed but not gated.
	NondeterministicOn []string `json:"nondeterministic_on,omitempty"`
}

// NotComparedProbe is a probe of the runs' corpus without a verdict on at
// least one side: nothing is known of how the two targets differ on it.
type NotComparedProbe struct {
	ProbeID string `json:"probe_id"`
	// Role is "" when the database holds no record of the probe.
	Role string   `json:"role"`
	Tags []string `json:"tags"`
	// From and To are what each side's run answered: the verdict
	// ("allowed", "blocked_output[violence]"), the class of an answer
	// that is no verdict about the probe (transient, client_error,
	// filter_unavailable, abuse_block), or "missing" when the run holds
	// no observation of the probe.
	From string `json:"from"`
	To   string `json:"to"`
	// FromHTTPStatus and ToHTTPStatus are the answers' HTTP statuses (0:
	// none, e.g. a connection error or an open circuit breaker).
	FromHTTPStatus int `json:"from_http_status,omitempty"`
	ToHTTPStatus   int `json:"to_http_status,omitempty"`
	// NoVerdictOn names the side(s) without a verdict.
	NoVerdictOn        []string `json:"no_verdict_on"`
	NondeterministicOn []string `json:"nondeterministic_on,omitempty"`
	// Gated: the missing verdict could hide a change the gate counts
	// (see Compare); these are what MaxNotCompared bounds.
	Gated bool `json:"gated"`
}

// ModelSeen is a model id and fingerprint the answers of a run reported,
// with how many first answers reported them.
type ModelSeen struct {
	ModelID          string `json:"model_id"`
	ModelFingerprint string `json:"model_fingerprint"`
	Answers          int    `json:"answers"`
}

// SkippedRun is a run of a target newer than the one a comparison read.
type SkippedRun struct {
	Run           int64     `json:"run"`
	StartedAt     time.Time `json:"started_at"`
	CorpusVersion string    `json:"corpus_version"`
	// Status is the target's part of the run: complete, degraded or
	// aborted (an aborted run's part of a complete target is aborted).
	Status string `json:"status"`
	// Reason: "corpus_version" (complete, but on a corpus version the
	// other side has no complete run on), "incomplete" (the target did
	// not answer the whole corpus in it), or "not_selected" (a complete
	// run on the compared version newer than the run named).
	Reason string `json:"reason"`
}

// MaxNewerRuns is the most newer runs a CompareSide lists (the latest).
const MaxNewerRuns = 100

// Skipped-run reasons.
const (
	SkippedCorpusVersion = "corpus_version"
	SkippedIncomplete    = "incomplete"
	SkippedNotSelected   = "not_selected"
)

// CompareSide is what a comparison read of one target: the run, when it
// ran and on which corpus, the model as configured and the models its
// answers reported, and the target's newer runs it did not read.
type CompareSide struct {
	Target string `json:"target"`
	// Disabled: the target is disabled in the config (CompareOptions.
	// Disabled), so no run refreshes it: Run is as new as its data gets.
	Disabled   bool       `json:"disabled"`
	Run        int64      `json:"run"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// CorpusVersion is the compared run's (both sides': the same).
	CorpusVersion string `json:"corpus_version"`
	Provider      string `json:"provider"`
	// Model is the model the run's requests named (the target's
	// configured model at that run, storage.RunTarget.Model); for runs
	// recorded before it was kept, the target's model as configured now.
	Model string `json:"model"`
	// Origin is the endpoint the run's requests went to
	// (storage.RunTarget.Origin); "" for runs recorded before it was kept.
	Origin string `json:"origin"`
	// AnsweredBy are the model ids and fingerprints the run's answers
	// reported, most answers first (empty when the provider names none).
	AnsweredBy []ModelSeen `json:"answered_by"`
	// NewerRuns are the target's runs after Run, oldest first, with why
	// they were not read: the latest MaxNewerRuns of them (a target
	// degraded for months has thousands); NewerRunsTotal counts them all.
	NewerRuns []SkippedRun `json:"newer_runs"`
	// NewerRunsTotal is how many runs of the target came after Run:
	// len(NewerRuns) unless the list was capped.
	NewerRunsTotal int `json:"newer_runs_total"`
	// NewerCorpusVersions is how many corpus versions the target's newer
	// complete runs were on besides the compared one (all of them, also
	// those of runs past NewerRuns): versions the other side has no
	// complete run on. The warnings name the latest few and count the rest.
	NewerCorpusVersions int `json:"newer_corpus_versions"`
	// allNewer is every newer run when NewerRuns was capped (nil when it
	// was not): the warnings summarize them all.
	allNewer []SkippedRun
	// DamagedRows counts the run's observation rows of the target that are
	// damaged (storage.ErrDamagedRow; db check names them): their probes
	// count as not observed, so they are not compared (and gated as such).
	DamagedRows int `json:"damaged_rows,omitempty"`
	// DetectionStateDamaged: the target's detection state does not decode
	// (db check names the row and the statement that removes it), so the
	// probes it marks nondeterministic are unknown: only the probes of the
	// target's open nondeterminism events are set apart, and the others'
	// differences are counted and gated (the gate errs towards failing).
	DetectionStateDamaged bool `json:"detection_state_damaged,omitempty"`
}

// Comparison is the model-upgrade check of --to (candidate) against --from
// (current).
type Comparison struct {
	From          string               `json:"from"`
	To            string               `json:"to"`
	FromRun       int64                `json:"from_run"`
	ToRun         int64                `json:"to_run"`
	CorpusVersion string               `json:"corpus_version"`
	Compared      int                  `json:"compared"` // probes with a verdict on both
	Categories    []CategoryComparison `json:"categories"`
	// NewBlocks: blocked by the candidate, allowed by the current one.
	NewBlocks []ProbeDiff `json:"new_blocks"`
	// NewAllows: allowed by the candidate, blocked by the current one.
	NewAllows []ProbeDiff `json:"new_allows"`
	// OverBlocking: NewBlocks on benign controls and borderline probes,
	// but those known nondeterministic (OverBlockingNondeterministic).
	OverBlocking int `json:"over_blocking"`
	// UnderBlocking: NewAllows on positive controls, but those known
	// nondeterministic (UnderBlockingNondeterministic).
	UnderBlocking int `json:"under_blocking"`
	// Recategorized: blocked by both with different class or categories.
	Recategorized []ProbeDiff `json:"recategorized"`
	MaxNewBlocks  int         `json:"max_new_blocks"`
	// MaxLostBlocks gates under-blocking too when >= 0 (-1: off).
	MaxLostBlocks int  `json:"max_lost_blocks"`
	GateFailed    bool `json:"gate_failed"`

	// Total is the probes of the compared runs' corpus (every probe either
	// run answered): Compared + NotCompared.
	Total int `json:"total"`
	// NotCompared is the probes without a verdict on one side or both,
	// listed in NotComparedProbes.
	NotCompared       int                `json:"not_compared"`
	NotComparedProbes []NotComparedProbe `json:"not_compared_probes"`
	// NotComparedGated is how many of them could hide a change the gate
	// counts; the gate fails when it exceeds MaxNotCompared (>= 0; -1: off).
	NotComparedGated int `json:"not_compared_gated"`
	MaxNotCompared   int `json:"max_not_compared"`
	// Nondeterministic is how many compared probes are known
	// nondeterministic on either side; OverBlockingNondeterministic and
	// UnderBlockingNondeterministic are the over- and under-blocking
	// differences among them, not gated.
	Nondeterministic              int `json:"nondeterministic"`
	OverBlockingNondeterministic  int `json:"over_blocking_nondeterministic"`
	UnderBlockingNondeterministic int `json:"under_blocking_nondeterministic"`
	// FromSide and ToSide say what was read of each target.
	FromSide CompareSide `json:"from_side"`
	ToSide   CompareSide `json:"to_side"`
	// Warnings are what a reader must know to trust the result (newer
	// runs not read, ungated unknowns), one sentence each.
	Warnings []string `json:"warnings"`
}

// CompareOptions are the gate and the runs of a comparison.
type CompareOptions struct {
	// MaxNewBlocks: most benign/borderline probes the candidate may newly
	// block.
	MaxNewBlocks int
	// MaxLostBlocks: most positive controls the candidate may newly allow
	// (negative: not gated).
	MaxLostBlocks int
	// MaxNotCompared: most probes whose missing verdict could hide a gated
	// change (negative: not gated). The zero value gates: an unknown never
	// passes by default.
	MaxNotCompared int
	// Run, when > 0, is the one run whose parts of both targets are
	// compared (compare --run: the run just made); each target's part of
	// it must be complete (else ErrRunIncomplete). 0: each target's latest
	// complete run on a shared corpus version.
	Run int64
	// Disabled, when set, says whether a target is disabled in the config
	// (diff does not read the config): such a side is marked and warned
	// about.
	Disabled func(target string) bool
}

// ErrNoCompleteRun is returned when a target has no complete run to compare.
var ErrNoCompleteRun = errors.New("no complete run")

// ErrRunIncomplete is returned when the run named in CompareOptions.Run is
// not a complete run of one of the targets (degraded: the provider kept
// failing; aborted).
var ErrRunIncomplete = errors.New("not a complete run of the target")

// ErrNotComparable is returned when fewer than half of the probes of the
// compared runs' corpus have a verdict on both targets.
var ErrNotComparable = errors.New("not comparable")

// ErrUnknownProbe is returned when a compared probe has no stored record
// (role and tags) in the database: compare will not guess them.
var ErrUnknownProbe = errors.New("probe record missing")

// LatestCompleteRun returns the latest run in which the target completed,
// optionally on a given corpus version ("" for any). When there is none,
// the error wraps ErrNoCompleteRun and says whether the target never ran
// in this database or which state its latest run left it in.
func LatestCompleteRun(ctx context.Context, db *storage.DB, target, version string) (int64, string, error) {
	q := `SELECT r.id, r.corpus_version FROM run_targets rt JOIN runs r ON r.id = rt.run_id JOIN targets t ON t.id = rt.target_id
		WHERE t.name = ? AND rt.status = 'complete' AND r.status != 'aborted'`
	args := []any{target}
	if version != "" {
		q += ` AND r.corpus_version = ?`
		args = append(args, version)
	}
	q += ` ORDER BY rt.run_id DESC LIMIT 1`
	var id int64
	var v string
	err := db.SQL().QueryRowContext(ctx, q, args...).Scan(&id, &v)
	if errors.Is(err, sql.ErrNoRows) {
		var last int64
		var status string
		lerr := db.SQL().QueryRowContext(ctx, `SELECT rt.run_id, rt.status FROM run_targets rt JOIN targets t ON t.id = rt.target_id
			WHERE t.name = ? ORDER BY rt.run_id DESC LIMIT 1`, target).Scan(&last, &status)
		switch {
		case errors.Is(lerr, sql.ErrNoRows):
			return 0, "", fmt.Errorf("target %s: %w (every run of it so far was partial, degraded or aborted, or it never ran: this database records no run of it; compare reads a run that probed the whole corpus; run it, or compare --run)", target, ErrNoCompleteRun)
		case lerr != nil:
			return 0, "", fmt.Errorf("target %s: latest run: %w", target, lerr)
		}
		return 0, "", fmt.Errorf("target %s: %w (every run of it so far was partial, degraded or aborted, or it never ran: its latest, run %d, was %s for it; compare reads a run that probed the whole corpus; run it, or compare --run)", target, ErrNoCompleteRun, last, status)
	}
	if err != nil {
		return 0, "", fmt.Errorf("target %s: latest complete run: %w", target, err)
	}
	return id, v, nil
}

// Compare is CompareWith on the latest complete runs, with
// --max-not-compared 0. The *corpus.Corpus argument is never read (see
// CompareWith); it is kept for callers.
func Compare(ctx context.Context, db *storage.DB, _ *corpus.Corpus, from, to string, maxNewBlocks, maxLostBlocks int) (*Comparison, error) {
	return CompareWith(ctx, db, from, to, CompareOptions{MaxNewBlocks: maxNewBlocks, MaxLostBlocks: maxLostBlocks})
}

// CompareWith compares the observations of two targets on the same corpus
// version: each one's latest complete run on a shared version (the
// current target's latest version first, else the candidate's, else the
// latest version both have a complete run on), or both targets' parts of
// o.Run. The gate fails when more benign or borderline
// probes are newly blocked by the candidate than o.MaxNewBlocks; when more
// positive controls are newly allowed than o.MaxLostBlocks, unless it is
// negative (off); and when more probes than o.MaxNotCompared, unless it is
// negative (off), lack a verdict in a way that could hide such a change.
//
// Everything about the probes comes from the database, as the compared
// runs recorded them: each probe's role and tags (categories; "none" for
// untagged benign controls) from the stored record of the exact probe the
// runs sent (observations carry its SHA-256), and the probe total from the
// probes the runs answered. The corpus loaded now is never read: a corpus
// bumped since the runs (probes re-roled, added or removed) must not
// change what the gate counts. A compared probe without a stored record is
// refused (ErrUnknownProbe), never counted with a guessed role; so is a
// probe the two runs sent in different forms (ErrNotComparable).
//
// Not compared. A probe with no verdict on a side (transient error, client
// error, unavailable filter, account-level abuse_block, or no observation)
// is not compared: it is listed in NotComparedProbes with what each side
// answered, and counted in NotCompared; Total is Compared + NotCompared.
// Fewer than half of Total compared is refused (ErrNotComparable). A
// not-compared probe is Gated when its missing verdict could hide a change
// the gate counts: a benign or borderline probe the candidate does not
// allow and the current target does not block (a hidden new block), and,
// with MaxLostBlocks >= 0, a positive control the candidate does not block
// and the current target does not allow (a hidden lost block); a probe
// without a stored record is gated either way. So a candidate that errors
// on exactly the probes it would block fails the gate instead of passing.
//
// Nondeterminism. A probe is known nondeterministic on a side when that
// target's detection state marks it nondeterministic, or it is a probe of
// an open nondeterminism event of the target (not reverted), on the same
// request bytes the compared run sent. Its verdict is a coin flip near a
// threshold, so a difference on it is no evidence about the candidate:
// it stays listed (flagged with NondeterministicOn) and counted in the
// category rates, but is counted apart (OverBlockingNondeterministic,
// UnderBlockingNondeterministic) instead of in OverBlocking and
// UnderBlocking, and is never Gated when not compared.
//
// FromSide and ToSide name the runs read (id, start, corpus version), the
// model as configured and the models the answers reported; a side's newer
// runs that were not read are listed with why, and a Warning says so.
func CompareWith(ctx context.Context, db *storage.DB, from, to string, o CompareOptions) (*Comparison, error) {
	fromRun, toRun, ver, err := pickRuns(ctx, db, from, to, o.Run)
	if err != nil {
		return nil, err
	}
	ft, err := db.TargetByName(ctx, from)
	if err != nil {
		return nil, err
	}
	tt, err := db.TargetByName(ctx, to)
	if err != nil {
		return nil, err
	}
	fv, fdmg, err := answersOf(ctx, db, fromRun, ft.ID)
	if err != nil {
		return nil, err
	}
	tvs, tdmg, err := answersOf(ctx, db, toRun, tt.ID)
	if err != nil {
		return nil, err
	}
	fnd, fbad, err := knownNondeterministic(ctx, db, ft.ID)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", from, err)
	}
	tnd, tbad, err := knownNondeterministic(ctx, db, tt.ID)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", to, err)
	}
	recs, err := probeRecords(ctx, db, fv, tvs)
	if err != nil {
		return nil, err
	}
	c := &Comparison{From: from, To: to, FromRun: fromRun, ToRun: toRun, CorpusVersion: ver,
		MaxNewBlocks: o.MaxNewBlocks, MaxLostBlocks: o.MaxLostBlocks, MaxNotCompared: o.MaxNotCompared,
		NewBlocks: []ProbeDiff{}, NewAllows: []ProbeDiff{}, Recategorized: []ProbeDiff{},
		Categories: []CategoryComparison{}, NotComparedProbes: []NotComparedProbe{}, Warnings: []string{}}
	if c.MaxLostBlocks < 0 {
		c.MaxLostBlocks = -1
	}
	if c.MaxNotCompared < 0 {
		c.MaxNotCompared = -1
	}
	type acc struct{ fb, tb, n int }
	cats := map[string]*acc{}
	// The probe total is the runs' corpus: every probe either run answered
	// (a complete target-run records one first sample per probe, whatever
	// the answer).
	ids := make([]string, 0, len(fv)+len(tvs))
	for id := range fv {
		ids = append(ids, id)
	}
	for id := range tvs {
		if _, ok := fv[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	c.Total = len(ids)
	for _, id := range ids {
		x, ok1 := fv[id]
		y, ok2 := tvs[id]
		var nd []string
		if ok1 && fnd[id][x.req] {
			nd = append(nd, from)
		}
		if ok2 && tnd[id][y.req] {
			nd = append(nd, to)
		}
		if !ok1 || !ok2 || !x.verdict || !y.verdict {
			c.notCompared(id, x, ok1, y, ok2, nd, recs)
			continue
		}
		if x.sha != y.sha {
			return nil, fmt.Errorf("%w: probe %s differs between %s (run %d, probe sha256 %s) and %s (run %d, probe sha256 %s): the runs did not send the same corpus",
				ErrNotComparable, id, from, fromRun, x.sha, to, toRun, y.sha)
		}
		rec, ok := recs[x.sha]
		if !ok {
			return nil, fmt.Errorf("%w: probe %s (sha256 %s), answered by %s in run %d and %s in run %d, has no stored record in this database, so its role and tags (what the gate counts) are unknown",
				ErrUnknownProbe, id, x.sha, from, fromRun, to, toRun)
		}
		a, b := x.v, y.v
		role, tags := rec.Role, rec.Tags
		c.Compared++
		if len(nd) > 0 {
			c.Nondeterministic++
		}
		keys := tags
		if len(keys) == 0 {
			keys = []string{"none"}
		}
		for _, k := range keys {
			if cats[k] == nil {
				cats[k] = &acc{}
			}
			cats[k].n++
			if a.Class.IsBlock() {
				cats[k].fb++
			}
			if b.Class.IsBlock() {
				cats[k].tb++
			}
		}
		pd := ProbeDiff{ProbeID: id, Role: role, Tags: nonNil(tags), From: a, To: b, NondeterministicOn: nd}
		switch {
		case !a.Class.IsBlock() && b.Class.IsBlock():
			c.NewBlocks = append(c.NewBlocks, pd)
			if role == corpus.RoleBenign || role == corpus.RoleBorderline {
				if len(nd) > 0 {
					c.OverBlockingNondeterministic++
				} else {
					c.OverBlocking++
				}
			}
		case a.Class.IsBlock() && !b.Class.IsBlock():
			c.NewAllows = append(c.NewAllows, pd)
			if role == corpus.RolePositive {
				if len(nd) > 0 {
					c.UnderBlockingNondeterministic++
				} else {
					c.UnderBlocking++
				}
			}
		case a.Class.IsBlock() && b.Class.IsBlock() && a.Key() != b.Key():
			c.Recategorized = append(c.Recategorized, pd)
		}
	}
	names := make([]string, 0, len(cats))
	for k := range cats {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if oi, oj := catOrder(names[i]), catOrder(names[j]); oi != oj {
			return oi < oj
		}
		return names[i] < names[j]
	})
	for _, k := range names {
		a := cats[k]
		c.Categories = append(c.Categories, CategoryComparison{Category: k, From: Wilson(a.fb, a.n), To: Wilson(a.tb, a.n)})
	}
	// A gate over too few comparable probes would pass by default (e.g. a
	// mistyped candidate model answering 404 to everything).
	if c.Compared == 0 || c.Compared*2 < c.Total {
		return nil, fmt.Errorf("%w: only %d of %d probes have a verdict on both %s (run %d) and %s (run %d)%s", ErrNotComparable, c.Compared, c.Total, from, fromRun, to, toRun, c.noVerdictSummary())
	}
	if c.FromSide, err = sideOf(ctx, db, ft, fromRun, ver, fv); err != nil {
		return nil, err
	}
	if c.ToSide, err = sideOf(ctx, db, tt, toRun, ver, tvs); err != nil {
		return nil, err
	}
	c.FromSide.DamagedRows, c.ToSide.DamagedRows = fdmg, tdmg
	c.FromSide.DetectionStateDamaged, c.ToSide.DetectionStateDamaged = fbad, tbad
	if o.Disabled != nil {
		c.FromSide.Disabled, c.ToSide.Disabled = o.Disabled(from), o.Disabled(to)
	}
	c.warn()
	c.GateFailed = c.OverBlocking > c.MaxNewBlocks || c.MaxLostBlocks >= 0 && c.UnderBlocking > c.MaxLostBlocks ||
		c.MaxNotCompared >= 0 && c.NotComparedGated > c.MaxNotCompared
	return c, nil
}

// pickRuns chooses the runs to compare and their corpus version: both
// targets' parts of pinned when > 0, else the current target's latest
// complete run and the candidate's latest complete run on its version,
// else the candidate's latest complete run and the current target's
// latest complete run on that version, else both targets' latest complete
// runs on the latest version they share (sharedVersion).
func pickRuns(ctx context.Context, db *storage.DB, from, to string, pinned int64) (fromRun, toRun int64, ver string, err error) {
	if pinned > 0 {
		r, err := db.Run(ctx, pinned)
		if err != nil {
			return 0, 0, "", err
		}
		for _, name := range []string{from, to} {
			if err := completePart(ctx, db, name, r); err != nil {
				return 0, 0, "", err
			}
		}
		return pinned, pinned, r.CorpusVersion, nil
	}
	fromRun, ver, err = LatestCompleteRun(ctx, db, from, "")
	if err != nil {
		return 0, 0, "", err
	}
	toRun, _, err = LatestCompleteRun(ctx, db, to, ver)
	if err == nil {
		return fromRun, toRun, ver, nil
	}
	if !errors.Is(err, ErrNoCompleteRun) {
		return 0, 0, "", err
	}
	// Fall back to the candidate's latest and require the versions match.
	var tv string
	if toRun, tv, err = LatestCompleteRun(ctx, db, to, ""); err != nil {
		return 0, 0, "", err
	}
	if fromRun, _, err = LatestCompleteRun(ctx, db, from, tv); err == nil {
		return fromRun, toRun, tv, nil
	}
	if !errors.Is(err, ErrNoCompleteRun) {
		return 0, 0, "", err
	}
	// Neither latest version is shared (each side moved on to a version
	// of its own): the latest version both have a complete run on, by the
	// current target's latest run on it.
	shared, err := sharedVersion(ctx, db, from, to)
	if err != nil {
		return 0, 0, "", err
	}
	if shared == "" {
		return 0, 0, "", fmt.Errorf("%s and %s have no complete runs on the same corpus version (%s's latest is on %s, %s's on %s): %w", from, to, from, ver, to, tv, ErrNoCompleteRun)
	}
	if fromRun, _, err = LatestCompleteRun(ctx, db, from, shared); err != nil {
		return 0, 0, "", err
	}
	if toRun, _, err = LatestCompleteRun(ctx, db, to, shared); err != nil {
		return 0, 0, "", err
	}
	return fromRun, toRun, shared, nil
}

// sharedVersion returns the corpus version both targets have a complete
// run on (as LatestCompleteRun counts one) whose latest complete run of
// from is the newest; "" when there is none.
func sharedVersion(ctx context.Context, db *storage.DB, from, to string) (string, error) {
	const complete = `SELECT r.id, r.corpus_version FROM run_targets rt JOIN runs r ON r.id = rt.run_id JOIN targets t ON t.id = rt.target_id
		WHERE t.name = ? AND rt.status = 'complete' AND r.status != 'aborted'`
	var v string
	err := db.SQL().QueryRowContext(ctx, `SELECT f.corpus_version FROM (`+complete+`) f
		WHERE f.corpus_version IN (SELECT c.corpus_version FROM (`+complete+`) c)
		ORDER BY f.id DESC LIMIT 1`, from, to).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("corpus versions of %s and %s: %w", from, to, err)
	}
	return v, nil
}

// completePart returns nil when the target's part of run r is complete,
// else an error wrapping ErrRunIncomplete that gives the part's counts and
// what to do.
func completePart(ctx context.Context, db *storage.DB, target string, r storage.Run) error {
	var status string
	var obs, verdicts, transient, clientErrs, unavailable, breaker int
	err := db.SQL().QueryRowContext(ctx, `SELECT rt.status, rt.observations, rt.verdicts, rt.transient, rt.client_errors, rt.unavailable, rt.breaker_opened
		FROM run_targets rt JOIN targets t ON t.id = rt.target_id WHERE rt.run_id = ? AND t.name = ?`, r.ID, target).
		Scan(&status, &obs, &verdicts, &transient, &clientErrs, &unavailable, &breaker)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("target %s: run %d recorded no part of it: %w", target, r.ID, ErrRunIncomplete)
	}
	if err != nil {
		return fmt.Errorf("target %s: run %d: %w", target, r.ID, err)
	}
	if status == storage.TargetComplete && r.Status != storage.RunAborted {
		return nil
	}
	if status == storage.TargetComplete {
		status = "aborted (the run was)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "of %d probes, %d answered with a verdict, %d transient errors, %d client errors, %d filter unavailable",
		obs, verdicts, transient, clientErrs, unavailable)
	if breaker != 0 {
		b.WriteString("; its circuit breaker opened")
	}
	b.WriteString(". compare reads only a run in which the target answered the whole corpus")
	if status == storage.TargetDegraded {
		fmt.Fprintf(&b, " (a degraded run confirms nothing); %s's provider kept failing: try again later, or raise its max_attempts or breaker.failures in the config", target)
	}
	last, _, lerr := LatestCompleteRun(ctx, db, target, "")
	switch {
	case lerr == nil:
		lr, err := db.Run(ctx, last)
		if err != nil {
			return fmt.Errorf("target %s: run %d: %w", target, last, err)
		}
		fmt.Fprintf(&b, "; compare without --run reads %s's latest complete run, run %d (started %s)", target, last, lr.StartedAt.UTC().Format(time.RFC3339))
	case errors.Is(lerr, ErrNoCompleteRun):
		fmt.Fprintf(&b, "; %s has no complete run to compare instead", target)
	default:
		return lerr
	}
	return fmt.Errorf("target %s: run %d was %s for it, %w: %s", target, r.ID, status, ErrRunIncomplete, b.String())
}

func catOrder(c string) int {
	for i, v := range probes.Categories {
		if v == c {
			return i
		}
	}
	return len(probes.Categories)
}

// noVerdictSummary says what each side answered instead of a verdict, by
// class, the side with more such answers first ("; without a verdict: cand
// 62 abuse_block; cur 2 transient"), so that a refusal says why (a
// suspended account, a mistyped model's 404s, an outage); "" when every
// probe has a verdict on both.
func (c *Comparison) noVerdictSummary() string {
	type side struct {
		name  string
		n     int
		count map[string]int
	}
	sides := []*side{{name: c.From, count: map[string]int{}}, {name: c.To, count: map[string]int{}}}
	for _, p := range c.NotComparedProbes {
		for i, what := range []string{p.From, p.To} {
			if slices.Contains(p.NoVerdictOn, sides[i].name) {
				sides[i].count[what]++
				sides[i].n++
			}
		}
	}
	slices.SortStableFunc(sides, func(a, b *side) int { return cmp.Compare(b.n, a.n) })
	var parts []string
	for _, s := range sides {
		if s.n == 0 {
			continue
		}
		whats := make([]string, 0, len(s.count))
		for w := range s.count {
			whats = append(whats, w)
		}
		slices.SortFunc(whats, func(a, b string) int {
			if d := cmp.Compare(s.count[b], s.count[a]); d != 0 {
				return d
			}
			return strings.Compare(a, b)
		})
		for i, w := range whats {
			whats[i] = fmt.Sprintf("%d %s", s.count[w], w)
		}
		parts = append(parts, s.name+" "+strings.Join(whats, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; without a verdict: " + strings.Join(parts, "; ")
}

// notCompared records probe id, without a verdict on a side.
func (c *Comparison) notCompared(id string, x answer, ok1 bool, y answer, ok2 bool, nd []string, recs map[string]storage.ProbeRecord) {
	np := NotComparedProbe{ProbeID: id, From: x.describe(ok1), To: y.describe(ok2), FromHTTPStatus: x.status, ToHTTPStatus: y.status,
		NoVerdictOn: []string{}, Tags: []string{}, NondeterministicOn: nd}
	rec, known := storage.ProbeRecord{}, false
	for _, a := range []struct {
		ok bool
		a  answer
	}{{ok1, x}, {ok2, y}} {
		if r, ok := recs[a.a.sha]; a.ok && ok && !known {
			rec, known = r, true
		}
	}
	if known {
		np.Role, np.Tags = rec.Role, nonNil(rec.Tags)
	}
	if !ok1 || !x.verdict {
		np.NoVerdictOn = append(np.NoVerdictOn, c.From)
	}
	if !ok2 || !y.verdict {
		np.NoVerdictOn = append(np.NoVerdictOn, c.To)
	}
	fromBlocks, fromAllows := ok1 && x.verdict && x.v.Class.IsBlock(), ok1 && x.verdict && !x.v.Class.IsBlock()
	toBlocks, toAllows := ok2 && y.verdict && y.v.Class.IsBlock(), ok2 && y.verdict && !y.v.Class.IsBlock()
	hiddenNew := !toAllows && !fromBlocks
	hiddenLost := c.MaxLostBlocks >= 0 && !toBlocks && !fromAllows
	switch {
	case len(nd) > 0:
		// Its verdict would not count: its absence hides nothing.
	case !known:
		np.Gated = hiddenNew || hiddenLost
	case np.Role == corpus.RoleBenign || np.Role == corpus.RoleBorderline:
		np.Gated = hiddenNew
	case np.Role == corpus.RolePositive:
		np.Gated = hiddenLost
	}
	c.NotCompared++
	if np.Gated {
		c.NotComparedGated++
	}
	c.NotComparedProbes = append(c.NotComparedProbes, np)
}

// warn fills Warnings from what was read.
func (c *Comparison) warn() { c.Warnings = c.WarningTexts(func(s string) string { return s }) }

// WarningTexts renders the comparison's warnings (see Warnings) with every
// name, version and model from the config, corpus or database passed
// through quote (identity for text; an escaper for Markdown). Newer runs
// are named as ranges and, past a few, counted (runSpans), so a warning's
// length does not grow with the history; they are all of a side's newer
// runs for a Comparison Compare returned (one decoded from JSON holds
// only the latest MaxNewerRuns).
func (c *Comparison) WarningTexts(quote func(string) string) []string {
	out := []string{}
	for _, s := range []*CompareSide{&c.FromSide, &c.ToSide} {
		if s.Disabled {
			out = append(out, fmt.Sprintf("%s is disabled in the config: no run refreshes it, so this compares its latest complete run, %d, started %s",
				quote(s.Target), s.Run, s.StartedAt.UTC().Format(time.RFC3339)))
		}
	}
	for _, s := range []*CompareSide{&c.FromSide, &c.ToSide} {
		other := c.To
		if s == &c.ToSide {
			other = c.From
		}
		byVersion := map[string][]int64{}
		var versions []string
		var incomplete []int64
		var statuses []string
		newer := s.NewerRuns
		if s.allNewer != nil {
			newer = s.allNewer
		}
		for _, r := range newer {
			switch r.Reason {
			case SkippedCorpusVersion:
				if byVersion[r.CorpusVersion] == nil {
					versions = append(versions, r.CorpusVersion)
				}
				byVersion[r.CorpusVersion] = append(byVersion[r.CorpusVersion], r.Run)
			case SkippedIncomplete:
				incomplete = append(incomplete, r.Run)
				statuses = append(statuses, quote(r.Status))
			}
		}
		const hint = " (run both on one corpus version, e.g. with compare --run, to compare the newest data)"
		if len(versions) > maxRunItems {
			// A warning per version would grow with the history: the
			// latest latestRunItems versions (by their latest run) are
			// warned about one each, the older ones counted in one.
			last := func(v string) int64 { return byVersion[v][len(byVersion[v])-1] } // ids ascend
			slices.SortStableFunc(versions, func(a, b string) int { return cmp.Compare(last(a), last(b)) })
			older := versions[:len(versions)-latestRunItems]
			versions = versions[len(versions)-latestRunItems:]
			var ids []int64
			names := make([]string, len(older))
			for i, v := range older {
				ids = append(ids, byVersion[v]...)
				names[i] = quote(v)
			}
			slices.Sort(ids)
			out = append(out, fmt.Sprintf("%s has newer complete runs that were not compared on %d other corpus versions (before the latest %s, named one by one), on which %s has no complete run: %s on corpus %s; this compares %s's older run %d on corpus %s%s",
				quote(s.Target), len(older), latestRunWord, quote(other), runsText(ids), listSome(names, latestRunItems, ", "), quote(s.Target), s.Run, quote(s.CorpusVersion), hint))
		}
		for _, v := range versions {
			out = append(out, fmt.Sprintf("%s has newer complete runs that were not compared: %s on corpus %s, on which %s has no complete run; this compares %s's older run %d on corpus %s%s",
				quote(s.Target), runsText(byVersion[v]), quote(v), quote(other), quote(s.Target), s.Run, quote(s.CorpusVersion), hint))
		}
		if len(incomplete) > 0 {
			runs, summed := runSpans(incomplete, statuses, "newer runs")
			if !summed {
				runs = "newer runs " + runs
			}
			out = append(out, fmt.Sprintf("%s's %s did not answer the whole corpus and were not compared; this compares its run %d", quote(s.Target), runs, s.Run))
		}
		if s.DamagedRows > 0 {
			out = append(out, fmt.Sprintf("%s's run %d holds %d damaged observation row(s) (driftprobe db check names them): their probes read as not observed and are not compared", quote(s.Target), s.Run, s.DamagedRows))
		}
		if s.DetectionStateDamaged {
			out = append(out, fmt.Sprintf("%s's detection state does not decode (driftprobe db check names the row and the statement that removes it): which probes it marks nondeterministic is unknown, so only those of its open nondeterminism events are set apart; the others' differences are counted and gated", quote(s.Target)))
		}
	}
	if c.MaxNotCompared < 0 && c.NotComparedGated > 0 {
		out = append(out, fmt.Sprintf("%d probe(s) without a verdict on one side could hide a change the gate counts (--max-not-compared is off)", c.NotComparedGated))
	}
	return out
}

// A warning names at most maxRunItems runs or ranges of runs; past that
// it counts the runs and names the latest latestRunItems (latestRunWord).
// So with a side's corpus versions: past maxRunItems of them, the latest
// latestRunItems are warned about one each and the others counted in one
// warning, which names latestRunItems of them "and N more".
const (
	maxRunItems    = 10
	latestRunItems = 5
	latestRunWord  = "five"
)

// runsText renders ascending run ids as a warning names them: "run 3",
// "runs 3–9, 12", or past maxRunItems items their count and the latest
// (runSpans).
func runsText(ids []int64) string {
	runs, summed := runSpans(ids, nil, "runs")
	switch {
	case summed:
	case len(ids) == 1:
		runs = "run " + runs
	default:
		runs = "runs " + runs
	}
	return runs
}

// listSome joins the first n items of list with sep, counting the rest
// ("a, b and 3 more"), as attribution's warnings list their series.
func listSome(list []string, n int, sep string) string {
	if len(list) <= n {
		return strings.Join(list, sep)
	}
	return strings.Join(list[:n], sep) + fmt.Sprintf(" and %d more", len(list)-n)
}

// runSpans renders ascending run ids for a warning, each with its label
// (labels[i]; nil: none), so that its length does not grow with the
// number of runs: ids that follow one another (id, id+1) with the same
// label are one range ("3–9"), a label follows its run or range in
// parentheses ("5–9 (degraded)"), and items are joined with ", ". Beyond
// maxRunItems items it is summarized (summed is true) as "N NOUN between
// FIRST and LAST (the latest: ITEMS)", with per-label counts before the
// latest items when labelled ("(6 degraded, 4 aborted; the latest: …)",
// labels in sorted order). ids must not be empty.
func runSpans(ids []int64, labels []string, noun string) (text string, summed bool) {
	label := func(i int) string {
		if labels == nil {
			return ""
		}
		return labels[i]
	}
	var items []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 && label(j+1) == label(i) {
			j++
		}
		item := fmt.Sprint(ids[i])
		switch {
		case j == i+1: // two: a range would hide nothing
			items = append(items, withLabel(item, label(i)))
			item = fmt.Sprint(ids[j])
		case j > i:
			item = fmt.Sprintf("%d–%d", ids[i], ids[j])
		}
		items = append(items, withLabel(item, label(i)))
		i = j + 1
	}
	if len(items) <= maxRunItems {
		return strings.Join(items, ", "), false
	}
	counts := ""
	if labels != nil {
		n := map[string]int{}
		for _, l := range labels {
			n[l]++
		}
		keys := make([]string, 0, len(n))
		for l := range n {
			keys = append(keys, l)
		}
		sort.Strings(keys)
		for k, l := range keys {
			keys[k] = fmt.Sprintf("%d %s", n[l], l)
		}
		counts = strings.Join(keys, ", ") + "; "
	}
	return fmt.Sprintf("%d %s between %d and %d (%sthe latest: %s)", len(ids), noun, ids[0], ids[len(ids)-1], counts, strings.Join(items[len(items)-latestRunItems:], ", ")), true
}

func withLabel(item, label string) string {
	if label == "" {
		return item
	}
	return item + " (" + label + ")"
}

// sideOf describes what a comparison read of target t: run, its corpus
// version ver, the models its answers reported, and the newer runs of t.
func sideOf(ctx context.Context, db *storage.DB, t storage.TargetRow, run int64, ver string, ans map[string]answer) (CompareSide, error) {
	r, err := db.Run(ctx, run)
	if err != nil {
		return CompareSide{}, err
	}
	s := CompareSide{Target: t.Name, Run: run, StartedAt: r.StartedAt, CorpusVersion: r.CorpusVersion, Provider: t.Provider, Model: t.Model,
		AnsweredBy: []ModelSeen{}, NewerRuns: []SkippedRun{}}
	if !r.FinishedAt.IsZero() {
		f := r.FinishedAt
		s.FinishedAt = &f
	}
	var model string
	if err := db.SQL().QueryRowContext(ctx, `SELECT origin, model FROM run_targets WHERE run_id = ? AND target_id = ?`, run, t.ID).Scan(&s.Origin, &model); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return CompareSide{}, fmt.Errorf("run %d: target %s: %w", run, t.Name, err)
	}
	if model != "" {
		s.Model = model
	}
	seen := map[[2]string]int{}
	for _, a := range ans {
		if a.model != "" || a.fp != "" {
			seen[[2]string{a.model, a.fp}]++
		}
	}
	for k, n := range seen {
		s.AnsweredBy = append(s.AnsweredBy, ModelSeen{ModelID: k[0], ModelFingerprint: k[1], Answers: n})
	}
	sort.Slice(s.AnsweredBy, func(i, j int) bool {
		a, b := s.AnsweredBy[i], s.AnsweredBy[j]
		if a.Answers != b.Answers {
			return a.Answers > b.Answers
		}
		if a.ModelID != b.ModelID {
			return a.ModelID < b.ModelID
		}
		return a.ModelFingerprint < b.ModelFingerprint
	})
	rows, err := db.SQL().QueryContext(ctx, `SELECT r.id, r.started_at, r.corpus_version, r.status, rt.status FROM run_targets rt JOIN runs r ON r.id = rt.run_id
		WHERE rt.target_id = ? AND rt.run_id > ? ORDER BY rt.run_id`, t.ID, run)
	if err != nil {
		return CompareSide{}, fmt.Errorf("newer runs of %s: %w", t.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var sr SkippedRun
		var started, runStatus string
		if err := rows.Scan(&sr.Run, &started, &sr.CorpusVersion, &runStatus, &sr.Status); err != nil {
			return CompareSide{}, fmt.Errorf("newer runs of %s: %w", t.Name, err)
		}
		sr.StartedAt = storage.ParseTime(started)
		complete := sr.Status == storage.TargetComplete && runStatus != storage.RunAborted
		if sr.Status == storage.TargetComplete && !complete {
			sr.Status = storage.TargetAborted
		}
		switch {
		case !complete:
			sr.Reason = SkippedIncomplete
		case sr.CorpusVersion != ver:
			sr.Reason = SkippedCorpusVersion
		default:
			sr.Reason = SkippedNotSelected
		}
		s.NewerRuns = append(s.NewerRuns, sr)
	}
	if err := rows.Err(); err != nil {
		return CompareSide{}, fmt.Errorf("newer runs of %s: %w", t.Name, err)
	}
	s.NewerRunsTotal = len(s.NewerRuns)
	versions := map[string]bool{}
	for _, r := range s.NewerRuns {
		if r.Reason == SkippedCorpusVersion {
			versions[r.CorpusVersion] = true
		}
	}
	s.NewerCorpusVersions = len(versions)
	if n := len(s.NewerRuns); n > MaxNewerRuns {
		s.allNewer = s.NewerRuns
		s.NewerRuns = slices.Clone(s.NewerRuns[n-MaxNewerRuns:])
	}
	return s, nil
}

// knownNondeterministic returns probe id → the request SHA-256s on which
// the target's probe is known nondeterministic: marked so in its detection
// state, or a probe (not reverted) of an open nondeterminism event. A
// detection state that does not decode (damaged: db check names it) is
// not an error, as it is not for detection's other targets: stateDamaged
// is true and only the events' probes are returned, so a comparison
// counts and gates the differences the state would have set apart.
func knownNondeterministic(ctx context.Context, db *storage.DB, targetID int64) (out map[string]map[string]bool, stateDamaged bool, err error) {
	out = map[string]map[string]bool{}
	add := func(id, sha string) {
		if out[id] == nil {
			out[id] = map[string]bool{}
		}
		out[id][sha] = true
	}
	states, err := loadStates(ctx, db.SQL(), targetID)
	switch {
	case errors.Is(err, errCorruptState):
		stateDamaged, states = true, nil
	case err != nil:
		return nil, false, fmt.Errorf("detection state: %w", err)
	}
	for id, st := range states {
		if st.nondeterministic {
			add(id, st.sha)
		}
	}
	rows, err := db.SQL().QueryContext(ctx, `SELECT ep.probe_id, ep.request_sha256 FROM event_probes ep JOIN events e ON e.id = ep.event_id
		WHERE ep.target_id = ? AND ep.reverted_run = 0 AND e.status = 'open' AND e.kind = ?`, targetID, KindNondeterminism)
	if err != nil {
		return nil, false, fmt.Errorf("nondeterminism events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, sha string
		if err := rows.Scan(&id, &sha); err != nil {
			return nil, false, fmt.Errorf("nondeterminism events: %w", err)
		}
		add(id, sha)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("nondeterminism events: %w", err)
	}
	return out, stateDamaged, nil
}

// answer is a probe's first sample in a target's run.
type answer struct {
	sha     string       // the probe's SHA-256 (its canonical form: the probes table's key)
	req     string       // the request's SHA-256
	class   probes.Class // the answer's class
	status  int          // its HTTP status
	model   string       // the model id it reported
	fp      string       // the model fingerprint it reported
	verdict bool         // the answer is a verdict about the probe (v is set)
	v       Verdict      // the verdict
}

// describe renders what the answer was ("missing" when !ok).
func (a answer) describe(ok bool) string {
	switch {
	case !ok:
		return "missing"
	case a.verdict:
		return a.v.String()
	}
	return string(a.class)
}

// answersOf returns probe id -> first sample for a target's run: every
// probe the run answered, with the verdict when the answer is one.
//
// A damaged row is left out (its probe reads as not observed); damaged
// counts them.
func answersOf(ctx context.Context, db *storage.DB, run, targetID int64) (out map[string]answer, damaged int, err error) {
	obs, dmg, err := db.ObservationsWithDamage(ctx, run, targetID)
	if err != nil {
		return nil, 0, err
	}
	out = map[string]answer{}
	for _, o := range obs {
		if o.Sample != 0 {
			continue
		}
		a := answer{sha: o.ProbeSHA256, req: o.RequestSHA256, class: o.Result.Class, status: o.HTTPStatus, model: o.Result.ModelID, fp: o.Result.ModelFP}
		// Account-level enforcement says nothing about the model's policy.
		if o.Result.Class.IsVerdict() && o.Result.Class != probes.AbuseBlock {
			a.verdict, a.v = true, VerdictOf(o.Result)
		}
		out[o.ProbeID] = a
	}
	return out, len(dmg), nil
}

// probeRecords reads the stored records (role, tags) of the probes the
// answers name, by probe SHA-256, in one query.
func probeRecords(ctx context.Context, db *storage.DB, sets ...map[string]answer) (map[string]storage.ProbeRecord, error) {
	var shas []any
	seen := map[string]bool{}
	for _, set := range sets {
		for _, a := range set {
			if !seen[a.sha] {
				seen[a.sha] = true
				shas = append(shas, a.sha)
			}
		}
	}
	out := make(map[string]storage.ProbeRecord, len(shas))
	// Chunks stay far under SQLite's bound-parameter limit.
	const per = 500
	for len(shas) > 0 {
		chunk := shas[:min(len(shas), per)]
		shas = shas[len(chunk):]
		rows, err := db.SQL().QueryContext(ctx, `SELECT sha256, probe_id, corpus_version, role, expect, tags FROM probes WHERE sha256 IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",")+`)`, chunk...)
		if err != nil {
			return nil, fmt.Errorf("probe records: %w", err)
		}
		for rows.Next() {
			var p storage.ProbeRecord
			var tags string
			if err := rows.Scan(&p.SHA256, &p.ProbeID, &p.CorpusVersion, &p.Role, &p.Expect, &tags); err != nil {
				rows.Close()
				return nil, fmt.Errorf("probe records: %w", err)
			}
			p.Tags = splitList(tags)
			out[p.SHA256] = p
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("probe records: %w", err)
		}
	}
	return out, nil
}

// RunDiffEntry is a probe whose verdict differs between two runs.
type RunDiffEntry struct {
	ProbeID    string  `json:"probe_id"`
	FromSHA256 string  `json:"from_request_sha256"`
	ToSHA256   string  `json:"to_request_sha256"`
	SameBytes  bool    `json:"same_bytes"`
	From       Verdict `json:"from"`
	To         Verdict `json:"to"`
	FromReqID  string  `json:"from_request_id,omitempty"`
	ToReqID    string  `json:"to_request_id,omitempty"`
	Direction  string  `json:"direction"`
}

// RunDiff is every probe whose verdict differs between two runs of a
// target. A probe without a verdict in either run (transient, client error,
// unavailable filter, account-level enforcement: no answer about its
// bytes) is not a difference; it is counted in NotCompared. A probe one of
// the runs never observed (it was aborted, killed or interrupted first, or
// the corpus changed between them) is counted in Missing: "0 probes
// differ" is about Compared probes only.
type RunDiff struct {
	Target      string         `json:"target"`
	FromRun     int64          `json:"from_run"`
	ToRun       int64          `json:"to_run"`
	Probes      []RunDiffEntry `json:"probes"`
	NotCompared int            `json:"not_compared"`
	// Compared is how many probes had a verdict in both runs.
	Compared int `json:"compared"`
	// Missing is how many probes only one of the runs observed.
	Missing int `json:"missing"`
	// FromStatus and ToStatus are the runs' statuses (complete, partial,
	// aborted; running for one still going or killed outright): a run is
	// partial when any of its targets was not complete, whichever.
	FromStatus string `json:"from_status"`
	ToStatus   string `json:"to_status"`
	// FromTargetStatus and ToTargetStatus are this target's own part of
	// each run: complete, degraded (too many transient errors or an open
	// breaker) or aborted; "unrecorded" when the run stopped (was killed)
	// before recording it.
	FromTargetStatus string `json:"from_target_status"`
	ToTargetStatus   string `json:"to_target_status"`
	// FromOrigin and ToOrigin are the endpoints the target answered at in
	// each run (storage.RunTarget.Origin; "" when not recorded). When both
	// are known and differ, the verdicts differ for a reason of the
	// user's own (the target was moved): OriginMoved is set, and the
	// differences are no evidence of a provider change.
	FromOrigin  string `json:"from_origin"`
	ToOrigin    string `json:"to_origin"`
	OriginMoved bool   `json:"origin_moved"`
}

// TargetUnrecorded is RunDiff's target status of a run that recorded no
// summary of the target (its process was killed first).
const TargetUnrecorded = "unrecorded"

// DiffRuns compares two runs of a target. from/to of 0 mean "the run
// before the latest" and "the latest" run that probed the target to the
// end: runs aborted (or the target's part of them) and runs killed
// outright are not chosen by default, only when named.
func DiffRuns(ctx context.Context, db *storage.DB, target string, from, to int64) (*RunDiff, error) {
	t, err := db.TargetByName(ctx, target)
	if err != nil {
		return nil, err
	}
	toGiven := to != 0
	// Defaults: --to the target's latest run, --from the target's run
	// before --to (not before its latest).
	prev := func(before int64) (int64, error) {
		q, args := `SELECT COALESCE(MAX(rt.run_id), 0) FROM run_targets rt JOIN runs r ON r.id = rt.run_id
			WHERE rt.target_id = ? AND r.status IN ('complete', 'partial') AND rt.status != 'aborted'`, []any{t.ID}
		if before > 0 {
			q, args = q+` AND rt.run_id < ?`, append(args, before)
		}
		var id int64
		err := db.SQL().QueryRowContext(ctx, q, args...).Scan(&id)
		return id, err
	}
	if to == 0 {
		if to, err = prev(0); err != nil {
			return nil, err
		}
		if to == 0 {
			return nil, fmt.Errorf("target %s: need two runs to diff (found none that was not aborted; name aborted runs with --from and --to)", target)
		}
	}
	if from == 0 {
		if from, err = prev(to); err != nil {
			return nil, err
		}
		if from == 0 {
			return nil, fmt.Errorf("target %s: no run before run %d to diff it with (aborted runs are not chosen; name one with --from)", target, to)
		}
	}
	if from == to {
		return nil, fmt.Errorf("--from and --to are both run %d: nothing to compare", from)
	}
	// A run that does not exist, or did not probe the target, is an
	// error, never "0 probes differ".
	status, tstatus, origin := map[int64]string{}, map[int64]string{}, map[int64]string{}
	for _, id := range []int64{from, to} {
		var n int
		// A run killed outright has observations but no run_targets row.
		if err := db.SQL().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM run_targets WHERE run_id = ? AND target_id = ?)
			OR EXISTS (SELECT 1 FROM observations WHERE run_id = ? AND target_id = ?)`, id, t.ID, id, t.ID).Scan(&n); err != nil {
			return nil, err
		}
		r, err := db.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("run %d did not probe target %s", id, target)
		}
		status[id] = r.Status
		ts, org := TargetUnrecorded, ""
		if err := db.SQL().QueryRowContext(ctx, `SELECT status, origin FROM run_targets WHERE run_id = ? AND target_id = ?`, id, t.ID).Scan(&ts, &org); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("run %d: target %s: %w", id, target, err)
		}
		tstatus[id], origin[id] = ts, org
		// Per target: a target retention kept whole keeps every row even
		// in a run marked pruned to observations.
		deleted, err := db.TargetRowsPruned(ctx, id, t.ID)
		if err != nil {
			return nil, fmt.Errorf("run %d: target %s: %w", id, target, err)
		}
		if deleted {
			return nil, fmt.Errorf("run %d: retention deleted its observations of target %s (only those events and detection pin are left), so a diff would miss what changed; events and evidence keep the flips", id, target)
		}
	}
	// --from names the earlier run: reversed, every flip would read
	// backwards (a block lifted as a block added). Checked once both runs
	// are known to exist and to have probed the target.
	if from > to {
		if toGiven {
			return nil, fmt.Errorf("--from %d is after --to %d: --from names the earlier run (swap them: --from %d --to %d)", from, to, to, from)
		}
		return nil, fmt.Errorf("--from %d is after run %d, the target's latest run not aborted, which --to defaults to: --from names the earlier run (name the later one with --to)", from, to)
	}
	a, err := db.Observations(ctx, from, t.ID)
	if err != nil {
		return nil, err
	}
	b, err := db.Observations(ctx, to, t.ID)
	if err != nil {
		return nil, err
	}
	first := func(obs []*storage.Observation) map[string]*storage.Observation {
		m := map[string]*storage.Observation{}
		for _, o := range obs {
			if o.Sample == 0 {
				m[o.ProbeID] = o
			}
		}
		return m
	}
	am, bm := first(a), first(b)
	d := &RunDiff{Target: target, FromRun: from, ToRun: to, Probes: []RunDiffEntry{}, FromStatus: status[from], ToStatus: status[to],
		FromTargetStatus: tstatus[from], ToTargetStatus: tstatus[to], FromOrigin: origin[from], ToOrigin: origin[to]}
	d.OriginMoved = d.FromOrigin != "" && d.ToOrigin != "" && d.FromOrigin != d.ToOrigin
	for id := range bm {
		if am[id] == nil {
			d.Missing++
		}
	}
	ids := make([]string, 0, len(am))
	for id := range am {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		x, y := am[id], bm[id]
		if y == nil {
			d.Missing++
			continue
		}
		// Account-level enforcement is no answer about the bytes either
		// (detection skips it too; it pages on its own).
		if noAnswer := func(c probes.Class) bool { return !c.IsVerdict() || c == probes.AbuseBlock }; noAnswer(x.Result.Class) || noAnswer(y.Result.Class) {
			d.NotCompared++
			continue
		}
		d.Compared++
		vx, vy := VerdictOf(x.Result), VerdictOf(y.Result)
		if vx.Key() == vy.Key() {
			continue
		}
		d.Probes = append(d.Probes, RunDiffEntry{ProbeID: id, FromSHA256: x.RequestSHA256, ToSHA256: y.RequestSHA256, SameBytes: x.RequestSHA256 == y.RequestSHA256,
			From: vx, To: vy, FromReqID: x.Result.RequestID, ToReqID: y.Result.RequestID, Direction: direction(vx, vy)})
	}
	return d, nil
}
