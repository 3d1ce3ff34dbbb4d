package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/probes/wire"
	"github.com/driftprobe/driftprobe/storage"
)

// AttributionSummary is the `attribution` object of `run --json`: what the
// continuous attribution after the run found, or why it failed.
//
// In JSON, series, changes and uncovered_categories are present exactly
// when the attribution produced a report (Changes is not nil), 0 counts
// included; an attribution that failed has report_id and error only. A
// report made but not stored has the counts and the error.
type AttributionSummary struct {
	// ReportID is the attribution_reports row (0 when it could not be stored).
	ReportID int64 `json:"report_id,omitempty"`
	// Series analyzed, changes by attribution (provider, traffic,
	// inconclusive: every key present) and uncovered categories; only when
	// the attempt succeeded.
	Series    int            `json:"series"`
	Changes   map[string]int `json:"changes,omitempty"`
	Uncovered int            `json:"uncovered_categories"`
	// Error is why the attempt failed (Prometheus unreachable, bad data,
	// the database), or "" when it succeeded.
	Error string `json:"error,omitempty"`
}

// MarshalJSON leaves the counts out when there is no report: a failed
// attribution analyzed no series, it did not find 0 of them.
func (s AttributionSummary) MarshalJSON() ([]byte, error) {
	type plain AttributionSummary // the same fields without this method
	if s.Changes != nil {
		return json.Marshal(plain(s))
	}
	return json.Marshal(struct {
		ReportID int64  `json:"report_id,omitempty"`
		Error    string `json:"error,omitempty"`
	}{s.ReportID, s.Error})
}

// PrometheusSource returns the range query a describes over the range
// ending at end, both ends on the step grid (attribution.AlignRange), as
// `driftprobe attribute --prometheus` builds it from its flags.
func PrometheusSource(a *config.Attribution, end time.Time) *attribution.Prometheus {
	start, stop := attribution.AlignRange(end.UTC(), a.Since.D(), a.Step.D())
	return &attribution.Prometheus{URL: a.Prometheus, Query: a.Query, TotalQuery: a.TotalQuery,
		TargetLabel: a.TargetLabel, CategoryLabel: a.CategoryLabel, Start: start, End: stop, Step: a.Step.D()}
}

// AttributionOptions returns the detection options and tolerance the
// config's attribution block sets (its defaults filled by config).
func AttributionOptions(a *config.Attribution) attribution.Options {
	return attribution.Options{
		Detect:    attribution.DetectOptions{MinZ: a.MinZ, MinPoints: a.MinPoints, MinChange: a.MinChange, MinRateChange: a.MinRateChange},
		Tolerance: a.Tolerance.D(),
	}
}

// storeBudget bounds storing an attribution outcome, apart from the
// attribution's own budget.
const storeBudget = 30 * time.Second

// maxErrorText bounds the error text stored with a failed attempt.
const maxErrorText = 2000

// AttributeAfterRun runs the attribution the config's block describes
// (s.Config.Attribution, which must be set) over the range ending at end,
// and stores the outcome for run runID: the report's JSON, or the error
// with no report. It never fails: a failed query or store is logged and
// reported in the summary's Error. The caller holds the run lease.
func AttributeAfterRun(ctx context.Context, s *Session, runID int64, end time.Time, logger *slog.Logger) *AttributionSummary {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := s.Config.Attribution
	sum := &AttributionSummary{}
	row := storage.AttributionReport{RunID: runID}
	rep, err := Attribute(ctx, s, PrometheusSource(a, end), AttributionOptions(a))
	if err == nil {
		row.Report, err = json.Marshal(rep)
	}
	if err != nil {
		sum.Error = wire.Shorten(fmt.Sprintf("attribution: %v", err), maxErrorText)
		row.Report, row.Error = nil, sum.Error
		logger.Error("attribution failed; the run is recorded", "run", runID, "err", err)
	} else {
		sum.Series, sum.Uncovered = rep.Series, len(rep.Uncovered)
		sum.Changes = map[string]int{attribution.Provider: 0, attribution.Traffic: 0, attribution.Inconclusive: 0}
		for _, c := range rep.Changes {
			sum.Changes[c.Attribution]++
		}
		logger.Info("attribution", "run", runID, "series", rep.Series, "provider", sum.Changes[attribution.Provider],
			"traffic", sum.Changes[attribution.Traffic], "inconclusive", sum.Changes[attribution.Inconclusive], "uncovered", sum.Uncovered)
	}
	// Stored even when the attribution ran out of its budget (a hung
	// Prometheus): the failure is what the metrics and alerts must see.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeBudget)
	defer cancel()
	id, err := s.Store.SaveAttributionReport(sctx, row, storage.AttributionReportsKept)
	if err != nil {
		logger.Error("attribution report not stored", "run", runID, "err", err)
		if sum.Error == "" {
			sum.Error = err.Error()
		}
		return sum
	}
	sum.ReportID = id
	return sum
}

// StoredAttribution returns the latest successful attribution report a run
// stored, the one the metrics and alerts show, and says on w which run made
// it and whether a later attempt failed. No stored report is a usage error.
func StoredAttribution(ctx context.Context, st *storage.DB, w io.Writer) (*attribution.Report, error) {
	latest, ok, err := storage.LatestAttributionReports(ctx, st.SQL())
	if err != nil {
		return nil, err
	}
	if ok == nil && latest != nil {
		// Attempts were made; none succeeded.
		return nil, Usage(fmt.Errorf("attribute --stored: no successful attribution report stored: the latest attempt, after run %d, failed: %s", latest.RunID, attribution.Safe(latest.Error)))
	}
	if ok == nil {
		return nil, Usage(errors.New("attribute --stored: no attribution report stored (set an attribution: block in the config; every run then stores one)"))
	}
	var rep attribution.Report
	if err := json.Unmarshal(ok.Report, &rep); err != nil {
		return nil, fmt.Errorf("attribution report %d: %w", ok.ID, err)
	}
	fmt.Fprintf(w, "stored report %d, made after run %d at %s\n", ok.ID, ok.RunID, ok.CreatedAt.UTC().Format(time.RFC3339))
	if latest != nil && !latest.OK() {
		fmt.Fprintf(w, "the latest attempt, after run %d at %s, failed: %s\n", latest.RunID, latest.CreatedAt.UTC().Format(time.RFC3339), attribution.Safe(latest.Error))
	}
	return &rep, nil
}
