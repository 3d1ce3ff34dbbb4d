package diff

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/driftprobe/driftprobe/storage"
)

// Pins are what pruning must keep for detection, evidence and compare to
// keep working (see storage.PruneOptions).
type Pins struct {
	// Observations referenced by events (each flip's before and after, and
	// the answer in its last run before that carried its before verdict:
	// EventProbe.LastRunBefore stays where it was) and by detection state (each probe's baseline, the answer carrying its
	// baseline's scores, and its pending candidate,
	// probes absent from the corpus included: restored, they are compared
	// with that baseline): a future event's "before" is today's baseline
	// observation.
	Observations []int64
	// Runs: the latest complete run of each target on each corpus version,
	// which compare reads.
	Runs []int64
	// Targets are kept whole (storage.PruneOptions.KeepTargets): every
	// observation of theirs, in every run, bodies included. A target is
	// here while its detection state (probe_states), or a state parked at
	// an endpoint it left (parked_states), does not decode: what that
	// state pins cannot be known, so nothing of the target is pruned until
	// the row is removed (db check names it and the DELETE); the first
	// prune after that prunes the target as its age says. The other
	// targets' pins are read as usual. By target id, ascending.
	Targets []TargetPin
}

// TargetPin is a target whose observations are all kept (Pins.Targets).
type TargetPin struct {
	TargetID int64
	// Damaged are the target's rows that do not decode, its detection
	// state's first (Origin ""), then its parked states' by origin; each
	// names the row and the statement that removes it.
	Damaged []*DamagedStateError
}

// Reason says why the target's observations are kept, naming each row
// and the statement that removes it (what prune reports).
func (p TargetPin) Reason() string {
	parts := make([]string, len(p.Damaged))
	for i, e := range p.Damaged {
		what := "detection state"
		if e.Origin != "" {
			what = "parked detection state at " + e.Origin
		}
		parts[i] = fmt.Sprintf("its %s does not decode (%v; %s removes the row, as db check says)", what, e.Err, deleteStateSQL(e.TargetID, e.Origin))
	}
	return strings.Join(parts, "; ") + ": what it pins cannot be read, so every observation of the target is kept until the row is removed"
}

