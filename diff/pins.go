package diff

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/driftprobe/driftprobe/storage"
)

// Pins are what pruning must keep for detection, evidence and compare to
// keep working (see storage.PruneOptions).
type Pins struct {
	// Observations referenced by events (each flip's before and after) and
	// by detection state (each probe's baseline, the answer carrying its
	// baseline's scores, and its pending candidate,
	// probes absent from the corpus included: restored, they are compared
	// with that baseline): a future event's "before" is today's baseline
	// observation.
	Observations []int64
	// Runs: the latest complete run of each target on each corpus version,
	// which compare reads.
	Runs []int64
}

// LoadPins reads the pins of every target. Call it while holding the run
// lease, so that no run moves a baseline in between.
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
	obs := evidence
	for _, t := range targets {
		states, err := loadStates(ctx, q, t)
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
	rows, err := q.QueryContext(ctx, `SELECT states FROM parked_states`)
	if err != nil {
		return p, fmt.Errorf("pins: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var blob []byte
		if err := rows.Scan(&blob); err != nil {
			return p, fmt.Errorf("pins: %w", err)
		}
		states, err := decodeStates(blob)
		if err != nil {
			return p, fmt.Errorf("pins: parked state: %w", err)
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
	return Pins{Observations: sortedIDs(obs), Runs: sortedIDs(runs)}, nil
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
