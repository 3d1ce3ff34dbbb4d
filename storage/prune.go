package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
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
	// KeepTargets are targets whose observations are never touched, in
	// any run, bodies included: what pins them cannot be known (see
	// diff.Pins.Targets: a detection state that does not decode). Each is
	// reported in PruneResult.KeptTargets, with its Reason. Their rows in
	// runs pruned meanwhile are listed with the pinned ones and re-checked
	// by every prune, so the first prune after a target leaves this list
	// prunes them as their age says.
	KeepTargets []KeepTarget
	// DryRun counts what would be pruned and changes nothing.
	DryRun bool
	// Batch is how many rows one transaction changes (default 2000), so a
	// run waiting for the database waits at most one batch.
	Batch int
}

// KeepTarget is a target whose observations Prune keeps whole
// (PruneOptions.KeepTargets), and why.
type KeepTarget struct {
	ID     int64  // targets.id
	Reason string // why, as PruneResult.KeptTargets reports it
}

// PruneResult is what Prune removed (or, with DryRun, would remove).
type PruneResult struct {
	Runs                int   `json:"runs"`                 // runs whose observations were pruned
	ObservationsDeleted int64 `json:"observations_deleted"` // rows deleted
	BodiesDropped       int64 `json:"bodies_dropped"`       // rows whose bodies were dropped
	StoredBytes         int64 `json:"stored_bytes"`         // stored body bytes removed
	PinnedKept          int64 `json:"pinned_kept"`          // observations kept only because they are pinned
	DryRun              bool  `json:"dry_run"`
	// KeptTargets lists every target of PruneOptions.KeepTargets, in its
	// order: all their observations were kept ([] when none).
	KeptTargets []KeptTarget `json:"kept_targets"`
}

// KeptTarget is a target whose observations a prune kept whole.
type KeptTarget struct {
	TargetID int64  `json:"target_id"`
	Target   string `json:"target"` // its name ("" when the targets table has none)
	Reason   string `json:"reason"` // why (KeepTarget.Reason)
	// Observations of the target this prune kept that it would otherwise
	// have pruned (deleted, or their bodies dropped), pinned ones aside
	// (counted in PinnedKept).
	Observations int64 `json:"observations"`
}

// Prune levels, as runs.pruned (Run.Pruned) records them.
const (
	prunedNone         = ""
	prunedBodies       = "bodies"
	prunedObservations = "observations"

	// PrunedBodies and PrunedObservations are the levels exported:
	// bodies dropped, or observations deleted (pinned ones aside).
	PrunedBodies       = prunedBodies
	PrunedObservations = prunedObservations
)

// TargetRowsPruned reports whether retention deleted any observation of
// target in run: the run is marked pruned to PrunedObservations and the
// target's rows of it are not all still there. A run marked so keeps only
// what was pinned, and every row of a target kept whole
// (PruneOptions.KeepTargets); for such a target it reads false until a
// later prune deletes its rows. A run never pruned, or pruned to
// PrunedBodies only, reads false (its rows are all there; whether their
// bodies are is Observation.BodiesPruned).
//
// "All still there" is judged against what the run recorded for the
// target in run_targets: as many first answers (sample 0) as its
// observations, and the attempts of all its rows (extra samples, each
// sent at least once, included) adding up to its requests. A run with no
// run_targets row for the target (its process died before recording them)
// has nothing to judge against and reads true when marked. A row not
// counted because its run_id, target_id, sample or attempts column is
// damaged also reads as deleted: the answer errs towards "deleted", as
// every reader did from the run's mark alone before.
func (d *DB) TargetRowsPruned(ctx context.Context, run, target int64) (bool, error) {
	var level string
	if err := d.db.QueryRowContext(ctx, `SELECT pruned FROM runs WHERE id = ?`, run).Scan(&level); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return false, fmt.Errorf("run %d: %w", run, ErrNotFound)
		}
		return false, fmt.Errorf("run %d: %w", run, err)
	}
	if level != prunedObservations {
		return false, nil
	}
	var recorded, requests, first, attempts sql.NullInt64
	err := d.db.QueryRowContext(ctx, `SELECT CASE WHEN typeof(rt.observations) = 'integer' THEN rt.observations END,
		CASE WHEN typeof(rt.requests) = 'integer' THEN rt.requests END,
		(SELECT COUNT(*) FROM observations o WHERE o.run_id = rt.run_id AND o.target_id = rt.target_id AND o.sample = 0),
		(SELECT COALESCE(SUM(CASE WHEN typeof(o.attempts) = 'integer' THEN o.attempts END), 0) FROM observations o WHERE o.run_id = rt.run_id AND o.target_id = rt.target_id)
		FROM run_targets rt WHERE rt.run_id = ? AND rt.target_id = ?`, run, target).Scan(&recorded, &requests, &first, &attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("run %d, target %d: %w", run, target, err)
	}
	if !recorded.Valid || !requests.Valid {
		return true, nil // a damaged run_targets row: nothing to judge against
	}
	return first.Int64 < recorded.Int64 || attempts.Int64 < requests.Int64, nil
}

