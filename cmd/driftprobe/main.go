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
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
