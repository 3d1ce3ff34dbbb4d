package storage

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"modernc.org/sqlite"
)

// Open opens the run lease's connection last, after the migrations. A
// first statement of that connection that finds the database busy (another
// process's WAL recovery, or its switch to WAL, holding a lock) is
// retried as the migrations' are, instead of failing the whole Open.
//
// Nothing outside Open can act between its store's connection and the
// lease's, so the busy database is provoked from the driver's connection
// hook: on the lease connection's first opening, its first statement
// takes the write lock, which another connection holds (SQLITE_BUSY at
// once: no busy timeout on that attempt), and that other connection then
// lets it go; the retry opens the lease's connection on a free database.
func TestOpenRetriesTheLeaseConnectionOnBusy(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "d.db")
	d, err := Open(ctx, p) // created and migrated: the next Open only reads
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	other, err := sql.Open("sqlite", fileURI(p))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		writers  int // Open's writer connections: the store's, then the lease's
		provoked error
	)
	onConnect(t, func(c sqlite.ExecQuerierContext, dsn string) error {
		if !writerConn(dsn, p) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if writers++; writers != 2 {
			return nil
		}
		if _, err := c.ExecContext(ctx, "PRAGMA busy_timeout = 0", nil); err != nil {
			return err
		}
		_, provoked = c.ExecContext(ctx, "BEGIN IMMEDIATE", nil)
		if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Errorf("release the write lock: %v", err)
		}
		return provoked
	})
	d, err = Open(ctx, p)
	if err != nil {
		t.Fatalf("Open while the lease connection's first statement found the database busy: %v", err)
	}
	defer d.Close()
	mu.Lock()
	busy, n := provoked, writers
	mu.Unlock()
	if !isBusy(busy) || n != 3 {
		t.Fatalf("provoked %v, %d writer connections opened; want SQLITE_BUSY on the lease's first, and three: the store's, the lease's and its retry", busy, n)
	}
	if d.LeaseSQL() == d.SQL() {
		t.Fatal("no lease connection of its own")
	}
	lease := Lease{Holder: "A", Host: "h", PID: 1, Command: "driftprobe run"}
	if err := d.AcquireLock(ctx, lease, time.Minute); err != nil {
		t.Fatalf("AcquireLock through the retried lease connection: %v", err)
	}
	if h, err := d.LockHolder(ctx); err != nil || h == nil || h.Holder != "A" {
		t.Fatalf("lease %+v %v, want A's", h, err)
	}
}
