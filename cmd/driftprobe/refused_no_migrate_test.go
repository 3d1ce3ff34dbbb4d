package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// A writing command refused for its own arguments leaves an older
// driftprobe's database as it was, never migrated (the older driftprobe
// still writing it would be locked out by a typo): the arguments the
// configuration decides are checked before the database is opened.
func TestRefusedWriteCommandsNeverMigrate(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	mustRun(t, 1, "--db", db)
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	toSchema20(t, st)
	st.Close()
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"db", "prune", "--observations", "bogus"}, "want a positive duration"},
		{[]string{"db", "prune"}, "nothing to prune"},
		{[]string{"outbox", "--send"}, "no github block in the config: nothing to send"},
		{[]string{"outbox", "--backfill"}, "no github block in the config: there is nowhere to file issues"},
		{[]string{"outbox", "--skip", "1", "--send"}, "no github block in the config: nothing to send"},
		{[]string{"compare", "--run", "--from", "nosuch", "--to", "sim-a"}, `target "nosuch" is not in the config`},
		{[]string{"serve", "--listen", busy.Addr().String(), "--no-initial-run"}, "address already in use"},
	} {
		_, stderr, code := runIn(t, append(c.args, "--db", db)...)
		if code != 2 || !bytes.Contains([]byte(stderr), []byte(c.want)) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", c.args, code, stderr, c.want)
		}
		if v := schemaOf(t, db); v != 20 {
			t.Fatalf("%v migrated the database: schema %d", c.args, v)
		}
		after, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Fatalf("%v changed the database", c.args)
		}
	}
	// The same commands with good arguments do migrate it (the check is
	// not that nothing ever opens it).
	if _, stderr, code := runIn(t, "db", "prune", "--observations", "3650d", "--db", db); code != 0 {
		t.Fatalf("db prune: exit %d: %s", code, stderr)
	}
	if v := schemaOf(t, db); v != storage.SchemaLatest() {
		t.Errorf("after a prune that ran: schema %d, want %d", v, storage.SchemaLatest())
	}
}

// schemaOf reads db's schema version (user_version), committed -wal
// frames included, without changing the file.
func schemaOf(t *testing.T, db string) int {
	t.Helper()
	st, err := storage.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var v int
	if err := st.SQL().QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// toSchema20 takes st, a current database, back to schema 20 (before
// migration 0021, github_holds): an older driftprobe's database.
func toSchema20(t *testing.T, st *storage.DB) {
	t.Helper()
	for _, q := range []string{`DROP TABLE github_holds`, `DROP TABLE origin_scope_unnamed`, `ALTER TABLE run_targets DROP COLUMN detected`, `PRAGMA user_version = 20`} {
		if _, err := st.SQL().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}
