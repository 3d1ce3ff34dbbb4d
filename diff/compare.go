package diff

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

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
	// OverBlocking: NewBlocks on benign controls and borderline probes.
	OverBlocking int `json:"over_blocking"`
	// UnderBlocking: NewAllows on positive controls.
	UnderBlocking int `json:"under_blocking"`
	// Recategorized: blocked by both with different class or categories.
	Recategorized []ProbeDiff `json:"recategorized"`
	MaxNewBlocks  int         `json:"max_new_blocks"`
	// MaxLostBlocks gates under-blocking too when >= 0 (-1: off).
	MaxLostBlocks int  `json:"max_lost_blocks"`
	GateFailed    bool `json:"gate_failed"`
}

// ErrNoCompleteRun is returned when a target has no complete run to compare.
var ErrNoCompleteRun = errors.New("no complete run")

// ErrNotComparable is returned when fewer than half of the probes of the
// compared runs' corpus have a verdict on both targets.
var ErrNotComparable = errors.New("not comparable")

// ErrUnknownProbe is returned when a compared probe has no stored record
// (role and tags) in the database: compare will not guess them.
var ErrUnknownProbe = errors.New("probe record missing")

// LatestCompleteRun returns the latest run in which the target completed,
// optionally on a given corpus version ("" for any).
func LatestCompleteRun(ctx context.Context, db *storage.DB, target, version string) (int64, string, error) {
	q := `SELECT r.id, r.corpus_version FROM run_targets rt JOIN runs r ON r.id = rt.run_id JOIN targets t ON t.id = rt.target_id
		WHERE t.name = ? AND rt.status = 'complete' AND r.status != 'aborted'`
	args := []any{target}
	if version != "" {
		q += ` AND r.corpus_version = ?`
		args = append(args, version)
	}
	q += ` ORDER BY r.id DESC LIMIT 1`
	var id int64
	var v string
	err := db.SQL().QueryRowContext(ctx, q, args...).Scan(&id, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", fmt.Errorf("target %s: %w (every run of it so far was partial, degraded or aborted, or it never ran: compare reads a run that probed the whole corpus; run it, or compare --run)", target, ErrNoCompleteRun)
	}
	return id, v, err
}

// Compare compares the latest complete observations of two targets on the
// same corpus version. maxNewBlocks is the gate: more benign or borderline
// probes newly blocked by the candidate fails it; so do more positive
// controls newly allowed than maxLostBlocks, unless it is negative (off).
//
// Everything about the probes comes from the database, as the compared
// runs recorded them: each probe's role and tags (categories; "none" for
// untagged benign controls) from the stored record of the exact probe the
// runs sent (observations carry its SHA-256), and the probe total of the
// coverage check from the probes the runs answered. The *corpus.Corpus
// argument (the corpus loaded now; kept for callers) is never read: a
// corpus bumped since the runs (probes re-roled, added or removed) must
// not change what the gate counts. A compared probe without a stored
// record is refused (ErrUnknownProbe), never counted with a guessed role;
// so is a probe the two runs sent in different forms (ErrNotComparable).
func Compare(ctx context.Context, db *storage.DB, _ *corpus.Corpus, from, to string, maxNewBlocks, maxLostBlocks int) (*Comparison, error) {
	fromRun, ver, err := LatestCompleteRun(ctx, db, from, "")
	if err != nil {
		return nil, err
	}
	toRun, _, err := LatestCompleteRun(ctx, db, to, ver)
	if err != nil {
		// Fall back to the candidate's latest and require the versions match.
		var tv string
		if toRun, tv, err = LatestCompleteRun(ctx, db, to, ""); err != nil {
			return nil, err
		}
		if fromRun, _, err = LatestCompleteRun(ctx, db, from, tv); err != nil {
			return nil, fmt.Errorf("%s and %s have no complete runs on the same corpus version (%s's latest is on %s, %s's on %s): %w", from, to, from, ver, to, tv, ErrNoCompleteRun)
		}
		ver = tv
	}
	fv, err := answersOf(ctx, db, fromRun, from)
	if err != nil {
		return nil, err
	}
	tvs, err := answersOf(ctx, db, toRun, to)
	if err != nil {
		return nil, err
	}
	// The probe total is the runs' corpus: every probe either run answered
	// (a complete target-run records one first sample per probe, whatever
	// the answer).
	total := len(fv)
	for id := range tvs {
		if _, ok := fv[id]; !ok {
			total++
		}
	}
	recs, err := probeRecords(ctx, db, fv, tvs)
	if err != nil {
		return nil, err
	}
	c := &Comparison{From: from, To: to, FromRun: fromRun, ToRun: toRun, CorpusVersion: ver, MaxNewBlocks: maxNewBlocks, MaxLostBlocks: maxLostBlocks,
		NewBlocks: []ProbeDiff{}, NewAllows: []ProbeDiff{}, Recategorized: []ProbeDiff{}}
	type acc struct{ fb, tb, n int }
	cats := map[string]*acc{}
	ids := make([]string, 0, len(fv))
	for id := range fv {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		x, ok1 := fv[id]
		y, ok2 := tvs[id]
		if !ok1 || !ok2 || !x.verdict || !y.verdict {
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
		pd := ProbeDiff{ProbeID: id, Role: role, Tags: nonNil(tags), From: a, To: b}
		switch {
		case !a.Class.IsBlock() && b.Class.IsBlock():
			c.NewBlocks = append(c.NewBlocks, pd)
			if role == corpus.RoleBenign || role == corpus.RoleBorderline {
				c.OverBlocking++
			}
		case a.Class.IsBlock() && !b.Class.IsBlock():
			c.NewAllows = append(c.NewAllows, pd)
			if role == corpus.RolePositive {
				c.UnderBlocking++
			}
		case a.Class.IsBlock() && b.Class.IsBlock() && a.Key() != b.Key():
			c.Recategorized = append(c.Recategorized, pd)
		}
	}
	names := make([]string, 0, len(cats))
	for k := range cats {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return catOrder(names[i]) < catOrder(names[j]) })
	for _, k := range names {
		a := cats[k]
		c.Categories = append(c.Categories, CategoryComparison{Category: k, From: Wilson(a.fb, a.n), To: Wilson(a.tb, a.n)})
	}
	// A gate over too few comparable probes would pass by default (e.g. a
	// mistyped candidate model answering 404 to everything).
	if c.Compared == 0 || c.Compared*2 < total {
		return nil, fmt.Errorf("%w: only %d of %d probes have a verdict on both %s (run %d) and %s (run %d)", ErrNotComparable, c.Compared, total, from, fromRun, to, toRun)
	}
	c.GateFailed = c.OverBlocking > maxNewBlocks || maxLostBlocks >= 0 && c.UnderBlocking > maxLostBlocks
	return c, nil
}

