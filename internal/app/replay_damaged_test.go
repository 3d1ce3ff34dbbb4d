package app_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/storage"
)

// answered returns the ids of n observations of run that carry an answer
// (http_status set), lowest first.
func answered(t *testing.T, e *testenv.Env, run int64, n int) []int64 {
	t.Helper()
	rows, err := e.Store.SQL().Query(`SELECT id FROM observations WHERE run_id = ? AND http_status != 0 ORDER BY id LIMIT ?`, run, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(ids) != n {
		t.Fatalf("run %d: %d observations with an answer, want %d", run, len(ids), n)
	}
	return ids
}

// A row with a damaged column (a bad write, an edit) is listed by replay
// as a difference, with the column and what it holds, and the replay goes
// on with the other rows: before, the first such row failed the whole
// replay with a Scan error. No verdict of the damaged row is shown.
func TestReplayListsDamagedRowsAndGoesOn(t *testing.T) {
	e := testenv.New(t, "targets:\n  - {name: a, provider: sim, model: m}\n")
	ctx := context.Background()
	run := e.Run().Summary.RunID
	clean, err := app.Replay(ctx, e.Store, run, e.Targets, "")
	if err != nil || clean.Replayed == 0 || clean.Same != clean.Replayed || clean.Damaged != 0 {
		t.Fatalf("replay of a sound run: %+v, %v", clean, err)
	}
	ids := answered(t, e, run, 4)
	damage := map[int64]struct {
		set  string
		want []storage.ColumnDamage
	}{
		ids[0]: {`http_status = 'x'`, []storage.ColumnDamage{{Column: "http_status", Problem: `holds text "x", not an integer`}}},
		ids[1]: {`sample = 'x'`, []storage.ColumnDamage{{Column: "sample", Problem: `holds text "x", not an integer`}}},
		ids[2]: {`body_truncated = 'x'`, []storage.ColumnDamage{{Column: "body_truncated", Problem: `holds text "x", not 0 or 1`}}},
		ids[3]: {`latency_ms = 'abc'`, []storage.ColumnDamage{{Column: "latency_ms", Problem: `holds text "abc", not a number`}}},
	}
	for id, d := range damage {
		if _, err := e.Store.SQL().Exec(`UPDATE observations SET `+d.set+` WHERE id = ?`, id); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := app.Replay(ctx, e.Store, run, e.Targets, "")
	if err != nil {
		t.Fatalf("replay with damaged rows: %v", err)
	}
	if rep.Damaged != len(damage) || len(rep.Diffs) != len(damage) || rep.Replayed != clean.Replayed || rep.Same != clean.Same-len(damage) {
		t.Fatalf("report: %+v (the sound run: %+v)", rep, clean)
	}
	for _, d := range rep.Diffs {
		want, ok := damage[d.ObservationID]
		if !ok {
			t.Errorf("unexpected diff %+v", d)
			continue
		}
		if !reflect.DeepEqual(d.Damaged, want.want) || d.Unreadable != storage.ProblemDamagedRow+": "+want.want[0].String() {
			t.Errorf("observation %d: %+v, want %+v", d.ObservationID, d, want.want)
		}
		if d.Target != "a" || d.ProbeID == "" || d.Stored.Verdict != "" || d.Replayed.Verdict != "" || d.BodyIntact || d.RequestIntact {
			t.Errorf("observation %d: a damaged row shown with more than its identity: %+v", d.ObservationID, d)
		}
	}
	if s := rep.String(); !strings.Contains(s, "4 differ (4 of them damaged rows") {
		t.Errorf("summary: %s", s)
	}
}

// Detection never reads a damaged row as a verdict: reading a run from
// the database (a run detected after the fact), it fails with the damaged
// row named, and changes nothing.
func TestDetectionRefusesDamagedRows(t *testing.T) {
	e := testenv.New(t, "targets:\n  - {name: a, provider: sim, model: m}\n")
	ctx := context.Background()
	e.Runs(2)
	run := e.Run().Summary.RunID
	id := answered(t, e, run, 1)[0]
	if _, err := e.Store.SQL().Exec(`UPDATE observations SET http_status = 'x' WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.SQL().Exec(`UPDATE runs SET detected = 0 WHERE id = ?`, run); err != nil {
		t.Fatal(err)
	}
	tgt, err := e.Store.TargetByName(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = diff.Apply(ctx, e.Store, diff.Input{RunID: run, Targets: []diff.TargetRun{{ID: tgt.ID, Name: "a", Provider: "sim", Status: storage.TargetComplete}}})
	var de *storage.DamagedError
	if !errors.As(err, &de) || len(de.Rows) != 1 || de.Rows[0].ID != id {
		t.Fatalf("detection of a run with a damaged row: %v", err)
	}
	if undetected, err := e.Store.UndetectedRuns(ctx); err != nil || len(undetected) != 1 || undetected[0] != run {
		t.Errorf("undetected runs: %v, %v", undetected, err)
	}
}
