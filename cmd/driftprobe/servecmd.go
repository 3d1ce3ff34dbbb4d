package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/internal/app"
)

func newServeCmd(g *globals) *cobra.Command {
	listen := "127.0.0.1:9464"
	var noInitial bool
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run on the config's schedule and serve /metrics, /healthz and /readyz",
		Long: `Run the corpus on the config's schedule ("@every 1h" with optional jitter, or a
cron expression, optionally prefixed with CRON_TZ=Zone), one run at a time, and
serve Prometheus metrics on /metrics, liveness on /healthz and readiness on
/readyz. It runs once at start unless --no-initial-run.

SIGHUP reloads the configuration: a bad new config is rejected, the old one keeps
running, and driftprobe_config_last_reload_successful says so. SIGTERM/SIGINT
stop cleanly: a run in progress is cancelled and recorded as aborted.

A run lease in the database keeps a CronJob, another daemon or a manual run on
the same database from running at the same time; a tick that finds the lease
held is skipped (driftprobe_run_lock_skips_total). A run that loses its lease
mid-run (taken over while serve was paused) is a failed run
(driftprobe_run_failures_total), and so is a tick that finds the database file
at the configured path removed or replaced: it runs nothing until serve is
restarted, and /readyz fails (also when the file cannot be read); /healthz
does not (see the RUNBOOK's DriftprobeRunFailed). A run in which no target
measured anything (every answer transient, a client error or an unavailable
filter) is a failed run too, and so is one whose detection failed for a target
whose detection state does not decode (the other targets are detected, their
events delivered; the log names the target and the row to remove). A metrics collection that fails answers /metrics
with HTTP 500 (Prometheus records up == 0) and is logged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := app.Logger(g.logLevel)
			// From the start: a SIGHUP's default action ends the process, and
			// a reload sent while the daemon opens its database (systemctl
			// reload right after start) must wait for it instead.
			// (main catches it from process start: g.hup.)
			hup := g.hup
			if hup == nil {
				c := make(chan os.Signal, 1)
				signal.Notify(c, syscall.SIGHUP)
				defer signal.Stop(c)
				hup = c
			}
			d, err := app.NewDaemon(ctx, app.DaemonOptions{ConfigPath: g.config, DBOverride: g.db, Logger: log, RunAtStart: !noInitial, Runtime: true, Listen: listen,
				AfterRun: afterRunHook(g, log, "driftprobe serve")})
			if err != nil {
				return err
			}
			for _, w := range d.Config().Warnings() {
				log.Warn(w)
			}
			ln := d.Listener() // opened before the database: an address in use never migrates it
			// Bounded: a client that sends a request and goes quiet, or
			// keeps an idle connection, does not hold a descriptor and a
			// goroutine forever (scrapers reconnect in well under the
			// idle timeout; /metrics answers within its own 10 s).
			srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
				WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("http server", "err", err)
				}
			}()
			if err := d.Start(); err != nil {
				srv.Close()
				d.Shutdown()
				return err
			}
			fmt.Fprintf(g.stderr, "driftprobe serve: schedule %q, metrics on http://%s/metrics\n", d.Config().Schedule, ln.Addr())
			if err := app.NotifyReady(); err != nil {
				log.Warn("systemd readiness", "err", err)
			}
			for {
				select {
				case <-hup:
					// Reload logs a rejection itself (once).
					_ = d.Reload()
				case <-ctx.Done():
					sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					_ = srv.Shutdown(sctx)
					return d.Shutdown()
				}
			}
		},
	}
	c.Flags().StringVar(&listen, "listen", listen, "address for /metrics, /healthz and /readyz")
	c.Flags().BoolVar(&noInitial, "no-initial-run", false, "wait for the first scheduled time instead of running at start")
	return c
}
