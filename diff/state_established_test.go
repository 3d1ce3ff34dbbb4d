package diff_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// missedRun records one run of e's targets as a process killed between
// recording it and detecting it leaves it: the runner alone, no detection.
// The next run detects it first (or gives it up).
func missedRun(t *testing.T, e *testenv.Env) int64 {
	t.Helper()
	sum, err := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep}).Run(context.Background())
	if err != nil || sum.Status != storage.RunComplete {
		t.Fatalf("missed run: %v %+v", err, sum)
	}
	return sum.RunID
}

// rtDetected is run_targets.detected of target in run.
func rtDetected(t *testing.T, e *testenv.Env, run int64, target string) int {
	t.Helper()
	var v int
	if err := e.Store.SQL().QueryRow(`SELECT rt.detected FROM run_targets rt JOIN targets t ON t.id = rt.target_id WHERE rt.run_id = ? AND t.name = ?`, run, target).Scan(&v); err != nil {
		t.Fatalf("run %d, %s: run_targets.detected: %v", run, target, err)
	}
	return v
}

// setDisabled disables (or enables) target in e's config, as an edited
// config reloaded would.
func setDisabled(t *testing.T, e *testenv.Env, target string, off bool) {
	t.Helper()
	e.Config.Target(target).Disabled = off
	e.Rebuild()
}

