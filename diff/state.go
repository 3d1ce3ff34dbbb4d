package diff

import (
	"context"
	"database/sql"
)

const stateCols = `probe_id, request_sha256, since_run, baseline, baseline_run, baseline_model, baseline_obs, baseline_scores,
	candidate, candidate_run, candidate_runs, candidate_model, candidate_obs, drift_scores, drift_runs, drift_run,
	last_verdict, changes, reverts, nondeterministic`

func loadStates(ctx context.Context, tx *sql.Tx, targetID int64) (map[string]*state, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+stateCols+` FROM probe_state WHERE target_id = ?`, targetID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]*state{}
	for rows.Next() {
		st := &state{}
		var nd int
		if err := rows.Scan(&st.probeID, &st.sha, &st.sinceRun, &st.baseline, &st.baselineRun, &st.baselineModel, &st.baselineObs, &st.baselineScores,
			&st.candidate, &st.candidateRun, &st.candidateRuns, &st.candidateModel, &st.candidateObs, &st.driftScores, &st.driftRuns, &st.driftRun,
			&st.lastVerdict, &st.changes, &st.reverts, &nd); err != nil {
			return nil, err
		}
		st.nondeterministic = nd != 0
		out[st.probeID] = st
	}
	return out, rows.Err()
}

// saveStates writes only the rows that changed: a stable probe costs no
// write.
func saveStates(ctx context.Context, tx *sql.Tx, targetID int64, states map[string]*state) error {
	var stmt *sql.Stmt
	for _, st := range states {
		if !st.dirty {
			continue
		}
		if stmt == nil {
			var err error
			stmt, err = tx.PrepareContext(ctx, `INSERT OR REPLACE INTO probe_state (target_id, `+stateCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			defer stmt.Close()
		}
		nd := 0
		if st.nondeterministic {
			nd = 1
		}
		if _, err := stmt.ExecContext(ctx, targetID, st.probeID, st.sha, st.sinceRun, st.baseline, st.baselineRun, st.baselineModel, st.baselineObs, st.baselineScores,
			st.candidate, st.candidateRun, st.candidateRuns, st.candidateModel, st.candidateObs, st.driftScores, st.driftRuns, st.driftRun,
			st.lastVerdict, st.changes, st.reverts, nd); err != nil {
			return err
		}
		st.dirty = false
	}
	return nil
}

// loadCategories returns category -> first run for a target.
func loadCategories(ctx context.Context, tx *sql.Tx, targetID int64) (map[string]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT category, first_run FROM target_categories WHERE target_id = ?`, targetID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var c string
		var r int64
		if err := rows.Scan(&c, &r); err != nil {
			return nil, err
		}
		out[c] = r
	}
	return out, rows.Err()
}

// saveCategories stores categories learned in this run (negative markers).
func saveCategories(ctx context.Context, tx *sql.Tx, targetID int64, known map[string]int64, run int64) error {
	for c, r := range known {
		if r >= 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO target_categories (target_id, category, first_run) VALUES (?, ?, ?)`, targetID, c, run); err != nil {
			return err
		}
		known[c] = run
	}
	return nil
}

// Baselines returns the baseline verdict key and request fingerprint per
// probe of a target (for deciding when to take extra samples).
func Baselines(ctx context.Context, db *sql.DB, targetID int64) (map[string][2]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT probe_id, request_sha256, baseline FROM probe_state WHERE target_id = ?`, targetID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][2]string{}
	for rows.Next() {
		var p, sha, b string
		if err := rows.Scan(&p, &sha, &b); err != nil {
			return nil, err
		}
		out[p] = [2]string{sha, b}
	}
	return out, rows.Err()
}
