package storage

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

func pageSizeOf(t *testing.T, d *DB) int {
	t.Helper()
	var ps int
	if err := d.db.QueryRow(`PRAGMA page_size`).Scan(&ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

// A database Open creates, from nothing or from an empty file, has
// PageSize pages and is in WAL mode.
func TestOpenNewDatabasePageSize(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "new.db"), empty} {
		d, err := Open(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		if err := d.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if ps := pageSizeOf(t, d); ps != PageSize || mode != "wal" {
			t.Errorf("%s: page size %d, journal %s; want %d, wal", filepath.Base(p), ps, mode, PageSize)
		}
		d.Close()
	}
}

// A database an older release created with SQLite's default 4 KiB pages
// keeps them: it opens, migrates and takes observations as before.
func TestOpenKeepsExistingPageSize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite", "file:"+p+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`CREATE TABLE placeholder (x); DROP TABLE placeholder`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	d, err := Open(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if ps := pageSizeOf(t, d); ps != 4096 {
		t.Fatalf("page size %d, want the existing 4096", ps)
	}
	run, tgt := setupRun(t, d)
	if err := d.InsertObservations(context.Background(), testObservations(run, tgt, 40)); err != nil {
		t.Fatal(err)
	}
}
