package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// Verdict is a class and its sorted categories.
type Verdict struct {
	Verdict    string   `json:"verdict"`
	Categories []string `json:"categories"`
}

func verdictOf(r probes.Result) Verdict {
	c := slices.Clone(r.Categories)
	slices.Sort(c)
	if c == nil {
		c = []string{}
	}
	return Verdict{Verdict: string(r.Class), Categories: c}
}

func (v Verdict) equal(w Verdict) bool {
	return v.Verdict == w.Verdict && slices.Equal(v.Categories, w.Categories)
}

// ReplayDiff is one observation whose stored answer no longer reads as the
// verdict recorded for it, whose stored body no longer has its hash, whose
// stored request (method, path, body, pinned headers) no longer has its
// fingerprint, or whose row is damaged (Damaged).
type ReplayDiff struct {
	ObservationID int64   `json:"observation_id"`
	Target        string  `json:"target"`
	ProbeID       string  `json:"probe_id"`
	Sample        int     `json:"sample"`
	Stored        Verdict `json:"stored"`
	Replayed      Verdict `json:"replayed"`
	BodyIntact    bool    `json:"body_intact"` // the stored body still hashes to body_sha256
	// RequestIntact: the stored request (method, path, body and pinned
	// headers, probes.Fingerprint) still hashes to request_sha256.
	RequestIntact bool `json:"request_intact"`
	// Unreadable says why the stored bodies could not be read back
	// (damaged, not decompressible), or why the row could not be read as
	// an observation at all ("damaged row: column …", with Damaged);
	// Replayed is then empty.
	Unreadable string `json:"unreadable,omitempty"`
	// Damaged lists the columns of a damaged row (storage.ErrDamagedRow)
	// and what each holds instead. Nothing of such a row is trusted:
	// Stored and Replayed are empty, BodyIntact and RequestIntact false,
	// and only the identity its own columns give is shown.
	Damaged []storage.ColumnDamage `json:"damaged_columns,omitempty"`
}

// ReplayReport is the outcome of re-reading a run's stored answers.
type ReplayReport struct {
	RunID    int64 `json:"run_id"`
	Replayed int   `json:"replayed"` // observations with a stored answer, re-classified
	Same     int   `json:"same"`     // read as recorded
	// Skipped observations have no answer to re-read (transport errors,
	// breaker rejections, render errors).
	Skipped int `json:"skipped"`
	// Pruned observations had an answer whose bodies retention dropped:
	// there is nothing left to re-read.
	Pruned int `json:"pruned"`
	// Truncated observations stored only the first max_body_bytes of an
	// answer that was classified whole: the stored bytes cannot reproduce
	// the verdict, so they are not replayed.
	Truncated int `json:"truncated"`
	// Damaged observations are rows that do not read as observations (a
	// column not holding what the schema means): each is listed in Diffs
	// (Damaged) and counted in Replayed.
	Damaged int `json:"damaged"`
	// RunPruned says how far retention pruned the run: "" (not), "bodies"
	// or "observations" (only what events and detection pin is left).
	RunPruned string `json:"run_pruned"`
	// ObservationsDeleted names the targets replayed whose observations of
	// the run retention deleted (all but what events and detection pin):
	// in a run marked "observations", a target retention kept whole (its
	// detection state did not decode) keeps every row and is not named.
	ObservationsDeleted []string     `json:"observations_deleted"`
	Diffs               []ReplayDiff `json:"diffs"`
	// Unconfigured names the run's targets the configuration no longer has
	// (or has with another provider): their observations are not replayed.
	Unconfigured []string `json:"unconfigured"`
}

