package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes/wire"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

func newRunCmd(g *globals) *cobra.Command {
	var asJSON, noProgress bool
	var textfile, pushgateway, pushInstance string
	c := &cobra.Command{
		Use:   "run",
		Short: "Run the corpus once against every target and record the verdicts",
		Long: `Run every probe of the corpus once against every enabled target, store each
observation in the database, and print a summary (or, with --json, one JSON
object: run_id, corpus_version, targets with observations, verdict counts and
requests_sha256, and events). Exit 0 when the run completed, even if events
were found. SIGINT/SIGTERM stop the run cleanly, mark it aborted and exit 3.
A run in which no target answered a single probe with a verdict (every
answer transient, a client error or an unavailable filter: a revoked key, an
unreachable provider) is stored and printed, and exits 3; so is a run whose
detection failed for a target whose detection state does not decode (the
other targets are detected; db check names the row to remove).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Checked before anything is sent: a bad URL found after the run
			// would fail a run that did its work.
			if err := checkPushgateway(pushgateway); err != nil {
				return err
			}
			if pushInstance != "" && pushgateway == "" {
				return app.Usage(fmt.Errorf("run: --pushgateway-instance needs --pushgateway"))
			}
			ctx := cmd.Context()
			sess, err := app.Open(ctx, g.config, g.db, true, app.CheckCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			cfg, cp, st := sess.Config, sess.Corpus, sess.Store
			targets, closeTargets, err := app.BuildTargets(cfg)
			if err != nil {
				return err
			}
			defer closeTargets()
			log := app.Logger(g.logLevel)
			for _, w := range cfg.Warnings() {
				log.Warn(w)
			}
			if pushgateway != "" && pushInstance == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
				// A Job's pod has a new name every run: each push would
				// leave a group of its own on the Pushgateway.
				log.Warn("pushing metrics grouped under this host's name, in Kubernetes the Job pod's, new every run: each run leaves a group on the Pushgateway; give the CronJob a stable --pushgateway-instance", "instance", app.DefaultPushInstance())
			}
			opts := app.RunOptions{Logger: log}
			reg, m := app.NewRegistry(st, false)
			app.Instrument(m, &opts)
			app.ConfigLoaded(m, cfg, time.Now())
			if !noProgress && !asJSON && os.Getenv("CI") == "" {
				if f, ok := g.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
					bar := progressbar.NewOptions(len(cp.Probes)*len(targets), progressbar.OptionSetWriter(f),
						progressbar.OptionSetDescription("probing"), progressbar.OptionClearOnFinish(), progressbar.OptionShowCount(),
						progressbar.OptionThrottle(100_000_000))
					opts.Progress = func(done, total int) { _ = bar.Set(done) }
					defer bar.Finish()
				}
			}
			res, err := app.RunOnce(ctx, cfg, cp, st, targets, opts)
			var rerr *runner.RunError
			if err != nil && asJSON && errors.As(err, &rerr) {
				// A run that failed after it was recorded (a full disk, a
				// busy database, a failed detection): scripts still get
				// its id and what the database holds for it.
				return writeRunFailure(g.stdout, rerr.RunID, rerr.Status, err)
			}
			if err != nil {
				return err
			}
			app.ObserveRun(m, res)
			afterRunHook(g, log, "driftprobe run")(ctx, cfg, st, res)
			if res.Detection != nil {
				// Re-read events: delivery may have linked issues.
				if ids := res.Detection.EventIDs(); len(ids) > 0 {
					if evs, err := diff.ListEvents(ctx, st, diff.Filter{IDs: ids}); err == nil {
						res.Events = evs
					}
				}
			}
			if asJSON {
				if err := writeJSON(g.stdout, res.JSON()); err != nil {
					return err
				}
			} else {
				app.WriteSummary(g.stdout, res)
				if res.Detection != nil {
					app.WriteEvents(g.stdout, res.Events, res.Detection.Changes)
				}
			}
			// After the output: an export that fails must not hide the run's
			// result, nor fail a run that did its work (a CronJob would run
			// and pay for the whole corpus again). It is logged; the metrics'
			// staleness alert notices exports that keep failing.
			// Not the command's context: an interrupted run (SIGTERM from a
			// CronJob's deadline) still exports what it did (PushTimeout
			// bounds the push).
			if err := app.ExportMetricsAs(context.WithoutCancel(ctx), reg, textfile, pushgateway, pushInstance); err != nil {
				log.Error("metrics not exported; the run is stored and its exit status is unchanged", "err", err)
			}
			if res.Summary.Status == storage.RunAborted {
				// Interrupted: what was stored is kept, but the run did not complete.
				return fmt.Errorf("run %d aborted (interrupted); observations so far are stored, nothing was confirmed", res.Summary.RunID)
			}
			// A run that measured nothing, or whose detection failed for a
			// target (a damaged detection state: the other targets were
			// detected, their events recorded and delivered above), is
			// stored and printed, and exits 3.
			return errors.Join(app.MeasuredNothing(res.Summary), app.DetectionFailed(res))
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (the run contract) on stdout")
	c.Flags().BoolVar(&noProgress, "no-progress", false, "never draw a progress bar")
	c.Flags().StringVar(&textfile, "metrics-textfile", "", "write metrics to this file for the node_exporter textfile collector (atomically)")
	c.Flags().StringVar(&pushgateway, "pushgateway", "", "push metrics to this Prometheus Pushgateway URL, without a query string or fragment (job \"driftprobe\", instance: --pushgateway-instance)")
	c.Flags().StringVar(&pushInstance, "pushgateway-instance", "", "the instance label the push is grouped under, one per prober sharing the Pushgateway (default: the host name; set a stable name for a Kubernetes CronJob, whose pod name changes every run)")
	return c
}

// checkPushgateway refuses a --pushgateway that is not an http(s) URL with
// a host (and a port, if any, from 1 to 65535), or that has a query string
// or fragment, which the push cannot
// keep (app.ErrPushURLQuery) ("" is no push).
func checkPushgateway(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		// Not repeated: it may hold a password (user:password@).
		return app.Usage(fmt.Errorf("run: --pushgateway: not a URL; want an http(s) URL such as http://pushgateway:9091"))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		if strings.ContainsAny(s, "@?") {
			// Not repeated: it may hold a password or a token.
			return app.Usage(fmt.Errorf("run: --pushgateway: want an http(s) URL such as http://pushgateway:9091"))
		}
		return app.Usage(fmt.Errorf("run: --pushgateway %q: want an http(s) URL such as http://pushgateway:9091", s))
	}
	if !wire.PortInRange(u.Port()) {
		// A port out of range would only fail the push after the run
		// (logged, exit 0): refuse it before anything is sent.
		return app.Usage(fmt.Errorf("run: --pushgateway: port %s: want 1 to 65535", u.Port()))
	}
	if err := app.CheckPushURL(s); err != nil {
		// Not repeated: the query may hold a token.
		return app.Usage(fmt.Errorf("run: --pushgateway: %w", err))
	}
	return nil
}
