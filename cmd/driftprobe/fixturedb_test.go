package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// fixtureRoot holds the databases cachedDB builds, one directory per key;
// TestMain removes it.
var fixtureRoot string

// fixtureDB is a database built once per test process.
type fixtureDB struct {
	once sync.Once
	path string // "" until it is built
}

var fixtureDBs sync.Map // key → *fixtureDB

// cachedDB copies to dst a database that build makes at the path it is
// given, building it only once per test process for each key (several
// tests read the same runs; building them is what costs, most of all
// under -race). key must name everything build depends on. build runs
// under the first test that asks; if it fails there, later tests fail
// saying so. The database must be closed when build returns (no -wal
// file left): its one file is the whole database.
func cachedDB(t *testing.T, key, dst string, build func(db string)) {
	t.Helper()
	v, _ := fixtureDBs.LoadOrStore(key, &fixtureDB{})
	f := v.(*fixtureDB)
	f.once.Do(func() {
		if fixtureRoot == "" {
			t.Fatal("cachedDB: no fixture directory (TestMain makes it)")
		}
		dir, err := os.MkdirTemp(fixtureRoot, "db-")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "x.db")
		build(p)
		if _, err := os.Stat(p + "-wal"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("cachedDB %q: the database was left open (%s-wal: %v)", key, p, err)
		}
		f.path = p
	})
	if f.path == "" {
		t.Fatalf("cachedDB %q: building it failed in an earlier test", key)
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// withFixtureRoot makes fixtureRoot around run and removes it after.
func withFixtureRoot(run func() int) int {
	dir, err := os.MkdirTemp("", "driftprobe-fixtures-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fixtureRoot = dir
	defer os.RemoveAll(dir)
	return run()
}
