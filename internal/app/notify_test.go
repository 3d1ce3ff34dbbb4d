package app_test

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/driftprobe/driftprobe/internal/app"
)

// NotifyReady sends "READY=1" to $NOTIFY_SOCKET (systemd's Type=notify),
// and does nothing without it.
func TestNotifyReady(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if err := app.NotifyReady(); err != nil {
		t.Fatalf("without NOTIFY_SOCKET: %v", err)
	}
	sock := filepath.Join(t.TempDir(), "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Skipf("no unix datagram sockets here: %v", err)
	}
	defer ln.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	if err := app.NotifyReady(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := ln.Read(buf)
	if err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("read %q %v, want READY=1", buf[:n], err)
	}
}
