package storage

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// QA (scale): `db prune --vacuum` holds the run lease so that a run
// started meanwhile is skipped cleanly instead of timing out on the busy
// database (README, Retention). VACUUM holds SQLite's write lock
// throughout (~60 s for 3.3 GB on a 2-vCPU VM); AcquireLock used to begin
// with BEGIN IMMEDIATE, waiting for that lock before it read the lease,
// and failed after the busy timeout ("database is locked", exit 3). It
// reads the lease first, outside the write transaction: a live holder is
// named at once, however long the holder's write lasts.
//
// The vacuum is stood in for by a write transaction on the holder's store
// that lasts until the other process's attempt has ended, so it outlasts
// any wait for the write lock. That process's busy timeout is cut to
// 100 ms (10 s in production) only so that a regression fails fast.
func TestAcquireLockBesideHoldersLongWriteIsLockedNotBusy(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "d.db")
	a, err := Open(ctx, p) // db prune --vacuum
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, p) // a run started meanwhile
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var ms int
	if err := b.SQL().QueryRowContext(ctx, `PRAGMA busy_timeout = 100`).Scan(&ms); err != nil || ms != 100 {
		t.Fatalf("busy_timeout %d %v", ms, err)
	}
	prune := Lease{Holder: "prune", Host: "h", PID: 1, Command: "driftprobe db prune"}
	if err := a.AcquireLock(ctx, prune, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	var got error
	if err := a.Tx(ctx, func(tx *sql.Tx) error { // holds the write lock
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET note = note WHERE 0`); err != nil {
			return err
		}
		attempt := make(chan error, 1)
		go func() {
			attempt <- b.AcquireLock(ctx, Lease{Holder: "run", Host: "h", PID: 2, Command: "driftprobe run"}, 10*time.Minute)
		}()
		got = <-attempt
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var locked *LockedError
	if !errors.As(got, &locked) || !errors.Is(got, ErrLocked) || isBusy(got) {
		t.Fatalf("a run started while the lease holder's long write ran got %v; want the lease holder named (ErrLocked), as a skipped run", got)
	}
	if locked.By.Holder != prune.Holder || locked.By.Command != prune.Command {
		t.Errorf("named %+v, want the prune", locked.By)
	}
	if h, err := b.LockHolder(ctx); err != nil || h == nil || h.Holder != prune.Holder {
		t.Errorf("lease now %+v %v, want the prune's", h, err)
	}
}

// AcquireLock reads the lease again under the write lock before taking it:
// a lease found free (here: its holder gone) but taken by a third process
// between that first read and the write transaction is that process's,
// and named, never overwritten. A holder's Gone is asked once however
// often the lease is read.
func TestAcquireLockRereadsTheLeaseUnderTheWriteLock(t *testing.T) {
	ctx := context.Background()
	a, b, _ := lockTwoProcesses(t)
	c, err := Open(ctx, a.Path()) // a third process
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetClock(a.Now)
	if err := a.AcquireLock(ctx, lockLeaseA, time.Hour); err != nil {
		t.Fatal(err)
	}
	lockLeaseC := Lease{Holder: "C", Host: "host-c", PID: 3, Command: "driftprobe run", Gone: func(Lease) bool { return true }}
	asked := map[string]int{}
	lb := lockLeaseB
	lb.Gone = func(h Lease) bool {
		asked[h.Holder]++
		if h.Holder == lockLeaseA.Holder {
			// Between B's first read and its write transaction, C
			// takes A's lease over.
			if err := c.AcquireLock(ctx, lockLeaseC, time.Hour); err != nil {
				t.Errorf("C takes over: %v", err)
			}
			return true
		}
		return false
	}
	err = b.AcquireLock(ctx, lb, time.Hour)
	var locked *LockedError
	if !errors.As(err, &locked) || locked.By.Holder != "C" {
		t.Fatalf("B got %v, want C named as the holder", err)
	}
	if h, err := a.LockHolder(ctx); err != nil || h == nil || h.Holder != "C" {
		t.Fatalf("lease %+v %v, want C's", h, err)
	}
	if asked["A"] != 1 || asked["C"] != 1 {
		t.Errorf("Gone asked %v, want once per holder", asked)
	}
	// Taking over a gone holder's lease asks about it once, though the
	// lease is read twice.
	clear(asked)
	lb.Gone = func(h Lease) bool { asked[h.Holder]++; return true }
	if err := b.AcquireLock(ctx, lb, time.Hour); err != nil {
		t.Fatal(err)
	}
	if h, err := a.LockHolder(ctx); err != nil || h == nil || h.Holder != "B" || asked["C"] != 1 {
		t.Fatalf("lease %+v %v, Gone asked %v; want B's, C asked about once", h, err, asked)
	}
}