func catOrder(c string) int {
	for i, v := range probes.Categories {
		if v == c {
			return i
		}
	}
	return len(probes.Categories)
}

// answer is a probe's first sample in a target's run.
type answer struct {
	sha     string  // the probe's SHA-256 (its canonical form: the probes table's key)
	verdict bool    // the answer is a verdict about the probe (v is set)
	v       Verdict // the verdict
}

// answersOf returns probe id -> first sample for a target's run: every
// probe the run answered, with the verdict when the answer is one.
func answersOf(ctx context.Context, db *storage.DB, run int64, target string) (map[string]answer, error) {
	t, err := db.TargetByName(ctx, target)
	if err != nil {
		return nil, err
	}
	obs, err := db.Observations(ctx, run, t.ID)
	if err != nil {
		return nil, err
	}
	out := map[string]answer{}
	for _, o := range obs {
		if o.Sample != 0 {
			continue
		}
		a := answer{sha: o.ProbeSHA256}
		// Account-level enforcement says nothing about the model's policy.
		if o.Result.Class.IsVerdict() && o.Result.Class != probes.AbuseBlock {
			a.verdict, a.v = true, VerdictOf(o.Result)
		}
		out[o.ProbeID] = a
	}
	return out, nil
}

// probeRecords reads the stored records (role, tags) of the probes the
// answers name, by probe SHA-256, in one query.
func probeRecords(ctx context.Context, db *storage.DB, sets ...map[string]answer) (map[string]storage.ProbeRecord, error) {
	var shas []any
	seen := map[string]bool{}
	for _, set := range sets {
		for _, a := range set {
			if a.verdict && !seen[a.sha] {
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
	// aborted; running for one still going or killed outright).
	FromStatus string `json:"from_status"`
	ToStatus   string `json:"to_status"`
}

// DiffRuns compares two runs of a target. from/to of 0 mean "the run
// before the latest" and "the latest" run that probed the target to the
// end: runs aborted (or the target's part of them) and runs killed
// outright are not chosen by default, only when named.
func DiffRuns(ctx context.Context, db *storage.DB, target string, from, to int64) (*RunDiff, error) {
	t, err := db.TargetByName(ctx, target)
	if err != nil {
		return nil, err
	}
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
	status := map[int64]string{}
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
		if r.Pruned == storage.PrunedObservations {
			return nil, fmt.Errorf("run %d: retention deleted its observations (only those events and detection pin are left), so a diff would miss what changed; events and evidence keep the flips", id)
		}
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
	d := &RunDiff{Target: target, FromRun: from, ToRun: to, Probes: []RunDiffEntry{}, FromStatus: status[from], ToStatus: status[to]}
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