// LoadPins reads the pins of every target. Call it while holding the run
// lease, so that no run moves a baseline in between. A target whose
// detection state, or a state parked at an endpoint it left, does not
// decode (errCorruptState) is kept whole (Pins.Targets) and the others'
// pins are read as usual; any other error (the database unreadable, ctx
// done) fails it.
func LoadPins(ctx context.Context, db *storage.DB) (Pins, error) {
	var p Pins
	q := db.SQL()
	evidence, err := queryInts(ctx, q, `SELECT before_obs, after_obs FROM event_probes`, 2)
	if err != nil {
		return p, fmt.Errorf("pins: %w", err)
	}
	targets, err := queryInts(ctx, q, `SELECT target_id FROM probe_states`, 1)
	if err != nil {
		return p, fmt.Errorf("pins: %w", err)
	}
	lastBefore, err := lastRunBeforePins(ctx, q)
	if err != nil {
		return p, fmt.Errorf("pins: %w", err)
	}
	damaged := map[int64][]*DamagedStateError{}
	obs := append(evidence, lastBefore...)
	for _, t := range targets {
		states, err := loadStates(ctx, q, t)
		if errors.Is(err, errCorruptState) {
			damaged[t] = append(damaged[t], damagedState(t, "", err))
			continue
		}
		if err != nil {
			return p, fmt.Errorf("pins: target %d: %w", t, err)
		}
		for _, s := range states {
			for _, c := range s.cites() {
				obs = append(obs, c.obs)
			}
		}
	}
	// States parked at endpoints a target moved away from resume on its
	// return: their baselines stay evidence.
	rows, err := q.QueryContext(ctx, `SELECT target_id, origin, states FROM parked_states ORDER BY target_id, origin`)
	if err != nil {
		return p, fmt.Errorf("pins: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t int64
		var origin string
		var blob []byte
		if err := rows.Scan(&t, &origin, &blob); err != nil {
			return p, fmt.Errorf("pins: %w", err)
		}
		states, err := decodeStates(blob)
		if errors.Is(err, errCorruptState) {
			damaged[t] = append(damaged[t], damagedState(t, origin, err))
			continue
		}
		if err != nil {
			return p, fmt.Errorf("pins: parked state of target %d: %w", t, err)
		}
		for _, s := range states {
			for _, c := range s.cites() {
				obs = append(obs, c.obs)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return p, fmt.Errorf("pins: %w", err)
	}
	runs, err := queryInts(ctx, q, `SELECT MAX(r.id) FROM run_targets rt JOIN runs r ON r.id = rt.run_id
		WHERE rt.status = 'complete' AND r.status != 'aborted' GROUP BY rt.target_id, r.corpus_version`, 1)
	if err != nil {
		return p, fmt.Errorf("pins: %w", err)
	}
	var kept []TargetPin
	for t, errs := range damaged {
		kept = append(kept, TargetPin{TargetID: t, Damaged: errs})
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].TargetID < kept[j].TargetID })
	return Pins{Observations: sortedIDs(obs), Runs: sortedIDs(runs), Targets: kept}, nil
}

// lastRunBeforePins returns, for every event probe, the answer in its last
// run before (EventProbe.LastRunBefore) that carried its before verdict:
// the run its issue's `diff --from` and attribution's window start at.
// Kept, it keeps last_run_before where it is; deleted, the run would move
// back to one whose answer is still stored (as far as the run its
// baseline rests on). A row whose columns do not hold what the schema
// means (damage db check names) pins nothing here.
func lastRunBeforePins(ctx context.Context, q *sql.DB) ([]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT CASE WHEN typeof(ep.target_id) = 'integer' THEN ep.target_id ELSE 0 END,
		CAST(ep.probe_id AS TEXT), CAST(ep.request_sha256 AS TEXT), CAST(ep.before AS TEXT), CAST(ep.origin AS TEXT),
		CASE WHEN typeof(ep.first_run) = 'integer' THEN ep.first_run ELSE 0 END,
		COALESCE((SELECT o.run_id FROM observations o WHERE o.id = ep.before_obs AND typeof(o.run_id) = 'integer'), 0),
		COALESCE(`+lastBeforeSQL(`o.id || '|' || o.categories`)+`, '')
		FROM event_probes ep`)
	if err != nil {
		return nil, err
	}
	type slowProbe struct {
		target int64
		p      EventProbe
	}
	var out []int64
	var slow []slowProbe
	for rows.Next() {
		var p EventProbe
		var target int64
		var before, last sql.NullString
		var probeID, reqSHA, origin sql.NullString
		if err := rows.Scan(&target, &probeID, &reqSHA, &before, &origin, &p.FirstRun, &p.BeforeRun, &last); err != nil {
			rows.Close()
			return nil, err
		}
		if target <= 0 || p.FirstRun <= 0 || !before.Valid {
			continue
		}
		p.ProbeID, p.RequestSHA256, p.Origin, p.Before = probeID.String, reqSHA.String, origin.String, ParseKey(before.String)
		id, cats, ok := strings.Cut(last.String, "|")
		if !ok {
			continue // no run before the flip answered the before verdict's class
		}
		if n, err := strconv.ParseInt(id, 10, 64); err == nil && carriesBefore(p.Before, cats) {
			out = append(out, n)
			continue
		}
		slow = append(slow, slowProbe{target, p})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, s := range slow {
		id, err := lastRunBefore(ctx, q, s.target, &s.p)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// queryInts returns the cols integer columns of every row, flattened.
func queryInts(ctx context.Context, q *sql.DB, query string, cols int) ([]int64, error) {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	vals := make([]int64, cols)
	ptrs := make([]any, cols)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals...)
	}
	return out, rows.Err()
}

// sortedIDs returns the positive ids of ids, sorted and de-duplicated.
func sortedIDs(ids []int64) []int64 {
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	out := ids[:0]
	for _, id := range ids {
		if id > 0 && (len(out) == 0 || out[len(out)-1] != id) {
			out = append(out, id)
		}
	}
	return out
}