func pruneRank(level string) int {
	switch level {
	case prunedBodies:
		return 1
	case prunedObservations:
		return 2
	}
	return 0
}

// Prune removes old observations or their bodies as o says.
//
// A run is scanned once per level: its observations are walked in id
// order a batch at a time (a range of the table's own key), each batch its
// own transaction, and when the walk is done the run is marked pruned to
// that level and the observations it kept (pinned, or of a target kept
// whole) are listed in pruned_kept. Later prunes skip marked runs and only
// re-check the kept observations against the current pins and kept
// targets, so an hourly prune costs the runs that aged past a cutoff since
// the last one, not the history (plus, while a target is kept whole, its
// rows kept so far). An interrupted prune leaves a consistent database;
// the next one rescans the unmarked run and finishes it.
//
// The caller should hold the run lease (a run's detection must not read
// observations being pruned); scheduled runs are skipped meanwhile.
func (d *DB) Prune(ctx context.Context, o PruneOptions) (PruneResult, error) {
	res := PruneResult{DryRun: o.DryRun, KeptTargets: make([]KeptTarget, 0, len(o.KeepTargets))}
	k := keep{pinned: make(map[int64]bool, len(o.Pinned)), targets: map[int64]int{}}
	for _, t := range o.KeepTargets {
		if _, dup := k.targets[t.ID]; dup {
			continue
		}
		k.targets[t.ID] = len(res.KeptTargets)
		var name string
		err := d.db.QueryRowContext(ctx, `SELECT name FROM targets WHERE id = ?`, t.ID).Scan(&name)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return res, fmt.Errorf("prune: %w", err)
		}
		res.KeptTargets = append(res.KeptTargets, KeptTarget{TargetID: t.ID, Target: name, Reason: t.Reason})
	}
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
	for _, id := range o.Pinned {
		k.pinned[id] = true
	}
	touched := map[int64]bool{}
	rescanned := map[int64]bool{}
	for _, r := range runs {
		rescanned[r.id] = true
	}
	if err := d.pruneKept(ctx, o, k, rescanned, touched, &res); err != nil {
		return res, err
	}
	for _, r := range runs {
		if err := d.pruneRun(ctx, o, r, k, touched, &res); err != nil {
			return res, err
		}
	}
	res.Runs = len(touched)
	return res, nil
}

// keep is what a prune must not touch: the pinned observations, and every
// observation of the targets kept whole (by target id: the index of the
// target in PruneResult.KeptTargets).
type keep struct {
	pinned  map[int64]bool
	targets map[int64]int
}

// kept reports whether the observation id of target must be kept, and
// counts it in res (PinnedKept, or the target's KeptTargets entry).
func (k keep) kept(id, target int64, res *PruneResult) bool {
	if k.pinned[id] {
		res.PinnedKept++
		return true
	}
	if i, ok := k.targets[target]; ok {
		res.KeptTargets[i].Observations++
		return true
	}
	return false
}

// targetIDSQL reads an observation's target_id (column), or -1 when the
// row's column does not hold an integer (a damaged row: no reader returns
// it as an observation, so it pins nothing and is pruned as its age says).
func targetIDSQL(column string) string {
	return `COALESCE(CASE WHEN typeof(` + column + `) = 'integer' THEN ` + column + ` END, -1)`
}

type pruneRun struct {
	id     int64
	delete bool // delete the rows; else drop their bodies
}

func (r pruneRun) level() string {
	if r.delete {
		return prunedObservations
	}
	return prunedBodies
}

