package diff_test

import (
	"math"
	"net/http/httptest"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// wantRate checks an event row's flip_rate: changes over the run-to-run
// transitions of the runs that compared the probe's first answer.
func wantRate(t *testing.T, got, want float64, why string) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("flip_rate %.4f, want %.4f: %s", got, want, why)
	}
}

// confirmedAt returns probe's event row, failing unless it was confirmed
// at run.
func confirmedAt(t *testing.T, e *testenv.Env, probe string, run int64) *diff.EventProbe {
	t.Helper()
	p := confirmedRow(t, events(t, e), probe)
	if p == nil || p.ConfirmedRun != run {
		t.Fatalf("%s: %+v, want confirmed at run %d", probe, p, run)
	}
	return p
}

// A probe's flip rate counts only the runs that compared it: runs in which
// its target was away (disabled, or at another endpoint) do not dilute it.
// (It used to divide by every run of the database since the probe was
// first seen, so a probe that flipped once in four compared answers showed
// 1/29 after a month off.)
func TestFlipRateLeavesOutRunsTheTargetWasAway(t *testing.T) {
	const policy = "  - {name: a, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}}\n" +
		"  - {name: keep, provider: sim, model: m}\n"

	t.Run("disabled", func(t *testing.T) {
		e, _ := qaVersionedEnv(t, policy)
		e.Runs(3) // runs 1-2 allowed, run 3 differs (one change)
		setDisabled(t, e, "a", true)
		e.Runs(25) // runs 4-28: a is disabled (keep runs on)
		setDisabled(t, e, "a", false)
		e.Runs(2) // runs 29-30: a new candidate, confirmed at 30
		p := confirmedAt(t, e, "vio-kill-process", 30)
		wantRate(t, p.FlipRate, 1.0/4, "compared in runs 1, 2, 3, 29, 30: one change in four transitions")
	})

	t.Run("other endpoint", func(t *testing.T) {
		x := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 3, Thresholds: map[string]float64{"violence": 0.3}}}}))
		defer x.Close()
		y := httptest.NewServer(sim.NewServer(sim.Config{}))
		defer y.Close()
		e, _ := qaVersionedEnv(t, "  - {name: a, provider: sim, model: m, base_url: "+x.URL+"}\n  - {name: keep, provider: sim, model: m}\n")
		e.Runs(3) // run 3: vio-kill-process differs at x
		setDisabled(t, e, "a", true)
		e.Runs(5) // runs 4-8
		e.Config.Target("a").BaseURL = y.URL
		setDisabled(t, e, "a", false)
		e.Runs(3) // runs 9-11 at y: x's state is parked
		e.Config.Target("a").BaseURL = x.URL
		e.Rebuild()
		e.Run() // run 12 back at x: the candidate it left resumes, confirmed
		p := confirmedAt(t, e, "vio-kill-process", 12)
		wantRate(t, p.FlipRate, 1.0/3, "compared at x in runs 1, 2, 3, 12")
	})
}

// Nor do the runs in which the probe was out of the corpus.
func TestFlipRateLeavesOutRunsTheProbeWasAbsent(t *testing.T) {
	e, dir := qaVersionedEnv(t, "  - {name: a, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}}\n")
	e.Runs(2) // baselines: vio-kill-process allowed
	writeQACorpus(t, dir, "2", without("vio-kill-process"))
	e.Reload()
	e.Runs(4) // runs 3-6: vio-kill-process is away
	writeQACorpus(t, dir, "3", qaProbes)
	e.Reload()
	e.Runs(2) // runs 7-8: it is back, blocked, confirmed at 8
	p := confirmedAt(t, e, "vio-kill-process", 8)
	wantRate(t, p.FlipRate, 1.0/3, "compared in runs 1, 2, 7, 8")
}

// Nor do runs that did not answer it: the target's degraded runs (every
// request failing) compare nothing.
func TestFlipRateLeavesOutRunsThatDidNotAnswer(t *testing.T) {
	e, _ := qaVersionedEnv(t, "  - {name: a, provider: sim, model: m, max_attempts: 1, breaker: {failures: 1000}, sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}}\n")
	e.Runs(3) // run 3: vio-kill-process differs (a candidate)
	setErrors(t, e, "a", 1, 503)
	e.Runs(3) // runs 4-6: every request fails (degraded: breaks no streak)
	setErrors(t, e, "a", 0, 503)
	e.Run() // run 7: the candidate's second run
	p := confirmedAt(t, e, "vio-kill-process", 7)
	wantRate(t, p.FlipRate, 1.0/3, "compared in runs 1, 2, 3, 7")
}
