package diff_test

import (
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// No classifier change at all (Reclassify is the prober's own reading).
// Run 3 starts a score drift (privacy -0.2, scores A). In run 4 the
// provider answers the privacy probes with another verdict (threshold
// 0.01) and scores B (-0.4): a candidate, no scoreDrift call, driftScores
// stays A. In run 5 the verdict is back with scores B, 0.2 from A: the
// drift must start over (first_run 5, confirmed run 6), as before
// 6691d76. driftReadAnew instead reads run 4's answer (the target's
// previous run) — an answer that is not the drift's — finds B, and
// continues the drift: confirmed in run 5 with first_run 3, from scores
// A that were seen once.
func TestReviewLastDriftContinuedThroughOtherVerdict(t *testing.T) {
	e := testenv.New(t, oneSim(`{from_run: 3, score_shift: {privacy: -0.2}}`, `{from_run: 4, score_shift: {privacy: -0.4}, thresholds: {privacy: 0.01}}`, `{from_run: 5, thresholds: {privacy: 0.3}}`))
	e.Runs(6)
	for _, ev := range ofKind(events(t, e), diff.KindScoreDrift) {
		for _, pr := range ev.Probes {
			if !strings.HasPrefix(pr.ProbeID, "privacy-positive") {
				continue
			}
			var run int64
			if err := e.Store.SQL().QueryRow(`SELECT run_id FROM observations WHERE id = ?`, pr.AfterObs).Scan(&run); err != nil {
				t.Fatal(err)
			}
			t.Logf("event %d (first %d): %s confirmed on the answer of run %d", ev.ID, ev.FirstRun, pr.ProbeID, run)
			if run != 6 {
				t.Errorf("%s: score drift confirmed in run %d, want 6: run 5's scores (0.2 from run 3's) start a new drift, and run 4 answered another verdict; no classifier changed", pr.ProbeID, run)
			}
		}
	}
}

func dumpObs(t *testing.T, e *testenv.Env, like string) {
	rows, err := e.Store.SQL().Query(`SELECT run_id, probe_id, class, categories, 1 FROM observations WHERE sample = 0 AND probe_id LIKE ? ORDER BY probe_id, run_id`, like)
	if err != nil {
		t.Log(err)
		return
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		rows.Scan(ptrs...)
		t.Logf("%v", vals)
	}
}

// As above, with run 4 degraded (some requests fail for good) instead of
// another verdict: a degraded run "confirms nothing, breaks no streak",
// so its answers must not carry a drift either. Run 4 answers the privacy
// probes with their baseline verdict and scores B (-0.4); detection skips
// them (degraded), driftScores stays run 3's A. Run 5 (scores B, 0.2 from
// A) must start the drift over (confirmed run 6); driftReadAnew reads the
// degraded run's answer (the target's previous run), finds B, and
// continues it: confirmed in run 5 on a streak the degraded run made.
func TestReviewLastDriftContinuedThroughDegradedRun(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
detection: {degraded_fraction: 0.01}
targets:
  - name: a
    provider: sim
    model: m
    max_attempts: 1
    breaker: {failures: 1000}
    sim:
      error_status: 503
      seed: 7
      policies:
        - {from_run: 3, score_shift: {privacy: -0.2}}
        - {from_run: 4, score_shift: {privacy: -0.4}, thresholds: {privacy: 0.3}}
`)
	e.Runs(3)
	e.Config.Targets[0].Sim.ErrorRate = 0.1
	e.Reload()
	r4 := e.Run()
	t.Logf("run 4: %+v", r4.Detection)
	dumpObs(t, e, "privacy-positive%")
	e.Config.Targets[0].Sim.ErrorRate = 0
	e.Reload()
	e.Runs(2)
	for _, ev := range ofKind(events(t, e), diff.KindScoreDrift) {
		for _, pr := range ev.Probes {
			if !strings.HasPrefix(pr.ProbeID, "privacy-positive") {
				continue
			}
			var run int64
			if err := e.Store.SQL().QueryRow(`SELECT run_id FROM observations WHERE id = ?`, pr.AfterObs).Scan(&run); err != nil {
				t.Fatal(err)
			}
			t.Logf("event %d (first %d): %s confirmed on the answer of run %d", ev.ID, ev.FirstRun, pr.ProbeID, run)
			if run != 6 {
				t.Errorf("%s: score drift confirmed in run %d, want 6: run 4 was degraded (confirms nothing), run 5's scores are 0.2 from run 3's", pr.ProbeID, run)
			}
		}
	}
}
