package storage

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
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
