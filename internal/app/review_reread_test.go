package app_test

import (
	"context"
	"testing"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/sim"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// rereadUpgraded is the sim prober with a classifier that reads every
// block with one more category: a driftprobe upgrade.
type rereadUpgraded struct{ *sim.Prober }

func (u rereadUpgraded) Classify(req *probes.Request, resp *probes.Response) probes.Result {
	r := u.Prober.Classify(req, resp)
	if r.Class.IsBlock() {
		r.Categories = probes.SortedUnique(append(r.Categories, probes.CatOther))
	}
	return r
}

// Review of b1613ac: detectMissed → detectRun builds its TargetRuns
// without Reclassify (run.go:385), so a run taken by the upgraded binary
// whose detection did not commit (the process was killed between run and
// detection, or detection failed and "the next run detects it") is
// detected by the next RunOnce comparing the upgraded readings with the
// un-re-read baselines: with confirm_runs 1 (or confirm_samples) every
// re-read probe is a confirmed false policy change; with the default
// confirm_runs 2 each gets a spurious revert toward nondeterminism.
func TestReviewRereadMissedRunAfterUpgradeIsNoFlip(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 1
targets:
  - name: a
    provider: sim
    model: m
`)
	ctx := context.Background()
	e.Runs(3)
	tg := e.Target("a")
	tg.Prober = rereadUpgraded{tg.Prober.(*sim.Prober)}
	// The first run of the upgraded binary is recorded, but its process
	// dies before detection commits: the runner alone.
	sum, err := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep}).Run(ctx)
	if err != nil || sum.Status != storage.RunComplete {
		t.Fatalf("run 4: %v %+v", err, sum)
	}
	e.Run() // run 5 detects run 4 first (detectMissed), then itself
	evs, err := diff.ListEvents(ctx, e.Store, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 0 {
		t.Errorf("the upgrade opened %d event(s) through the missed run's detection: first %s %s confirmed in run %d, %d probe(s)",
			len(evs), evs[0].Kind, evs[0].Direction, evs[0].ConfirmedRun, len(evs[0].Probes))
	}
}

// rereadScaled reads every score half again as high (plus 0.2): an
// upgrade that reads scores otherwise.
type rereadScaled struct{ *sim.Prober }

func (u rereadScaled) Classify(req *probes.Request, resp *probes.Response) probes.Result {
	r := u.Prober.Classify(req, resp)
	sigs := make([]probes.Signal, len(r.Signals))
	for i, s := range r.Signals {
		if s.HasScore {
			s.Score = s.Score*1.5 + 0.2
		}
		sigs[i] = s
	}
	r.Signals = sigs
	return r
}

// Review of b1613ac: after the score baseline is re-read
// (st.baselineScores replaced, st.scoresObs kept), a real score drift
// cites a before observation whose stored scores are the old reading.
// Attribution's scoreDirs (attribute.go:140) compares the cited
// observations' stored scores: old reading before, new reading after,
// so a drift the event records as loosened (privacy scores down 0.2)
// reads as privacy going up.
func TestReviewRereadScoreDriftDirectionsInAttribution(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - name: a
    provider: sim
    model: m
    sim:
      policies:
        - {from_run: 8, score_shift: {privacy: -0.2}}
`)
	ctx := context.Background()
	e.Runs(3)
	tg := e.Target("a")
	tg.Prober = rereadScaled{tg.Prober.(*sim.Prober)}
	e.Runs(6) // runs 4–9: re-read at 4, a real drift confirmed at 9
	h, err := app.LoadHistory(ctx, e.Store, e.Corpus, 2, 0.15)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range h.Events {
		if ev.Kind != diff.KindScoreDrift {
			continue
		}
		n++
		if ev.Direction != diff.Loosened {
			t.Fatalf("drift direction %s, want loosened", ev.Direction)
		}
		for _, f := range ev.Flips {
			if f.ScoreDirs["privacy"] == attribution.Up {
				t.Errorf("%s: attribution reads privacy as going up (%v) in a drift the provider made down by 0.2", f.ProbeID, f.ScoreDirs)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d score_drift events, want 1", n)
	}
}
