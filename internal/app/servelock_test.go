package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/driftprobe/driftprobe/internal/app"
)

// A second daemon on a database another one serves is refused before it
// opens the database, naming the first (pid, host, /metrics address); once
// the first has shut down, a new one starts. A daemon on another database
// is not held back.
func TestSecondDaemonOnTheDatabaseRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	cfg := writeCfg(t, dir, schedCfg)
	open := func(db, listen string) (*app.Daemon, error) {
		return app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: cfg, DBOverride: db, Clock: clockwork.NewFakeClock(), Listen: listen})
	}
	db := filepath.Join(dir, "d.db")
	first, err := open(db, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	second, err := open(db, "127.0.0.1:0")
	if !errors.Is(err, app.ErrServing) || second != nil {
		t.Fatalf("second daemon: %v; want ErrServing", err)
	}
	host, _ := os.Hostname()
	for _, want := range []string{db, fmt.Sprintf("pid %d on host %s", os.Getpid(), host), "serving /metrics on " + first.Listener().Addr().String(), "one daemon per database"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	other, err := open(filepath.Join(dir, "other.db"), "")
	if err != nil {
		t.Fatalf("a daemon on another database: %v", err)
	}
	other.Shutdown()
	if err := first.Shutdown(); err != nil {
		t.Fatal(err)
	}
	third, err := open(db, "")
	if err != nil {
		t.Fatalf("a daemon after the first shut down: %v", err)
	}
	third.Shutdown()
}

// Whatever another process wrote into the lock file is shown without its
// control characters (it could be anyone's text).
func TestServeLockHolderTextSanitized(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	cfg := writeCfg(t, dir, schedCfg)
	db := filepath.Join(dir, "d.db")
	first, err := app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: cfg, DBOverride: db, Clock: clockwork.NewFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Shutdown()
	if err := os.WriteFile(db+"-serve.lock", []byte("pid 1\x1b[2J\x07 on\nhost x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: cfg, DBOverride: db, Clock: clockwork.NewFakeClock()})
	if !errors.Is(err, app.ErrServing) || strings.ContainsAny(err.Error(), "\x1b\x07\n") || !strings.Contains(err.Error(), "pid 1[2J on host x") {
		t.Fatalf("error %q", err)
	}
}

// A daemon naming the database through a symbolic link takes the same lock
// as one naming the file itself.
func TestSecondDaemonThroughASymlinkRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	cfg := writeCfg(t, dir, schedCfg)
	db := filepath.Join(dir, "d.db")
	first, err := app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: cfg, DBOverride: db, Clock: clockwork.NewFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Shutdown()
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	if _, err := app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: cfg, DBOverride: link, Clock: clockwork.NewFakeClock()}); !errors.Is(err, app.ErrServing) {
		t.Fatalf("a daemon through a link: %v; want ErrServing", err)
	}
}

// A lock file this user cannot open (left by another user) does not keep
// the daemon from starting: it warns and runs unguarded, as before the
// lock existed.
func TestServeLockOfAnotherUserWarns(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("no flock, or root (who may open any file)")
	}
	dir := t.TempDir()
	cfg := writeCfg(t, dir, schedCfg)
	db := filepath.Join(dir, "d.db")
	if err := os.WriteFile(db+"-serve.lock", nil, 0o000); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	d, err := app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: cfg, DBOverride: db, Clock: clockwork.NewFakeClock(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("a lock file of another user: %v", err)
	}
	d.Shutdown()
	if !strings.Contains(logs.String(), "running without it") {
		t.Errorf("no warning: %s", logs.String())
	}
}
