package main

import (
	"context"
	"log/slog"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

// afterRunHook delivers queued GitHub issue updates after each run.
// Delivery failures are recorded on outbox rows and never fail the run.
func afterRunHook(g *globals, log *slog.Logger) func(ctx context.Context, cfg *config.Config, st *storage.DB, res *app.RunResult) {
	return func(ctx context.Context, cfg *config.Config, st *storage.DB, res *app.RunResult) {
		if _, err := ghissue.AfterRun(ctx, st, cfg, log, nil); err != nil {
			log.Error("github outbox", "error", err)
		}
	}
}
