package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// RunOptions tune one run.
type RunOptions struct {
	Logger   *slog.Logger
	Progress func(done, total int)
	Sleep    func(ctx context.Context, d time.Duration) error
	Now      func() time.Time
	Client   *http.Client
	Note     string
	Hooks    runner.Options // OnAttempt / OnBreaker observers
}

// RunResult is a run and what detection made of it.
type RunResult struct {
	Summary *runner.Summary
}

// RunOnce performs one run of every enabled target and stores it.
func RunOnce(ctx context.Context, cfg *config.Config, cp *corpus.Corpus, st *storage.DB, targets []*runner.Target, o RunOptions) (*RunResult, error) {
	if n, err := st.AbandonStaleRuns(context.WithoutCancel(ctx), st.Now().Add(-StaleRunCutoff)); err == nil && n > 0 && o.Logger != nil {
		o.Logger.Warn("marked abandoned runs as aborted", "runs", n)
	}
	r := runner.New(runner.Options{
		Config: cfg, Corpus: cp, Store: st, Targets: targets, Client: o.Client, Sleep: o.Sleep, Now: o.Now,
		Progress: o.Progress, Logger: o.Logger, Version: Version, Host: Hostname(), Note: o.Note,
		OnAttempt: o.Hooks.OnAttempt, OnBreaker: o.Hooks.OnBreaker,
	})
	sum, err := r.Run(ctx)
	if err != nil {
		return nil, err
	}
	return &RunResult{Summary: sum}, nil
}

// JSON shapes of `run --json` (the contract in DESIGN.md).
type (
	RunJSON struct {
		RunID         int64        `json:"run_id"`
		Status        string       `json:"status"`
		CorpusVersion string       `json:"corpus_version"`
		CorpusSHA256  string       `json:"corpus_sha256"`
		StartedAt     time.Time    `json:"started_at"`
		DurationSec   float64      `json:"duration_seconds"`
		Targets       []TargetJSON `json:"targets"`
		Events        []any        `json:"events"`
	}
	TargetJSON struct {
		Target         string         `json:"target"`
		Provider       string         `json:"provider"`
		Status         string         `json:"status"`
		Observations   int            `json:"observations"`
		Verdicts       map[string]int `json:"verdicts"`
		RequestsSHA256 string         `json:"requests_sha256"`
		Requests       int            `json:"requests"`
		Retries        int            `json:"retries"`
		BreakerOpened  bool           `json:"breaker_opened"`
		TokensIn       int            `json:"tokens_in"`
		TokensOut      int            `json:"tokens_out"`
		CostUSD        float64        `json:"cost_usd"`
	}
)

// JSON returns the contract shape of the result.
func (r *RunResult) JSON() RunJSON {
	s := r.Summary
	out := RunJSON{RunID: s.RunID, Status: s.Status, CorpusVersion: s.CorpusVersion, CorpusSHA256: s.CorpusHash,
		StartedAt: s.Started.UTC(), DurationSec: s.Duration.Seconds(), Targets: []TargetJSON{}, Events: []any{}}
	for _, t := range s.Targets {
		v := map[string]int{}
		for _, c := range probes.Classes {
			v[string(c)] = t.Counts[c]
		}
		out.Targets = append(out.Targets, TargetJSON{Target: t.Target, Provider: t.Provider, Status: t.Status, Observations: t.Observations,
			Verdicts: v, RequestsSHA256: t.RequestsSHA256, Requests: t.Requests, Retries: t.Retries, BreakerOpened: t.BreakerOpened,
			TokensIn: t.TokensIn, TokensOut: t.TokensOut, CostUSD: t.CostUSD})
	}
	return out
}

// WriteSummary prints a human summary of a run.
func WriteSummary(w io.Writer, r *RunResult) {
	s := r.Summary
	fmt.Fprintf(w, "run %d %s · corpus %s (%.12s) · %d target(s) · %s\n", s.RunID, s.Status, s.CorpusVersion, s.CorpusHash, len(s.Targets), s.Duration.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tSTATUS\tPROBES\tALLOWED\tBLOCKED_IN\tBLOCKED_OUT\tREFUSED\tABUSE\tTRANSIENT\tCLIENT_ERR\tUNAVAIL\tREQUESTS\tCOST_USD\t")
	for _, t := range s.Targets {
		c := t.Counts
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.4f\t\n", t.Target, t.Status, t.Observations,
			c[probes.Allowed], c[probes.BlockedInput], c[probes.BlockedOutput], c[probes.ModelRefusal], c[probes.AbuseBlock],
			c[probes.Transient], c[probes.ClientError], c[probes.FilterUnavailable], t.Requests, t.CostUSD)
	}
	tw.Flush()
	for _, t := range s.Targets {
		var notes []string
		if t.BreakerOpened {
			notes = append(notes, "circuit breaker opened")
		}
		if t.Status == storage.TargetDegraded {
			notes = append(notes, "degraded: this run confirms nothing on this target")
		}
		if t.Counts[probes.AbuseBlock] > 0 {
			notes = append(notes, "ACCOUNT-LEVEL ENFORCEMENT (abuse_block): every user of this account is affected")
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "  %s: %s\n", t.Target, strings.Join(notes, "; "))
		}
	}
}
