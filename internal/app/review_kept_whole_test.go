package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// Review finding 1: replay and diff decided from the run's prune level
// alone. A target retention kept whole (its detection state does not
// decode) keeps every row in a run marked "observations": replay says
// nothing of deleted observations for it and diff works, while for the
// healthy target of the same run the note and the refusal stay. Once the
// damaged row is removed and the next prune deletes the target's rows,
// they apply to it too.
func TestReviewKeptWholeTargetReplaysAndDiffs(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
`)
	ctx := context.Background()
	e.Runs(3)
	tb, err := e.Store.TargetByName(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	ta, err := e.Store.TargetByName(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.SQL().Exec(`UPDATE probe_states SET states = x'00ff00ff' WHERE target_id = ?`, tb.ID); err != nil {
		t.Fatal(err)
	}
	pr, err := app.Prune(ctx, e.Store, pruneAllObservations, false)
	if err != nil {
		t.Fatal(err)
	}
	if k := keptTarget(t, "prune", pr); k.Target != "b" || pr.ObservationsDeleted == 0 {
		t.Fatalf("prune: %+v, want a's observations deleted and b kept whole", pr)
	}
	if r, err := e.Store.Run(ctx, 1); err != nil || r.Pruned != storage.PrunedObservations {
		t.Fatalf("run 1: pruned %q (%v), want %q", r.Pruned, err, storage.PrunedObservations)
	}

	rowsPruned := func(run int64, tg storage.TargetRow) bool {
		t.Helper()
		got, err := e.Store.TargetRowsPruned(ctx, run, tg.ID)
		if err != nil {
			t.Fatalf("TargetRowsPruned(%d, %s): %v", run, tg.Name, err)
		}
		return got
	}
	if rowsPruned(1, tb) || !rowsPruned(1, ta) || rowsPruned(3, ta) {
		t.Errorf("TargetRowsPruned: run 1 b %v (want false), run 1 a %v (want true), run 3 a %v (want false: kept)",
			rowsPruned(1, tb), rowsPruned(1, ta), rowsPruned(3, ta))
	}

	replay := func(only string) *app.ReplayReport {
		t.Helper()
		rep, err := app.Replay(ctx, e.Store, 1, e.Targets, only)
		if err != nil {
			t.Fatalf("replay run 1 %q: %v", only, err)
		}
		return rep
	}
	if rep := replay("b"); strings.Contains(rep.String(), "retention deleted") || len(rep.ObservationsDeleted) != 0 || rep.Replayed == 0 {
		t.Errorf("replay run 1 of b (kept whole): %q, deleted %v, want every answer replayed and no note of deleted observations", rep.String(), rep.ObservationsDeleted)
	}
	if rep := replay("a"); !strings.Contains(rep.String(), "retention deleted this run's observations of a, except those events and detection pin") {
		t.Errorf("replay run 1 of a: %q, want the note of its deleted observations", rep.String())
	}
	if rep := replay(""); !strings.Contains(rep.String(), "retention deleted this run's observations of a, except") || fmt.Sprint(rep.ObservationsDeleted) != "[a]" {
		t.Errorf("replay run 1: %q, deleted %v, want the note naming a alone", rep.String(), rep.ObservationsDeleted)
	}

	if d, err := diff.DiffRuns(ctx, e.Store, "b", 1, 2); err != nil || d.Compared == 0 {
		t.Errorf("diff of b (kept whole) from run 1 to 2: %+v, %v; want it compared", d, err)
	}
	if _, err := diff.DiffRuns(ctx, e.Store, "a", 1, 2); err == nil || !strings.Contains(err.Error(), "run 1: retention deleted its observations of target a") {
		t.Errorf("diff of a from run 1 to 2: %v, want the refusal", err)
	}

	// The row removed, the next prune deletes b's rows: the note and the
	// refusal apply to b too.
	if _, err := e.Store.SQL().Exec(`DELETE FROM probe_states WHERE target_id = ?`, tb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Prune(ctx, e.Store, pruneAllObservations, false); err != nil {
		t.Fatal(err)
	}
	if !rowsPruned(1, tb) {
		t.Error("TargetRowsPruned(1, b) after b's rows were deleted: false, want true")
	}
	if rep := replay("b"); !strings.Contains(rep.String(), "retention deleted this run's observations of b, except") {
		t.Errorf("replay run 1 of b once pruned: %q, want the note", rep.String())
	}
	if _, err := diff.DiffRuns(ctx, e.Store, "b", 1, 2); err == nil || !strings.Contains(err.Error(), "retention deleted its observations of target b") {
		t.Errorf("diff of b once pruned: %v, want the refusal", err)
	}
}

// Review finding 3: a missed run another process detected first (it took
// the lease over; detection finds it detected: storage.ErrAlreadyDetected)
// had its flips counted there. It is logged at INFO as detected by another
// process, not at ERROR as a detection given up.
func TestReviewMissedRunDetectedElsewhereIsNotGivenUp(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: a, provider: sim, model: m}
`)
	ctx := context.Background()
	e.Runs(2)
	// Run 3 is recorded, but its process dies before detection.
	sum, err := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep}).Run(ctx)
	if err != nil || sum.Status != storage.RunComplete {
		t.Fatalf("run 3: %v %+v", err, sum)
	}
	var hooked []int64
	defer app.SetBeforeMissedDetection(func(st *storage.DB, run int64) {
		hooked = append(hooked, run)
		// Another process detects it between the list of missed runs and
		// this one's detection.
		if err := st.Tx(ctx, func(tx *sql.Tx) error { return storage.MarkDetected(ctx, tx, run, nil) }); err != nil {
			t.Errorf("mark run %d detected: %v", run, err)
		}
	})()
	var logs bytes.Buffer
	if _, err := app.RunOnce(ctx, e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(hooked) != fmt.Sprint([]int64{sum.RunID}) {
		t.Fatalf("missed runs detected: %v, want run %d", hooked, sum.RunID)
	}
	l := logs.String()
	if strings.Contains(l, "given up") || strings.Contains(l, "level=ERROR") ||
		!strings.Contains(l, `level=INFO msg="a missed run was detected by another process (its flips are counted)" run=`+fmt.Sprint(sum.RunID)) {
		t.Errorf("log, want an INFO line naming run %d detected by another process, no ERROR:\n%s", sum.RunID, l)
	}
}
