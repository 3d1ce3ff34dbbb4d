package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"
)

// PruneOptions says what Prune removes. Only observations are pruned:
// runs, run targets, events, detection state and probes are small and
// stay, so history, metrics and issue links keep working.
type PruneOptions struct {
	// BodiesBefore: observations of runs started before it lose their
	// stored request and response bodies; the verdict, categories,
	// signals and the bodies' SHA-256 stay. Zero prunes no bodies.
	BodiesBefore time.Time
	// ObservationsBefore: observations of runs started before it are
	// deleted. Zero deletes none.
	ObservationsBefore time.Time
	// Pinned observations are never touched: the evidence of events and
	// the observations detection state points at (see diff.Pins).
	Pinned []int64
	// KeepRuns are runs whose observations are never touched (the latest
	// complete run of each target, which compare reads).
	KeepRuns []int64
	// DryRun counts what would be pruned and changes nothing.
	DryRun bool
	// Batch is how many rows one transaction changes (default 2000), so a
	// run waiting for the database waits at most one batch.
	Batch int
}

// PruneResult is what Prune removed (or, with DryRun, would remove).
type PruneResult struct {
	Runs                int   `json:"runs"`                 // runs whose observations were pruned
	ObservationsDeleted int64 `json:"observations_deleted"` // rows deleted
	BodiesDropped       int64 `json:"bodies_dropped"`       // rows whose bodies were dropped
	StoredBytes         int64 `json:"stored_bytes"`         // stored body bytes removed
	PinnedKept          int64 `json:"pinned_kept"`          // observations kept only because they are pinned
	DryRun              bool  `json:"dry_run"`
}

// Prune removes old observations or their bodies as o says. Each batch is
// its own transaction: an interrupted prune leaves a consistent database
// that a later prune finishes. The caller should hold the run lease, so
// that no run's detection reads observations being pruned.
func (d *DB) Prune(ctx context.Context, o PruneOptions) (PruneResult, error) {
	res := PruneResult{DryRun: o.DryRun}
	if o.BodiesBefore.IsZero() && o.ObservationsBefore.IsZero() {
		return res, nil
	}
	if o.Batch <= 0 {
		o.Batch = 2000
	}
	// Temporary tables live on one connection: hold it for the whole prune.
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("prune: %w", err)
	}
	defer conn.Close()
	delRuns, bodyRuns, err := d.pruneRuns(ctx, conn, o)
	if err != nil {
		return res, fmt.Errorf("prune: %w", err)
	}
	if len(delRuns)+len(bodyRuns) == 0 {
		return res, nil
	}
	if err := fillTemp(ctx, conn, o.Pinned, delRuns, bodyRuns); err != nil {
		return res, fmt.Errorf("prune: %w", err)
	}
	defer func() {
		bg := context.WithoutCancel(ctx)
		conn.ExecContext(bg, `DROP TABLE IF EXISTS temp.prune_pinned`)
		conn.ExecContext(bg, `DROP TABLE IF EXISTS temp.prune_runs`)
	}()

	// The rows each mode touches: mode 1 deletes, mode 2 drops bodies that
	// are still there.
	const sel = `FROM observations o JOIN temp.prune_runs r ON r.id = o.run_id AND r.mode = ?
		WHERE o.id NOT IN (SELECT id FROM temp.prune_pinned)`
	const bodies = ` AND o.bodies_pruned = 0 AND (o.body IS NOT NULL OR o.request_body IS NOT NULL)`
	var affected = map[int64]bool{}
	for _, m := range []struct {
		mode  int
		extra string
		n     *int64
	}{{1, "", &res.ObservationsDeleted}, {2, bodies, &res.BodiesDropped}} {
		var bytes int64
		if err := conn.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(COALESCE(LENGTH(o.body), 0) + COALESCE(LENGTH(o.request_body), 0)), 0) `+sel+m.extra, m.mode).Scan(m.n, &bytes); err != nil {
			return res, fmt.Errorf("prune: %w", err)
		}
		res.StoredBytes += bytes
		var pinned int64
		if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM observations o JOIN temp.prune_runs r ON r.id = o.run_id AND r.mode = ?
			WHERE o.id IN (SELECT id FROM temp.prune_pinned)`+m.extra, m.mode).Scan(&pinned); err != nil {
			return res, fmt.Errorf("prune: %w", err)
		}
		res.PinnedKept += pinned
		if *m.n > 0 {
			rows, err := conn.QueryContext(ctx, `SELECT DISTINCT o.run_id `+sel+m.extra, m.mode)
			if err != nil {
				return res, fmt.Errorf("prune: %w", err)
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return res, fmt.Errorf("prune: %w", err)
				}
				affected[id] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return res, fmt.Errorf("prune: %w", err)
			}
		}
	}
	res.Runs = len(affected)
	if o.DryRun {
		return res, nil
	}
	for _, st := range []struct {
		q    string
		mode int
	}{
		{`DELETE FROM observations WHERE id IN (SELECT o.id ` + sel + ` LIMIT ?)`, 1},
		{`UPDATE observations SET body = NULL, request_body = NULL, bodies_pruned = 1 WHERE id IN (SELECT o.id ` + sel + bodies + ` LIMIT ?)`, 2},
	} {
		for {
			if err := ctx.Err(); err != nil {
				return res, fmt.Errorf("prune interrupted (what was pruned is consistent; run it again): %w", err)
			}
			r, err := conn.ExecContext(ctx, st.q, st.mode, o.Batch)
			if err != nil {
				return res, fmt.Errorf("prune: %w", err)
			}
			if afterPruneBatch != nil {
				afterPruneBatch()
			}
			if n, _ := r.RowsAffected(); n < int64(o.Batch) {
				break
			}
		}
	}
	return res, nil
}

