package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// seededLeaseExpires is when the lease seedOld writes (holder h/1/x,
// driftprobe run, pid 1 on host-a) expires.
var seededLeaseExpires = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// The migrations' lease check starts at the migration that creates the
// run lease's table, found in the migrations themselves: before it the
// schema has no lease to read.
func TestLeaseSchemaIsTheRunLockMigration(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	v := leaseSchema(ms)
	if v < 1 || v > len(ms) {
		t.Fatalf("leaseSchema %d: no migration creates run_lock", v)
	}
	creates := regexp.MustCompile(`(?i)\bCREATE\s+TABLE\s+run_lock\b`)
	if !creates.MatchString(ms[v-1].sql) {
		t.Errorf("migration %s (leaseSchema %d) does not create run_lock", ms[v-1].name, v)
	}
	for _, m := range ms[:v-1] {
		if strings.Contains(m.sql, "run_lock") {
			t.Errorf("migration %s, before leaseSchema %d, mentions run_lock", m.name, v)
		}
	}
}

// A newer driftprobe opening a database an older one is in the middle of
// a run on (a live lease: unexpired by the store's clock) does not migrate
// it under that run: Open returns an error matching ErrLocked that names
// the holder, says the database was not migrated and what to do, and the
// file keeps its schema, its rows and the lease as they were. Once the
// lease has expired (its holder crashed) or its holder is known gone,
// Open migrates it. Every old schema that has the lease's table.
func TestOpenRefusesToMigrateUnderALiveLease(t *testing.T) {
	ctx := context.Background()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	latest := SchemaLatest()
	live := func() time.Time { return seededLeaseExpires.Add(-time.Minute) }
	expired := func() time.Time { return seededLeaseExpires.Add(time.Second) }
	for v := leaseSchema(ms); v < latest; v++ {
		t.Run(fmt.Sprintf("schema%d", v), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "old.db")
			oldSchema(t, p, v)
			seedOld(t, p, v)
			before, _ := rawDump(t, p)

			d, err := OpenWith(ctx, p, OpenOptions{Now: live})
			if err == nil {
				d.Close()
				t.Fatalf("schema %d under a live lease: Open migrated it", v)
			}
			var locked *LockedError
			if !errors.Is(err, ErrLocked) || !errors.As(err, &locked) || locked.By.PID != 1 || locked.By.Host != "host-a" {
				t.Fatalf("schema %d under a live lease: %v, want an error matching ErrLocked naming the holder", v, err)
			}
			for _, want := range []string{p, "NOT migrated", fmt.Sprintf("schema %d", v), "driftprobe run (pid 1 on host-a)", "once that run has finished", "stop that process"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message lacks %q: %v", want, err)
				}
			}
			leftAsItWas(t, p, v, before, "the refusal")

			// The lease expired: its holder is gone; Open migrates.
			d, err = OpenWith(ctx, p, OpenOptions{Now: expired})
			if err != nil {
				t.Fatalf("schema %d under an expired lease: %v", v, err)
			}
			if from, to := d.Migrated(); from != v || to != latest {
				t.Errorf("under an expired lease: Migrated %d → %d, want %d → %d", from, to, v, latest)
			}
			d.Close()
		})
	}

	// A live lease whose holder Gone says has ended does not stop it.
	p := filepath.Join(t.TempDir(), "gone.db")
	oldSchema(t, p, latest-1)
	seedOld(t, p, latest-1)
	asked := 0
	d, err := OpenWith(ctx, p, OpenOptions{Now: live, Gone: func(h Lease) bool { asked++; return h.Holder == "h/1/x" }})
	if err != nil {
		t.Fatalf("under a gone holder's live lease: %v", err)
	}
	if from, to := d.Migrated(); from != latest-1 || to != latest || asked == 0 {
		t.Errorf("under a gone holder's live lease: Migrated %d → %d (Gone asked %d times)", from, to, asked)
	}
	d.Close()

	// A current database is opened whatever its lease: nothing to migrate.
	d, err = OpenWith(ctx, p, OpenOptions{Now: live})
	if err != nil {
		t.Fatalf("a current database under a live lease: %v", err)
	}
	d.Close()
}

// A holder paused past its lease while a newer driftprobe migrated the
// database (`db migrate` takes no lease from it and leaves its run
// running) writes nothing more when it resumes: the batch of answers it
// had in memory is not inserted and the run is not finished, even before
// its next renewal stops it (a batch flushed at once on resume raced the
// renewal). The run stays running for the newer driftprobe's next run to
// mark aborted.
func TestRunWritesRefuseANewerSchema(t *testing.T) {
	d := openTestDB(t)
	ctx := context.Background()
	runID, targetID := setupRun(t, d)
	if _, err := d.db.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaLatest()+1)); err != nil {
		t.Fatal(err)
	}
	o := &Observation{RunID: runID, TargetID: targetID, ProbeID: "p", RequestSHA256: "x"}
	if err := d.InsertObservations(ctx, []*Observation{o}); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("insert after a newer migration: %v, want ErrNewerSchema", err)
	}
	if err := d.FinishRun(ctx, runID, RunAborted, []RunTarget{{TargetID: targetID, Status: TargetComplete}}); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("finish after a newer migration: %v, want ErrNewerSchema", err)
	}
	var n, rts int
	var status string
	if err := d.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM observations WHERE run_id = ?1), (SELECT COUNT(*) FROM run_targets WHERE run_id = ?1), (SELECT status FROM runs WHERE id = ?1)`, runID).Scan(&n, &rts, &status); err != nil {
		t.Fatal(err)
	}
	if n != 0 || rts != 0 || status != RunRunning {
		t.Fatalf("after the refusals: %d observations, %d run targets, run %s; want none, none, running", n, rts, status)
	}
	// At this binary's schema both write as before.
	if _, err := d.db.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaLatest())); err != nil {
		t.Fatal(err)
	}
	if err := d.InsertObservations(ctx, []*Observation{o}); err != nil {
		t.Fatalf("insert at this binary's schema: %v", err)
	}
	if err := d.FinishRun(ctx, runID, RunAborted, nil); err != nil {
		t.Fatalf("finish at this binary's schema: %v", err)
	}
}
