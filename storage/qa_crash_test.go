//go:build unix

package storage

import (
	"context"
	"strings"
	"testing"
	"time"
)

// QA (crash consistency, disk/permission trouble): a process of another
// user (root's `driftprobe run` killed by the OOM killer, an operator's
// sqlite3 session) leaves FILE-wal and FILE-shm beside a database this
// user owns and may write, in a directory this user may write. SQLite then
// cannot write through them, and a run fails with
//
//	this user may not write the database or its directory (...)
//
// which sends the operator to the two things that are fine: the file and
// the directory. Tx's own comment knows the cause ("Files beside the
// database (its -wal, -shm) this user may not write"); the message should
// name FILE-wal / FILE-shm so the operator fixes their ownership.
func TestQASidecarsOfAnotherUserNamedInWriteError(t *testing.T) {
	if asUnprivileged(t) {
		return
	}
	p, _ := walCopy(t, true)
	// The database file and its directory stay writable by this user;
	// only the sidecars are not (as when another user's process made them).
	lockFile(t, p+"-wal")
	lockFile(t, p+"-shm")
	ctx := context.Background()
	d, err := Open(ctx, p)
	if err == nil {
		defer d.Close()
		err = d.AcquireLock(ctx, Lease{Holder: "qa/1/x", Host: "qa", PID: 1, Command: "driftprobe run"}, time.Minute)
	}
	if err == nil {
		t.Fatal("a write through -wal/-shm files this user may not write succeeded")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "-shm") && !strings.Contains(err.Error(), "-wal") {
		t.Errorf("the error names neither %s-wal nor %s-shm, the files this user may not write (the database file and its directory are writable):\n%v", p, p, err)
	}
}
