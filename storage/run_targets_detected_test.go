package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// run_targets.detected (migration 0023) says whether detection committed
// for the target in the run. A schema-22 database's rows take their run's
// flag: 1 for a run detected then (the run-level flag decides for them, as
// before), 0 for one not detected yet (its late detection, or its giving
// up, decides per target). From then on FinishRun records 0, MarkDetected
// sets exactly the targets it is given, GiveUpDetection none. db check
// reads the schema-22 database as it is, and names a flag other than 0 or
// 1 at schema 23.
func TestRunTargetsDetectedFlag(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "old.db")
	oldSchema(t, p, 22)
	raw, err := sql.Open("sqlite", fileURI(p))
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	// Two targets; run 1 detected, run 2 finished but not detected yet
	// (its process ended in between), run 3 aborted (never detected).
	for _, q := range []string{
		`INSERT INTO targets (id, name, provider, model, endpoint, first_seen) VALUES (1, 'a', 'sim', 'm', '', '2026-12-01T00:00:00Z'), (2, 'b', 'sim', 'm', '', '2026-12-01T00:00:00Z')`,
		`INSERT INTO runs (id, started_at, status, corpus_name, corpus_version, corpus_hash, config_hash, host, version, note, detected) VALUES
			(1, '2026-12-01T00:00:00Z', 'complete', 'c', '1', '', '', '', '', '', 1),
			(2, '2026-12-01T01:00:00Z', 'complete', 'c', '1', '', '', '', '', '', 0),
			(3, '2026-12-01T02:00:00Z', 'aborted', 'c', '1', '', '', '', '', '', 0)`,
		`INSERT INTO run_targets (run_id, target_id, status, verdicts) VALUES (1, 1, 'complete', 5), (1, 2, 'complete', 5), (2, 1, 'complete', 5), (2, 2, 'complete', 5), (3, 1, 'aborted', 1)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()

	// db check reads schema 22 as it is (no detected column to check).
	ro, err := OpenReadOnly(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ro.Check(ctx, CheckOptions{})
	if v, _ := ro.SchemaVersion(ctx); v != 22 {
		t.Errorf("schema %d, want 22", v)
	}
	ro.Close()
	if err != nil || !rep.OK {
		t.Fatalf("check of schema 22: %+v %v", rep, err)
	}

	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if from, to := d.Migrated(); from != 22 || to != SchemaLatest() || to < 23 {
		t.Fatalf("migrated %d → %d, want 22 → %d (at least 23)", from, to, SchemaLatest())
	}
	flags := func() []string {
		t.Helper()
		rows, err := d.db.QueryContext(ctx, `SELECT run_id, target_id, detected FROM run_targets ORDER BY run_id, target_id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var run, tgt, det int64
			if err := rows.Scan(&run, &tgt, &det); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d/%d:%d", run, tgt, det))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := flags(), []string{"1/1:1", "1/2:1", "2/1:0", "2/2:0", "3/1:0"}; !slices.Equal(got, want) {
		t.Fatalf("after migration 0023: %v, want %v (each row its run's flag)", got, want)
	}

	// Run 2, detected late for target a only (b left out).
	if err := d.Tx(ctx, func(tx *sql.Tx) error { return MarkDetected(ctx, tx, 2, []int64{1}) }); err != nil {
		t.Fatal(err)
	}
	// A new run: recorded 0 for both, detected for b alone.
	run4, err := d.BeginRun(ctx, Run{CorpusName: "c", CorpusVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.FinishRun(ctx, run4, RunComplete, []RunTarget{{TargetID: 1, Status: TargetComplete, Verdicts: 5}, {TargetID: 2, Status: TargetComplete, Verdicts: 5}}); err != nil {
		t.Fatal(err)
	}
	if got := flags(); !slices.Contains(got, "4/1:0") || !slices.Contains(got, "4/2:0") {
		t.Fatalf("a run finished, not detected yet: %v, want 0 for both its targets", got)
	}
	if err := d.Tx(ctx, func(tx *sql.Tx) error { return MarkDetected(ctx, tx, run4, []int64{2}) }); err != nil {
		t.Fatal(err)
	}
	// Detected twice (another process took the lease over): refused,
	// nothing marked.
	if err := d.Tx(ctx, func(tx *sql.Tx) error { return MarkDetected(ctx, tx, run4, []int64{1, 2}) }); !errors.Is(err, ErrAlreadyDetected) {
		t.Fatalf("run detected twice: %v, want ErrAlreadyDetected", err)
	}
	// A run whose detection is given up: detected at run level, for no
	// target.
	run5, err := d.BeginRun(ctx, Run{CorpusName: "c", CorpusVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.FinishRun(ctx, run5, RunComplete, []RunTarget{{TargetID: 1, Status: TargetComplete, Verdicts: 5}}); err != nil {
		t.Fatal(err)
	}
	if err := d.GiveUpDetection(ctx, run5); err != nil {
		t.Fatal(err)
	}
	if got, want := flags(), []string{"1/1:1", "1/2:1", "2/1:1", "2/2:0", "3/1:0", "4/1:0", "4/2:1", "5/1:0"}; !slices.Equal(got, want) {
		t.Errorf("run_targets.detected: %v, want %v", got, want)
	}
	if ids, err := d.UndetectedRuns(ctx); err != nil || len(ids) != 0 {
		t.Errorf("undetected runs %v (%v), want none", ids, err)
	}

	rep, err = d.Check(ctx, CheckOptions{})
	if err != nil || !rep.OK {
		t.Fatalf("check of schema %d: %+v %v", SchemaLatest(), rep, err)
	}
	var rowid int64
	if err := d.db.QueryRowContext(ctx, `SELECT rowid FROM run_targets WHERE run_id = 4 AND target_id = 2`).Scan(&rowid); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, `UPDATE run_targets SET detected = 2 WHERE rowid = ?`, rowid); err != nil {
		t.Fatal(err)
	}
	rep, err = d.Check(ctx, CheckOptions{})
	if want := fmt.Sprintf("run_targets row %d: column detected holds integer 2, not 0 or 1", rowid); err != nil || rep.OK || !slices.Equal(rep.Structure, []string{want}) {
		t.Errorf("check with a detected flag of 2: %+v %v, want %q", rep, err, want)
	}
}
