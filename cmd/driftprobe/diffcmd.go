package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/termtext"
	"github.com/driftprobe/driftprobe/storage"
)

func newDiffCmd(g *globals) *cobra.Command {
	var asJSON bool
	var target string
	var from, to int64
	c := &cobra.Command{
		Use:   "diff --target T [--from RUN] [--to RUN]",
		Short: "Show every probe whose verdict differs between two runs of a target",
		Long: `Show every probe whose verdict differs between two runs of one target, with
both request fingerprints (same_bytes says whether the request bytes were
identical, i.e. whether the difference is the provider's). --to defaults to the
latest run of the target, --from to the one before; runs aborted (or
killed) are chosen only when named. --from names the earlier run: a --from
after --to is a usage error (exit 2). The header says how many probes had a
verdict in both runs; probes only one run observed are counted apart. The
status line gives each run's status and this target's own part of it
(complete, degraded, aborted, or unrecorded for a run killed before recording
it): a run is partial when any of its targets was not complete.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target == "" {
				return app.Usage(fmt.Errorf("diff: --target is required"))
			}
			if err := checkRunID(cmd, "from", from, "for the run before --to"); err != nil {
				return err
			}
			if err := checkRunID(cmd, "to", to, "for the latest run of the target"); err != nil {
				return err
			}
			ctx := cmd.Context()
			sess, err := app.OpenRead(ctx, g.config, g.db, app.NoCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			st := sess.Store
			if _, err := st.TargetByName(ctx, target); errors.Is(err, storage.ErrNotFound) {
				return neverRan("diff", sess.Config, target)
			} else if err != nil {
				return fmt.Errorf("diff: %w", err)
			}
			d, err := diff.DiffRuns(ctx, st, target, from, to)
			if err != nil {
				if t := sess.Config.Target(target); t != nil && t.Disabled {
					err = fmt.Errorf("%w (target %s is disabled in the config: it does not run until enabled)", err, target)
				}
				if storage.IsDamagedRow(err) || storage.IsCorrupt(err) {
					// The database, not the arguments: a runtime error
					// (exit 3); db check names the damage.
					return fmt.Errorf("diff: %w", err)
				}
				return app.Usage(fmt.Errorf("diff: %w", err))
			}
			if asJSON {
				return writeJSON(g.stdout, d)
			}
			WriteRunDiff(g, d)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON output")
	c.Flags().StringVar(&target, "target", "", "target name (required)")
	c.Flags().Int64Var(&from, "from", 0, "earlier run id (default: the run before --to)")
	c.Flags().Int64Var(&to, "to", 0, "later run id (default: the latest run)")
	return c
}

// neverRan is the usage error for a target this database has no record
// of: not configured at all, disabled, or configured but never run.
func neverRan(cmd string, cfg *config.Config, name string) error {
	t := cfg.Target(name)
	switch {
	case t == nil:
		return app.Usage(fmt.Errorf("%s: target %q is not in the config (nor in the database)", cmd, name))
	case t.Disabled:
		return app.Usage(fmt.Errorf("%s: target %q is disabled in the config and has never run in this database, so it has no runs to %s: enable it (remove disabled: true) and let it run (%s needs two runs of it)", cmd, name, cmd, cmd))
	default:
		return app.Usage(fmt.Errorf("%s: target %q is in the config but has never run in this database (added since the last run, or another --db?): it has no runs to %s yet; driftprobe run probes it (%s needs two runs of it)", cmd, name, cmd, cmd))
	}
}

// WriteRunDiff prints a run diff for humans.
func WriteRunDiff(g *globals, d *diff.RunDiff) {
	fmt.Fprintf(g.stdout, "%s: run %d → run %d: %s differ (of %s compared)\n", d.Target, d.FromRun, d.ToRun,
		termtext.Count(len(d.Probes), "probe", "probes"), termtext.Count(d.Compared, "probe", "probes"))
	// A run is partial when any target failed: say what this target's own
	// part of each run was.
	fmt.Fprintf(g.stdout, "status: run %d %s (%s: %s) → run %d %s (%s: %s)\n", d.FromRun, d.FromStatus, d.Target, d.FromTargetStatus,
		d.ToRun, d.ToStatus, d.Target, d.ToTargetStatus)
	for _, r := range []struct {
		id     int64
		status string
	}{{d.FromRun, d.FromStatus}, {d.ToRun, d.ToStatus}} {
		if r.status != storage.RunComplete && r.status != storage.RunPartial {
			fmt.Fprintf(g.stdout, "run %d is %s: it did not probe the whole corpus\n", r.id, r.status)
		}
	}
	if d.OriginMoved {
		fmt.Fprintf(g.stdout, "ENDPOINT MOVED: run %d answered at %s, run %d at %s: the verdicts moved with the endpoint; no evidence of a provider change\n",
			d.FromRun, termtext.Safe(d.FromOrigin), d.ToRun, termtext.Safe(d.ToOrigin))
	}
	if d.Missing > 0 {
		fmt.Fprintf(g.stdout, "%s not compared: observed in only one of the runs (a run aborted or killed first, or the corpus changed)\n", termtext.Count(d.Missing, "probe", "probes"))
	}
	if d.NotCompared > 0 {
		fmt.Fprintf(g.stdout, "%d probe(s) not compared: no verdict in one of the runs (transient error, client error, unavailable filter, account-level enforcement)\n", d.NotCompared)
	}
	if len(d.Probes) == 0 {
		return
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tREQUEST_SHA256\tSAME_BYTES\tFROM\tTO\tDIRECTION\t")
	for _, p := range d.Probes {
		fmt.Fprintf(tw, "%s\t%.16s\t%v\t%s\t%s\t%s\t\n", termtext.Clean(p.ProbeID), p.ToSHA256, p.SameBytes, p.From.String(), p.To.String(), p.Direction)
	}
	tw.Flush()
}
