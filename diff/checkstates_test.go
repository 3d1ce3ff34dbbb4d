package diff_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/driftprobe/driftprobe/diff"
)

// A database of the first schema (an old backup, a first run interrupted
// in its migrations) has no detection state to check: nothing to report,
// no error.
func TestCheckStatesOnTheFirstSchema(t *testing.T) {
	ddl, err := os.ReadFile("../storage/migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "s1.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(ddl) + "; PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	msgs, err := diff.CheckStates(context.Background(), db)
	if err != nil || len(msgs) != 0 {
		t.Fatalf("schema 1: %q, %v; want nothing to report", msgs, err)
	}
}
