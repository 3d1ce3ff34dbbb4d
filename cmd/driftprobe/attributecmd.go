package main

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/internal/app"
)

func newAttributeCmd(g *globals) *cobra.Command {
	var (
		production, promURL, query, totalQuery, targetLabel, categoryLabel string
		since, step, end, tolerance, failOn                                string
		minZ, minChange, minRateChange                                     float64
		minPoints                                                          int
		asJSON, stored                                                     bool
	)
	c := &cobra.Command{
		Use:   "attribute [--production FILE.jsonl | --prometheus URL --query Q | --stored]",
		Short: "Attribute production block-rate changes to the provider or to customer traffic",
		Long: `Read production block counts per segment (target × category), find the one
significant change point of each series, and set it against the probe history:

  provider       probes on the target flipped the same way in the same window
                 (an event whose probes or corpus tags touch the category)
  traffic        the corpus covers the category, complete runs on both sides of
                 the change, and the probes held still: the customers' content moved
  inconclusive   with the reason (category not covered by the corpus, runs missing
                 or degraded, an event the other way, events in other categories)

It also lists uncovered categories: categories production blocks that no corpus
probe is tagged with.

Sources:
  --production FILE.jsonl (or - for stdin), one object per line:
    {"time":"2026-11-20T10:00:00Z","target":"sim-a","category":"violence","blocked":12,"total":1000}
    time = start of the interval; category optional ("" = all blocks); total optional.
    Strict: problems are FILE:LINE: field: problem (exit 2).
  --prometheus URL --query Q: a range query returning blocked counts per step, e.g.
    sum by (target, category) (increase(llm_blocked_total[1h]))   with --step 1h
    --total-query: requests per step per target (enables the z-test).
  neither: the config's attribution: block (prometheus, query, total_query,
    target_label, category_label, since, step, tolerance); any of these flags
    given overrides its field. Runs attribute with the same block after every
    run and store the report (the driftprobe_production_changes metrics).
  Thresholds (--min-z, --min-points, --min-change, --min-rate-change) and
  --tolerance not given as flags come from the block's min_z, min_points,
  min_change, min_rate_change and tolerance when the config has one, with
  any source.
  --stored: no query; the latest report a run stored, the one the metrics
    and alerts show (stderr says which run made it, and whether a later
    attempt failed).

A change is traffic only when the probes actually held still: a probe of the
category marked nondeterministic, or whose verdict changed on identical bytes
in the runs around the change without a confirmed flip to explain it, makes
the change inconclusive (it cannot show that the provider held still).

A --production file without data (empty, or only blank lines and comments) is
reported like a query matching nothing: 0 series, and a warning.

Exit 0 whatever the attribution (it is a report), 1 with --fail-on when a change
of that kind was found, 2 on bad input (including an unreadable --production
file, and, with --fail-on, a report with no series at all: a query matching
nothing, or an empty file, must not pass a gate), 3 when Prometheus or the
database fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			flags := cmd.Flags()
			switch failOn {
			case "", attribution.Provider, attribution.Traffic, "any-change":
			default:
				return app.Usage(fmt.Errorf("attribute: --fail-on %q: want provider, traffic or any-change", failOn))
			}
			if production != "" && promURL != "" || stored && (production != "" || promURL != "") {
				return app.Usage(errors.New("attribute: give exactly one source: --production FILE.jsonl, --prometheus URL or --stored"))
			}
			if stored {
				for _, f := range []string{"query", "total-query", "target-label", "category-label", "since", "step", "end", "tolerance", "min-z", "min-points", "min-change", "min-rate-change"} {
					if flags.Changed(f) {
						return app.Usage(fmt.Errorf("attribute: --%s does not apply to --stored (the report is as the run made it)", f))
					}
				}
			}
			if production != "" {
				for _, f := range []string{"query", "total-query", "target-label", "category-label", "since", "step", "end"} {
					if flags.Changed(f) {
						return app.Usage(fmt.Errorf("attribute: --%s applies to --prometheus, not --production", f))
					}
				}
			}
			// !(x > 0) also refuses NaN, which compares false to everything.
			if !(minZ > 0) || !(minChange > 0) || !(minRateChange >= 0) || math.IsInf(minZ, 0) || math.IsInf(minChange, 0) || math.IsInf(minRateChange, 0) || minPoints < 2 {
				return app.Usage(errors.New("attribute: --min-z and --min-change must be positive finite numbers, --min-rate-change a finite number at least 0, --min-points at least 2"))
			}
			opts := attribution.Options{Detect: attribution.DetectOptions{MinZ: minZ, MinPoints: minPoints, MinChange: minChange, MinRateChange: minRateChange}}
			if err := opts.Detect.Validate(); err != nil {
				return app.Usage(fmt.Errorf("attribute: %v", err))
			}
			if tolerance != "" {
				d, err := positiveDuration(tolerance)
				if err != nil {
					return app.Usage(fmt.Errorf("attribute: --tolerance: %v", err))
				}
				opts.Tolerance = d
			}
			sess, err := app.OpenRead(ctx, g.config, g.db, app.CheckCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			if blk := sess.Config.Attribution; blk != nil {
				// Thresholds and the tolerance not given as flags come
				// from the config's block, whatever the source, as a
				// run's attribution uses them: the same data gets the
				// answer the stored reports give.
				def := app.AttributionOptions(blk).Detect
				if !flags.Changed("tolerance") {
					opts.Tolerance = blk.Tolerance.D()
				}
				for _, f := range []struct {
					name string
					set  func()
				}{{"min-z", func() { opts.Detect.MinZ = def.MinZ }}, {"min-points", func() { opts.Detect.MinPoints = def.MinPoints }},
					{"min-change", func() { opts.Detect.MinChange = def.MinChange }}, {"min-rate-change", func() { opts.Detect.MinRateChange = def.MinRateChange }}} {
					if !flags.Changed(f.name) {
						f.set()
					}
				}
			}
			var rep *attribution.Report
			var src attribution.Source
			switch blk := sess.Config.Attribution; {
			case stored:
				if rep, err = app.StoredAttribution(ctx, sess.Store, g.stderr); err != nil {
					return err
				}
			case production != "":
				s, closeSrc, err := app.OpenProduction(production, cmd.InOrStdin())
				if err != nil {
					return err
				}
				defer closeSrc()
				src = s
			case promURL == "" && blk == nil:
				return app.Usage(errors.New("attribute: give exactly one source: --production FILE.jsonl or --prometheus URL (or an attribution: block in the config)"))
			default:
				// The config's block, each flag given overriding its field.
				a := config.Attribution{}
				if blk != nil {
					a = *blk
				}
				p, err := prometheusSource(flags.Changed, a, promURL, query, totalQuery, targetLabel, categoryLabel, since, step, end)
				if err != nil {
					return err
				}
				src = p
			}
			if rep == nil {
				if rep, err = app.Attribute(ctx, sess, src, opts); err != nil {
					return err
				}
			}
			rep.WriteWarnings(g.stderr)
			if asJSON {
				err = writeJSON(g.stdout, rep)
			} else {
				err = rep.WriteTable(g.stdout)
			}
			if err != nil {
				return err
			}
			if failOn != "" && rep.Series == 0 {
				// A gate over nothing must not pass: a mistyped metric name
				// or --target-label matches no series, an empty file has no
				// points, and 0 changes of 0 series is no evidence.
				return app.Usage(fmt.Errorf("attribute: --fail-on %s: no series matched, so nothing was checked (see the warnings: a query or metric name that matches nothing, a --target-label naming no configured target, or a file without points)", failOn))
			}
			if failOn != "" {
				n := 0
				for _, ch := range rep.Changes {
					if failOn == "any-change" || ch.Attribution == failOn {
						n++
					}
				}
				if n > 0 {
					return &gateError{fmt.Sprintf("attribute: %d change(s) match --fail-on %s", n, failOn)}
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&production, "production", "", "production counts as JSONL (- for stdin)")
	f.StringVar(&promURL, "prometheus", "", "Prometheus API root, e.g. http://prometheus:9090")
	f.StringVar(&query, "query", "", "PromQL returning blocked requests per step by target and category")
	f.StringVar(&totalQuery, "total-query", "", "PromQL returning requests per step by target (enables the z-test)")
	f.StringVar(&targetLabel, "target-label", "target", "label holding the driftprobe target name")
	f.StringVar(&categoryLabel, "category-label", "category", "label holding the category (missing: all blocks)")
	f.StringVar(&since, "since", "7d", "how far back to query (Go duration, or Nd / Nw; rounded up to whole steps)")
	f.StringVar(&step, "step", "1h", "query step: the interval each count covers")
	f.StringVar(&end, "end", "", "end of the queried range, RFC 3339 (default: now)")
	f.StringVar(&tolerance, "tolerance", "", "slack on each side of a flip's window (default: the config's attribution tolerance, else 2 × the series' step; 2h without one)")
	f.Float64Var(&minZ, "min-z", attribution.DefaultMinZ, "|z| (two-proportion test, with totals) and Welch t a change needs")
	f.IntVar(&minPoints, "min-points", attribution.DefaultMinPoints, "points a change needs on each side (at least 2; with totals, intervals with requests)")
	f.Float64Var(&minChange, "min-change", attribution.DefaultMinChange, "without totals: relative change of the mean blocked count a change needs")
	f.Float64Var(&minRateChange, "min-rate-change", 0, "with totals: relative change of the block rate a change also needs (0: off)")
	f.BoolVar(&asJSON, "json", false, "JSON output (the documented schema)")
	f.BoolVar(&stored, "stored", false, "print the latest report a run stored instead of querying")
	f.StringVar(&failOn, "fail-on", "", "exit 1 when a change is attributed to provider, traffic, or any-change")
	return c
}

// prometheusSource returns the Prometheus source: the fields of a (the
// config's attribution block, or zero) with each flag that was given
// (changed reports which) — or whose field a leaves empty — taking its
// place.
func prometheusSource(changed func(flag string) bool, a config.Attribution, u, query, totalQuery, targetLabel, categoryLabel, since, step, end string) (*attribution.Prometheus, error) {
	for _, f := range []struct {
		name string
		dst  *string
		val  string
	}{{"prometheus", &a.Prometheus, u}, {"query", &a.Query, query}, {"total-query", &a.TotalQuery, totalQuery},
		{"target-label", &a.TargetLabel, targetLabel}, {"category-label", &a.CategoryLabel, categoryLabel}} {
		if changed(f.name) || *f.dst == "" {
			*f.dst = f.val
		}
	}
	for _, f := range []struct {
		name string
		dst  *config.Duration
		val  string
	}{{"since", &a.Since, since}, {"step", &a.Step, step}} {
		if changed(f.name) || *f.dst == 0 {
			d, err := positiveDuration(f.val)
			if err != nil {
				return nil, app.Usage(fmt.Errorf("attribute: --%s: %v", f.name, err))
			}
			*f.dst = config.Duration(d)
		}
	}
	endT := time.Now()
	if end != "" {
		var err error
		// RFC 3339 allows a lower-case t and z.
		if endT, err = time.Parse(time.RFC3339Nano, strings.ToUpper(end)); err != nil {
			return nil, app.Usage(fmt.Errorf("attribute: --end %q: not an RFC 3339 time", end))
		}
	}
	p := app.PrometheusSource(&a, endT)
	if err := p.Check(); err != nil {
		return nil, app.Usage(err)
	}
	return p, nil
}

// positiveDuration parses a duration flag (Go durations, days, weeks).
func positiveDuration(s string) (time.Duration, error) {
	d, err := config.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: must be positive", s)
	}
	return d, nil
}
