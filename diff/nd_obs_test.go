package diff_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/storage"
)

// Every event_probes row of a nondeterminism event cites, on each side,
// an observation that carries the verdict the row claims for that side,
// on the row's target, probe and request bytes: before, the baseline's
// observation (or, when no baseline held, sample 0 of the run the probe
// was marked in, whose answer the row's before is); after, the
// disagreeing sample or the left candidate's observation that answered
// it. Detection used to cite sample 0 of the marking run as the after
// observation whatever it answered, and no before observation at all when
// no baseline held. Real sim runs with near-threshold noise, with
// confirmation by runs and by samples (which marks probes in other
// branches of detection).
func TestNondeterminismRowsCiteTheirVerdictsObservations(t *testing.T) {
	ctx := context.Background()
	type origin struct{ before, after map[string]int }
	total := origin{map[string]int{}, map[string]int{}}
	rows := 0
	for _, c := range []struct{ name, yaml string }{
		{"by runs", "targets:\n  - {name: noisy, provider: sim, model: sim-large, sim: {noise: 0.5, noise_band: 0.3, seed: 3}}\n"},
		{"by samples", "confirm_runs: 3\ntargets:\n  - {name: noisy, provider: sim, model: sim-large, confirm_samples: 2, sim: {noise: 0.5, noise_band: 0.3, seed: 3}}\n"},
		{"one run", "confirm_runs: 1\ntargets:\n  - {name: noisy, provider: sim, model: sim-large, sim: {noise: 0.5, noise_band: 0.3, seed: 4}}\n"},
	} {
		e := testenv.New(t, c.yaml)
		e.Runs(10)
		var tid int64
		if err := e.Store.SQL().QueryRow(`SELECT id FROM targets WHERE name = 'noisy'`).Scan(&tid); err != nil {
			t.Fatal(err)
		}
		for _, ev := range ofKind(events(t, e), diff.KindNondeterminism) {
			for _, p := range ev.Probes {
				rows++
				for _, side := range []struct {
					name  string
					obs   int64
					claim diff.Verdict
					seen  map[string]int
				}{{"before", p.BeforeObs, p.Before, total.before}, {"after", p.AfterObs, p.After, total.after}} {
					where := fmt.Sprintf("%s: event %d, %s %s → %s: %s observation %d", c.name, ev.ID, p.ProbeID, p.Before, p.After, side.name, side.obs)
					if side.obs == 0 {
						t.Errorf("%s: none cited", where)
						continue
					}
					o, err := e.Store.Observation(ctx, side.obs)
					if err != nil {
						t.Errorf("%s: %v", where, err)
						continue
					}
					if got := diff.VerdictOf(o.Result).Key(); got != side.claim.Key() {
						t.Errorf("%s (run %d, sample %d) answered %s, not the row's %s verdict %s", where, o.RunID, o.Sample, got, side.name, side.claim.Key())
					}
					if o.TargetID != tid || o.ProbeID != p.ProbeID || o.RequestSHA256 != p.RequestSHA256 {
						t.Errorf("%s is of target %d, probe %s, bytes %s: not the row's", where, o.TargetID, o.ProbeID, o.RequestSHA256)
					}
					// Where the cited answer comes from, so that the cases
					// the fix is about are known to have been met.
					switch {
					case o.RunID == p.ConfirmedRun && o.Sample == 0:
						side.seen["marking run, sample 0"]++
					case o.RunID == p.ConfirmedRun:
						side.seen["marking run, a disagreeing sample"]++
					default:
						side.seen["an earlier run"]++
					}
				}
			}
		}
	}
	t.Logf("%d rows; before observations: %v; after: %v", rows, total.before, total.after)
	// Not vacuous: rows whose before no baseline held (sample 0 of the
	// marking run, formerly uncited), rows whose after is a disagreeing
	// sample (formerly sample 0, which answered the other verdict), rows
	// whose after is a candidate left in an earlier run.
	if total.before["marking run, sample 0"] == 0 || total.after["marking run, a disagreeing sample"] == 0 || total.after["an earlier run"] == 0 {
		t.Errorf("the scenarios did not cover every case the rows cite (before %v, after %v)", total.before, total.after)
	}
}

// Each way detection marks a probe nondeterministic, scripted: the row
// cites, on each side, the very answer that carried its verdict (a run's
// sample), never sample 0 of the marking run whatever it answered, and a
// before observation also when no baseline held.
func TestNondeterminismRowsCiteTheAnswersByBranch(t *testing.T) {
	const (
		al = "allowed|"
		bo = "blocked_output|violence"
		bi = "blocked_input|violence"
	)
	type at struct{ run, sample int } // 1-based run, sample
	for _, c := range []struct {
		name          string
		runs          [][]string // per run, the samples of probe p
		before, after string
		beforeAt      at
		afterAt       at
	}{
		{"establishing, samples disagree twice", [][]string{{al, bo}, {al, bo}}, al, bo, at{2, 0}, at{2, 1}},
		// While establishing, as against a baseline, a candidate replaced
		// by a new verdict is a change, not a revert: back and forth is a
		// return to the verdict it replaced (runs 3 and 4).
		{"establishing, the candidate goes back and forth", [][]string{{al}, {bo}, {al}, {bo}}, bo, al, at{4, 0}, at{3, 0}},
		{"baseline, a candidate reverts twice", [][]string{{al}, {al}, {bo}, {al}, {bo}, {al}}, al, bo, at{2, 0}, at{5, 0}},
		{"baseline, samples disagree on a third verdict", [][]string{{al}, {al}, {bo, bi}, {bo, bi}}, al, bi, at{2, 0}, at{4, 1}},
		{"baseline, samples disagree with the baseline's verdict", [][]string{{al}, {al}, {bo, al}, {bo, al}}, al, bo, at{2, 0}, at{4, 0}},
		{"baseline, back and forth between two candidates", [][]string{{al}, {al}, {bo}, {bi}, {bo}, {bi}}, al, bo, at{2, 0}, at{5, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSynth(t)
			var sent [][]*storage.Observation
			for _, vs := range c.runs {
				var os []*storage.Observation
				for i, v := range vs {
					os = append(os, obs("p", sha1, i, v))
				}
				s.run(storage.TargetComplete, 0, false, os...)
				sent = append(sent, os)
			}
			if st := s.state("p"); !st.Nondeterministic {
				t.Fatalf("setup: p not marked nondeterministic (state %+v)", st)
			}
			nd := ofKind(s.events(), diff.KindNondeterminism)
			if len(nd) != 1 || len(nd[0].Probes) != 1 {
				t.Fatalf("nondeterminism events %+v: want one, with p", nd)
			}
			p := nd[0].Probes[0]
			if p.Before.Key() != c.before || p.After.Key() != c.after {
				t.Errorf("row %s → %s, want %s → %s", p.Before.Key(), p.After.Key(), c.before, c.after)
			}
			if want := sent[c.beforeAt.run-1][c.beforeAt.sample].ID; p.BeforeObs != want {
				t.Errorf("before_obs %d, want %d (run %d, sample %d: %s)", p.BeforeObs, want, c.beforeAt.run, c.beforeAt.sample, c.before)
			}
			if want := sent[c.afterAt.run-1][c.afterAt.sample].ID; p.AfterObs != want {
				t.Errorf("after_obs %d, want %d (run %d, sample %d: %s)", p.AfterObs, want, c.afterAt.run, c.afterAt.sample, c.after)
			}
		})
	}
}
