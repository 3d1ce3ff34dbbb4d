package diff_test

import (
	"net/http/httptest"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// confirmedRow returns the event row of probe on any event, or nil.
func confirmedRow(t *testing.T, evs []*diff.Event, probe string) *diff.EventProbe {
	t.Helper()
	for _, ev := range evs {
		if p := findProbe(ev, probe); p != nil {
			return p
		}
	}
	return nil
}

// A candidate pending when a target is left out of runs (disabled, or
// removed from the config and put back) for longer than a probe's reverts
// are remembered does not survive: one differing answer before it left and
// one weeks later are not two consecutive runs (as for a probe absent from
// the corpus, or a target back at an endpoint it left long ago). A short
// pause keeps it, as a degraded run or a short excursion would.
func TestTargetAwayLongBreaksAPendingCandidate(t *testing.T) {
	const policy = "  - {name: a, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}}\n" +
		"  - {name: keep, provider: sim, model: m}\n"

	t.Run("long", func(t *testing.T) {
		e, _ := qaVersionedEnv(t, policy)
		e.Runs(3) // run 3: vio-kill-process differs from its baseline on a (a candidate)
		setDisabled(t, e, "a", true)
		e.Runs(25) // runs 4-28: a is disabled
		setDisabled(t, e, "a", false)
		e.Run() // run 29: back, still differing: a new candidate, not the old one's second run
		if p := confirmedRow(t, events(t, e), "vio-kill-process"); p != nil {
			t.Fatalf("run 29 confirmed vio-kill-process (first seen run %d) from a candidate left 26 runs before", p.FirstRun)
		}
		e.Run() // run 30: confirmed
		p := confirmedRow(t, events(t, e), "vio-kill-process")
		if p == nil || p.FirstRun != 29 || p.ConfirmedRun != 30 {
			t.Fatalf("vio-kill-process: %+v, want first seen at run 29 and confirmed at 30", p)
		}
	})

	t.Run("short", func(t *testing.T) {
		e, _ := qaVersionedEnv(t, policy)
		e.Runs(3)
		setDisabled(t, e, "a", true)
		e.Runs(2) // runs 4-5
		setDisabled(t, e, "a", false)
		e.Run() // run 6: the candidate's second run
		p := confirmedRow(t, events(t, e), "vio-kill-process")
		if p == nil || p.FirstRun != 3 || p.ConfirmedRun != 6 {
			t.Fatalf("vio-kill-process: %+v, want first seen at run 3 and confirmed at 6", p)
		}
		// Its flip rate leaves the paused runs out (TestFlipRateLeavesOutRunsTheTargetWasAway).
		wantRate(t, p.FlipRate, 1.0/3, "compared in runs 1, 2, 3, 6")
	})
}

// A target back from a long pause at another endpoint parks its state
// with nothing pending: back at the first endpoint one run later, the
// candidate it left before the pause does not resume.
func TestTargetAwayLongThenMovedParksNothingPending(t *testing.T) {
	x := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 3, Thresholds: map[string]float64{"violence": 0.3}}}}))
	defer x.Close()
	y := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer y.Close()
	e, _ := qaVersionedEnv(t, "  - {name: a, provider: sim, model: m, base_url: "+x.URL+"}\n  - {name: keep, provider: sim, model: m}\n")
	e.Runs(3) // run 3: vio-kill-process differs from its baseline at x (a candidate)
	setDisabled(t, e, "a", true)
	e.Runs(25) // runs 4-28
	e.Config.Target("a").BaseURL = y.URL
	setDisabled(t, e, "a", false)
	e.Run() // run 29 at y: x's state is parked
	e.Config.Target("a").BaseURL = x.URL
	e.Rebuild()
	e.Run() // run 30 back at x, still differing: a new candidate
	if p := confirmedRow(t, events(t, e), "vio-kill-process"); p != nil {
		t.Fatalf("run 30 confirmed vio-kill-process (first seen run %d) from a candidate left 27 runs before", p.FirstRun)
	}
	e.Run() // run 31: confirmed
	p := confirmedRow(t, events(t, e), "vio-kill-process")
	if p == nil || p.FirstRun != 30 || p.ConfirmedRun != 31 {
		t.Fatalf("vio-kill-process: %+v, want first seen at run 30 and confirmed at 31", p)
	}
}
