package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/termtext"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

func newCompareCmd(g *globals) *cobra.Command {
	var from, to, format string
	var maxNew, maxLost, maxNotCompared int
	var runNow, asJSON bool
	c := &cobra.Command{
		Use:   "compare --from CURRENT --to CANDIDATE",
		Short: "Model-upgrade check: what the candidate target blocks that the current one does not",
		Long: `Compare the latest complete observations of two targets on the same corpus
version (or, with --run, probe both now and compare that run): per category,
block rates with Wilson 95% intervals; probes allowed by one and blocked by
the other, split by role (benign or borderline probes newly blocked by the
candidate are over-blocking; positive controls newly allowed are
under-blocking). Each side's run, start time, corpus version and the models
its answers reported are shown, with a warning when newer runs were skipped.

Probes known nondeterministic on either target (marked in detection, or in
an open nondeterminism event) are flagged and counted apart: their flips are
no evidence, so they are not gated. Probes without a verdict on a side
(transient, client error, unavailable filter, account-level block, missing)
are listed as not compared, with what each side answered.

Exit 1 when the candidate newly blocks more than --max-new-blocks benign or
borderline probes (a CI gate); with --max-lost-blocks N, newly allows more
than N positive controls (under-blocking; off by default); or when more than
--max-not-compared probes (default 0; -1: off) lack a verdict in a way that
could hide such a change. Else 0. Exit 2 when the runs cannot be compared
(fewer than half the probes with a verdict on both, no complete run);
exit 3 when the run --run made was not complete for a target.`,
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
			if maxNotCompared < -1 {
				return app.Usage(fmt.Errorf("compare: --max-not-compared %d: want a count, or -1 (off)", maxNotCompared))
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
			// compare --run probes both targets: a target it cannot probe
			// is refused before the database is opened (and migrated).
			sess, err := openSessionChecked(ctx, g, runNow, runNow, app.CheckCorpus, func(cfg *config.Config) error {
				if !runNow {
					return nil
				}
				for _, name := range []string{from, to} {
					t := cfg.Target(name)
					if t == nil {
						return app.Usage(fmt.Errorf("compare: target %q is not in the config", name))
					}
					if t.Disabled {
						return app.Usage(fmt.Errorf("compare --run: target %q is disabled in the config, so it cannot be probed: enable it (remove disabled: true), or compare without --run to read its latest complete run", name))
					}
				}
				return nil
			})
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
			opts := diff.CompareOptions{MaxNewBlocks: maxNew, MaxLostBlocks: maxLost, MaxNotCompared: maxNotCompared,
				Disabled: func(name string) bool { t := cfg.Target(name); return t != nil && t.Disabled }}
			var runID int64 // compare --run: the run made, and its status
			var runStatus string
			if runNow {
				var sel []*config.Target
				for _, name := range []string{from, to} {
					sel = append(sel, cfg.Target(name)) // both in the config and enabled: checked above
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
					var rerr *runner.RunError
					if format == "json" && errors.As(err, &rerr) {
						// Recorded, then failed: the document run --json
						// prints for it.
						return writeRunFailure(g.stdout, rerr.RunID, rerr.Status, err)
					}
					return err
				}
				runID, runStatus = res.Summary.RunID, res.Summary.Status
				if format == "table" {
					app.WriteSummary(g.stderr, res)
				}
				if runStatus == storage.RunAborted {
					// Interrupted (SIGINT/SIGTERM): nothing to compare, as
					// run says; not "context canceled" from the reads.
					err := fmt.Errorf("compare --run: run %d aborted (interrupted); observations so far are stored, nothing was compared", runID)
					if format == "json" {
						return writeRunFailure(g.stdout, runID, runStatus, err)
					}
					return err
				}
				// Compare the run just made, never an older one.
				opts.Run = res.Summary.RunID
			}
			cmp, err := diff.CompareWith(ctx, st, from, to, opts)
			if err != nil {
				err = compareError(cfg, runNow, err, from, to)
				if runNow && format == "json" {
					// The run made is not comparable (degraded or aborted
					// for a target: exit 3; too few verdicts: exit 2): a
					// JSON consumer still gets a document saying so, the
					// shape run --json prints for a failed run.
					return writeRunFailure(g.stdout, runID, runStatus, err)
				}
				return err
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
			if format != "table" {
				// The table carries them; JSON and Markdown land in files and
				// PR comments, so a CI log says them too.
				for _, w := range cmp.Warnings {
					fmt.Fprintln(g.stderr, "driftprobe: warning: "+termtext.SafeLong(w))
				}
			}
			if cmp.GateFailed {
				return &gateError{"compare: " + strings.Join(gateReasons(cmp), "; ")}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from", "", "current target")
	f.StringVar(&to, "to", "", "candidate target")
	f.IntVar(&maxNew, "max-new-blocks", 0, "gate: most benign/borderline probes the candidate may newly block")
	f.IntVar(&maxLost, "max-lost-blocks", -1, "gate: most positive controls the candidate may newly allow (-1: not gated)")
	f.IntVar(&maxNotCompared, "max-not-compared", 0, "gate: most probes whose missing verdict (on either side) could hide a gated change (-1: not gated)")
	f.StringVar(&format, "format", "table", "table, markdown or json")
	f.BoolVar(&asJSON, "json", false, "same as --format json")
	f.BoolVar(&runNow, "run", false, "probe both targets now and compare that run instead of reading their latest complete runs")
	return c
}

// compareError maps a comparison's error to its exit code: what the
// database holds cannot be compared (no complete run, too few verdicts,
// unknown probes) is exit 2; a --run whose run was not complete for a
// target is a runtime failure (exit 3), as is anything else.
func compareError(cfg *config.Config, runNow bool, err error, from, to string) error {
	if errors.Is(err, diff.ErrRunIncomplete) {
		return fmt.Errorf("compare --run: %w", err)
	}
	if errors.Is(err, diff.ErrNoCompleteRun) {
		for _, name := range []string{from, to} {
			if t := cfg.Target(name); t != nil && t.Disabled {
				err = fmt.Errorf("%w; %s is disabled in the config, so neither driftprobe run nor compare --run probes it: enable it (remove disabled: true) first", err, name)
			}
		}
	}
	if errors.Is(err, diff.ErrNoCompleteRun) || errors.Is(err, diff.ErrNotComparable) || errors.Is(err, diff.ErrUnknownProbe) || errors.Is(err, storage.ErrNotFound) {
		return app.Usage(fmt.Errorf("compare: %w", err))
	}
	return fmt.Errorf("compare: %w", err)
}

// gateReasons says why a comparison's gate failed, one clause per limit.
func gateReasons(cmp *diff.Comparison) []string {
	var why []string
	nd := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf(" (and %d more known nondeterministic, not gated)", n)
	}
	if cmp.OverBlocking > cmp.MaxNewBlocks {
		why = append(why, fmt.Sprintf("%s newly blocks %d benign/borderline probe(s) that %s allows%s (--max-new-blocks %d)", cmp.To, cmp.OverBlocking, cmp.From, nd(cmp.OverBlockingNondeterministic), cmp.MaxNewBlocks))
	}
	if cmp.MaxLostBlocks >= 0 && cmp.UnderBlocking > cmp.MaxLostBlocks {
		why = append(why, fmt.Sprintf("%s newly allows %d positive control(s) that %s blocks%s (--max-lost-blocks %d)", cmp.To, cmp.UnderBlocking, cmp.From, nd(cmp.UnderBlockingNondeterministic), cmp.MaxLostBlocks))
	}
	if cmp.MaxNotCompared >= 0 && cmp.NotComparedGated > cmp.MaxNotCompared {
		why = append(why, fmt.Sprintf("%d probe(s) the gate counts have no verdict on one side (%s), so whether the candidate changed them is unknown (--max-not-compared %d)",
			cmp.NotComparedGated, notComparedCauses(cmp, true), cmp.MaxNotCompared))
	}
	return why
}

// notComparedCauses summarizes what the sides answered instead of a
// verdict, e.g. "B: 4 transient; A: 1 client_error" (gated probes only,
// when gated).
func notComparedCauses(cmp *diff.Comparison, gated bool) string {
	type key struct{ side, what string }
	n := map[key]int{}
	var order []key
	for _, p := range cmp.NotComparedProbes {
		if gated && !p.Gated {
			continue
		}
		for _, s := range []struct{ side, what string }{{cmp.From, p.From}, {cmp.To, p.To}} {
			if !slices.Contains(p.NoVerdictOn, s.side) {
				continue
			}
			k := key{s.side, s.what}
			if n[k] == 0 {
				order = append(order, k)
			}
			n[k]++
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].side != order[j].side {
			return order[i].side == cmp.To // the candidate's first
		}
		return n[order[i]] > n[order[j]]
	})
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s: %d %s", k.side, n[k], k.what))
	}
	return strings.Join(parts, ", ")
}

func pct(iv diff.Interval) string {
	if iv.Total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d %5.1f%% [%4.1f–%4.1f]", iv.Blocked, iv.Total, 100*iv.Rate, 100*iv.Low, 100*iv.High)
}

// answeredBy renders the models a side's answers reported, through quote.
func answeredBy(s diff.CompareSide, quote func(string) string) string {
	if len(s.AnsweredBy) == 0 {
		return "no model id reported"
	}
	var parts []string
	for _, m := range s.AnsweredBy {
		id := quote(m.ModelID)
		if m.ModelFingerprint != "" {
			id += " fingerprint " + quote(m.ModelFingerprint)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", id, termtext.Count(m.Answers, "answer", "answers")))
	}
	return strings.Join(parts, ", ")
}

// stamp renders a run's start time.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// WriteComparison prints a comparison as a table. Model ids and
// fingerprints (provider text) are escaped for the terminal.
func WriteComparison(w io.Writer, c *diff.Comparison) {
	fmt.Fprintf(w, "compare %s (run %d) → %s (run %d) · corpus %s · %d probes: %d compared, %d not compared\n", c.From, c.FromRun, c.To, c.ToRun, termtext.Clean(c.CorpusVersion),
		c.Total, c.Compared, c.NotCompared)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range []struct {
		role string
		side diff.CompareSide
	}{{"current", c.FromSide}, {"candidate", c.ToSide}} {
		fmt.Fprintf(tw, "  %s\t%s\trun %d, started %s\tcorpus %s\t%s %s\tat %s\tanswered by %s\t\n", s.role, termtext.Clean(s.side.Target), s.side.Run, stamp(s.side.StartedAt), termtext.Clean(s.side.CorpusVersion),
			termtext.Clean(s.side.Provider), termtext.Clean(s.side.Model), orDash(termtext.Clean(s.side.Origin)), answeredBy(s.side, termtext.Clean))
	}
	tw.Flush()
	for _, warn := range c.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", termtext.SafeLong(warn))
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CATEGORY\t%s BLOCKED (95%% CI)\t%s BLOCKED (95%% CI)\t\n", strings.ToUpper(c.From), strings.ToUpper(c.To))
	for _, r := range c.Categories {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", termtext.Clean(r.Category), pct(r.From), pct(r.To))
	}
	tw.Flush()
	list := func(title string, ps []diff.ProbeDiff) {
		fmt.Fprintf(w, "\n%s: %d\n", title, len(ps))
		for _, p := range ps {
			nd := ""
			if len(p.NondeterministicOn) > 0 {
				nd = "  ~ nondeterministic on " + strings.Join(p.NondeterministicOn, " and ") + ": not gated"
			}
			fmt.Fprintf(w, "  %-40s %-16s %s → %s%s\n", termtext.Clean(p.ProbeID), termtext.Clean(p.Role), p.From.String(), p.To.String(), nd)
		}
	}
	list("blocked by "+c.To+", allowed by "+c.From, c.NewBlocks)
	list("allowed by "+c.To+", blocked by "+c.From, c.NewAllows)
	if len(c.Recategorized) > 0 {
		list("blocked by both, differently", c.Recategorized)
	}
	if c.NotCompared > 0 {
		fmt.Fprintf(w, "\nnot compared (no verdict on one side): %d of %d; %d could hide a change the gate counts\n", c.NotCompared, c.Total, c.NotComparedGated)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  PROBE\tROLE\t%s\t%s\tGATED\t\n", strings.ToUpper(c.From), strings.ToUpper(c.To))
		for _, p := range c.NotComparedProbes {
			gated := map[bool]string{true: "yes", false: "no"}[p.Gated]
			if len(p.NondeterministicOn) > 0 {
				gated += " (nondeterministic)"
			}
			role := p.Role
			if role == "" {
				role = "(no record)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", termtext.Clean(p.ProbeID), termtext.Clean(role), answerText(p.From, p.FromHTTPStatus), answerText(p.To, p.ToHTTPStatus), gated)
		}
		tw.Flush()
	}
	lost, notCmp := "", ""
	if c.MaxLostBlocks >= 0 {
		lost = fmt.Sprintf(" --max-lost-blocks %d", c.MaxLostBlocks)
	}
	if c.MaxNotCompared >= 0 {
		notCmp = fmt.Sprintf(" --max-not-compared %d", c.MaxNotCompared)
	}
	fmt.Fprintf(w, "\nover-blocking (benign/borderline newly blocked): %d%s · under-blocking (positive controls newly allowed): %d%s · not compared, could hide a gated change: %d · gate --max-new-blocks %d%s%s: %s\n",
		c.OverBlocking, ndNote(c.OverBlockingNondeterministic), c.UnderBlocking, ndNote(c.UnderBlockingNondeterministic), c.NotComparedGated,
		c.MaxNewBlocks, lost, notCmp, map[bool]string{true: "FAILED", false: "passed"}[c.GateFailed])
}

// ndNote is the count of nondeterministic differences set apart, if any.
func ndNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (+%d nondeterministic, not gated)", n)
}

// answerText renders a not-compared answer with its HTTP status.
func answerText(what string, status int) string {
	switch probes.Class(what) {
	case probes.Transient, probes.ClientError, probes.FilterUnavailable, probes.AbuseBlock:
		if status != 0 {
			return fmt.Sprintf("%s (HTTP %d)", what, status)
		}
	}
	return what
}

// mdAnswer is answerText for Markdown: the answer as inert code, the
// HTTP status (a number) beside it.
func mdAnswer(what string, status int) string {
	if t := answerText(what, status); t != what {
		return fmt.Sprintf("%s (HTTP %d)", ghissue.Code(what), status)
	}
	return ghissue.Code(what)
}

// WriteComparisonMarkdown prints a comparison as Markdown (for PR comments).
// Every string from the config, corpus or database goes through
// ghissue.Code, so none can render as markup, mention or link.
func WriteComparisonMarkdown(w io.Writer, c *diff.Comparison) {
	from, to := ghissue.Code(c.From), ghissue.Code(c.To)
	fmt.Fprintf(w, "### driftprobe compare: %s → %s\n\n", from, to)
	fmt.Fprintf(w, "Corpus %s, runs %d and %d, %d probes compared of %d (%d not compared).\n\n", ghissue.Code(c.CorpusVersion), c.FromRun, c.ToRun, c.Compared, c.Total, c.NotCompared)
	fmt.Fprintf(w, "| side | target | run | started | corpus | configured model | endpoint | answered by |\n|---|---|---:|---|---|---|---|---|\n")
	for _, s := range []struct {
		role string
		side diff.CompareSide
	}{{"current", c.FromSide}, {"candidate", c.ToSide}} {
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s %s | %s | %s |\n", s.role, ghissue.Code(s.side.Target), s.side.Run, "`"+stamp(s.side.StartedAt)+"`",
			ghissue.Code(s.side.CorpusVersion), ghissue.Code(s.side.Provider), ghissue.Code(s.side.Model), orDash(ghissue.Code(s.side.Origin)), answeredBy(s.side, ghissue.Code))
	}
	for _, warn := range c.WarningTexts(ghissue.Code) {
		fmt.Fprintf(w, "\n> **Warning:** %s\n", warn)
	}
	fmt.Fprintf(w, "\n| category | %s blocked | 95%% CI | %s blocked | 95%% CI |\n|---|---:|---|---:|---|\n", from, to)
	for _, r := range c.Categories {
		fmt.Fprintf(w, "| %s | %d/%d | %.1f–%.1f%% | %d/%d | %.1f–%.1f%% |\n", ghissue.Code(r.Category), r.From.Blocked, r.From.Total, 100*r.From.Low, 100*r.From.High,
			r.To.Blocked, r.To.Total, 100*r.To.Low, 100*r.To.High)
	}
	sec := func(title string, ps []diff.ProbeDiff) {
		fmt.Fprintf(w, "\n**%s** (%d)\n\n", title, len(ps))
		if len(ps) == 0 {
			return
		}
		fmt.Fprintf(w, "| probe | role | %s | %s | nondeterministic on |\n|---|---|---|---|---|\n", from, to)
		for _, p := range ps {
			nd := "—"
			if len(p.NondeterministicOn) > 0 {
				var names []string
				for _, n := range p.NondeterministicOn {
					names = append(names, ghissue.Code(n))
				}
				nd = strings.Join(names, ", ") + " (not gated)"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", ghissue.Code(p.ProbeID), ghissue.Code(p.Role), ghissue.Code(p.From.String()), ghissue.Code(p.To.String()), nd)
		}
	}
	sec("Blocked by "+to+", allowed by "+from, c.NewBlocks)
	sec("Allowed by "+to+", blocked by "+from, c.NewAllows)
	sec("Blocked by both, differently", c.Recategorized)
	fmt.Fprintf(w, "\n**Not compared: no verdict on one side** (%d; %d could hide a gated change)\n\n", c.NotCompared, c.NotComparedGated)
	if c.NotCompared > 0 {
		fmt.Fprintf(w, "| probe | role | %s | %s | gated |\n|---|---|---|---|---|\n", from, to)
		for _, p := range c.NotComparedProbes {
			gated := map[bool]string{true: "yes", false: "no"}[p.Gated]
			if len(p.NondeterministicOn) > 0 {
				gated += " (nondeterministic)"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", ghissue.Code(p.ProbeID), ghissue.Code(p.Role), mdAnswer(p.From, p.FromHTTPStatus), mdAnswer(p.To, p.ToHTTPStatus), gated)
		}
	}
	verdict := "passed"
	if c.GateFailed {
		verdict = "**failed**"
	}
	lost, notCmp := "", ""
	if c.MaxLostBlocks >= 0 {
		lost = fmt.Sprintf(", max %d lost blocks", c.MaxLostBlocks)
	}
	if c.MaxNotCompared >= 0 {
		notCmp = fmt.Sprintf(", max %d not compared", c.MaxNotCompared)
	}
	fmt.Fprintf(w, "\nOver-blocking: %d%s · under-blocking: %d%s · not compared, could hide a gated change: %d · gate (max %d new blocks%s%s): %s\n",
		c.OverBlocking, ndNote(c.OverBlockingNondeterministic), c.UnderBlocking, ndNote(c.UnderBlockingNondeterministic), c.NotComparedGated,
		c.MaxNewBlocks, lost, notCmp, verdict)
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
