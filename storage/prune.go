package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
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

// Prune removes old observations or their bodies as o says. It walks each
// run's observations in id order, a batch at a time, and each batch is its
// own transaction: an interrupted prune leaves a consistent database that
// a later prune finishes, and the cost is linear in the rows visited. The
// caller should hold the run lease, so that no run's detection reads
// observations being pruned.
func (d *DB) Prune(ctx context.Context, o PruneOptions) (PruneResult, error) {
	res := PruneResult{DryRun: o.DryRun}
	if o.BodiesBefore.IsZero() && o.ObservationsBefore.IsZero() {
		return res, nil
	}
	if o.Batch <= 0 {
		o.Batch = 2000
	}
	runs, err := d.pruneRuns(ctx, o)
	if err != nil {
		return res, fmt.Errorf("prune: %w", err)
	}
	pinned := make(map[int64]bool, len(o.Pinned))
	for _, id := range o.Pinned {
		pinned[id] = true
	}
	for _, r := range runs {
		touched := false
		for after := int64(0); ; {
			if err := ctx.Err(); err != nil {
				return res, fmt.Errorf("prune interrupted (what was pruned is consistent; run it again): %w", err)
			}
			ids, bytes, seen, last, err := d.pruneBatch(ctx, r, after, o.Batch, pinned, &res)
			if err != nil {
				return res, fmt.Errorf("prune run %d: %w", r.id, err)
			}
			if len(ids) > 0 {
				touched = true
				res.StoredBytes += bytes
				if r.delete {
					res.ObservationsDeleted += int64(len(ids))
				} else {
					res.BodiesDropped += int64(len(ids))
				}
				if !o.DryRun {
					if err := d.applyPrune(ctx, r.delete, ids); err != nil {
						return res, fmt.Errorf("prune run %d: %w", r.id, err)
					}
					if afterPruneBatch != nil {
						afterPruneBatch()
					}
				}
			}
			if seen < o.Batch {
				break
			}
			after = last
		}
		if touched {
			res.Runs++
		}
	}
	return res, nil
}

type pruneRun struct {
	id     int64
	delete bool // delete the rows; else drop their bodies
}

// pruneBatch reads up to batch observations of run r with ids above after
// and returns those to prune (pinned ones are counted, not returned), the
// stored body bytes they hold, how many rows it read and the last id.
func (d *DB) pruneBatch(ctx context.Context, r pruneRun, after int64, batch int, pinned map[int64]bool, res *PruneResult) (ids []int64, bytes int64, seen int, last int64, err error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, bodies_pruned, body IS NOT NULL OR request_body IS NOT NULL,
		COALESCE(LENGTH(body), 0) + COALESCE(LENGTH(request_body), 0)
		FROM observations WHERE run_id = ? AND id > ? ORDER BY id LIMIT ?`, r.id, after, batch)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, n int64
		var done, hasBodies bool
		if err := rows.Scan(&id, &done, &hasBodies, &n); err != nil {
			return nil, 0, 0, 0, err
		}
		seen, last = seen+1, id
		if !r.delete && (done || !hasBodies) {
			continue // nothing left to drop
		}
		if pinned[id] {
			res.PinnedKept++
			continue
		}
		ids = append(ids, id)
		bytes += n
	}
	return ids, bytes, seen, last, rows.Err()
}

// applyPrune deletes the observations ids, or drops their bodies, in one
// transaction.
func (d *DB) applyPrune(ctx context.Context, del bool, ids []int64) error {
	head := `UPDATE observations SET body = NULL, request_body = NULL, bodies_pruned = 1 WHERE id IN (`
	if del {
		head = `DELETE FROM observations WHERE id IN (`
	}
	return d.Tx(ctx, func(tx *sql.Tx) error {
		const per = 500
		for len(ids) > 0 {
			chunk := ids[:min(len(ids), per)]
			ids = ids[len(chunk):]
			args := make([]any, len(chunk))
			for i, id := range chunk {
				args[i] = id
			}
			if _, err := tx.ExecContext(ctx, valuesSQL(head, "?", len(chunk))+")", args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// afterPruneBatch, when set (tests), is called after each batch commits.
var afterPruneBatch func()

// pruneRuns returns the runs whose observations are deleted or lose their
// bodies, oldest first. A run still marked running is never pruned.
func (d *DB) pruneRuns(ctx context.Context, o PruneOptions) ([]pruneRun, error) {
	keep := map[int64]bool{}
	for _, id := range o.KeepRuns {
		keep[id] = true
	}
	rows, err := d.db.QueryContext(ctx, `SELECT id, started_at, status FROM runs ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pruneRun
	for rows.Next() {
		var id int64
		var started, status string
		if err := rows.Scan(&id, &started, &status); err != nil {
			return nil, err
		}
		at := ParseTime(started)
		if keep[id] || status == RunRunning || at.IsZero() {
			continue
		}
		switch {
		case !o.ObservationsBefore.IsZero() && at.Before(o.ObservationsBefore):
			out = append(out, pruneRun{id: id, delete: true})
		case !o.BodiesBefore.IsZero() && at.Before(o.BodiesBefore):
			out = append(out, pruneRun{id: id})
		}
	}
	return out, rows.Err()
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
