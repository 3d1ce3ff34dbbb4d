package metrics_test

import (
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// A detection state removed from the database (the row `db check` tells
// the operator to delete when it no longer decodes) restarts every probe's
// baseline at the target's next run, as an input change does: a provider
// change at that moment is absorbed into the new baselines. Real runs on
// the simulator:
//
//   - sim-b's probe_states row deleted between runs: its next run records
//     one input change per probe with cause state (run --json counts
//     them), and driftprobe_input_change_*{cause="state"} appear for
//     sim-b at that run's end; the run after records none.
//   - new, a target enabled for the first time in that run, records none:
//     its first baselines restart nothing.
//   - gw moves to another endpoint (its state parked at the first, cause
//     origin), the state parked there is deleted, and gw moves back: the
//     state it left there is gone, every probe restarts with cause state,
//     not as a move to an endpoint never visited (the origin series keeps
//     the first move's time).
func TestInputChangeMetricsStateRemoved(t *testing.T) {
	endA := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer endA.Close()
	endB := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer endB.Close()
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: sim-a, provider: sim, model: m}
  - {name: sim-b, provider: sim, model: m}
  - {name: gw, provider: sim, model: m, base_url: "`+endA.URL+`"}
  - {name: new, provider: sim, model: m, disabled: true}
`)
	r := &inputRuns{t: t, e: e, corpus: e.Corpus}
	n := len(e.Corpus.Probes)
	cfg := e.Config
	set := &metrics.TargetSet{}
	set.Set(enabledNames(cfg), t0)
	reg := collectorRegistry(metrics.NewDBCollector(e.Store.SQL()).OnlyTargets(set))
	names := []string{metrics.InputChangeTimestamp, metrics.InputChangeProbes}
	hour := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	series := func(target, cause string, h, probes int) []string {
		return []string{
			"driftprobe_input_change_probes{cause=" + cause + ",target=" + target + "} " + strconv.Itoa(probes),
			"driftprobe_input_change_timestamp_seconds{cause=" + cause + ",target=" + target + "} " + strconv.FormatFloat(float64(hour(h).Unix()), 'g', -1, 64),
		}
	}
	want := func(ss ...[]string) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s...)
		}
		slices.Sort(out)
		return out
	}
	targetID := func(name string) int64 {
		t.Helper()
		var id int64
		if err := e.Store.SQL().QueryRow(`SELECT id FROM targets WHERE name = ?`, name).Scan(&id); err != nil {
			t.Fatalf("target %s: %v", name, err)
		}
		return id
	}
	// rows counts input_changes of the target by cause.
	rows := func(name string) map[string]int {
		t.Helper()
		out := map[string]int{}
		q, err := e.Store.SQL().Query(`SELECT ic.cause, COUNT(*) FROM input_changes ic JOIN targets t ON t.id = ic.target_id WHERE t.name = ? GROUP BY ic.cause`, name)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		for q.Next() {
			var c string
			var k int
			if err := q.Scan(&c, &k); err != nil {
				t.Fatal(err)
			}
			out[c] = k
		}
		return out
	}
	check := func(what string, got, wantN map[string]int) {
		t.Helper()
		for target, w := range wantN {
			if got[target] != w {
				t.Errorf("%s: run --json: %s input_changes %d, want %d", what, target, got[target], w)
			}
		}
	}

	// Runs 1-2: the first baselines.
	r.run(cfg, hour(0))
	r.run(cfg, hour(1))
	diffLines(t, "baselines only", gathered(t, reg, names...), nil)

	// sim-b's state removed (as db check advises for a damaged row); new
	// enabled for its first run.
	if _, err := e.Store.SQL().Exec(`DELETE FROM probe_states WHERE target_id = ?`, targetID("sim-b")); err != nil {
		t.Fatal(err)
	}
	cfg.Target("new").Disabled = false
	set.Set(enabledNames(cfg), hour(2))
	check("state removed", r.run(cfg, hour(2)), map[string]int{"sim-a": 0, "sim-b": n, "gw": 0, "new": 0})
	if got := rows("sim-b"); got["state"] != n || len(got) != 1 {
		t.Errorf("sim-b input changes by cause %v, want state: %d", got, n)
	}
	if got := rows("new"); len(got) != 0 {
		t.Errorf("a new target's first run recorded input changes %v", got)
	}
	afterRemoval := want(series("sim-b", "state", 2, n))
	diffLines(t, "after the state was removed", gathered(t, reg, names...), afterRemoval)

	// The next run restarts nothing: the state is back.
	check("the run after", r.run(cfg, hour(3)), map[string]int{"sim-a": 0, "sim-b": 0, "gw": 0, "new": 0})
	if got := rows("sim-b"); got["state"] != n {
		t.Errorf("sim-b state rows %d after the next run, want %d", got["state"], n)
	}
	diffLines(t, "the run after", gathered(t, reg, names...), afterRemoval)

	// gw moves away (its state parked at endA), the parked state is
	// removed, and gw moves back.
	cfg.Target("gw").BaseURL = endB.URL
	check("gw moves", r.run(cfg, hour(4)), map[string]int{"gw": n})
	if _, err := e.Store.SQL().Exec(`DELETE FROM parked_states WHERE target_id = ?`, targetID("gw")); err != nil {
		t.Fatal(err)
	}
	cfg.Target("gw").BaseURL = endA.URL
	check("gw back, parked state removed", r.run(cfg, hour(5)), map[string]int{"gw": n, "sim-b": 0, "new": 0})
	if got := rows("gw"); got["origin"] != n || got["state"] != n || len(got) != 2 {
		t.Errorf("gw input changes by cause %v, want origin: %d (the move away), state: %d (the move back)", got, n, n)
	}
	diffLines(t, "gw back at an endpoint whose state was removed", gathered(t, reg, names...),
		want(afterRemoval, series("gw", "origin", 4, n), series("gw", "state", 5, n)))
	if got := rows("new"); len(got) != 0 {
		t.Errorf("new: input changes %v", got)
	}
}
