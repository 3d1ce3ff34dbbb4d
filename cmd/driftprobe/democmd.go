package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/termtext"
)

// demoConfig scripts the story: sim-prod's provider tightens violence and
// starts enforcing privacy from run 3; sim-candidate is a stricter model
// considered as an upgrade.
const demoConfig = `# driftprobe demo: two simulated targets, one scripted provider policy change.
database: %s
confirm_runs: 2
targets:
  - name: sim-prod
    provider: sim
    model: sim-large
    sim:
      policies:
        - from_run: 1
          thresholds: {privacy: 1.01}          # privacy never fires...
          fingerprint: fp_prod_a
        - from_run: 3                          # ...until the provider changes policy
          thresholds: {violence: 0.3, privacy: 0.5}
  - name: sim-candidate
    provider: sim
    model: sim-large-2
    sim:
      policies:
        - from_run: 1
          thresholds: {harassment: 0.25, self_harm: 0.28}
          fingerprint: fp_candidate_b
`

func newDemoCmd(g *globals) *cobra.Command {
	var runs int
	var keep string
	c := &cobra.Command{
		Use:   "demo",
		Short: "The whole story in under a minute: runs, a provider policy change detected and confirmed, evidence, attribution, compare",
		Long: `Run the default corpus against two embedded simulator targets in a temporary
database for a handful of runs (6 hours apart on a virtual clock), with a
provider policy change scripted at run 3 on one of them. Prints each run's
summary, the confirmed event, its diff and evidence, the issue driftprobe would
open, attribution of synthetic production block-rate changes (one the
provider's, one the customers' content), and what compare says about the two
targets. No keys, no network. With --dir the database, config and
production.jsonl stay for you to explore (driftprobe attribute --config
DIR/demo.yaml --production DIR/production.jsonl).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runs < 1 || runs > demoMaxRuns {
				return app.Usage(fmt.Errorf("demo: --runs %d: must be between 1 and %d (the scripted policy change happens at run 3 and is confirmed at run 4; attribution needs 5, the default)", runs, demoMaxRuns))
			}
			ctx := cmd.Context()
			dir := keep
			if dir == "" {
				tmp, err := os.MkdirTemp("", "driftprobe-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dir = tmp
			} else if err := os.MkdirAll(dir, 0o755); err != nil {
				return app.Usage(fmt.Errorf("demo: --dir %s: %w", dir, err)) // a file there, or no permission
			}
			// The config names the database by its absolute path, so it
			// works from any directory (cd DIR && driftprobe -c demo.yaml).
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			db := filepath.Join(abs, "demo.db")
			if _, err := os.Stat(db); err == nil {
				// Its runs would continue the old ones on a virtual clock
				// that starts over.
				return app.Usage(fmt.Errorf("demo: %s already holds a demo database: give --dir an empty or new directory", dir))
			}
			cfgFile := filepath.Join(dir, "demo.yaml")
			text := fmt.Sprintf(demoConfig, strconv.Quote(db))
			if err := os.WriteFile(cfgFile, []byte(text), 0o644); err != nil {
				return err
			}
			sess, err := app.Open(ctx, cfgFile, "", true, app.CheckCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			cfg, cp, st := sess.Config, sess.Corpus, sess.Store
			targets, closeT, err := app.BuildTargets(cfg)
			if err != nil {
				return err
			}
			defer closeT()
			w := g.stdout
			section := func(s string) { fmt.Fprintf(w, "\n\033[1m== %s ==\033[0m\n", s) }
			if os.Getenv("NO_COLOR") != "" || !isTTY(w) {
				section = func(s string) { fmt.Fprintf(w, "\n== %s ==\n", s) }
			}
			fmt.Fprintf(w, "driftprobe demo: corpus %s %s (%d probes) against sim-prod and sim-candidate, database %s\n", cp.Name, cp.Version, len(cp.Probes), db)
			fmt.Fprintln(w, "sim-prod's provider is scripted to tighten violence and start enforcing privacy at run 3; confirm_runs is 2.")
			// Runs are 6 hours apart on a virtual clock ending now, so that
			// the synthetic production series at the end line up with them.
			t0 := time.Now().UTC().Truncate(time.Hour).Add(-time.Duration(runs) * demoEvery)
			var base, real time.Time
			clock := func() time.Time { return base.Add(time.Since(real)) }
			st.SetClock(clock)
			fmt.Fprintf(w, "Runs are %s apart on a virtual clock starting %s.\n", demoEvery, t0.Format(time.RFC3339))
			var eventIDs []int64
			for i := 1; i <= runs; i++ {
				base, real = t0.Add(time.Duration(i-1)*demoEvery), time.Now()
				section(fmt.Sprintf("run %d", i))
				res, err := app.RunOnce(ctx, cfg, cp, st, targets, app.RunOptions{Logger: app.Logger(g.logLevel), Note: "demo", Now: clock})
				if err != nil {
					return err
				}
				app.WriteSummary(w, res)
				if res.Detection != nil {
					for _, s := range res.Detection.Stats {
						if s.Candidates > 0 && s.Confirmed == 0 {
							fmt.Fprintf(w, "  %s: %d probe(s) differ from their baseline: candidates, waiting for confirmation\n", s.Target, s.Candidates)
						}
					}
					app.WriteEvents(w, res.Events, res.Detection.Changes)
					eventIDs = append(eventIDs, res.Detection.EventIDs()...)
				}
			}
			evs, err := diff.ListEvents(ctx, st, diff.Filter{})
			if err != nil {
				return err
			}
			section("what happened")
			if len(evs) == 0 {
				fmt.Fprintln(w, "no events (try more --runs)")
			}
			for _, e := range evs {
				fmt.Fprintf(w, "event %d: %s %s on %s, first seen in run %d, confirmed in run %d; new categories: %s\n",
					e.ID, e.Direction, e.Kind, strings.Join(e.Targets, ", "), e.FirstRun, e.ConfirmedRun, orNone(e.NewCategories))
				fmt.Fprintf(w, "  the request bytes of all %d flipped probes were identical before and after, so the provider changed, not the content.\n", len(e.Probes))
				section(fmt.Sprintf("driftprobe diff --target %s --from %d --to %d", e.Target, e.FirstRun-1, e.ConfirmedRun))
				d, err := diff.DiffRuns(ctx, st, e.Target, e.FirstRun-1, e.ConfirmedRun)
				if err != nil {
					return err
				}
				WriteRunDiff(g, d)
			}
			for _, e := range evs {
				if e.Kind != diff.KindPolicy && e.Kind != diff.KindModel {
					continue
				}
				section(fmt.Sprintf("driftprobe evidence %d (summary)", e.ID))
				rec, err := evidence.Build(ctx, st, e.ID, time.Now())
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "%d probes; every request fingerprint recomputed from the stored bytes and checked: %v; record sha256 %s\n", len(rec.Probes), rec.AllVerified, rec.SHA256)
				if len(rec.Probes) > 0 {
					p := rec.Probes[0]
					fmt.Fprintf(w, "e.g. %s: %s %s sha256 %.16s…, before run %d %s (provider request id %s), after run %d %s (provider request id %s)\n",
						p.ProbeID, p.Request.Method, p.Request.Path, p.Request.SHA256, p.Before.RunID, p.Before.Verdict.String(), termtext.Clean(p.Before.RequestID),
						p.After.RunID, p.After.Verdict.String(), termtext.Clean(p.After.RequestID))
				}
				section("the GitHub issue driftprobe would open (github block absent: dry run)")
				var buf strings.Builder
				if _, err := ghissue.RenderEvents(ctx, st, nil, []*diff.Event{e}, 0, &buf, ""); err != nil {
					return err
				}
				out := buf.String()
				if lines := strings.Split(out, "\n"); len(lines) > 40 {
					out = strings.Join(lines[:40], "\n") + fmt.Sprintf("\n… (%d more lines; `driftprobe outbox --dry-run` prints it all)\n", len(lines)-40)
				}
				fmt.Fprint(w, out)
				break
			}
			section("metrics (what Prometheus scrapes from `driftprobe serve`)")
			reg, _ := app.NewRegistry(st, false)
			mfs, err := reg.Gather()
			if err != nil {
				return err
			}
			for _, mf := range mfs {
				name := mf.GetName()
				if name != "driftprobe_category_active" && name != "driftprobe_events_total" && name != "driftprobe_events_open" {
					continue
				}
				for _, m := range mf.Metric {
					var labels []string
					for _, l := range m.Label {
						labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
					}
					v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
					if name == "driftprobe_category_active" && v == 0 {
						continue
					}
					fmt.Fprintf(w, "%s{%s} %g\n", name, strings.Join(labels, ","), v)
				}
			}
			if runs >= 5 {
				if err := demoAttribute(ctx, w, section, sess, dir, t0, runs); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "\n(attribution is left out: it needs the change and an hour after it, 5 runs; this demo made %d)\n", runs)
			}
			section("driftprobe compare --from sim-prod --to sim-candidate")
			cmp, err := diff.Compare(ctx, st, cp, "sim-prod", "sim-candidate", 0, -1)
			if err != nil {
				return err
			}
			WriteComparison(w, cmp)
			if cmp.GateFailed {
				fmt.Fprintln(w, "(in CI, this compare would exit 1: the candidate over-blocks)")
			}
			fmt.Fprintf(w, "\nNext: `driftprobe run` probes the simulator with the built-in config; see README.md to point driftprobe at real providers.\n")
			_ = eventIDs
			return nil
		},
	}
	c.Flags().IntVar(&runs, "runs", 5, "number of runs (1 to 100; the policy change is confirmed at run 4, attribution needs 5)")
	c.Flags().StringVar(&keep, "dir", "", "keep the demo database and config in this directory instead of a temporary one")
	return c
}

// demoEvery is the demo's virtual interval between runs.
const demoEvery = 6 * time.Hour

// demoMaxRuns bounds --runs: the virtual clock starts runs × demoEvery in
// the past, and the synthetic production series holds an hour per point
// over all of it; more runs show nothing new.
const demoMaxRuns = 100

// demoProduction writes synthetic hourly production block counts for
// sim-prod, as a gateway's metrics would show them: violence blocks rise
// between runs 2 and 3 (when the scripted provider change happens), hate
// blocks rise three hours before the second-to-last run (the customers'
// content changed; the probes hold still), and sexual_minors blocks, which
// no corpus probe covers, trickle in throughout.
func demoProduction(t0 time.Time, runs int) string {
	var b strings.Builder
	violenceAt := t0.Add(demoEvery + 3*time.Hour)
	hateAt := t0.Add(time.Duration(runs-2)*demoEvery - 3*time.Hour)
	end := t0.Add(time.Duration(runs) * demoEvery)
	i := 0
	for at := t0.Add(-demoEvery); at.Before(end); at = at.Add(time.Hour) {
		jitter := float64((i*7)%5) - 2 // -2 … 2, deterministic
		total := 20000 + 100*jitter
		violence, hate := 60+jitter, 40-jitter
		if !at.Before(violenceAt) {
			violence = 170 + 2*jitter
		}
		if !at.Before(hateAt) {
			hate = 110 - 2*jitter
		}
		ts := at.Format(time.RFC3339)
		fmt.Fprintf(&b, `{"time":%q,"target":"sim-prod","category":"violence","blocked":%g,"total":%g}`+"\n", ts, violence, total)
		fmt.Fprintf(&b, `{"time":%q,"target":"sim-prod","category":"hate","blocked":%g,"total":%g}`+"\n", ts, hate, total)
		fmt.Fprintf(&b, `{"time":%q,"target":"sim-prod","category":"sexual_minors","blocked":%g,"total":%g}`+"\n", ts, 3+jitter/2, total)
		i++
	}
	return b.String()
}

// demoAttribute answers the product's question on the demo's synthetic
// production counts and keeps them beside the demo database.
func demoAttribute(ctx context.Context, w io.Writer, section func(string), sess *app.Session, dir string, t0 time.Time, runs int) error {
	prod := demoProduction(t0, runs)
	file := filepath.Join(dir, "production.jsonl")
	if err := os.WriteFile(file, []byte(prod), 0o644); err != nil {
		return err
	}
	section("driftprobe attribute --production production.jsonl: the provider, or our customers' content?")
	fmt.Fprintln(w, "Synthetic hourly block counts of sim-prod's production traffic (what a gateway's metrics would show),")
	fmt.Fprintln(w, "set against the probes: violence rose when the probes flipped, hate rose while they held still.")
	rep, err := app.Attribute(ctx, sess, &attribution.JSONL{Name: file, R: strings.NewReader(prod)}, attribution.Options{})
	if err != nil {
		return err
	}
	return rep.WriteTable(w)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func isTTY(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
