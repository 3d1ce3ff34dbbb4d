package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/termtext"
	"github.com/driftprobe/driftprobe/runner"
)

// planTarget is one target's line of `plan --json`.
//
// The max_* fields are ceilings no run can exceed: every probe that
// renders takes max_samples_per_probe samples (the first and every extra
// sample detection can ask for), each retried to max_attempts, and every
// attempt is counted with max_tokens output tokens (a retried answer can
// carry billed output: a 2xx without a usable choice, a timeout after the
// model generated). The likely_* fields are the usual run: one sample per
// probe, no retry. Output tokens assume the provider honours max_tokens;
// input tokens are not counted. An endpoint that generates no output
// (generates_output false) counts none.
type planTarget struct {
	Target         string  `json:"target"`
	Provider       string  `json:"provider"`
	Model          string  `json:"model"`
	Origin         string  `json:"origin"` // where the requests go: scheme://host, or sim:embedded; then the account named, if any (" organization=… project=…")
	Probes         int     `json:"probes"`
	RenderErrors   int     `json:"render_errors"`
	RequestBytes   int     `json:"request_bytes"`
	RequestsSHA256 string  `json:"requests_sha256"`
	MaxRequests    int     `json:"max_requests"`     // likely_requests × max_samples_per_probe × max_attempts
	RateLimitRPM   float64 `json:"rate_limit_rpm"`   // 0: none
	MinDurationSec float64 `json:"min_duration_sec"` // the least time the rate limit allows likely_requests (0 without one)
	MaxOutputToks  int     `json:"max_output_tokens"`
	MaxOutputUSD   float64 `json:"max_output_cost_usd"` // max_output_tokens at the output price
	// LikelyRequests is one request per probe that renders: a run with no
	// retry and no extra sample, and the fewest requests a run that
	// answers every probe sends.
	LikelyRequests int `json:"likely_requests"`
	// LikelyMaxOutputToks is likely_requests × max_tokens.
	LikelyMaxOutputToks int `json:"likely_max_output_tokens"`
	// LikelyMaxOutputUSD is likely_max_output_tokens at the output price.
	LikelyMaxOutputUSD float64 `json:"likely_max_output_cost_usd"`
	// MaxSamplesPerProbe is 1 + the most extra samples of identical bytes
	// a probe can take in one run: the larger of detection.screen_samples
	// (when screening is on) and the target's confirm_samples.
	MaxSamplesPerProbe int `json:"max_samples_per_probe"`
	MaxAttempts        int `json:"max_attempts"` // attempts per sample, retries included
	MaxTokens          int `json:"max_tokens"`   // the target's output-token cap per request
	// GeneratesOutput is false for a classification endpoint (OpenAI or
	// Mistral moderation, a Bedrock guardrail: probes.Generates): its
	// requests carry no max_tokens and no output is billed, so every
	// output token and output cost figure is 0.
	GeneratesOutput bool `json:"generates_output"`
	// ProbeRequests lists every probe's request (plan --probes only).
	ProbeRequests []planProbe `json:"probe_requests,omitempty"`
}

// planProbe is one probe's request in `plan --probes --json`.
type planProbe struct {
	ProbeID       string `json:"probe_id"`
	ProbeSHA256   string `json:"probe_sha256"`   // the corpus hash of the probe: it changes only with the corpus
	RequestSHA256 string `json:"request_sha256"` // as observations and evidence record it; "render-error" when it does not render
	BodyBytes     int    `json:"body_bytes"`
	RenderError   string `json:"render_error"` // "" when the probe renders
}

type planOutput struct {
	CorpusName    string       `json:"corpus_name"`
	CorpusVersion string       `json:"corpus_version"`
	CorpusSHA256  string       `json:"corpus_sha256"` // as in run --json
	CorpusHash    string       `json:"corpus_hash"`   // the same; kept for scripts written before corpus_sha256
	Targets       []planTarget `json:"targets"`
}

// planFor computes a target's plan line from its rendered plan p: the
// ceilings are upper bounds on what one run of tc can send and be billed,
// the likely figures and min_duration_sec lower bounds on what a run that
// answers every probe sends and takes.
func planFor(cfg *config.Config, tc *config.Target, p runner.TargetPlan, withProbes bool) planTarget {
	likely := p.Probes - p.RenderErrors
	pt := planTarget{Target: tc.Name, Provider: tc.Provider, Model: tc.Model, Origin: p.Origin, Probes: p.Probes, RenderErrors: p.RenderErrors,
		RequestBytes: p.RequestBytes, RequestsSHA256: p.RequestsSHA256, RateLimitRPM: tc.RateLimitRPM,
		LikelyRequests: likely, MaxSamplesPerProbe: 1 + app.MaxExtraSamples(cfg, tc), MaxAttempts: max(1, tc.MaxAttempts), MaxTokens: tc.MaxTokens, GeneratesOutput: !p.NoOutput}
	pt.MaxRequests = likely * pt.MaxSamplesPerProbe * pt.MaxAttempts
	perRequest := tc.MaxTokens
	if p.NoOutput {
		// A classification endpoint: no request carries max_tokens, no
		// output is generated or billed.
		perRequest = 0
	}
	pt.MaxOutputToks = pt.MaxRequests * perRequest
	pt.MaxOutputUSD = float64(pt.MaxOutputToks) * tc.Price.OutputPerMTok / 1e6
	pt.LikelyMaxOutputToks = likely * perRequest
	pt.LikelyMaxOutputUSD = float64(pt.LikelyMaxOutputToks) * tc.Price.OutputPerMTok / 1e6
	if tc.RateLimitRPM > 0 && likely > 1 {
		// The limiter lets one request through at once, then one every
		// 60/rpm seconds: n requests need (n-1) intervals. Rounded down
		// to the millisecond, so it stays a lower bound.
		pt.MinDurationSec = math.Floor(float64(likely-1)*60/tc.RateLimitRPM*1000) / 1000
	}
	if withProbes {
		pt.ProbeRequests = make([]planProbe, len(p.Requests))
		for i, r := range p.Requests {
			pp := planProbe{ProbeID: r.ProbeID, ProbeSHA256: r.ProbeSHA256, RequestSHA256: r.RequestSHA256, BodyBytes: r.BodyBytes}
			if r.Err != nil {
				pp.RenderError = r.Err.Error()
			}
			pt.ProbeRequests[i] = pp
		}
	}
	return pt
}