// Replay re-classifies every stored answer of run runID (of one target when
// only is not "") with the configured targets' current classifiers, offline,
// and reports each observation whose recorded verdict (class and categories)
// the stored bytes no longer read as, or whose stored bytes no longer hash
// to their fingerprints. It shows that a verdict is reproducible from its
// evidence, and what a classifier change would re-read differently. The
// classifier is given the request as stored: method, path, body and the
// pinned headers (storage.Observation.Request). Response headers are not
// stored, so request ids and Retry-After are not compared. A damaged row
// (storage.ErrDamagedRow) is listed as a difference and the replay goes
// on; its recorded verdict is never read.
func Replay(ctx context.Context, st *storage.DB, runID int64, targets []*runner.Target, only string) (*ReplayReport, error) {
	run, err := st.Run(ctx, runID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, Usage(fmt.Errorf("replay: %w", err))
	}
	if err != nil {
		return nil, err
	}
	if run.Status == storage.RunRunning {
		return nil, Usage(fmt.Errorf("replay: run %d is still running (or its process died and no run has marked it aborted since): replay a finished run", runID))
	}
	rts, err := st.RunTargets(ctx, runID)
	if err != nil {
		return nil, err
	}
	if len(rts) == 0 {
		// A run whose process died before it recorded per-target
		// summaries (marked aborted since): its stored answers are
		// replayed all the same, by the targets they belong to.
		if rts, err = st.ObservedTargets(ctx, runID); err != nil {
			return nil, err
		}
	}
	rows, err := st.Targets(ctx)
	if err != nil {
		return nil, err
	}
	provider := map[int64]string{}
	for _, r := range rows {
		provider[r.ID] = r.Provider
	}
	byName := map[string]*runner.Target{}
	for _, t := range targets {
		byName[t.Config.Name] = t
	}
	rep := &ReplayReport{RunID: runID, RunPruned: run.Pruned, ObservationsDeleted: []string{}, Diffs: []ReplayDiff{}, Unconfigured: []string{}}
	found := false
	for _, rt := range rts {
		if only != "" && rt.Target != only {
			continue
		}
		found = true
		t := byName[rt.Target]
		if t == nil || t.Config.Provider != provider[rt.TargetID] {
			rep.Unconfigured = append(rep.Unconfigured, rt.Target)
			continue
		}
		deleted, err := st.TargetRowsPruned(ctx, runID, rt.TargetID)
		if err != nil {
			return nil, err
		}
		if deleted {
			rep.ObservationsDeleted = append(rep.ObservationsDeleted, rt.Target)
		}
		obs, damaged, err := st.ObservationsWithDamage(ctx, runID, rt.TargetID)
		if err != nil {
			return nil, err
		}
		for _, d := range damaged {
			// A finding, like an unreadable body: listed, and the replay
			// goes on. No verdict of the row is shown: it cannot be trusted.
			rep.Replayed++
			rep.Damaged++
			rep.Diffs = append(rep.Diffs, ReplayDiff{ObservationID: d.ID, Target: rt.Target, ProbeID: d.ProbeID, Sample: d.Sample,
				Stored: Verdict{Categories: []string{}}, Replayed: Verdict{Categories: []string{}},
				Unreadable: storage.ProblemDamagedRow + ": " + d.Problem(), Damaged: d.Columns})
		}
		for _, o := range obs {
			if o.HTTPStatus == 0 {
				rep.Skipped++
				continue
			}
			if o.BodiesPruned {
				rep.Pruned++
				continue
			}
			if o.BodyTruncated && o.Result.Reason != "truncated_response" {
				rep.Truncated++
				continue
			}
			b, err := st.ReadBodies(ctx, o.ID)
			if storage.IsCorrupt(err) {
				// SQLite cannot read the row's bodies at all: neither side
				// is checked. Damaged evidence is a finding: list it and
				// go on.
				rep.Replayed++
				rep.Diffs = append(rep.Diffs, ReplayDiff{ObservationID: o.ID, Target: rt.Target, ProbeID: o.ProbeID, Sample: o.Sample, Stored: verdictOf(o.Result), Unreadable: err.Error()})
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("observation %d: %w", o.ID, err)
			}
			// Each side is checked on its own: a damaged response body
			// says nothing of the stored request, and the other way round.
			reqIntact := b.RequestErr == nil && o.RequestFingerprint(b.Request) == o.RequestSHA256
			intact := b.ResponseErr == nil && o.BodyIntact(b.Response)
			if unreadable := errors.Join(b.RequestErr, b.ResponseErr); unreadable != nil {
				// Nothing is re-classified from a side that does not read
				// back; listed, and the replay goes on.
				rep.Replayed++
				rep.Diffs = append(rep.Diffs, ReplayDiff{ObservationID: o.ID, Target: rt.Target, ProbeID: o.ProbeID, Sample: o.Sample, Stored: verdictOf(o.Result),
					BodyIntact: intact, RequestIntact: reqIntact, Unreadable: strings.ReplaceAll(unreadable.Error(), "\n", "; ")})
				continue
			}
			reqBody, body := b.Request, b.Response
			got := verdictOf(runner.Classify(t.Prober, o.Request(reqBody), &probes.Response{Status: o.HTTPStatus, Body: body, Truncated: o.BodyTruncated}))
			want := verdictOf(o.Result)
			rep.Replayed++
			if intact && reqIntact && got.equal(want) {
				rep.Same++
				continue
			}
			rep.Diffs = append(rep.Diffs, ReplayDiff{ObservationID: o.ID, Target: rt.Target, ProbeID: o.ProbeID, Sample: o.Sample, Stored: want, Replayed: got,
				BodyIntact: intact, RequestIntact: reqIntact})
		}
	}
	if only != "" && !found {
		// Say whether the name is known at all: a typo reads differently
		// from a target that did not take part in this run.
		known := slices.ContainsFunc(rows, func(r storage.TargetRow) bool { return r.Name == only })
		_, configured := byName[only]
		has := "no targets"
		if len(rts) > 0 {
			var names []string
			for _, rt := range rts {
				names = append(names, rt.Target)
			}
			has = strings.Join(names, ", ")
		}
		if !known && !configured {
			return nil, Usage(fmt.Errorf("replay: no target %q in the configuration or the database (run %d has %s)", only, runID, has))
		}
		return nil, Usage(fmt.Errorf("replay: target %q took no part in run %d (it has %s)", only, runID, has))
	}
	return rep, nil
}

// String is the one-line summary of r.
func (r *ReplayReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %d: %d answers replayed, %d read as recorded, %d differ", r.RunID, r.Replayed, r.Same, len(r.Diffs))
	if r.Damaged > 0 {
		fmt.Fprintf(&b, " (%d of them damaged rows, which db check lists too)", r.Damaged)
	}
	fmt.Fprintf(&b, ", %d observations without an answer skipped", r.Skipped)
	if r.Pruned > 0 {
		fmt.Fprintf(&b, ", %d whose bodies retention pruned", r.Pruned)
	}
	if r.Truncated > 0 {
		fmt.Fprintf(&b, ", %d stored truncated to max_body_bytes (classified whole; not replayable)", r.Truncated)
	}
	if len(r.ObservationsDeleted) > 0 {
		fmt.Fprintf(&b, "; retention deleted this run's observations of %s, except those events and detection pin", strings.Join(r.ObservationsDeleted, ", "))
	}
	if len(r.Unconfigured) > 0 {
		fmt.Fprintf(&b, "; not in the config (not replayed): %s", strings.Join(r.Unconfigured, ", "))
	}
	return b.String()
}
