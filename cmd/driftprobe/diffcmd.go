package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

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
killed) are chosen only when named. The header says how many probes had a
verdict in both runs; probes only one run observed are counted apart.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target == "" {
				return app.Usage(fmt.Errorf("diff: --target is required"))
			}
			ctx := cmd.Context()
			sess, err := app.OpenRead(ctx, g.config, g.db, app.NoCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			st := sess.Store
			d, err := diff.DiffRuns(ctx, st, target, from, to)
			if err != nil {
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

// WriteRunDiff prints a run diff for humans.
func WriteRunDiff(g *globals, d *diff.RunDiff) {
	fmt.Fprintf(g.stdout, "%s: run %d → run %d: %s differ (of %s compared)\n", d.Target, d.FromRun, d.ToRun,
		termtext.Count(len(d.Probes), "probe", "probes"), termtext.Count(d.Compared, "probe", "probes"))
	for _, r := range []struct {
		id     int64
		status string
	}{{d.FromRun, d.FromStatus}, {d.ToRun, d.ToStatus}} {
		if r.status != storage.RunComplete && r.status != storage.RunPartial {
			fmt.Fprintf(g.stdout, "run %d is %s: it did not probe the whole corpus\n", r.id, r.status)
		}
	}
	if d.Missing > 0 {
		fmt.Fprintf(g.stdout, "%s not compared: observed in only one of the runs (a run aborted or killed first, or the corpus changed)\n", termtext.Count(d.Missing, "probe", "probes"))
	}
	if d.NotCompared > 0 {
		fmt.Fprintf(g.stdout, "%d probe(s) not compared: no verdict in one of the runs (transient error, client error, unavailable filter)\n", d.NotCompared)
	}
	if len(d.Probes) == 0 {
		return
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tREQUEST_SHA256\tSAME_BYTES\tFROM\tTO\tDIRECTION\t")
	for _, p := range d.Probes {
		fmt.Fprintf(tw, "%s\t%.16s\t%v\t%s\t%s\t%s\t\n", p.ProbeID, p.ToSHA256, p.SameBytes, p.From.String(), p.To.String(), p.Direction)
	}
	tw.Flush()
}
