package storage

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"modernc.org/sqlite"
)

// oldSchema creates, at p, a database an older driftprobe left: WAL mode,
// the migrations up to version applied.
func oldSchema(t *testing.T, p string, version int) {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", fileURI(p))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	if _, err := raw.Exec("PRAGMA journal_mode = WAL"); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:version] {
		if _, err := raw.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
			t.Fatal(err)
		}
	}
}

// Migrated says what Open's migrations did: the versions they took the
// database from and to, or none applied.
func TestMigratedReportsTheVersions(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "old.db")
	oldSchema(t, p, 7)
	for _, want := range [][2]int{{7, SchemaLatest()}, {SchemaLatest(), SchemaLatest()}} {
		d, err := Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if from, to := d.Migrated(); from != want[0] || to != want[1] {
			t.Errorf("Migrated %d → %d, want %d → %d", from, to, want[0], want[1])
		}
		d.Close()
	}
}

// Two processes opening one older database at once (two `db migrate`, a
// run and serve after an upgrade): the one whose migrations wait for the
// other's write lock read the older version first, then finds the
// migrations applied under the lock, applies none and says so
// (Migrated); the other says what it applied.
//
// A opens first; its migrations, on taking the write lock and applying,
// wait at their commit until B has read the schema version (still the
// older one: A's transaction is not committed) and begins its own
// transaction, which then waits for A's write lock.
func TestMigratedSaysWhoMigratedWhenTwoOpenAtOnce(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "old.db")
	oldSchema(t, p, 7)
	aConnected := make(chan struct{}) // A's store connection is open
	committing := make(chan struct{}) // A's migrations are applied, holding the write lock
	bBegins := make(chan struct{})    // B read the schema version and begins its transaction
	wait := func(ch chan struct{}, what string) {
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Errorf("%s never came", what)
		}
	}
	var (
		mu      sync.Mutex
		writers int
	)
	onConnect(t, func(c sqlite.ExecQuerierContext, dsn string) error {
		if !writerConn(dsn, p) {
			return nil
		}
		mu.Lock()
		writers++
		n := writers
		mu.Unlock()
		switch n {
		case 1: // A's store connection
			var once sync.Once
			c.(sqlite.HookRegisterer).RegisterCommitHook(func() int32 {
				once.Do(func() {
					close(committing)
					wait(bBegins, "B's transaction")
				})
				return 0
			})
			close(aConnected)
		case 2: // B's store connection, opened while A's migrations commit
			var once sync.Once
			if err := c.(sqlite.AuthorizerRegisterer).RegisterAuthorizer(func(action sqlite.AuthorizerActionCode, arg1, _, _, _ string) sqlite.AuthorizerReturnCode {
				if action == sqlite.AuthTransaction && strings.EqualFold(arg1, "BEGIN") {
					once.Do(func() { close(bBegins) })
				}
				return sqlite.AuthorizerOK
			}); err != nil {
				return err
			}
			wait(committing, "A's migrations")
		}
		return nil
	})
	type opened struct {
		d   *DB
		err error
	}
	open := func(out chan<- opened) {
		d, err := Open(ctx, p)
		out <- opened{d, err}
	}
	aDone, bDone := make(chan opened, 1), make(chan opened, 1)
	go open(aDone)
	wait(aConnected, "A's store connection")
	go open(bDone)
	a, b := <-aDone, <-bDone
	for _, o := range []opened{a, b} {
		if o.err != nil {
			t.Fatal(o.err)
		}
		defer o.d.Close()
	}
	if from, to := a.d.Migrated(); from != 7 || to != SchemaLatest() {
		t.Errorf("A, which migrated: Migrated %d → %d, want 7 → %d", from, to, SchemaLatest())
	}
	if from, to := b.d.Migrated(); from != SchemaLatest() || to != SchemaLatest() {
		t.Errorf("B, which found the migrations applied: Migrated %d → %d, want none applied (%d → %d)", from, to, SchemaLatest(), SchemaLatest())
	}
}