func newPlanCmd(g *globals) *cobra.Command {
	var asJSON, noKeys, withProbes bool
	c := &cobra.Command{
		Use:   "plan",
		Short: "Show what a run would send, without sending anything",
		Long: `Render every probe of the corpus for every enabled target, as a run does
first, and print per target: probes, render errors, request bytes, the
requests_sha256 a run will report (equal exactly when every request is
byte-identical: compare it with the last run's before scheduling a change),
the requests of a usual run (one per probe) and the most any run can make
(every extra sample detection can take — detection.screen_samples,
confirm_samples — and every retry to max_attempts), the shortest duration
the rate limit allows, and the output tokens and their cost for both, at
max_tokens per request (none for an endpoint that generates no output:
moderation, a guardrail). With --probes, every probe's request fingerprint
and body size too. Nothing is sent and the database is not opened: a --db
given to plan is ignored, with a warning.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --db is global: accepted (a script may pass run's flags to
			// plan first) but it means nothing here, so say so rather
			// than let it look used.
			if f := cmd.Flags().Lookup("db"); f != nil && f.Changed {
				fmt.Fprintln(g.stderr, "driftprobe: warning: plan: --db is ignored: plan renders the requests a run would send and opens no database (leave --db out)")
			}
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
				out.Targets = append(out.Targets, planFor(cfg, t.Config, runner.Plan(cp, t), withProbes))
			}
			if asJSON {
				return writeJSON(g.stdout, out)
			}
			return writePlan(g.stdout, cp.Name, cp.Version, len(cp.Probes), cp.Hash, out.Targets, withProbes)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON output")
	c.Flags().BoolVar(&noKeys, "no-keys", false, "do not require key environment variables to be set")
	c.Flags().BoolVar(&withProbes, "probes", false, "list every probe's request: id, request_sha256, body bytes")
	return c
}

// writePlan prints the plan as text: one line per target, a legend, and
// with withProbes a table of every probe's request per target.
func writePlan(w io.Writer, name, version string, probes int, hash string, targets []planTarget, withProbes bool) error {
	fmt.Fprintf(w, "corpus %s %s: %s, sha256 %s\n\n", termtext.Clean(name), termtext.Clean(version), termtext.Count(probes, "probe", "probes"), hash)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tPROVIDER\tMODEL\tENDPOINT\tPROBES\tRENDER ERRORS\tREQUEST BYTES\tREQUESTS\tMAX REQUESTS\tMIN DURATION\tOUTPUT TOKENS\tMAX OUTPUT TOKENS\tOUTPUT COST\tMAX OUTPUT COST\tREQUESTS_SHA256")
	for _, t := range targets {
		dur := "-"
		if t.RateLimitRPM > 0 {
			dur = (time.Duration(math.Round(t.MinDurationSec*1000)) * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t$%.4f\t$%.4f\t%s\n", termtext.Clean(t.Target), termtext.Clean(t.Provider), termtext.Clean(t.Model), termtext.Clean(t.Origin),
			t.Probes, t.RenderErrors, t.RequestBytes, t.LikelyRequests, t.MaxRequests, dur, t.LikelyMaxOutputToks, t.MaxOutputToks,
			t.LikelyMaxOutputUSD, t.MaxOutputUSD, t.RequestsSHA256)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(w, `
REQUESTS: one per probe that renders (a usual run; no run answering every probe sends fewer).
MAX REQUESTS: every probe sampled 1 + max(detection.screen_samples, confirm_samples) times, each retried to max_attempts: no run sends more.
MIN DURATION: the least time the rate limit allows REQUESTS (a breaker that opens sends fewer).
OUTPUT TOKENS and COST: max_tokens per request, for REQUESTS and for MAX REQUESTS (input tokens not counted); 0 for an endpoint that generates no output (moderation, guardrail).
`)
	if !withProbes {
		return nil
	}
	for _, t := range targets {
		fmt.Fprintf(w, "\n%s (%s %s): %s\n", termtext.Clean(t.Target), termtext.Clean(t.Provider), termtext.Clean(t.Model), termtext.Count(len(t.ProbeRequests), "probe", "probes"))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PROBE\tREQUEST_SHA256\tBODY BYTES")
		for _, p := range t.ProbeRequests {
			if p.RenderError != "" {
				fmt.Fprintf(tw, "%s\t%s\t-\t%s\n", termtext.Clean(p.ProbeID), p.RequestSHA256, termtext.Clean(p.RenderError))
				continue
			}
			fmt.Fprintf(tw, "%s\t%.12s\t%d\n", termtext.Clean(p.ProbeID), p.RequestSHA256, p.BodyBytes)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
