package main

import (
	"context"
	"log/slog"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

// afterRunHook delivers queued GitHub issue updates after each run of the
// command caller ("driftprobe serve", "driftprobe run"), named on the rows
// when its own environment lacks the GitHub credential. Delivery failures
// are recorded on outbox rows and never fail the run.
func afterRunHook(g *globals, log *slog.Logger, caller string) func(ctx context.Context, cfg *config.Config, st *storage.DB, res *app.RunResult) {
	return func(ctx context.Context, cfg *config.Config, st *storage.DB, res *app.RunResult) {
		if ctx.Err() != nil {
			// Shutting down (serve's SIGTERM mid-run): the rows stay
			// queued for the next run or process; no ERROR for a clean stop.
			log.Info("github outbox left for the next run: shutting down")
			return
		}
		if _, err := ghissue.AfterRunAs(ctx, st, cfg, log, nil, caller); err != nil {
			if ctx.Err() != nil {
				log.Info("github outbox interrupted: shutting down", "error", err)
				return
			}
			log.Error("github outbox", "error", err)
		}
	}
}