// afterPruneBatch, when set (tests), is called after each batch commits.
var afterPruneBatch func()

// pruneRuns returns the runs whose observations are deleted and those
// whose bodies are dropped. A run still marked running is never pruned.
func (d *DB) pruneRuns(ctx context.Context, conn *sql.Conn, o PruneOptions) (del, body []int64, err error) {
	keep := map[int64]bool{}
	for _, id := range o.KeepRuns {
		keep[id] = true
	}
	rows, err := conn.QueryContext(ctx, `SELECT id, started_at, status FROM runs ORDER BY id`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var started, status string
		if err := rows.Scan(&id, &started, &status); err != nil {
			return nil, nil, err
		}
		at := ParseTime(started)
		if keep[id] || status == RunRunning || at.IsZero() {
			continue
		}
		switch {
		case !o.ObservationsBefore.IsZero() && at.Before(o.ObservationsBefore):
			del = append(del, id)
		case !o.BodiesBefore.IsZero() && at.Before(o.BodiesBefore):
			body = append(body, id)
		}
	}
	return del, body, rows.Err()
}

func fillTemp(ctx context.Context, conn *sql.Conn, pinned, del, body []int64) error {
	for _, q := range []string{
		`CREATE TEMP TABLE IF NOT EXISTS prune_pinned (id INTEGER PRIMARY KEY)`,
		`CREATE TEMP TABLE IF NOT EXISTS prune_runs (id INTEGER PRIMARY KEY, mode INTEGER NOT NULL)`,
		`DELETE FROM temp.prune_pinned`,
		`DELETE FROM temp.prune_runs`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	ids := append([]int64(nil), pinned...)
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	const per = 500
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), per)]
		ids = ids[len(chunk):]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		if _, err := conn.ExecContext(ctx, valuesSQL(`INSERT OR IGNORE INTO temp.prune_pinned (id) VALUES `, `(?)`, len(chunk)), args...); err != nil {
			return err
		}
	}
	for _, m := range []struct {
		ids  []int64
		mode int
	}{{del, 1}, {body, 2}} {
		ids := m.ids
		for len(ids) > 0 {
			chunk := ids[:min(len(ids), per)]
			ids = ids[len(chunk):]
			args := make([]any, 0, 2*len(chunk))
			for _, id := range chunk {
				args = append(args, id, m.mode)
			}
			if _, err := conn.ExecContext(ctx, valuesSQL(`INSERT INTO temp.prune_runs (id, mode) VALUES `, `(?, ?)`, len(chunk)), args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// Vacuum rebuilds the database file, returning the space pruning freed to
// the file system. It needs as much free disk as the database's size and
// blocks every other writer while it runs.
func (d *DB) Vacuum(ctx context.Context) error {
	if _, err := d.db.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return nil
}

// ErrExists is returned by Backup when the destination exists.
var ErrExists = errors.New("file exists")

// Backup writes a consistent copy of the database to path (VACUUM INTO),
// safe while runs write: the copy is a snapshot of one moment. It refuses
// to overwrite an existing file.
func (d *DB) Backup(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("backup %s: %w", path, ErrExists)
	}
	if _, err := d.db.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return fmt.Errorf("backup %s: %w", path, err)
	}
	return nil
}

// Stats describes the database's size and contents.
type Stats struct {
	FileBytes    int64     `json:"file_bytes"`    // pages in use and free
	FreeBytes    int64     `json:"free_bytes"`    // free pages (reused by later writes; VACUUM returns them)
	Runs         int64     `json:"runs"`          // runs recorded
	Observations int64     `json:"observations"`  // observations stored
	WithBodies   int64     `json:"with_bodies"`   // observations that still hold a body
	BodyBytes    int64     `json:"body_bytes"`    // stored (compressed) request and response bytes
	OldestRun    time.Time `json:"oldest_run"`    // start of the oldest run (zero: none)
	NewestRun    time.Time `json:"newest_run"`    // start of the newest run
	OldestBodies time.Time `json:"oldest_bodies"` // start of the oldest run that still has bodies
}

// Stats reads the database's size and contents. It scans the observations
// table once.
func (d *DB) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	var pages, free, size int64
	for _, p := range []struct {
		q string
		v *int64
	}{{`PRAGMA page_count`, &pages}, {`PRAGMA freelist_count`, &free}, {`PRAGMA page_size`, &size}} {
		if err := d.db.QueryRowContext(ctx, p.q).Scan(p.v); err != nil {
			return s, fmt.Errorf("stats: %w", err)
		}
	}
	s.FileBytes, s.FreeBytes = pages*size, free*size
	if err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs`).Scan(&s.Runs); err != nil {
		return s, fmt.Errorf("stats: %w", err)
	}
	// MIN/MAX of RFC 3339 text with trimmed fractions is not time order;
	// runs are started in id order, so read the first and last by id.
	if s.Runs > 0 {
		var first, last string
		if err := d.db.QueryRowContext(ctx, `SELECT (SELECT started_at FROM runs ORDER BY id LIMIT 1), (SELECT started_at FROM runs ORDER BY id DESC LIMIT 1)`).Scan(&first, &last); err != nil {
			return s, fmt.Errorf("stats: %w", err)
		}
		s.OldestRun, s.NewestRun = ParseTime(first), ParseTime(last)
	}
	var firstBodies sql.NullInt64
	if err := d.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(body IS NOT NULL OR request_body IS NOT NULL), 0),
		COALESCE(SUM(COALESCE(LENGTH(body), 0) + COALESCE(LENGTH(request_body), 0)), 0),
		MIN(CASE WHEN body IS NOT NULL OR request_body IS NOT NULL THEN run_id END) FROM observations`).Scan(&s.Observations, &s.WithBodies, &s.BodyBytes, &firstBodies); err != nil {
		return s, fmt.Errorf("stats: %w", err)
	}
	if firstBodies.Valid {
		var at string
		if err := d.db.QueryRowContext(ctx, `SELECT started_at FROM runs WHERE id = ?`, firstBodies.Int64).Scan(&at); err == nil {
			s.OldestBodies = ParseTime(at)
		}
	}
	return s, nil
}
