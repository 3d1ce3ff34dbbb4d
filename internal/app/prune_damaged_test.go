package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// Retention cutoffs that take every run started before the prune.
var (
	pruneAllBodies       = config.Retention{Bodies: config.Duration(time.Nanosecond)}
	pruneAllObservations = config.Retention{Observations: config.Duration(time.Nanosecond)}
)

// storedRows maps every observation of the target name to whether it
// still holds its bodies, by observation id.
func storedRows(t *testing.T, e *testenv.Env, name string) map[int64]bool {
	t.Helper()
	rows, err := e.Store.SQL().Query(`SELECT o.id, o.body IS NOT NULL AND o.request_body IS NOT NULL FROM observations o
		JOIN targets t ON t.id = o.target_id WHERE t.name = ?`, name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		var bodies bool
		if err := rows.Scan(&id, &bodies); err != nil {
			t.Fatal(err)
		}
		out[id] = bodies
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// inKeptRuns is the set of observations of runs retention keeps whole
// (pins.Runs).
func inKeptRuns(t *testing.T, e *testenv.Env, pins diff.Pins) map[int64]bool {
	t.Helper()
	out := map[int64]bool{}
	for _, run := range pins.Runs {
		rows, err := e.Store.SQL().Query(`SELECT id FROM observations WHERE run_id = ?`, run)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			out[id] = true
		}
		rows.Close()
	}
	return out
}

// checkPrunedAsUsual fails unless the target name was pruned as retention
// prunes every target when nothing is damaged: with bodies (level
// "bodies") or rows ("observations") gone but for its pinned observations
// and the runs kept whole; and something of it was pruned.
func checkPrunedAsUsual(t *testing.T, e *testenv.Env, name, level string, before map[int64]bool) {
	t.Helper()
	pins, err := diff.LoadPins(context.Background(), e.Store)
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[int64]bool{}
	for _, id := range pins.Observations {
		pinned[id] = true
	}
	keptRuns := inKeptRuns(t, e, pins)
	after := storedRows(t, e, name)
	pruned := 0
	for id, hadBodies := range before {
		bodies, there := after[id]
		keep := pinned[id] || keptRuns[id]
		switch {
		case keep && (!there || bodies != hadBodies):
			t.Errorf("%s: observation %d (pinned or in a kept run) pruned: there %v, bodies %v", name, id, there, bodies)
		case keep:
		case level == storage.PrunedBodies && (!there || bodies):
			t.Errorf("%s: observation %d: there %v, bodies %v; want its row without bodies", name, id, there, bodies)
		case level == storage.PrunedObservations && there:
			t.Errorf("%s: observation %d still there, want it deleted", name, id)
		case hadBodies || level == storage.PrunedObservations:
			pruned++
		}
	}
	if pruned == 0 {
		t.Errorf("%s: nothing of it was pruned (%d observations)", name, len(before))
	}
}

// sameRows fails unless the target's observations are exactly want
// (every row there, with its bodies).
func sameRows(t *testing.T, e *testenv.Env, name, when string, want map[int64]bool) {
	t.Helper()
	got := storedRows(t, e, name)
	if len(got) != len(want) {
		t.Errorf("%s: %s has %d observations, want all %d kept", when, name, len(got), len(want))
	}
	for id, bodies := range want {
		if b, ok := got[id]; !ok || b != bodies {
			t.Errorf("%s: %s's observation %d: there %v, bodies %v; want it as it was (bodies %v)", when, name, id, ok, b, bodies)
		}
	}
}

// keptTarget returns the only target pr kept whole, failing unless there is
// exactly one.
func keptTarget(t *testing.T, what string, pr storage.PruneResult) storage.KeptTarget {
	t.Helper()
	if len(pr.KeptTargets) != 1 {
		t.Fatalf("%s: kept targets %+v, want one", what, pr.KeptTargets)
	}
	return pr.KeptTargets[0]
}

// A target whose detection state (probe_states row) does not decode no
// longer suspends retention for every target: the prune keeps every
// observation of that target, bodies included (what its state pins cannot
// be read), prunes the other target as usual, and says which target it
// kept whole and why (the result's KeptTargets, run --json's pruned, a
// WARN log line of each run's prune). Once the row is removed, as db
// check advises, the next prune prunes that target as usual.
func TestPruneKeepsDamagedTargetWhole(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
retention: {observations: 1000d}
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
`)
	ctx := context.Background()
	e.Runs(3) // baselines held on both; each run's prune has nothing to do
	tb, err := e.Store.TargetByName(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.SQL().Exec(`UPDATE probe_states SET states = x'00ff00ff' WHERE target_id = ?`, tb.ID); err != nil {
		t.Fatal(err)
	}
	del := fmt.Sprintf("DELETE FROM probe_states WHERE target_id = %d", tb.ID)

	// A run's own prune (retention configured) reports b kept whole
	// instead of failing.
	var logs bytes.Buffer
	res, err := app.RunOnce(ctx, e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pruned == nil || res.JSON().Pruned != res.Pruned {
		t.Fatalf("run with b's state damaged: pruned %+v, want the prune's result (in run --json too); log:\n%s", res.Pruned, logs.String())
	}
	if k := keptTarget(t, "the run's prune", *res.Pruned); k.Target != "b" || k.TargetID != tb.ID || !strings.Contains(k.Reason, "detection state does not decode") || !strings.Contains(k.Reason, del) {
		t.Errorf("the run's prune kept %+v, want b with its row and the DELETE", k)
	}
	if l := logs.String(); strings.Contains(l, `msg=prune `) || !strings.Contains(l, `level=WARN msg="prune kept every observation of a target`) ||
		!strings.Contains(l, "target=b ") || !strings.Contains(l, del) {
		t.Errorf("log, want a WARN naming b and its row, no failed prune:\n%s", l)
	}

	aRows, bRows := storedRows(t, e, "a"), storedRows(t, e, "b")
	prune := func(what string, r config.Retention, dryRun bool) storage.PruneResult {
		t.Helper()
		pr, err := app.Prune(ctx, e.Store, r, dryRun)
		if err != nil {
			t.Fatalf("%s: %v, want the other targets pruned", what, err)
		}
		return pr
	}
	dry := prune("dry run", pruneAllBodies, true)
	if k := keptTarget(t, "dry run", dry); k.Target != "b" || k.Observations == 0 || dry.BodiesDropped == 0 {
		t.Errorf("dry run: %+v, want a's bodies dropped and b's observations counted as kept", dry)
	}
	sameRows(t, e, "a", "after the dry run", aRows)
	sameRows(t, e, "b", "after the dry run", bRows)

	pr := prune("bodies", pruneAllBodies, false)
	if k := keptTarget(t, "bodies", pr); k.Target != "b" || k.Observations != keptTarget(t, "dry run", dry).Observations || pr.BodiesDropped != dry.BodiesDropped {
		t.Errorf("bodies: %+v, dry run said %+v", pr, dry)
	}
	checkPrunedAsUsual(t, e, "a", storage.PrunedBodies, aRows)
	sameRows(t, e, "b", "bodies pruned", bRows)

	pr = prune("observations", pruneAllObservations, false)
	if k := keptTarget(t, "observations", pr); k.Target != "b" || k.Observations == 0 || pr.ObservationsDeleted == 0 {
		t.Errorf("observations: %+v, want a's deleted and b's kept", pr)
	}
	checkPrunedAsUsual(t, e, "a", storage.PrunedObservations, aRows)
	sameRows(t, e, "b", "observations pruned", bRows)

	// The row removed: the next prune prunes b as usual (its rows in runs
	// already pruned, from what the earlier prunes listed as kept).
	if _, err := e.Store.SQL().Exec(del); err != nil {
		t.Fatal(err)
	}
	pr = prune("after the DELETE", pruneAllObservations, false)
	if len(pr.KeptTargets) != 0 || pr.ObservationsDeleted == 0 {
		t.Errorf("after the DELETE: %+v, want b's observations deleted, no target kept", pr)
	}
	checkPrunedAsUsual(t, e, "b", storage.PrunedObservations, bRows)
	var listed int
	if err := e.Store.SQL().QueryRow(`SELECT COUNT(*) FROM pruned_kept k JOIN observations o ON o.id = k.observation_id WHERE o.target_id = ?`, tb.ID).Scan(&listed); err != nil || listed != 0 {
		t.Errorf("b's observations still listed as kept: %d (%v)", listed, err)
	}
}

// The same for a state parked at an endpoint the target left
// (parked_states row): its detection at its current endpoint works, but
// what the parked state pins cannot be read, so retention keeps every
// observation of the target, at both endpoints, while the other target is
// pruned; once the parked row is removed, the next prune prunes the target
// as usual (its current state's pins kept).
func TestPruneKeepsTargetWithDamagedParkedStateWhole(t *testing.T) {
	urlA := testenv.SimServer(t)
	urlB := testenv.SimServer(t)
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: gw, provider: sim, model: m, base_url: "`+urlA+`"}
`)
	ctx := context.Background()
	e.Runs(2) // gw's baselines at A
	e.Config.Target("gw").BaseURL = urlB
	e.Rebuild()
	e.Runs(2) // A's state parked; gw's baselines at B
	gw, err := e.Store.TargetByName(ctx, "gw")
	if err != nil {
		t.Fatal(err)
	}
	originA := probes.URLOrigin(urlA)
	r, err := e.Store.SQL().Exec(`UPDATE parked_states SET states = x'00ff00ff' WHERE target_id = ? AND origin = ?`, gw.ID, originA)
	if n, _ := r.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("damage gw's parked state at A: %d rows, %v", n, err)
	}
	del := fmt.Sprintf("DELETE FROM parked_states WHERE target_id = %d AND origin = '%s'", gw.ID, originA)

	aRows, gwRows := storedRows(t, e, "a"), storedRows(t, e, "gw")
	pr, err := app.Prune(ctx, e.Store, pruneAllObservations, false)
	if err != nil {
		t.Fatalf("prune with gw's parked state damaged: %v, want the other targets pruned", err)
	}
	if k := keptTarget(t, "prune", pr); k.Target != "gw" || k.Observations == 0 ||
		!strings.Contains(k.Reason, "parked detection state at "+originA+" does not decode") || !strings.Contains(k.Reason, del) {
		t.Errorf("prune kept %+v, want gw with its parked row and the DELETE", k)
	}
	checkPrunedAsUsual(t, e, "a", storage.PrunedObservations, aRows)
	sameRows(t, e, "gw", "pruned", gwRows)

	if _, err := e.Store.SQL().Exec(del); err != nil {
		t.Fatal(err)
	}
	pr, err = app.Prune(ctx, e.Store, pruneAllObservations, false)
	if err != nil || len(pr.KeptTargets) != 0 {
		t.Fatalf("prune after the DELETE: %+v, %v; want no target kept", pr, err)
	}
	checkPrunedAsUsual(t, e, "gw", storage.PrunedObservations, gwRows)
}

// Only a state that does not decode is pinned conservatively: any other
// failure to read the pins (a cancelled context, the database failing the
// read of a target's state or of the parked states) still fails the
// prune, which changes nothing.
func TestPruneStillFailsOnOtherErrors(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
  - {name: c, provider: sim, model: m}
`)
	e.Runs(2)
	exec := func(q string) {
		t.Helper()
		if _, err := e.Store.SQL().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`UPDATE probe_states SET states = x'00ff00ff' WHERE target_id = (SELECT id FROM targets WHERE name = 'b')`)
	aRows := storedRows(t, e, "a")
	prune := func(ctx context.Context) error {
		_, err := app.Prune(ctx, e.Store, pruneAllObservations, false)
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := prune(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("prune under a cancelled context: %v, want it to fail with context.Canceled", err)
	}
	// c's state read fails in the database (not a blob that does not
	// decode): an error evaluating the row, as an I/O error would be.
	exec(`ALTER TABLE probe_states RENAME TO probe_states_real`)
	exec(`CREATE VIEW probe_states AS SELECT target_id, CASE WHEN target_id = (SELECT id FROM targets WHERE name = 'c') THEN json('{x') ELSE states END AS states FROM probe_states_real`)
	if err := prune(context.Background()); err == nil || !strings.Contains(err.Error(), "malformed JSON") {
		t.Errorf("prune with c's state unreadable: %v, want it to fail", err)
	}
	exec(`DROP VIEW probe_states`)
	exec(`ALTER TABLE probe_states_real RENAME TO probe_states`)
	// parked_states, read after the damaged probe_states row: its query
	// failing fails the prune, the damage found before notwithstanding.
	exec(`ALTER TABLE parked_states RENAME TO parked_states_gone`)
	if err := prune(context.Background()); err == nil || !strings.Contains(err.Error(), "no such table: parked_states") {
		t.Errorf("prune with parked_states unreadable: %v, want it to fail", err)
	}
	sameRows(t, e, "a", "after the failed prunes", aRows)
	exec(`ALTER TABLE parked_states_gone RENAME TO parked_states`)
	if err := prune(context.Background()); err != nil {
		t.Fatalf("prune with only b's state damaged: %v", err)
	}
	checkPrunedAsUsual(t, e, "a", storage.PrunedObservations, aRows)
}
