package diff_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes"
)

// targetID is the id of the target name in e's database.
func targetID(t *testing.T, e *testenv.Env, name string) int64 {
	t.Helper()
	tr, err := e.Store.TargetByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return tr.ID
}

// runOnce is one run, whose error fails the test.
func runOnce(t *testing.T, e *testenv.Env, what string) *app.RunResult {
	t.Helper()
	res, err := app.RunOnce(context.Background(), e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep})
	if err != nil {
		t.Fatalf("%s: %v, want the run detected for its other targets", what, err)
	}
	return res
}

// failedOf is the failure detection reported for target in r ("" when none).
func failedOf(r *app.RunResult, target string) string {
	for _, f := range r.Detection.Failed {
		if f.Target == target {
			return f.Err
		}
	}
	return ""
}

// A target whose detection state does not decode stops that target's
// detection, not the run's: the other target's answers are detected (its
// policy change confirmed and recorded as an event), the run is marked
// detected, and the damaged target is reported failed (Result.Failed, with
// the row and the statement that removes it; run --json's detection_error;
// the summary; DetectionFailed, run's exit 3 and serve's failed run). Its
// row is left as it was. Once the row is removed, its detection resumes:
// every probe's baseline restarts, recorded as input changes with cause
// state.
func TestDamagedStateStopsOnlyItsTarget(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.01}}]}}
  - {name: b, provider: sim, model: m}