// pruneRun walks one run's observations and prunes the unpinned ones, then
// marks the run and lists what it kept.
func (d *DB) pruneRun(ctx context.Context, o PruneOptions, r pruneRun, k keep, touched map[int64]bool, res *PruneResult) error {
	var lo, hi sql.NullInt64
	if err := d.db.QueryRowContext(ctx, `SELECT MIN(id), MAX(id) FROM observations WHERE run_id = ?`, r.id).Scan(&lo, &hi); err != nil {
		return fmt.Errorf("prune run %d: %w", r.id, err)
	}
	var kept []int64
	for after := lo.Int64 - 1; lo.Valid; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("prune interrupted (what was pruned is consistent; run it again): %w", err)
		}
		ids, kb, bytes, seen, last, err := d.pruneBatch(ctx, r, after, hi.Int64, o.Batch, k, res)
		if err != nil {
			return fmt.Errorf("prune run %d: %w", r.id, err)
		}
		kept = append(kept, kb...)
		if len(ids) > 0 {
			touched[r.id] = true
			res.StoredBytes += bytes
			if r.delete {
				res.ObservationsDeleted += int64(len(ids))
			} else {
				res.BodiesDropped += int64(len(ids))
			}
			if !o.DryRun {
				if err := d.Tx(ctx, func(tx *sql.Tx) error { return applyPrune(ctx, tx, r.delete, ids) }); err != nil {
					return fmt.Errorf("prune run %d: %w", r.id, err)
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
	if o.DryRun {
		return nil
	}
	return d.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM pruned_kept WHERE run_id = ?`, r.id); err != nil {
			return err
		}
		for len(kept) > 0 {
			chunk := kept[:min(len(kept), 400)]
			kept = kept[len(chunk):]
			args := make([]any, 0, 2*len(chunk))
			for _, id := range chunk {
				args = append(args, id, r.id)
			}
			if _, err := tx.ExecContext(ctx, valuesSQL(`INSERT OR REPLACE INTO pruned_kept (observation_id, run_id) VALUES `, `(?, ?)`, len(chunk)), args...); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE runs SET pruned = ? WHERE id = ?`, r.level(), r.id)
		return err
	})
}