// damageStateOf gives target, before its first run, a detection state row
// that does not decode (one restored from a damaged copy, say): each run's
// detection leaves it out (Result.Failed) until the row is removed.
func damageStateOf(t *testing.T, e *testenv.Env, target string) {
	t.Helper()
	id, err := e.Store.EnsureTarget(context.Background(), storage.TargetRow{Name: target, Provider: "sim", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.SQL().Exec(`INSERT INTO probe_states (target_id, states, probes, updated_run) VALUES (?, x'00ff00ff', 0, 0)`, id); err != nil {
		t.Fatal(err)
	}
}

// A target whose earlier runs were detected, but never with it, had no
// detection state established by them: its first detection restarts no
// baseline and records no input change with cause state (no
// DriftprobeBaselinesRestarted ticket). Each way a run is detected
// without a target: the target disabled when a missed run was detected
// late (then re-enabled), the target left out for a damaged state
// (Result.Failed) that was then removed, the run's detection given up.
// Each of those runs is marked detected (runs.detected) while the
// target's run_targets.detected stays 0.
func TestRunsDetectedWithoutTargetEstablishNoState(t *testing.T) {
	t.Run("disabled when a missed run was detected late", func(t *testing.T) {
		e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
`)
		r1 := missedRun(t, e)
		setDisabled(t, e, "b", true)
		r2 := runOnce(t, e, "run 2, b disabled")
		if r2.Summary.RunID != r1+1 {
			t.Fatalf("run %d, want %d", r2.Summary.RunID, r1+1)
		}
		if got := []int{rtDetected(t, e, r1, "a"), rtDetected(t, e, r1, "b")}; got[0] != 1 || got[1] != 0 {
			t.Fatalf("missed run %d detected late without b: run_targets.detected a %d, b %d; want 1, 0", r1, got[0], got[1])
		}
		setDisabled(t, e, "b", false)
		r3 := runOnce(t, e, "run 3, b enabled again")
		if s := statsOf(r3, "b"); s.StateLost || s.InputChanges != 0 {
			t.Errorf("run 3, b's first detection: state lost %v, input changes %d; want none (run %d was detected without b)", s.StateLost, s.InputChanges, r1)
		}
		if byCause, _ := inputChangesOf(t, e, "b"); len(byCause) != 0 {
			t.Errorf("b: input changes %v, want none", byCause)
		}
		if rtDetected(t, e, r3.Summary.RunID, "b") != 1 {
			t.Errorf("run 3: b's run_targets.detected 0, want 1")
		}
	})

	t.Run("left out for a damaged state, since removed", func(t *testing.T) {
		e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: c, provider: sim, model: m}
`)
		damageStateOf(t, e, "c")
		for i := 1; i <= 2; i++ {
			r := runOnce(t, e, fmt.Sprintf("run %d, c's state damaged", i))
			if failedOf(r, "c") == "" {
				t.Fatalf("run %d: failed %+v, want c", i, r.Detection.Failed)
			}
			if a, c := rtDetected(t, e, r.Summary.RunID, "a"), rtDetected(t, e, r.Summary.RunID, "c"); a != 1 || c != 0 {
				t.Errorf("run %d: run_targets.detected a %d, c %d; want 1, 0", i, a, c)
			}
		}
		if _, err := e.Store.SQL().Exec(`DELETE FROM probe_states WHERE target_id = ?`, targetID(t, e, "c")); err != nil {
			t.Fatal(err)
		}
		r3 := runOnce(t, e, "run 3, c's row removed")
		if len(r3.Detection.Failed) != 0 {
			t.Fatalf("run 3: failed %+v", r3.Detection.Failed)
		}
		if s := statsOf(r3, "c"); s.StateLost || s.InputChanges != 0 {
			t.Errorf("run 3, c's first detection: state lost %v, input changes %d; want none (its earlier runs were detected without it)", s.StateLost, s.InputChanges)
		}
		if byCause, _ := inputChangesOf(t, e, "c"); len(byCause) != 0 {
			t.Errorf("c: input changes %v, want none", byCause)
		}
	})

	t.Run("detection given up", func(t *testing.T) {
		e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: d, provider: sim, model: m}
`)
		r1 := missedRun(t, e)
		// A damaged observation row: detecting run 1 fails whole, and
		// the next run gives it up.
		if _, err := e.Store.SQL().Exec(`UPDATE observations SET http_status = 'x' WHERE id = (SELECT MIN(o.id) FROM observations o JOIN targets t ON t.id = o.target_id WHERE o.run_id = ? AND t.name = 'd')`, r1); err != nil {
			t.Fatal(err)
		}
		r2 := runOnce(t, e, "run 2")
		var detected int
		if err := e.Store.SQL().QueryRow(`SELECT detected FROM runs WHERE id = ?`, r1).Scan(&detected); err != nil || detected != 1 {
			t.Fatalf("run %d: runs.detected %d (%v), want 1 (given up)", r1, detected, err)
		}
		for _, name := range []string{"a", "d"} {
			if v := rtDetected(t, e, r1, name); v != 0 {
				t.Errorf("given-up run %d: %s's run_targets.detected %d, want 0", r1, name, v)
			}
			if s := statsOf(r2, name); s.StateLost || s.InputChanges != 0 {
				t.Errorf("run 2, %s's first detection: state lost %v, input changes %d; want none (run %d's detection was given up)", name, s.StateLost, s.InputChanges, r1)
			}
			if byCause, _ := inputChangesOf(t, e, name); len(byCause) != 0 {
				t.Errorf("%s: input changes %v, want none", name, byCause)
			}
		}
	})
}

// A target whose earlier run was detected with it had its state
// established, however that run was detected: late, by the next run, in a
// run where another target's detection failed. Its state removed since,
// its next run restarts every baseline with cause state, as before
// run_targets.detected; the other target, left out of every earlier run,
// restarts nothing.
func TestRunDetectedWithTargetEstablishedState(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
`)
	n := len(e.Corpus.Probes)
	damageStateOf(t, e, "b")
	r1 := missedRun(t, e)
	// In run 2 a answers no verdict: the only run whose detection read
	// a's verdicts is run 1, detected late (with b's failing).
	setErrors(t, e, "a", 1, 400)
	r2 := runOnce(t, e, "run 2")
	if failedOf(r2, "b") == "" {
		t.Fatalf("run 2: failed %+v, want b", r2.Detection.Failed)
	}
	for _, c := range []struct {
		run    int64
		target string
		want   int
	}{{r1, "a", 1}, {r1, "b", 0}, {r2.Summary.RunID, "a", 1}, {r2.Summary.RunID, "b", 0}} {
		if v := rtDetected(t, e, c.run, c.target); v != c.want {
			t.Errorf("run %d, %s: run_targets.detected %d, want %d", c.run, c.target, v, c.want)
		}
	}
	setErrors(t, e, "a", 0, 0)
	for _, name := range []string{"a", "b"} {
		if _, err := e.Store.SQL().Exec(`DELETE FROM probe_states WHERE target_id = ?`, targetID(t, e, name)); err != nil {
			t.Fatal(err)
		}
	}
	r3 := runOnce(t, e, "run 3, both states removed")
	if len(r3.Detection.Failed) != 0 {
		t.Fatalf("run 3: failed %+v", r3.Detection.Failed)
	}
	if s := statsOf(r3, "a"); !s.StateLost || s.InputChanges != n {
		t.Errorf("run 3, a: state lost %v, input changes %d; want true, %d (run %d established its state)", s.StateLost, s.InputChanges, n, r1)
	}
	if byCause, byRun := inputChangesOf(t, e, "a"); byCause["state"] != n || len(byCause) != 1 || byRun[r3.Summary.RunID] != n {
		t.Errorf("a: input changes %v by run %v, want %d of cause state in run %d", byCause, byRun, n, r3.Summary.RunID)
	}
	if s := statsOf(r3, "b"); s.StateLost || s.InputChanges != 0 {
		t.Errorf("run 3, b: state lost %v, input changes %d; want none (never detected before)", s.StateLost, s.InputChanges)
	}
}

// A database an older driftprobe (schema 22) wrote, with history: its
// run_targets rows of detected runs count as detected (the run-level flag
// decides for them, as it did), so a target's state removed after the
// upgrade still restarts its baselines with cause state; the rows of a
// run finished but not detected at the upgrade are decided per target by
// its late detection.
func TestSchema22RunTargetsCountAsDetected(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: a, provider: sim, model: m}
  - {name: b, provider: sim, model: m}
`)
	ctx := context.Background()
	n := len(e.Corpus.Probes)
	e.Runs(2)
	r3 := missedRun(t, e) // not detected when the database is upgraded
	// The database as a schema-22 driftprobe left it.
	for _, q := range []string{`ALTER TABLE run_targets DROP COLUMN detected`, `ALTER TABLE github_holds DROP COLUMN kind`, `PRAGMA user_version = 22`} {
		if _, err := e.Store.SQL().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	e.Reload() // migrates
	if v, _ := e.Store.SchemaVersion(ctx); v != storage.SchemaLatest() || v < 23 {
		t.Fatalf("schema %d after the upgrade, want %d", v, storage.SchemaLatest())
	}
	for _, c := range []struct {
		run    int64
		target string
		want   int
	}{{1, "a", 1}, {1, "b", 1}, {2, "a", 1}, {2, "b", 1}, {r3, "a", 0}, {r3, "b", 0}} {
		if v := rtDetected(t, e, c.run, c.target); v != c.want {
			t.Errorf("after the upgrade: run %d, %s: run_targets.detected %d, want %d", c.run, c.target, v, c.want)
		}
	}
	// a's state removed; b disabled: run 3 is detected late (first, by
	// run 4) for a alone, its state established by runs 1 and 2 only.
	if _, err := e.Store.SQL().Exec(`DELETE FROM probe_states WHERE target_id = ?`, targetID(t, e, "a")); err != nil {
		t.Fatal(err)
	}
	setDisabled(t, e, "b", true)
	r4 := runOnce(t, e, "run 4")
	if byCause, byRun := inputChangesOf(t, e, "a"); byCause["state"] != n || len(byCause) != 1 || byRun[r3] != n {
		t.Errorf("a: input changes %v by run %v, want %d of cause state in run %d (detected late): runs 1 and 2, recorded before the upgrade, established its state", byCause, byRun, n, r3)
	}
	if s := statsOf(r4, "a"); s.StateLost || s.InputChanges != 0 {
		t.Errorf("run 4, a: state lost %v, input changes %d; want none (restarted in run %d)", s.StateLost, s.InputChanges, r3)
	}
	if a, b := rtDetected(t, e, r3, "a"), rtDetected(t, e, r3, "b"); a != 1 || b != 0 {
		t.Errorf("run %d detected late without b: run_targets.detected a %d, b %d; want 1, 0", r3, a, b)
	}
}
