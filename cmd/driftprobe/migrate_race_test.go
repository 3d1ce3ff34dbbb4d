package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/driftprobe/driftprobe/storage"
)

// connectHook is the test's function onConnect installed, if any.
var connectHook atomic.Pointer[func(dsn string)]

func init() {
	// Once for the test binary (the driver keeps every hook registered);
	// a no-op unless a test installed its function with onConnect.
	sqlite.RegisterConnectionHook(func(_ sqlite.ExecQuerierContext, dsn string) error {
		if f := connectHook.Load(); f != nil {
			(*f)(dsn)
		}
		return nil
	})
}

// onConnect has f called, until the test ends, on every database
// connection opened, once it is set up and before its first statement, on
// the goroutine opening it (which f may block).
func onConnect(t *testing.T, f func(dsn string)) {
	connectHook.Store(&f)
	t.Cleanup(func() { connectHook.Store(nil) })
}

// Two `db migrate` started together on one older database: both read its
// schema before either migrates, only one applies the migrations (the
// other waits for its write lock, or finds them applied), and each says
// what it did: the one that migrated "schema 7 → N", the other that it
// found the schema already at N, migrated by another process. Both exit
// 0.
//
// Each command reads the schema version on a read-only connection, then
// opens the database for writing; the store's connection of each is held
// at its opening until both have opened one, so both read schema 7 first.
func TestConcurrentDBMigrateSaysWhichMigrated(t *testing.T) {
	db := filepath.Join(t.TempDir(), "d.db")
	mustRun(t, 1, "--db", db)
	schema7(t, db)
	var (
		mu      sync.Mutex
		arrived int
	)
	both := make(chan struct{})
	onConnect(t, func(dsn string) {
		// A writer's connection (the store's or the run lease's) to db;
		// the store's comes first.
		if !strings.Contains(dsn, db+"?") || !strings.Contains(dsn, "_txlock=immediate") {
			return
		}
		mu.Lock()
		arrived++
		n := arrived
		if n == 2 {
			close(both)
		}
		mu.Unlock()
		if n > 2 {
			return
		}
		select {
		case <-both:
		case <-time.After(time.Minute):
			t.Error("the other db migrate never opened the database for writing")
		}
	})
	type result struct {
		stdout, stderr string
		code           int
	}
	var results [2]result
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			r.stdout, r.stderr, r.code = runIn(t, "db", "migrate", "--db", db)
		}()
	}
	wg.Wait()
	latest := storage.SchemaLatest()
	migrated := fmt.Sprintf("schema 7 → %d\n", latest)
	found := fmt.Sprintf("schema already at %d (migrated by another process", latest)
	var nMigrated, nFound int
	for _, r := range results {
		if r.code != 0 {
			t.Errorf("db migrate: exit %d: %s%s", r.code, r.stdout, r.stderr)
		}
		switch {
		case strings.Contains(r.stdout, migrated):
			nMigrated++
		case strings.Contains(r.stdout, found):
			nFound++
		}
	}
	if nMigrated != 1 || nFound != 1 {
		t.Fatalf("two db migrate at once said %q and %q; want one %q, the other %q", results[0].stdout, results[1].stdout, strings.TrimSpace(migrated), found)
	}
	if stdout, _, code := runIn(t, "db", "migrate", "--db", db); code != 0 || !strings.Contains(stdout, fmt.Sprintf("schema %d, already this driftprobe's", latest)) {
		t.Errorf("db migrate after both: exit %d: %s", code, stdout)
	}
}
