package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/CLI.md (db check): "exit 2 for an empty file, another
// program's database". A file that is not SQLite at all is refused by
// every other command as "not a driftprobe database (not an SQLite
// database: another program's file, or a damaged one — driftprobe db
// check tells …)". db check itself then exits 1 and repeats that very
// advice: the user who followed it is told to run the command they just
// ran. db check must not send its user back to db check.
func TestQA3DBCheckOnNonSQLiteFileDoesNotPointAtItself(t *testing.T) {
	db := filepath.Join(t.TempDir(), "notdb.db")
	if err := os.WriteFile(db, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runIn(t, "--db", db, "db", "check")
	if code == 0 {
		t.Fatalf("db check on a text file: exit 0")
	}
	if strings.Contains(stderr, "driftprobe db check tells") {
		t.Errorf("db check on a non-SQLite file (exit %d) tells its user to run db check:\n%s", code, stderr)
	}
}