`)
	ctx := context.Background()
	n := len(e.Corpus.Probes)
	e.Runs(2) // baselines hold on both targets
	b := targetID(t, e, "b")
	if _, err := e.Store.SQL().Exec(`UPDATE probe_states SET states = x'00ff00ff' WHERE target_id = ?`, b); err != nil {
		t.Fatal(err)
	}
	var updated int64
	if err := e.Store.SQL().QueryRow(`SELECT updated_run FROM probe_states WHERE target_id = ?`, b).Scan(&updated); err != nil {
		t.Fatal(err)
	}
	var last *app.RunResult
	for _, run := range []int64{3, 4} {
		what := fmt.Sprintf("run %d, b's state damaged", run)
		r := runOnce(t, e, what)
		last = r
		if r.Summary.RunID != run {
			t.Fatalf("%s: run id %d", what, r.Summary.RunID)
		}
		msg := failedOf(r, "b")
		if len(r.Detection.Failed) != 1 || !strings.Contains(msg, fmt.Sprintf("detection state of target %d: corrupt probe state", b)) ||
			!strings.Contains(msg, fmt.Sprintf("DELETE FROM probe_states WHERE target_id = %d", b)) {
			t.Errorf("%s: failed %+v, want b's, naming its row and how to remove it", what, r.Detection.Failed)
		}
		if len(r.Detection.Stats) != 1 || r.Detection.Stats[0].Target != "a" {
			t.Errorf("%s: stats %+v, want a's only", what, r.Detection.Stats)
		}
		err := app.DetectionFailed(r)
		if !errors.Is(err, app.ErrDetectionFailed) || !strings.Contains(err.Error(), "target b: ") || !strings.Contains(err.Error(), "db check") {
			t.Errorf("%s: DetectionFailed %v, want b named with the remedy", what, err)
		}
		for _, js := range r.JSON().Targets {
			if (js.DetectionError != nil) != (js.Target == "b") || (js.DetectionError != nil && *js.DetectionError != msg) {
				t.Errorf("%s --json: %s detection_error %v", what, js.Target, js.DetectionError)
			}
		}
		var sum bytes.Buffer
		app.WriteSummary(&sum, r)
		if !strings.Contains(sum.String(), "b: DETECTION FAILED") {
			t.Errorf("%s: the summary does not report b's failed detection:\n%s", what, sum.String())
		}
		if ids, err := e.Store.UndetectedRuns(ctx); err != nil || len(ids) != 0 {
			t.Errorf("%s: undetected runs %v (%v), want none: the run is detected for a", what, ids, err)
		}
		var blob []byte
		var up int64
		if err := e.Store.SQL().QueryRow(`SELECT states, updated_run FROM probe_states WHERE target_id = ?`, b).Scan(&blob, &up); err != nil || !bytes.Equal(blob, []byte{0, 0xff, 0, 0xff}) || up != updated {
			t.Errorf("%s: b's state row %x, updated run %d (%v), want it left as it was", what, blob, up, err)
		}
	}
	// a's policy change (from run 3) confirmed at run 4, recorded as an
	// event of a alone.
	if len(last.Events) != 1 || last.Events[0].Kind != diff.KindPolicy || strings.Join(last.Events[0].Targets, ",") != "a" {
		t.Fatalf("run 4: events %+v, want a's policy change", last.Events)
	}
	evs, err := diff.ListEvents(ctx, e.Store, diff.Filter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %d (%v), want a's one", len(evs), err)
	}

	// The row removed (as db check says): b's detection resumes, every
	// baseline restarting as an input change with cause state.
	if _, err := e.Store.SQL().Exec(fmt.Sprintf(`DELETE FROM probe_states WHERE target_id = %d`, b)); err != nil {
		t.Fatal(err)
	}
	r5 := runOnce(t, e, "run 5, b's row removed")
	if len(r5.Detection.Failed) != 0 || app.DetectionFailed(r5) != nil {
		t.Errorf("run 5: failed %+v, want none", r5.Detection.Failed)
	}
	if s := statsOf(r5, "b"); !s.StateLost || s.InputChanges != n {
		t.Errorf("run 5, b: state lost %v, input changes %d; want true, %d", s.StateLost, s.InputChanges, n)
	}
	if byCause, byRun := inputChangesOf(t, e, "b"); byCause["state"] != n || len(byCause) != 1 || byRun[r5.Summary.RunID] != n {
		t.Errorf("b: input changes %v by run %v, want %d of cause state in run %d", byCause, byRun, n, r5.Summary.RunID)
	}
	if byCause, _ := inputChangesOf(t, e, "a"); len(byCause) != 0 {
		t.Errorf("a: input changes %v, want none", byCause)
	}
	for _, js := range r5.JSON().Targets {
		if js.DetectionError != nil {
			t.Errorf("run 5 --json: %s detection_error %q", js.Target, *js.DetectionError)
		}
	}
}

// A target returning to an endpoint whose parked state does not decode:
// its detection fails in that run, and what its detection had written
// before the parked state failed to decode (its state parked at the
// endpoint it left, the target's state row) is rolled back, while the
// other target of the run is detected. Once the parked row is removed, the
// return restarts its baselines there (cause state).
func TestDamagedParkedStateRollsBackItsTarget(t *testing.T) {
	urlA := testenv.SimServer(t)
	urlB := testenv.SimServer(t)
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: gw, provider: sim, model: m, base_url: "`+urlA+`"}
`)
	ctx := context.Background()
	n := len(e.Corpus.Probes)
	moveTo := func(url string) {
		t.Helper()
		e.Config.Target("gw").BaseURL = url
		e.Rebuild()
	}
	e.Runs(2)    // gw's baselines at A
	moveTo(urlB) // A's state parked
	e.Runs(2)    // gw's baselines at B
	gw := targetID(t, e, "gw")
	originA, originB := probes.URLOrigin(urlA), probes.URLOrigin(urlB)
	if _, err := e.Store.SQL().Exec(`UPDATE parked_states SET states = x'00ff00ff' WHERE target_id = ? AND origin = ?`, gw, originA); err != nil {
		t.Fatal(err)
	}
	// gw's detection rows: its state (a digest of it, its origin and
	// run), its parked states, its input changes.
	snap := func() string {
		t.Helper()
		var out []string
		rows, err := e.Store.SQL().Query(`SELECT 'state', origin, states, updated_run FROM probe_states WHERE target_id = ?
			UNION ALL SELECT 'parked', origin, states, parked_run FROM parked_states WHERE target_id = ?
			UNION ALL SELECT 'input_changes', '', x'', COUNT(*) FROM input_changes WHERE target_id = ? ORDER BY 1, 2`, gw, gw, gw)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var what, origin string
			var blob []byte
			var n int64
			if err := rows.Scan(&what, &origin, &blob, &n); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %s %.12x %d", what, origin, sha256.Sum256(blob), n))
			if what == "parked" && origin == originA {
				out = append(out, fmt.Sprintf("(%x)", blob))
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, "\n")
	}
	before := snap()
	if !strings.Contains(before, "state "+originB+" ") || !strings.Contains(before, "(00ff00ff)") || strings.Contains(before, "parked "+originB) {
		t.Fatalf("gw's detection rows before the return:\n%s", before)
	}

	moveTo(urlA) // back to A, whose parked state does not decode
	r := runOnce(t, e, "the return to A")
	msg := failedOf(r, "gw")
	if len(r.Detection.Failed) != 1 || !strings.Contains(msg, fmt.Sprintf("parked detection state of target %d at %s: corrupt probe state", gw, originA)) ||
		!strings.Contains(msg, fmt.Sprintf("DELETE FROM parked_states WHERE target_id = %d AND origin = '%s'", gw, originA)) {
		t.Errorf("the return to A: failed %+v, want gw's, naming its parked row and how to remove it", r.Detection.Failed)
	}
	if len(r.Detection.Stats) != 1 || r.Detection.Stats[0].Target != "a" {
		t.Errorf("the return to A: stats %+v, want a's only", r.Detection.Stats)
	}
	// Parking gw's state at B came before A's failed to decode: undone,
	// with everything else gw's detection wrote in that run.
	if after := snap(); after != before {
		t.Errorf("gw's detection rows after its failed return:\n%s\nwant them as before:\n%s", after, before)
	}
	if ids, err := e.Store.UndetectedRuns(ctx); err != nil || len(ids) != 0 {
		t.Errorf("undetected runs %v (%v), want none", ids, err)
	}

	if _, err := e.Store.SQL().Exec(`DELETE FROM parked_states WHERE target_id = ? AND origin = ?`, gw, originA); err != nil {
		t.Fatal(err)
	}
	r = runOnce(t, e, "the return to A, its parked row removed")
	s := statsOf(r, "gw")
	if len(r.Detection.Failed) != 0 || s.OriginChange == nil || s.OriginChange.Resumed || !s.StateLost || s.InputChanges != n {
		t.Errorf("the return to A, its parked row removed: failed %+v, stats %+v; want a move back whose state was lost (%d input changes)", r.Detection.Failed, s, n)
	}
	if byCause, _ := inputChangesOf(t, e, "gw"); byCause["state"] != n {
		t.Errorf("gw: input changes %v, want %d of cause state", byCause, n)
	}
}