// pruneBatch reads up to batch observations of run r with ids in
// (after, hi] and returns those to prune and those it keeps (pinned, or of
// a target kept whole: only those that had something to prune; counted in
// res), the stored body bytes of the first, how many rows it read and the
// last id. "+run_id" keeps the planner on the table's own key: the id
// range, in order, without a sort. A damaged bodies_pruned (not 0 or 1:
// see ErrDamagedRow) reads as not pruned, so the row is pruned as its age
// says (db check lists what else is damaged in it).
func (d *DB) pruneBatch(ctx context.Context, r pruneRun, after, hi int64, batch int, k keep, res *PruneResult) (ids, kept []int64, bytes int64, seen int, last int64, err error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, `+targetIDSQL("target_id")+`, `+prunedFlag("bodies_pruned")+`, body IS NOT NULL OR request_body IS NOT NULL,
		COALESCE(LENGTH(body), 0) + COALESCE(LENGTH(request_body), 0)
		FROM observations WHERE id > ? AND id <= ? AND +run_id = ? ORDER BY id LIMIT ?`, after, hi, r.id, batch)
	if err != nil {
		return nil, nil, 0, 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, target, n int64
		var done, hasBodies bool
		if err := rows.Scan(&id, &target, &done, &hasBodies, &n); err != nil {
			return nil, nil, 0, 0, 0, err
		}
		seen, last = seen+1, id
		if !r.delete && (done || !hasBodies) {
			continue // nothing left to drop
		}
		if k.kept(id, target, res) {
			kept = append(kept, id)
			continue
		}
		ids = append(ids, id)
		bytes += n
	}
	return ids, kept, bytes, seen, last, rows.Err()
}

// pruneKept re-checks the observations earlier prunes kept because they
// were pinned (or their target kept whole), in runs not rescanned now:
// those no longer kept are pruned to their run's level.
func (d *DB) pruneKept(ctx context.Context, o PruneOptions, k keep, rescanned, touched map[int64]bool, res *PruneResult) error {
	rows, err := d.db.QueryContext(ctx, `SELECT k.observation_id, k.run_id, r.pruned, o.id IS NOT NULL, `+targetIDSQL("o.target_id")+`,
		COALESCE(`+prunedFlag("o.bodies_pruned")+`, 0), COALESCE(o.body IS NOT NULL OR o.request_body IS NOT NULL, 0),
		COALESCE(LENGTH(o.body), 0) + COALESCE(LENGTH(o.request_body), 0)
		FROM pruned_kept k JOIN runs r ON r.id = k.run_id LEFT JOIN observations o ON o.id = k.observation_id ORDER BY k.observation_id`)
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	var del, drop, gone []int64
	for rows.Next() {
		var id, run, target, n int64
		var level string
		var exists, done, hasBodies bool
		if err := rows.Scan(&id, &run, &level, &exists, &target, &done, &hasBodies, &n); err != nil {
			rows.Close()
			return fmt.Errorf("prune: %w", err)
		}
		switch {
		case rescanned[run]:
			// its run is walked again below
		case !exists || (level == prunedBodies && (done || !hasBodies)):
			gone = append(gone, id)
		case k.kept(id, target, res):
		case level == prunedObservations:
			del = append(del, id)
			res.ObservationsDeleted++
			res.StoredBytes += n
			touched[run] = true
		default:
			drop = append(drop, id)
			res.BodiesDropped++
			res.StoredBytes += n
			touched[run] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	if o.DryRun {
		return nil
	}
	for _, m := range []struct {
		ids          []int64
		prune, whole bool // prune the observations (whole: delete them); else only unlist them
	}{{del, true, true}, {drop, true, false}, {gone, false, false}} {
		for ids := m.ids; len(ids) > 0; {
			chunk := ids[:min(len(ids), o.Batch)]
			ids = ids[len(chunk):]
			err := d.Tx(ctx, func(tx *sql.Tx) error {
				if m.prune {
					if err := applyPrune(ctx, tx, m.whole, chunk); err != nil {
						return err
					}
				}
				return deleteIDs(ctx, tx, `DELETE FROM pruned_kept WHERE observation_id IN (`, chunk)
			})
			if err != nil {
				return fmt.Errorf("prune: %w", err)
			}
		}
	}
	return nil
}

// prunedFlag is an SQL expression reading column (bodies_pruned) as 0 or
// 1 whatever it holds: 1 only for the integer 1, so a damaged value never
// fails the scan and never passes for a row retention already pruned.
func prunedFlag(column string) string {
	return `(typeof(` + column + `) = 'integer' AND ` + column + ` = 1)`
}

// applyPrune deletes the observations ids, or drops their bodies.
func applyPrune(ctx context.Context, tx *sql.Tx, del bool, ids []int64) error {
	head := `UPDATE observations SET body = NULL, request_body = NULL, bodies_pruned = 1 WHERE id IN (`
	if del {
		head = `DELETE FROM observations WHERE id IN (`
	}
	return deleteIDs(ctx, tx, head, ids)
}

// deleteIDs runs head + "?, ?, …)" over ids, 500 at a time.
func deleteIDs(ctx context.Context, tx *sql.Tx, head string, ids []int64) error {
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 500)]
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
}

// afterPruneBatch, when set (tests), is called after each batch commits.
var afterPruneBatch func()

// pruneRuns returns the runs to walk, oldest first: those whose age asks
// for a deeper level than they are marked with. A run still marked running
// and the runs o keeps are never pruned.
func (d *DB) pruneRuns(ctx context.Context, o PruneOptions) ([]pruneRun, error) {
	keep := map[int64]bool{}
	for _, id := range o.KeepRuns {
		keep[id] = true
	}
	rows, err := d.db.QueryContext(ctx, `SELECT id, started_at, status, pruned FROM runs ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pruneRun
	for rows.Next() {
		var id int64
		var started, status, level string
		if err := rows.Scan(&id, &started, &status, &level); err != nil {
			return nil, err
		}
		at := ParseTime(started)
		if keep[id] || status == RunRunning || at.IsZero() {
			continue
		}
		var r pruneRun
		switch {
		case !o.ObservationsBefore.IsZero() && at.Before(o.ObservationsBefore):
			r = pruneRun{id: id, delete: true}
		case !o.BodiesBefore.IsZero() && at.Before(o.BodiesBefore):
			r = pruneRun{id: id}
		default:
			continue
		}
		if pruneRank(level) < pruneRank(r.level()) {
			out = append(out, r)
		}
	}
	return out, rows.Err()
}

// Vacuum rebuilds the database file, returning the space pruning freed to
// the file system. It needs as much free disk as the database's size and
// blocks every other writer while it runs. In WAL mode the rebuilt pages
// land in the -wal, and only a checkpoint copies them into the file and
// cuts it to its new size: SQLite does that when the last connection
// closes, which beside a running serve (whose connections stay open) may
// be many runs later, the file and a -wal as large as what was kept
// meanwhile both on disk. So Vacuum checkpoints at once, truncating the
// -wal too. When another connection is reading through the whole busy
// timeout (a scrape, a long read), that checkpoint cannot complete: the
// vacuum stands, and the error wraps ErrNotShrunk (the file shrinks at a
// later checkpoint, at the latest when the last connection closes).
func (d *DB) Vacuum(ctx context.Context) error {
	if _, err := d.db.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	var busy, logFrames, done int
	if err := d.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done); err != nil {
		return fmt.Errorf("vacuum: checkpoint: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("vacuum: %w: another connection kept reading the database (%d of %d WAL frames copied back)", ErrNotShrunk, done, logFrames)
	}
	return nil
}

// vacuumRate is the slowest rate, in bytes a second, VacuumBound allows
// each of Vacuum's two passes over the database (VACUUM's copy into the
// -wal, the checkpoint's copy back): a seventh of a loaded 2-vCPU VM's
// (3.3 GB vacuumed in ~60 s, 55 MB/s).
const vacuumRate = 8 << 20

// VacuumBound is a generous bound on how long Vacuum holds the database's
// write lock and the store's connection: both its passes over the whole
// database at vacuumRate, plus a minute (the checkpoint's wait for readers
// through the busy timeout among it). No lease renewal can land meanwhile:
// the holder extends its lease by it first (app.Vacuum).
func (d *DB) VacuumBound(ctx context.Context) (time.Duration, error) {
	var size int64
	if err := d.db.QueryRowContext(ctx, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&size); err != nil {
		return 0, fmt.Errorf("vacuum: the database's size: %w", err)
	}
	return time.Duration(2*size/vacuumRate)*time.Second + time.Minute, nil
}

// ErrNotShrunk is wrapped by Vacuum's error when the database was rebuilt
// but its file not yet cut to size (see Vacuum): nothing is lost.
var ErrNotShrunk = errors.New("the database was rebuilt, but its file shrinks only at a later checkpoint")

// ErrExists is returned by Backup when the destination exists.
var ErrExists = errors.New("file exists")

// Backup writes a consistent copy of the database to path (VACUUM INTO),
// safe while runs write: the copy is a snapshot of one moment. It refuses
// to overwrite an existing file. Any schema is copied as it is.
//
// path never holds a partial copy. The copy is written under a temporary
// name beside it (path.tmp-NNN, created exclusively), flushed to disk, and
// only then given its name; an error or a cancelled ctx removes the
// temporary file. A backup killed outright (SIGKILL, power loss) leaves
// only path.tmp-NNN (and its -journal), safe to delete, and path free for
// the next backup.
//
// The name is given with a hard link, which fails when path exists, so a
// file created at path while the copy was written is never replaced (two
// backups to one path: one wins, the other gets ErrExists). On a file
// system without hard links (FAT, some network and FUSE file systems) the
// copy is renamed instead, after checking that path is still free: a file
// created at path between that check and the rename (microseconds apart)
// would be replaced.
func (d *DB) Backup(ctx context.Context, path string) error {
	fail := func(err error) error { return fmt.Errorf("backup %s: %w", path, err) }
	if _, err := os.Lstat(path); err == nil {
		return fail(ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// The usual cause: a mistyped or not yet created directory.
			return fail(fmt.Errorf("directory %s does not exist (create it first): %w", filepath.Dir(path), err))
		}
		return fail(fmt.Errorf("create the copy beside it: %w", err))
	}
	tmp := f.Name()
	f.Close()
	if !filepath.IsAbs(tmp) {
		// Never an SQLite URI ("file:…") to VACUUM INTO.
		tmp = "." + string(filepath.Separator) + tmp
	}
	published := false
	defer func() {
		if !published {
			// SQLite's journal too: VACUUM INTO writes the copy in a
			// transaction of its own.
			for _, s := range []string{"", "-journal", "-wal", "-shm"} {
				_ = os.Remove(tmp + s)
			}
		}
	}()
	changed := func() error {
		return fail(fmt.Errorf("%w (it was read without locks, since this user cannot create the -wal and -shm files beside it); back up again, or as a user who can write there", ErrChangedWhileRead))
	}
	if err := d.vacuumInto(ctx, tmp); err != nil {
		if d.changedSinceOpen() {
			return changed()
		}
		if schema, serr := d.SchemaVersion(ctx); serr == nil && schema > SchemaLatest() && IsCorrupt(err) {
			return d.newerUnreadable(schema, err)
		}
		return fail(err)
	}
	if err := dropLease(ctx, tmp); err != nil {
		return fail(fmt.Errorf("clear the run lease in the copy: %w", err))
	}
	if err := syncFile(tmp); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if d.changedSinceOpen() {
		// Read without locks (immutable: this user cannot write beside
		// the file) while a writer changed it: the copy may mix two
		// states. Never publish it.
		return changed()
	}
	if err := publish(tmp, path); err != nil {
		return fail(err)
	}
	published = true
	syncDir(filepath.Dir(path))
	return nil
}

// dropLease removes the run lease from the copy at tmp: no process of the
// source holds a lease in a copy, and restored elsewhere (another host,
// after a reboot) a lease copied from a run in progress would refuse
// every run until it expired. The run it was taken during stays marked
// running in the copy, and the first run there marks it aborted.
func dropLease(ctx context.Context, tmp string) error {
	c, err := sql.Open("sqlite", fileURI(tmp)+"?"+url.Values{"_pragma": {busyPragma}}.Encode())
	if err != nil {
		return err
	}
	defer c.Close()
	var n int
	if err := c.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'run_lock'`).Scan(&n); err != nil || n == 0 {
		return err // a schema before the lease: nothing to drop
	}
	_, err = c.ExecContext(ctx, `DELETE FROM run_lock`)
	return err
}

// vacuumInto writes the database to the empty file tmp. VACUUM INTO
// writes only the new file: a read-only handle (mode=ro, which protects
// the source) may run it once query_only is lifted, and it is restored
// after.
func (d *DB) vacuumInto(ctx context.Context, tmp string) error {
	var queryOnly bool
	if err := d.db.QueryRowContext(ctx, `PRAGMA query_only`).Scan(&queryOnly); err != nil {
		return err
	}
	if queryOnly {
		if _, err := d.db.ExecContext(ctx, `PRAGMA query_only = 0`); err != nil {
			return err
		}
		defer d.db.ExecContext(context.WithoutCancel(ctx), `PRAGMA query_only = 1`)
	}
	_, err := d.db.ExecContext(ctx, `VACUUM INTO ?`, tmp)
	return err
}

// publish gives the complete file tmp the name path unless path exists
// (ErrExists), and removes the name tmp.
func publish(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil {
		_ = os.Remove(tmp) // path holds the copy; a stray name would only be clutter
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return ErrExists
	}
	// No hard links here: check, then rename (which would replace a file
	// created in between).
	if _, serr := os.Lstat(path); serr == nil {
		return ErrExists
	} else if !errors.Is(serr, fs.ErrNotExist) {
		return serr
	}
	return os.Rename(tmp, path)
}

// syncFile flushes the file name to disk.
func syncFile(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir flushes a directory's entries (the new name) to disk, where the
// platform can (not Windows): best effort, the copy itself is on disk.
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		_ = f.Sync()
		f.Close()
	}
}

// Stats describes the database's size and contents.
type Stats struct {
	FileBytes    int64     `json:"file_bytes"`             // pages in use and free
	FreeBytes    int64     `json:"free_bytes"`             // free pages (reused by later writes; VACUUM returns them)
	Runs         int64     `json:"runs"`                   // runs recorded
	Observations int64     `json:"observations"`           // observations stored
	WithBodies   int64     `json:"with_bodies"`            // observations that still hold a body
	BodyBytes    int64     `json:"body_bytes"`             // stored (compressed) request and response bytes
	OldestRun    time.Time `json:"oldest_run,omitzero"`    // start of the oldest run (zero, and omitted from JSON: none)
	NewestRun    time.Time `json:"newest_run,omitzero"`    // start of the newest run (likewise)
	OldestBodies time.Time `json:"oldest_bodies,omitzero"` // start of the oldest run retention has not pruned that has bodies (pinned evidence in pruned runs aside; likewise)
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
	if err := d.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(body IS NOT NULL OR request_body IS NOT NULL), 0),
		COALESCE(SUM(COALESCE(LENGTH(body), 0) + COALESCE(LENGTH(request_body), 0)), 0) FROM observations`).Scan(&s.Observations, &s.WithBodies, &s.BodyBytes); err != nil {
		return s, fmt.Errorf("stats: %w", err)
	}
	var at string
	err := d.db.QueryRowContext(ctx, `SELECT started_at FROM runs r WHERE r.pruned = ''
		AND EXISTS (SELECT 1 FROM observations o WHERE o.run_id = r.id AND (o.body IS NOT NULL OR o.request_body IS NOT NULL))
		ORDER BY r.id LIMIT 1`).Scan(&at)
	switch {
	case err == nil:
		s.OldestBodies = ParseTime(at)
	case !errors.Is(err, sql.ErrNoRows):
		return s, fmt.Errorf("stats: %w", err)
	}
	return s, nil
}
