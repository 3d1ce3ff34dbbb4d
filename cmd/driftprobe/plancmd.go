package main

import (
	"fmt"
	"math"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/runner"
)

// planTarget is one target's line of `plan --json`.
type planTarget struct {
	Target         string  `json:"target"`
	Provider       string  `json:"provider"`
	Model          string  `json:"model"`
	Probes         int     `json:"probes"`
	RenderErrors   int     `json:"render_errors"`
	RequestBytes   int     `json:"request_bytes"`
	RequestsSHA256 string  `json:"requests_sha256"`
	MaxRequests    int     `json:"max_requests"`     // every probe retried to max_attempts
	RateLimitRPM   float64 `json:"rate_limit_rpm"`   // 0: none
	MinDurationSec float64 `json:"min_duration_sec"` // probes / rate limit (0 without one)
	MaxOutputToks  int     `json:"max_output_tokens"`
	MaxOutputUSD   float64 `json:"max_output_cost_usd"` // max_output_tokens at the output price
}

type planOutput struct {
	CorpusName    string       `json:"corpus_name"`
	CorpusVersion string       `json:"corpus_version"`
	CorpusSHA256  string       `json:"corpus_sha256"` // as in run --json
	CorpusHash    string       `json:"corpus_hash"`   // the same; kept for scripts written before corpus_sha256
	Targets       []planTarget `json:"targets"`
}

func newPlanCmd(g *globals) *cobra.Command {
	var asJSON, noKeys bool
	c := &cobra.Command{
		Use:   "plan",
		Short: "Show what a run would send, without sending anything",
		Long: `Render every probe of the corpus for every enabled target, as a run does
first, and print per target: probes, render errors, request bytes, the
requests_sha256 a run will report (equal exactly when every request is
byte-identical: compare it with the last run's before scheduling a change),
the most requests retries could make, the shortest duration the rate limit
allows and the ceiling on output tokens and their cost. Nothing is sent and
the database is not opened.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := app.LoadConfig(g.config, g.db, !noKeys)
			if err != nil {
				return err
			}
			cp, err := app.LoadCorpus(cfg, "", false)
			if err != nil {
				return err
			}
			build := app.BuildTargets
			if noKeys {
				build = app.BuildRenderTargets
			}
			targets, closeTargets, err := build(cfg)
			if err != nil {
				return err
			}
			defer closeTargets()
			out := planOutput{CorpusName: cp.Name, CorpusVersion: cp.Version, CorpusSHA256: cp.Hash, CorpusHash: cp.Hash, Targets: []planTarget{}}
			for _, t := range targets {
				tc := t.Config
				p := runner.Plan(cp, t)
				pt := planTarget{Target: tc.Name, Provider: tc.Provider, Model: tc.Model, Probes: p.Probes, RenderErrors: p.RenderErrors,
					RequestBytes: p.RequestBytes, RequestsSHA256: p.RequestsSHA256, MaxRequests: p.Probes * max(1, tc.MaxAttempts),
					RateLimitRPM: tc.RateLimitRPM, MaxOutputToks: p.Probes * tc.MaxTokens}
				if tc.RateLimitRPM > 0 {
					pt.MinDurationSec = math.Round(float64(p.Probes)/tc.RateLimitRPM*60*10) / 10
				}
				pt.MaxOutputUSD = float64(pt.MaxOutputToks) * tc.Price.OutputPerMTok / 1e6
				out.Targets = append(out.Targets, pt)
			}
			if asJSON {
				return writeJSON(g.stdout, out)
			}
			fmt.Fprintf(g.stdout, "corpus %s %s: %d probes, sha256 %s\n\n", cp.Name, cp.Version, len(cp.Probes), cp.Hash)
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TARGET\tPROVIDER\tMODEL\tPROBES\tRENDER ERRORS\tREQUEST BYTES\tMAX REQUESTS\tMIN DURATION\tMAX OUTPUT TOKENS\tMAX OUTPUT COST\tREQUESTS_SHA256")
			for _, t := range out.Targets {
				dur := "-"
				if t.RateLimitRPM > 0 {
					dur = (time.Duration(t.MinDurationSec*10) * time.Second / 10).String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%d\t$%.4f\t%s\n", t.Target, t.Provider, t.Model, t.Probes, t.RenderErrors,
					t.RequestBytes, t.MaxRequests, dur, t.MaxOutputToks, t.MaxOutputUSD, t.RequestsSHA256)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON output")
	c.Flags().BoolVar(&noKeys, "no-keys", false, "do not require key environment variables to be set")
	return c
}
