package storage

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// An older driftprobe's run that holds SQLite's write lock for long (its
// db prune --vacuum, under its lease) does not keep a newer driftprobe's
// Open waiting for that lock through every retry and then failing on a
// busy database: the live lease is read first, outside any write
// transaction (in WAL mode a read never waits for a writer), and Open
// refuses at once with ErrLocked naming the holder, as AcquireLock does.
func TestOpenRefusesUnderALiveLeaseWithoutWaitingForTheWriteLock(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "old.db")
	v := len(ms) - 1
	oldSchema(t, p, v)
	seedOld(t, p, v)

	// The older process, in a long write transaction.
	raw, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c, err := raw.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer c.ExecContext(context.Background(), "ROLLBACK")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	live := func() time.Time { return seededLeaseExpires.Add(-time.Minute) }
	start := time.Now()
	d, err := OpenWith(ctx, p, OpenOptions{Now: live})
	took := time.Since(start)
	if err == nil {
		d.Close()
		t.Fatal("Open migrated a database under a live lease")
	}
	var locked *LockedError
	if !errors.As(err, &locked) || locked.By.PID != 1 {
		t.Fatalf("after %v: %v; want the live lease's *LockedError", took, err)
	}
	if took > 5*time.Second {
		t.Errorf("Open took %v to refuse under a live lease: it waited for the write lock", took)
	}
}
