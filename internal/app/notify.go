package app

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// NotifyReady tells systemd (a Type=notify unit: $NOTIFY_SOCKET set) that
// the daemon is up: its signal handlers are in place and it listens.
// systemd holds reload jobs (ExecReload's SIGHUP) until then, so a reload
// sent as the daemon starts never reaches it before it can take one.
// Without $NOTIFY_SOCKET it does nothing. The sd_notify protocol: one
// datagram "READY=1" to the socket ('@' names an abstract socket).
func NotifyReady() error {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return nil
	}
	if strings.HasPrefix(addr, "@") {
		addr = "\x00" + addr[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify systemd: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("READY=1")); err != nil {
		return fmt.Errorf("notify systemd: %w", err)
	}
	return nil
}
