package app_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/driftprobe/driftprobe/internal/app"
)

// Review: NewDaemon opens the /metrics listener (DaemonOptions.Listen) but
// Shutdown never closes it ("closing it is the server's"): a daemon whose
// caller did not get as far as serving on it (or that, as the package's
// own tests do, never serves) keeps the port bound after Shutdown.
func TestRevShutdownClosesTheListenerItOpened(t *testing.T) {
	dir := t.TempDir()
	d, err := app.NewDaemon(context.Background(), app.DaemonOptions{ConfigPath: writeCfg(t, dir, schedCfg),
		DBOverride: filepath.Join(dir, "d.db"), Clock: clockwork.NewFakeClock(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := d.Listener().Addr().String()
	if err := d.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("after Shutdown, %s still accepts connections: the listener NewDaemon opened is still bound", addr)
	}
}
