package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/storage"
)

// A newer driftprobe does not migrate a database under an older one in
// the middle of a run (a live lease on an older schema): db migrate, run
// and serve report the lease's holder as a held lease is reported (exit
// 3), say the database was not migrated, and leave it as it was. Once
// that lease has expired (its holder crashed) the database is migrated.
func TestMigrateRefusedUnderAnOlderRunsLease(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	mustRun(t, 1, "--db", db)
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// The older driftprobe's run, holding the lease for an hour.
	if err := st.AcquireLock(ctx, storage.Lease{Holder: "older", Host: "node-7", PID: 4242, Command: "driftprobe run"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	toSchema20(t, st) // the older driftprobe's schema
	st.Close()
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"db", "migrate"},
		{"run", "--no-progress"},
		{"db", "prune", "--observations", "3650d"},
		{"serve", "--listen", "127.0.0.1:0", "--no-initial-run"},
	} {
		// A serve that opened it would serve until stopped: bounded.
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		var out, errb bytes.Buffer
		code := Run(cctx, append(args, "--db", db), &out, &errb)
		cancel()
		stderr := errb.String()
		if code != exitRuntime || !strings.HasPrefix(stderr, "driftprobe: ") {
			t.Errorf("%v under an older run's lease: exit %d, stderr %q; want exit %d", args, code, stderr, exitRuntime)
		}
		for _, want := range []string{"NOT migrated", "driftprobe run (pid 4242 on node-7)", "once that run has finished", "stop that process"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr lacks %q: %s", args, want, stderr)
			}
		}
		if v := schemaOf(t, db); v != 20 {
			t.Fatalf("%v migrated the database under an older run's lease: schema %d", args, v)
		}
		after, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Fatalf("%v changed the database", args)
		}
	}

	// That run crashed: its lease expired an hour ago. db migrate migrates.
	setLeaseExpiry(t, db, time.Now().Add(-time.Hour))
	stdout, stderr, code := runIn(t, "db", "migrate", "--db", db)
	if code != 0 || !strings.Contains(stdout, "schema 20 →") {
		t.Fatalf("db migrate under an expired lease: exit %d: %s%s", code, stdout, stderr)
	}
	if v := schemaOf(t, db); v != storage.SchemaLatest() {
		t.Errorf("after db migrate: schema %d, want %d", v, storage.SchemaLatest())
	}
}

// setLeaseExpiry rewrites the lease's expiry in db through a plain
// connection, leaving its schema as it is.
func setLeaseExpiry(t *testing.T, db string, at time.Time) {
	t.Helper()
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE run_lock SET expires_at = ? WHERE id = 1`, at.UTC().Format(time.RFC3339Nano)); err != nil {
		t.Fatal(err)
	}
}
