package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/storage"
)

// Attribute reads production counts from src and attributes every change
// against the session's probe history and corpus. Problems with the
// user's input (a JSONL error, a bad flag, a query Prometheus calls bad
// data) are usage errors; the rest (Prometheus unreachable, the database)
// are runtime failures.
func Attribute(ctx context.Context, s *Session, src attribution.Source, o attribution.Options) (*attribution.Report, error) {
	names := make([]string, 0, len(s.Config.Targets))
	for _, t := range s.Config.Targets {
		names = append(names, t.Name)
	}
	prod, err := src.Load(ctx, names)
	if err != nil {
		if attribution.IsInput(err) {
			return nil, Usage(err)
		}
		return nil, err
	}
	h, err := LoadHistory(ctx, s.Store, s.Corpus, s.Config.ConfirmRuns, s.Config.Detection.ScoreTolerance)
	if err != nil {
		return nil, fmt.Errorf("attribute: reading the probe history: %w", err)
	}
	// The per-run verdicts around a change: traffic needs the probes to
	// have held still, not only the absence of events. They are read only
	// for the changes that get that far, never for a report without one.
	var tags map[string][]string
	if s.Corpus != nil {
		tags = make(map[string][]string, len(s.Corpus.Probes))
		for _, p := range s.Corpus.Probes {
			tags[p.ID] = p.Tags
		}
	}
	rep, err := attribution.AttributeStore(ctx, s.Store, prod, h, tags, o)
	if err != nil {
		return nil, fmt.Errorf("attribute: reading the probe history: %w", err)
	}
	return rep, nil
}

// OpenProduction returns the JSONL source for path ("-": stdin) and a
// closer. A file that cannot be opened, or a directory, is a usage error.
func OpenProduction(path string, stdin io.Reader) (attribution.Source, func(), error) {
	if path == "-" {
		return &attribution.JSONL{Name: "stdin", R: stdin}, func() {}, nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		// os.Open opens a directory; reading it would fail later as a
		// runtime error. Like a missing file, it is the user's input.
		return nil, nil, Usage(fmt.Errorf("%s: --production: is a directory (want a JSONL file, or - for standard input)", path))
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, Usage(fmt.Errorf("%s: --production: %v", path, err))
	}
	return &attribution.JSONL{Name: path, R: f}, func() { f.Close() }, nil
}

// LoadHistory reads what attribution needs from the store: every run with
// its per-target statuses, every event with its flipped probes (their
// corpus tags from cp, else from the probes the store kept; each with the
// last run that answered its old verdict, and whether it left the event
// withdrawn as nondeterministic or moved on rather than flipping back),
// and the corpus coverage per category. A score drift's per-category directions
// count only moves beyond tol (detection.score_tolerance), as detection
// does.
func LoadHistory(ctx context.Context, st *storage.DB, cp *corpus.Corpus, confirmRuns int, tol float64) (*attribution.History, error) {
	h := &attribution.History{Coverage: map[string]int{}, ConfirmRuns: confirmRuns}
	runs, err := st.RunStatuses(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		// A run still running has confirmed nothing yet.
		h.Runs = append(h.Runs, attribution.Run{ID: r.ID, StartedAt: r.StartedAt, Targets: r.Targets,
			Aborted: r.Status == storage.RunAborted || r.Status == storage.RunRunning})
	}
	tags, err := st.ProbeTags(ctx)
	if err != nil {
		return nil, err
	}
	if cp != nil {
		h.CorpusProbes = len(cp.Probes)
		for _, p := range cp.Probes {
			tags[p.ID] = p.Tags
			for _, t := range p.Tags {
				h.Coverage[t]++
			}
		}
	}
	evs, err := diff.ListEvents(ctx, st, diff.Filter{})
	if err != nil {
		return nil, err
	}
	for _, e := range evs {
		ae := attribution.Event{ID: e.ID, Kind: e.Kind, Direction: e.Direction, Targets: e.Targets, NewCategories: e.NewCategories}
		for _, p := range e.Probes {
			f := attribution.Flip{
				Target: p.Target, ProbeID: p.ProbeID, Tags: tags[p.ProbeID],
				Before:   attribution.Verdict{Blocked: p.Before.Class.IsBlock(), Categories: p.Before.Categories},
				After:    attribution.Verdict{Blocked: p.After.Class.IsBlock(), Categories: p.After.Categories},
				FirstRun: p.FirstRun, LastRunBefore: p.LastRunBefore, BeforeRun: p.BeforeRun,
				RevertedRun: p.RevertedRun, Withdrawn: p.Withdrawn, MovedOn: p.MovedOn,
			}
			if e.Kind == diff.KindScoreDrift {
				if f.ScoreDirs, err = scoreDirs(ctx, st, p.BeforeObs, p.AfterObs, tol); err != nil {
					return nil, err
				}
			}
			ae.Flips = append(ae.Flips, f)
		}
		h.Events = append(h.Events, ae)
	}
	return h, nil
}

// scoreDirs reads, from a score drift's observations before and after,
// the way each normalized category's scores moved beyond tol:
// attribution.Up, attribution.Down, or "" when they moved both ways. Only scores
// the provider gave on both sides, under the same raw name, compare. The
// observation before is the one that set the verdict's baseline, so a
// probe that drifted more than once shows its net move since then. Nil
// when nothing compares (or an observation is gone): the event's
// direction then stands.
func scoreDirs(ctx context.Context, st *storage.DB, beforeID, afterID int64, tol float64) (map[string]string, error) {
	if beforeID == 0 || afterID == 0 {
		return nil, nil
	}
	b, err := st.Observation(ctx, beforeID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a, err := st.Observation(ctx, afterID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	before := map[string]float64{}
	for _, s := range b.Result.Signals {
		if s.HasScore && s.Category != "" {
			before[s.Category+"\x00"+s.Raw] = s.Score
		}
	}
	up, down := map[string]bool{}, map[string]bool{}
	for _, s := range a.Result.Signals {
		bv, ok := before[s.Category+"\x00"+s.Raw]
		if !s.HasScore || s.Category == "" || !ok {
			continue
		}
		switch { // within the tolerance is noise, as detection counts it
		case s.Score > bv+tol:
			up[s.Category] = true
		case s.Score < bv-tol:
			down[s.Category] = true
		}
	}
	if len(up) == 0 && len(down) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for c := range up {
		out[c] = attribution.Up
	}
	for c := range down {
		if up[c] {
			out[c] = ""
		} else {
			out[c] = attribution.Down
		}
	}
	return out, nil
}
