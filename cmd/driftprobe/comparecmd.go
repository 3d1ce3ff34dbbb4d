package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/metrics"
)

func newCompareCmd(g *globals) *cobra.Command {
	var from, to, format string
	var maxNew, maxLost int
	var runNow, asJSON bool
	c := &cobra.Command{
		Use:   "compare --from CURRENT --to CANDIDATE",
		Short: "Model-upgrade check: what the candidate target blocks that the current one does not",
		Long: `Compare the latest complete observations of two targets on the same corpus
version (or, with --run, probe both now): per category, block rates with Wilson
95% intervals; probes allowed by one and blocked by the other, split by role
(benign or borderline probes newly blocked by the candidate are over-blocking;
positive controls newly allowed are under-blocking).

Exit 1 when the candidate newly blocks more than --max-new-blocks benign or
borderline probes (a CI gate), or, with --max-lost-blocks N, newly allows more
than N positive controls (under-blocking; off by default), else 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return app.Usage(errors.New("compare: --from and --to are required"))
			}
			if from == to {
				return app.Usage(fmt.Errorf("compare: --from and --to are the same target %q: compare the current target with a different candidate", from))
			}
			if maxLost < -1 {
				return app.Usage(fmt.Errorf("compare: --max-lost-blocks %d: want a count, or -1 (off)", maxLost))
			}
			if maxNew < 0 {
				return app.Usage(fmt.Errorf("compare: --max-new-blocks %d: must be at least 0", maxNew))
			}
			switch format {
			case "table", "markdown", "json":
			default:
				return app.Usage(fmt.Errorf("compare: --format %q: want table, markdown or json", format))
			}
			if asJSON {
				if cmd.Flags().Changed("format") && format != "json" {
					return app.Usage(fmt.Errorf("compare: --json and --format %s: choose one", format))
				}
				format = "json"
			}
			ctx := cmd.Context()
			sess, err := openSession(ctx, g, runNow, runNow, app.CheckCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			cfg, cp, st := sess.Config, sess.Corpus, sess.Store
			for _, name := range []string{from, to} {
				if err := knownTarget(ctx, "compare", cfg, st, name); err != nil {
					return err
				}
			}
			if runNow {
				var sel []*config.Target
				for _, name := range []string{from, to} {
					t := cfg.Target(name)
					if t == nil {
						return app.Usage(fmt.Errorf("compare: target %q is not in the config", name))
					}
					sel = append(sel, t)
				}
				sub := *cfg
				sub.Targets = sel
				targets, closeT, err := app.BuildTargets(&sub)
				if err != nil {
					return err
				}
				defer closeT()
				res, err := app.RunOnce(ctx, &sub, cp, st, targets, app.RunOptions{Logger: app.Logger(g.logLevel), Note: metrics.SubsetRunNote, SubsetRun: true, FullConfig: cfg})
				if err != nil {
					return err
				}
				if format == "table" {
					app.WriteSummary(g.stderr, res)
				}
			}
			cmp, err := diff.Compare(ctx, st, cp, from, to, maxNew, maxLost)
			if err != nil {
				return app.Usage(fmt.Errorf("compare: %w", err))
			}
			switch format {
			case "json":
				err = writeJSON(g.stdout, cmp)
			case "markdown":
				WriteComparisonMarkdown(g.stdout, cmp)
			default:
				WriteComparison(g.stdout, cmp)
			}
			if err != nil {
				return err
			}
			if cmp.GateFailed {
				var why []string
				if cmp.OverBlocking > maxNew {
					why = append(why, fmt.Sprintf("%s newly blocks %d benign/borderline probe(s) that %s allows (--max-new-blocks %d)", to, cmp.OverBlocking, from, maxNew))
				}
				if maxLost >= 0 && cmp.UnderBlocking > maxLost {
					why = append(why, fmt.Sprintf("%s newly allows %d positive control(s) that %s blocks (--max-lost-blocks %d)", to, cmp.UnderBlocking, from, maxLost))
				}
				return &gateError{"compare: " + strings.Join(why, "; ")}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from", "", "current target")
	f.StringVar(&to, "to", "", "candidate target")
	f.IntVar(&maxNew, "max-new-blocks", 0, "gate: most benign/borderline probes the candidate may newly block")
	f.IntVar(&maxLost, "max-lost-blocks", -1, "gate: most positive controls the candidate may newly allow (-1: not gated)")
	f.StringVar(&format, "format", "table", "table, markdown or json")
	f.BoolVar(&asJSON, "json", false, "same as --format json")
	f.BoolVar(&runNow, "run", false, "probe both targets now instead of reading their latest complete runs")
	return c
}

func pct(iv diff.Interval) string {
	if iv.Total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d %5.1f%% [%4.1f–%4.1f]", iv.Blocked, iv.Total, 100*iv.Rate, 100*iv.Low, 100*iv.High)
}

// WriteComparison prints a comparison as a table.
func WriteComparison(w io.Writer, c *diff.Comparison) {
	fmt.Fprintf(w, "compare %s (run %d) → %s (run %d) · corpus %s · %d probes\n\n", c.From, c.FromRun, c.To, c.ToRun, c.CorpusVersion, c.Compared)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CATEGORY\t%s BLOCKED (95%% CI)\t%s BLOCKED (95%% CI)\t\n", strings.ToUpper(c.From), strings.ToUpper(c.To))
	for _, r := range c.Categories {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", r.Category, pct(r.From), pct(r.To))
	}
	tw.Flush()
	list := func(title string, ps []diff.ProbeDiff) {
		fmt.Fprintf(w, "\n%s: %d\n", title, len(ps))
		for _, p := range ps {
			fmt.Fprintf(w, "  %-40s %-16s %s → %s\n", p.ProbeID, p.Role, p.From.String(), p.To.String())
		}
	}
	list("blocked by "+c.To+", allowed by "+c.From, c.NewBlocks)
	list("allowed by "+c.To+", blocked by "+c.From, c.NewAllows)
	if len(c.Recategorized) > 0 {
		list("blocked by both, differently", c.Recategorized)
	}
	lost := ""
	if c.MaxLostBlocks >= 0 {
		lost = fmt.Sprintf(" --max-lost-blocks %d", c.MaxLostBlocks)
	}
	fmt.Fprintf(w, "\nover-blocking (benign/borderline newly blocked): %d · under-blocking (positive controls newly allowed): %d · gate --max-new-blocks %d%s: %s\n",
		c.OverBlocking, c.UnderBlocking, c.MaxNewBlocks, lost, map[bool]string{true: "FAILED", false: "passed"}[c.GateFailed])
}

// WriteComparisonMarkdown prints a comparison as Markdown (for PR comments).
// Every string from the config, corpus or database goes through
// ghissue.Code, so none can render as markup, mention or link.
func WriteComparisonMarkdown(w io.Writer, c *diff.Comparison) {
	from, to := ghissue.Code(c.From), ghissue.Code(c.To)
	fmt.Fprintf(w, "### driftprobe compare: %s → %s\n\n", from, to)
	fmt.Fprintf(w, "Corpus %s, runs %d and %d, %d probes compared.\n\n", ghissue.Code(c.CorpusVersion), c.FromRun, c.ToRun, c.Compared)
	fmt.Fprintf(w, "| category | %s blocked | 95%% CI | %s blocked | 95%% CI |\n|---|---:|---|---:|---|\n", from, to)
	for _, r := range c.Categories {
		fmt.Fprintf(w, "| %s | %d/%d | %.1f–%.1f%% | %d/%d | %.1f–%.1f%% |\n", ghissue.Code(r.Category), r.From.Blocked, r.From.Total, 100*r.From.Low, 100*r.From.High,
			r.To.Blocked, r.To.Total, 100*r.To.Low, 100*r.To.High)
	}
	sec := func(title string, ps []diff.ProbeDiff) {
		fmt.Fprintf(w, "\n**%s** (%d)\n\n", title, len(ps))
		if len(ps) == 0 {
			return
		}
		fmt.Fprintf(w, "| probe | role | %s | %s |\n|---|---|---|---|\n", from, to)
		for _, p := range ps {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", ghissue.Code(p.ProbeID), ghissue.Code(p.Role), ghissue.Code(p.From.String()), ghissue.Code(p.To.String()))
		}
	}
	sec("Blocked by "+to+", allowed by "+from, c.NewBlocks)
	sec("Allowed by "+to+", blocked by "+from, c.NewAllows)
	sec("Blocked by both, differently", c.Recategorized)
	verdict := "passed"
	if c.GateFailed {
		verdict = "**failed**"
	}
	lost := ""
	if c.MaxLostBlocks >= 0 {
		lost = fmt.Sprintf(", max %d lost blocks", c.MaxLostBlocks)
	}
	fmt.Fprintf(w, "\nOver-blocking: %d · under-blocking: %d · gate (max %d new blocks%s): %s\n", c.OverBlocking, c.UnderBlocking, c.MaxNewBlocks, lost, verdict)
}
