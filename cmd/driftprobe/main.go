// Command driftprobe is a continuous policy-drift regression monitor for
// LLM providers: it sends a versioned corpus of byte-identical probe
// prompts to every configured provider and model, records each verdict in
// SQLite, and flags verdict flips as evidence that the provider changed.
//
// Exit codes: 0 ok; 1 a gate failed (compare); 2 usage or configuration
// error; 3 runtime failure (database, lock held, I/O).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	// The container image (internal/image) has no /usr/share/zoneinfo
	// and no CA certificates: CRON_TZ= schedules and TLS to providers
	// must work from the binary alone. Fallback roots apply only where
	// the system has none.
	_ "time/tzdata"

	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	os.Exit(runWithSignals(os.Args[1:], os.Stdout, os.Stderr))
}

// runWithSignals runs the CLI with SIGINT/SIGTERM cancelling its context.
// SIGHUP is caught from the very start, before the command is known:
// serve reloads on it (a reload sent while the daemon starts never kills
// it), any other command stops on it as on SIGTERM.
func runWithSignals(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return runHUP(ctx, args, stdout, stderr, hup)
}
