package storage

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A transaction that cannot start because another process holds the
// write lock past the busy timeout says so and names the database, not
// only "database is locked (5) (SQLITE_BUSY)".
func TestBusyDatabaseSaysWhoAndWhere(t *testing.T) {
	saved := busyPragma
	busyPragma = "busy_timeout(100)" // the production 10 s, shortened
	defer func() { busyPragma = saved }()
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "busy.db")
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	other, err := sql.Open("sqlite", "file:"+p)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")
	err = d.Tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO targets (name, provider, model, endpoint) VALUES ('t', 'sim', 'm', 'chat')`)
		return err
	})
	if err == nil || !isBusy(err) || !strings.Contains(err.Error(), p+": another process has held a write transaction") {
		t.Fatalf("Tx under another process's write lock: %v", err)
	}
}

// shortBusy cuts the busy timeout of the stores the test opens to 100 ms
// (10 s in production), so that a wait for the write lock fails fast.
func shortBusy(t *testing.T) {
	saved := busyPragma
	busyPragma = "busy_timeout(100)"
	t.Cleanup(func() { busyPragma = saved })
}

// A lease operation made while this process's own store connection holds
// a write transaction (here: inside it) waits for that transaction's write
// lock and fails after the busy timeout. The error says whose transaction
// it was: this process's own, not another process's.
func TestLeaseBusyBehindThisProcesssTransactionSaysSo(t *testing.T) {
	shortBusy(t)
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "busy.db")
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var got error
	if err := d.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET note = note WHERE 0`); err != nil {
			return err
		}
		got = d.AcquireLock(ctx, Lease{Holder: "A", Host: "h", PID: 1, Command: "driftprobe run"}, time.Minute)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got == nil || !isBusy(got) || !strings.Contains(got.Error(), p+": this process's own write transaction, on its store connection, has held the database") ||
		strings.Contains(got.Error(), "another process") {
		t.Fatalf("AcquireLock inside this process's own write transaction: %v", got)
	}
}

// The same wait behind another process's write transaction names no
// transaction of this process's.
func TestLeaseBusyBehindAnotherProcessSaysSo(t *testing.T) {
	shortBusy(t)
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "busy.db")
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	other, err := sql.Open("sqlite", "file:"+p)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")
	err = d.AcquireLock(ctx, Lease{Holder: "A", Host: "h", PID: 1, Command: "driftprobe run"}, time.Minute)
	if err == nil || !isBusy(err) || !strings.Contains(err.Error(), p+": another process has held a write transaction") || strings.Contains(err.Error(), "this process") {
		t.Fatalf("AcquireLock under another process's write lock: %v", err)
	}
}

// busyHolders names this process's own transaction only for what it saw:
// one open all the while, some during the wait, or none.
func TestBusyHoldersSaysWhatThisProcessSaw(t *testing.T) {
	for _, c := range []struct {
		before, after txSeen
		want, not     string
	}{
		{txSeen{true, 4}, txSeen{true, 4}, "this process's own write transaction, on its store connection, has held the database for more than 10s (the busy timeout), as long as this one waited", "another process"},
		{txSeen{false, 4}, txSeen{false, 6}, "write transactions have held the database for more than 10s (the busy timeout): this process's own, on its store connection (2 while this one waited), perhaps with another process's", "as long as"},
		{txSeen{true, 4}, txSeen{false, 4}, "this process's own, on its store connection (1 while this one waited), perhaps with another process's", "as long as"},
		{txSeen{true, 4}, txSeen{true, 5}, "this process's own, on its store connection (2 while this one waited), perhaps with another process's", "as long as"},
		{txSeen{false, 4}, txSeen{false, 4}, "another process has held a write transaction on the database for more than 10s", "this process"},
	} {
		got := busyHolders(c.before, c.after, "its store connection")
		if !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
			t.Errorf("before %+v, after %+v: %q; want %q", c.before, c.after, got, c.want)
		}
	}
}
