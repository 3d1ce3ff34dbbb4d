package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/driftprobe/driftprobe/internal/app"
)

// Review: the serve lock goes beside the file a symbolic link names only
// when the link resolves. On the first start the database does not exist
// yet: a serve naming it through a link (link.db -> real.db) locks
// link.db-serve.lock, creates real.db through the link, and a second serve
// naming real.db locks real.db-serve.lock: two daemons on one database.
func TestRevServeLockThroughALinkToADatabaseNotYetCreated(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	cfg := writeCfg(t, dir, schedCfg)
	link, real := filepath.Join(dir, "link.db"), filepath.Join(dir, "real.db")
	if err := os.Symlink("real.db", link); err != nil {
		t.Fatal(err)
	}
	open := func(db string) (*app.Daemon, error) {
		return app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: cfg, DBOverride: db, Clock: clockwork.NewFakeClock()})
	}
	first, err := open(link)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Shutdown()
	if _, err := os.Stat(real); err != nil {
		t.Fatalf("the first daemon did not create the database through the link: %v", err)
	}
	second, err := open(real)
	if err == nil {
		second.Shutdown()
		t.Fatalf("a second daemon started on %s while the first serves it through %s", real, link)
	}
	if !errors.Is(err, app.ErrServing) {
		t.Fatalf("second daemon: %v, want ErrServing", err)
	}
}

// Review: the lock file is created before the database path is checked: a
// --db naming a directory (refused, exit 2) leaves DIR-serve.lock beside it.
func TestRevServeLockLeftBesideARefusedDatabasePath(t *testing.T) {
	dir := t.TempDir()
	cfg := writeCfg(t, dir, schedCfg)
	db := filepath.Join(dir, "notadb")
	if err := os.Mkdir(db, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: cfg, DBOverride: db, Clock: clockwork.NewFakeClock()})
	if err == nil {
		d.Shutdown()
		t.Fatal("a directory served as a database")
	}
	if _, serr := os.Stat(db + "-serve.lock"); serr == nil {
		t.Errorf("refused (%v), yet %s-serve.lock was created beside it", err, db)
	}
}
