package storage

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The file named is the file opened, whatever its name holds: "?", "#"
// and "%" are not read as an SQLite URI's query, fragment or escapes, and
// a path starting with "//" names no host.
func TestOddPathsOpenTheFileNamed(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"q?x.db", "hash#x.db", "pct%41.db", "a?mode=memory&cache=shared.db", "sp ace.db"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, name)
			d, err := Open(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.BeginRun(ctx, Run{CorpusName: "c", CorpusVersion: "1"}); err != nil {
				t.Fatal(err)
			}
			d.Close()
			var files []string
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				files = append(files, e.Name())
			}
			if !slices.Contains(files, name) || slices.ContainsFunc(files, func(f string) bool { return f != name && f != name+"-wal" && f != name+"-shm" }) {
				t.Fatalf("opened %q, the directory holds %q", name, files)
			}
			ro, err := OpenReadOnly(ctx, p)
			if err != nil {
				t.Fatalf("read-only open of %q: %v", name, err)
			}
			defer ro.Close()
			var n int
			if err := ro.SQL().QueryRow(`SELECT COUNT(*) FROM runs`).Scan(&n); err != nil || n != 1 {
				t.Fatalf("runs in %q: %d, %v", name, n, err)
			}
		})
	}
	// An absolute path written with a leading "//".
	dir := t.TempDir()
	d, err := Open(ctx, "/"+filepath.Join(dir, "slashes.db"))
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := os.Stat(filepath.Join(dir, "slashes.db")); err != nil {
		t.Fatalf("//-path: %v", err)
	}
}

// A name whose part before "?" is another program's database leaves that
// database alone.
func TestQueryLikeNameLeavesOtherDatabaseAlone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	other := filepath.Join(dir, "crm.sqlite")
	o, err := Open(ctx, other) // any SQLite file; then make it not driftprobe's
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	before, _ := os.ReadFile(other)
	d, err := Open(ctx, other+"?x")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if after, _ := os.ReadFile(other); string(after) != string(before) {
		t.Fatal("opening crm.sqlite?x changed crm.sqlite")
	}
	if _, err := os.Stat(other + "?x"); err != nil {
		t.Fatalf("crm.sqlite?x was not created: %v", err)
	}
}

// A backup taken while a run holds the lease carries no lease: restored
// on another host or after a reboot, the first run there starts at once
// (and marks the copied running run aborted).
func TestBackupCarriesNoLease(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, filepath.Join(dir, "src.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	holder := Lease{Holder: "h1", Host: "other-host", PID: 4242, Command: "driftprobe run"}
	if err := d.AcquireLock(ctx, holder, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := d.BeginRun(ctx, Run{CorpusName: "c", CorpusVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	bk := filepath.Join(dir, "bk?1.db")
	if err := d.Backup(ctx, bk); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, bk)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.AcquireLock(ctx, Lease{Holder: "h2", Host: "restore-host", PID: 1, Command: "driftprobe run"}, time.Hour); err != nil {
		t.Fatalf("first run on the restored copy: %v", err)
	}
	// The source still holds its own lease.
	if err := d.AcquireLock(ctx, Lease{Holder: "h3", Command: "driftprobe run"}, time.Hour); err == nil {
		t.Fatal("the backup dropped the source's lease")
	}
}
