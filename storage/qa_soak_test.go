package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// QA (soak): `driftprobe db prune --vacuum` run beside a live `serve`
// (README "Retention, backups": "`db prune --vacuum` also shrinks the
// file"; metrics table: driftprobe_database_free_bytes "free pages ...
// (`db prune --vacuum` returns them)"; RUNBOOK DriftprobeRunFailed step 2
// recommends it after a full disk) leaves the database file at its old
// size. In WAL mode the VACUUM's pages land in the -wal; the vacuuming
// process is not the last connection (serve's store and scrape connections
// stay open), so nothing checkpoints them into the file and truncates it
// until serve's own later writes push the WAL past the autocheckpoint
// threshold (1000 pages, 16 MiB at 16 KiB pages: many runs later). Until
// then the volume holds the old file plus the new -wal: more disk than
// before the vacuum, while driftprobe_database_size_bytes (page_count ×
// page_size) already reports the small size.
//
// Observed in the soak: a 58.8 MB database with 47 MB free, serve
// running; `db prune --vacuum` printed "vacuumed: the file now holds only
// what is kept" and the metric dropped to 6.2 MB, but the file stayed
// 58,851,328 bytes (plus an 8 MB -wal) over the following runs. The same
// command with serve stopped leaves a 6.2 MB file.
//
// Deterministic: two handles on one file (serve's and the CLI's), no
// timing; the serve handle only stays open, as the daemon's does.
func TestQAVacuumBesideOpenConnectionShrinksFile(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "live.db")

	serve, err := storage.Open(ctx, p) // the daemon's connection, open throughout
	if err != nil {
		t.Fatal(err)
	}
	defer serve.Close()

	// History that retention later frees: ~20 MB of rows, checkpointed
	// into the file, then deleted (free pages, as after a prune).
	db := serve.SQL()
	mustExec := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExec(`CREATE TABLE qa_history (b BLOB)`)
	mustExec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200)
		INSERT INTO qa_history SELECT zeroblob(16000) FROM n`) // zeroblob: randomblob is ~100x slower under -race; SQLite stores the zeros in full
	mustExec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	mustExec(`DROP TABLE qa_history`)
	mustExec(`PRAGMA wal_checkpoint(TRUNCATE)`)

	before := fileSize(t, p) + fileSize(t, p+"-wal")
	var free int64
	if err := db.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil {
		t.Fatal(err)
	}
	if free < 1000 {
		t.Fatalf("setup: only %d free pages", free)
	}

	// `driftprobe db prune --vacuum`: another process opens the database,
	// vacuums and exits, while serve keeps its connection.
	cli, err := storage.Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}

	var pages, pageSize int64
	if err := db.QueryRowContext(ctx, `SELECT (SELECT page_count FROM pragma_page_count), (SELECT page_size FROM pragma_page_size)`).Scan(&pages, &pageSize); err != nil {
		t.Fatal(err)
	}
	kept := pages * pageSize // what driftprobe_database_size_bytes reports
	file, wal := fileSize(t, p), fileSize(t, p+"-wal")
	t.Logf("before vacuum: file+wal %d B (%d free pages); after: page_count×page_size %d B, file %d B, -wal %d B", before, free, kept, file, wal)
	if file > kept {
		t.Errorf("after db prune --vacuum beside an open serve connection the database file is still %d B, but it holds only %d B of pages: the freed space was not returned (README: \"db prune --vacuum also shrinks the file\")", file, kept)
	}
	if file+wal >= before {
		t.Errorf("after the vacuum the database occupies %d B on disk (file %d + -wal %d), no less than the %d B before it", file+wal, file, wal, before)
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