// ReadableStates reads every state that decodes and lists the targets
// whose probe_states row does not (what the metrics collector exports as
// damaged) instead of failing; AllStates still fails on it. A database
// that cannot be read fails both.
func TestReadableStatesListsDamagedTargets(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
`)
	ctx := context.Background()
	e.Runs(1)
	a, b := targetID(t, e, "a"), targetID(t, e, "b")
	want, err := diff.States(ctx, e.Store.SQL(), a)
	if err != nil || len(want) == 0 {
		t.Fatalf("a's states: %d, %v", len(want), err)
	}
	if _, err := e.Store.SQL().Exec(`UPDATE probe_states SET states = x'00ff00ff' WHERE target_id = ?`, b); err != nil {
		t.Fatal(err)
	}
	all, damaged, err := diff.ReadableStates(ctx, e.Store.SQL())
	if err != nil {
		t.Fatalf("ReadableStates: %v", err)
	}
	if len(damaged) != 1 || damaged[0] != b {
		t.Errorf("damaged %v, want [%d]", damaged, b)
	}
	if _, ok := all[b]; ok || len(all) != 1 || len(all[a]) != len(want) {
		t.Errorf("states of %d targets (a: %d probes, b listed: %v), want only a's %d", len(all), len(all[a]), ok, len(want))
	}
	if _, err := diff.AllStates(ctx, e.Store.SQL()); err == nil || !strings.Contains(err.Error(), "corrupt probe state") {
		t.Errorf("AllStates with b's state damaged: %v, want corrupt probe state", err)
	}
	if _, err := e.Store.SQL().Exec(`DROP TABLE probe_states`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := diff.ReadableStates(ctx, e.Store.SQL()); err == nil {
		t.Error("ReadableStates without its table: no error")
	}
}
