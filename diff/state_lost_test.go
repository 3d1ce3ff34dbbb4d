package diff_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// inputChangesOf counts a target's input changes by cause, and by run.
func inputChangesOf(t *testing.T, e *testenv.Env, target string) (byCause map[string]int, byRun map[int64]int) {
	t.Helper()
	byCause, byRun = map[string]int{}, map[int64]int{}
	rows, err := e.Store.SQL().Query(`SELECT ic.cause, ic.run_id FROM input_changes ic JOIN targets t ON t.id = ic.target_id WHERE t.name = ?`, target)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		var r int64
		if err := rows.Scan(&c, &r); err != nil {
			t.Fatal(err)
		}
		byCause[c]++
		byRun[r]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return byCause, byRun
}

func statsOf(r *app.RunResult, target string) diff.TargetStats {
	for _, s := range r.Detection.Stats {
		if s.Target == target {
			return s
		}
	}
	return diff.TargetStats{}
}

// A target's detection state removed between runs (the probe_states row
// db check tells the operator to delete when it no longer decodes) is
// told apart from a target's first run: the target has earlier runs whose
// detection read its verdicts, so a state was established, and every probe
// restarting its baseline is recorded as an input change with cause state
// (counted in the run's input changes, reported in the summary). The first
// run after the removal that answers nothing with a verdict establishes no
// state and records nothing; the next that does records it, once.
// A target whose earlier runs never answered with a verdict (no state was
// ever established) records nothing at its first verdicts, and neither
// does a target new to the database.
func TestStateRemovedIsAnInputChange(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
  - {name: c, provider: sim, model: m}
  - {name: d, provider: sim, model: m, disabled: true}
`)
	n := len(e.Corpus.Probes)
	ctx := context.Background()
	id := func(name string) int64 {
		tr, err := e.Store.TargetByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return tr.ID
	}
	// c answers nothing with a verdict from its first run on: no state.
	setErrors(t, e, "c", 1, 400)
	e.Runs(2)
	var cStates int
	if err := e.Store.SQL().QueryRow(`SELECT COUNT(*) FROM probe_states WHERE target_id = ?`, id("c")).Scan(&cStates); err != nil || cStates != 0 {
		t.Fatalf("c: %d state rows (%v), want none: its runs answered no verdict", cStates, err)
	}

	if _, err := e.Store.SQL().Exec(`DELETE FROM probe_states WHERE target_id = ?`, id("b")); err != nil {
		t.Fatal(err)
	}
	// c answers now; d runs for the first time.
	setErrors(t, e, "c", 0, 0)
	e.Config.Target("d").Disabled = false
	e.Rebuild()
	r3 := e.Run()
	if s := statsOf(r3, "b"); s.InputChanges != n || !s.StateLost {
		t.Errorf("run 3, b: input changes %d, state lost %v; want %d, true", s.InputChanges, s.StateLost, n)
	}
	for _, name := range []string{"a", "c", "d"} {
		if s := statsOf(r3, name); s.InputChanges != 0 || s.StateLost {
			t.Errorf("run 3, %s: input changes %d, state lost %v; want none", name, s.InputChanges, s.StateLost)
		}
		if byCause, _ := inputChangesOf(t, e, name); len(byCause) != 0 {
			t.Errorf("%s: input changes %v, want none (no state was established before)", name, byCause)
		}
	}
	if byCause, _ := inputChangesOf(t, e, "b"); byCause["state"] != n || len(byCause) != 1 {
		t.Errorf("b: input changes %v, want state: %d", byCause, n)
	}
	var sum bytes.Buffer
	app.WriteSummary(&sum, r3)
	if !strings.Contains(sum.String(), "b: detection state missing") {
		t.Errorf("run 3 summary does not report b's state as missing:\n%s", sum.String())
	}
	for _, js := range r3.JSON().Targets {
		if js.StateLost != (js.Target == "b") {
			t.Errorf("run 3 --json: %s state_lost %v", js.Target, js.StateLost)
		}
	}

	// Removed again; b's next run answers no verdict: no state, nothing
	// recorded; the run after that answers and records it.
	e.Run()
	if _, err := e.Store.SQL().Exec(`DELETE FROM probe_states WHERE target_id = ?`, id("b")); err != nil {
		t.Fatal(err)
	}
	setErrors(t, e, "b", 1, 400)
	r5 := e.Run()
	if s := statsOf(r5, "b"); s.InputChanges != 0 || s.StateLost {
		t.Errorf("run 5 (b answers no verdict): input changes %d, state lost %v; want none", s.InputChanges, s.StateLost)
	}
	setErrors(t, e, "b", 0, 0)
	r6 := e.Run()
	if s := statsOf(r6, "b"); s.InputChanges != n || !s.StateLost {
		t.Errorf("run 6, b: input changes %d, state lost %v; want %d, true", s.InputChanges, s.StateLost, n)
	}
	e.Run()
	byCause, byRun := inputChangesOf(t, e, "b")
	if byCause["state"] != 2*n || byRun[r3.Summary.RunID] != n || byRun[r6.Summary.RunID] != n || len(byRun) != 2 {
		t.Errorf("b: input changes %v by run %v, want %d in runs %d and %d", byCause, byRun, n, r3.Summary.RunID, r6.Summary.RunID)
	}
}
