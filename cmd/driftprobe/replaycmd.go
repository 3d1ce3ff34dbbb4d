package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/termtext"
)

func newReplayCmd(g *globals) *cobra.Command {
	var asJSON bool
	var target string
	var run int64
	c := &cobra.Command{
		Use:   "replay [--run RUN] [--target T]",
		Short: "Re-read a run's stored answers with the current classifiers, offline",
		Long: `Re-classify every stored answer of a run (default: the latest finished) with the
configured targets' current classifiers, sending nothing, and list each
observation whose recorded verdict (class and categories) its stored bytes no
longer read as, or whose stored body no longer has its recorded SHA-256. It
shows that a verdict is reproducible from its evidence, and, after an upgrade
of driftprobe, which recorded verdicts the new classifiers would read
differently. A damaged stored body is listed as unreadable and the replay goes
on. Exit 1 when any observation differs, 2 when nothing could be replayed
because the run's targets are not in the config.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkRunID(cmd, "run", run, "for the latest finished run"); err != nil {
				return err
			}
			ctx := cmd.Context()
			sess, err := app.OpenRead(ctx, g.config, g.db, app.NoCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			if run == 0 {
				// The latest finished run: one still marked running (its
				// process may have died) is replayed only when named.
				if run, err = sess.Store.LatestFinishedRunID(ctx); err != nil {
					return err
				}
				if run == 0 {
					return app.Usage(fmt.Errorf("replay: the database has no finished runs"))
				}
			}
			// Replay classifies stored answers and sends nothing: no keys
			// needed, so an incident-review machine holds no secrets.
			targets, closeTargets, err := app.BuildRenderTargets(sess.Config)
			if err != nil {
				return err
			}
			defer closeTargets()
			rep, err := app.Replay(ctx, sess.Store, run, targets, target)
			if err != nil {
				return err
			}
			if rep.Replayed == 0 && len(rep.Unconfigured) > 0 {
				// Verifying nothing must not read as verified.
				return app.Usage(fmt.Errorf("replay: nothing replayed: run %d's target(s) %s are not in the config (or have another provider there); give the config they ran with",
					run, strings.Join(rep.Unconfigured, ", ")))
			}
			if asJSON {
				if err := writeJSON(g.stdout, rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(g.stdout, rep)
				if len(rep.Diffs) > 0 {
					tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "OBSERVATION\tTARGET\tPROBE\tSAMPLE\tRECORDED\tREPLAYED\tREQUEST INTACT\tBODY INTACT")
					for _, d := range rep.Diffs {
						replayed := verdictText(d.Replayed)
						if d.Unreadable != "" {
							replayed = "unreadable: " + termtext.SafeLong(d.Unreadable)
						}
						reqOK, bodyOK := yn(d.RequestIntact), yn(d.BodyIntact)
						if len(d.Damaged) > 0 {
							// Nothing of a damaged row is checked: say
							// so rather than "no".
							reqOK, bodyOK = "-", "-"
						}
						fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.ObservationID, termtext.Clean(d.Target), termtext.Clean(d.ProbeID), d.Sample, verdictText(d.Stored), replayed, reqOK, bodyOK)
					}
					tw.Flush()
				}
			}
			if len(rep.Diffs) > 0 {
				return &gateError{fmt.Sprintf("replay: %d of %d stored answers no longer read as recorded", len(rep.Diffs), rep.Replayed)}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON output")
	c.Flags().StringVar(&target, "target", "", "only this target")
	c.Flags().Int64Var(&run, "run", 0, "run id (default: the latest finished run)")
	return c
}

func verdictText(v app.Verdict) string {
	if len(v.Categories) == 0 {
		return v.Verdict
	}
	return v.Verdict + "[" + strings.Join(v.Categories, ",") + "]"
}
