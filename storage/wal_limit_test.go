package storage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// QA (scale): the -wal file of a long-lived writer (serve) never shrank.
// A `db backup` or `db check` (both safe beside serve) holds a read
// transaction for its whole run (25 s for 4.8 GB); a prune meanwhile
// cannot be checkpointed past it, so the -wal grows by everything written
// (893k observations deleted beside a backup left a 921 MB -wal). SQLite
// restarts the log from its start afterwards but kept the file's size
// (journal_size_limit was -1): while serve kept the database open the disk
// held it for good. With walSizeLimit the restarted log is cut back to it.
// Here: a reader pins a snapshot while more than the limit is written,
// then later writes run with no reader.
func TestWALShrinksAfterLongReaderEnds(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "d.db")
	w, err := Open(ctx, p) // serve's store: open throughout
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := OpenReadOnly(ctx, p) // a backup or check beside it
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tx, err := r.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs`).Scan(&n); err != nil { // the snapshot starts
		t.Fatal(err)
	}
	note := strings.Repeat("x", 1<<20)
	for i := 0; i < walSizeLimit>>20+16; i++ {
		if _, err := w.SQL().ExecContext(ctx, `INSERT INTO runs (started_at, status, corpus_name, corpus_version, corpus_hash, note) VALUES ('2026-01-01T00:00:00Z', 'complete', 'c', 'v', 'h', ?)`, note); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(p + "-wal"); err != nil {
		t.Fatal(err)
	} else if fi.Size() <= walSizeLimit {
		t.Fatalf("the -wal beside the reader is %d MB, want it past the limit (%d MB)", fi.Size()>>20, walSizeLimit>>20)
	}
	tx.Rollback()
	// Ordinary runs afterwards: small writes, each followed by SQLite's
	// automatic checkpoint; the log restarts from its beginning.
	for i := 0; i < 5; i++ {
		if _, err := w.SQL().ExecContext(ctx, `DELETE FROM runs WHERE id = (SELECT MAX(id) FROM runs)`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.SQL().ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		t.Fatal(err)
	}
	if _, err := w.SQL().ExecContext(ctx, `UPDATE runs SET note = '' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > walSizeLimit {
		t.Errorf("the -wal is %d MB after the long reader ended and later writes were checkpointed, want at most %d MB: a long-lived writer keeps it at its high-water mark", fi.Size()>>20, walSizeLimit>>20)
	}
}
