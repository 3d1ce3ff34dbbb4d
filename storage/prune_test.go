package storage

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pruneFixture makes six runs a day apart (day 0 … day 5), the last one
// still running, each with four observations carrying bodies.
func pruneFixture(t *testing.T) (d *DB, runs []int64, obs map[int64][]*Observation, day0 time.Time) {
	t.Helper()
	ctx := context.Background()
	d = openTestDB(t)
	day0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tgt, err := d.EnsureTarget(ctx, TargetRow{Name: "sim", Provider: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	obs = map[int64][]*Observation{}
	body := []byte(`{"choices":[` + strings.Repeat(`{"content_filter_results":{}},`, 60) + `{}]}`)
	for i := 0; i < 6; i++ {
		// A fraction of a second on some days: stored timestamps of
		// varying width must still compare as times.
		at := day0.Add(time.Duration(i)*24*time.Hour + time.Duration(i%2)*123*time.Millisecond)
		id, err := d.BeginRun(ctx, Run{StartedAt: at, CorpusName: "c", CorpusVersion: "1"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, id)
		var batch []*Observation
		for p := 0; p < 4; p++ {
			batch = append(batch, &Observation{RunID: id, TargetID: tgt, ProbeID: fmt.Sprintf("p%d", p), RequestSHA256: "r",
				RequestBody: []byte(`{"model":"m"}`), Body: body, BodySHA256: "b", ObservedAt: at})
		}
		if err := d.InsertObservations(ctx, batch); err != nil {
			t.Fatal(err)
		}
		obs[id] = batch
		if i < 5 {
			if err := d.FinishRun(ctx, id, RunComplete, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	return d, runs, obs, day0
}

// sameResult reports whether two prune results are equal, an empty
// KeptTargets list as none.
func sameResult(a, b PruneResult) bool {
	if len(a.KeptTargets) == 0 {
		a.KeptTargets = nil
	}
	if len(b.KeptTargets) == 0 {
		b.KeptTargets = nil
	}
	return reflect.DeepEqual(a, b)
}

func countObs(t *testing.T, d *DB, run int64) (rows, withBodies int) {
	t.Helper()
	if err := d.db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(body IS NOT NULL OR request_body IS NOT NULL), 0) FROM observations WHERE run_id = ?`, run).Scan(&rows, &withBodies); err != nil {
		t.Fatal(err)
	}
	return rows, withBodies
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	d, runs, obs, day0 := pruneFixture(t)
	pinned := []int64{obs[runs[0]][1].ID, obs[runs[2]][3].ID} // an event's evidence, a baseline
	opts := PruneOptions{
		ObservationsBefore: day0.Add(36 * time.Hour), // runs 0 and 1
		BodiesBefore:       day0.Add(84 * time.Hour), // runs 2 and 3 (run 3 is kept)
		Pinned:             pinned,
		KeepRuns:           []int64{runs[3]},
		Batch:              3, // several batches per mode
	}
	want := PruneResult{Runs: 3, ObservationsDeleted: 7, BodiesDropped: 3, PinnedKept: 2}

	dry := opts
	dry.DryRun = true
	got, err := d.Prune(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	if got.StoredBytes <= 0 {
		t.Errorf("dry run: stored bytes %d, want > 0", got.StoredBytes)
	}
	bytesWanted := got.StoredBytes
	got.StoredBytes, want.DryRun = 0, true
	if !sameResult(got, want) {
		t.Errorf("dry run: %+v, want %+v", got, want)
	}
	for _, r := range runs {
		if n, b := countObs(t, d, r); n != 4 || b != 4 {
			t.Fatalf("dry run changed run %d: %d rows, %d with bodies", r, n, b)
		}
	}

	got, err = d.Prune(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	want.DryRun = false
	if got.StoredBytes != bytesWanted {
		t.Errorf("stored bytes %d, dry run said %d", got.StoredBytes, bytesWanted)
	}
	got.StoredBytes = 0
	if !sameResult(got, want) {
		t.Errorf("prune: %+v, want %+v", got, want)
	}
	for i, w := range [][2]int{{1, 1}, {0, 0}, {4, 1}, {4, 4}, {4, 4}, {4, 4}} {
		if n, b := countObs(t, d, runs[i]); n != w[0] || b != w[1] {
			t.Errorf("run %d (day %d): %d rows, %d with bodies; want %d, %d", runs[i], i, n, b, w[0], w[1])
		}
	}
	// Pinned observations keep their bodies; a dropped body reads as none.
	for _, id := range pinned {
		if _, b, err := d.ObservationBodies(ctx, id); err != nil || len(b) == 0 {
			t.Errorf("pinned observation %d: body %d bytes, %v", id, len(b), err)
		}
	}
	dropped := obs[runs[2]][0]
	if rq, b, err := d.ObservationBodies(ctx, dropped.ID); err != nil || rq != nil || b != nil {
		t.Errorf("dropped bodies read back as %q, %q, %v", rq, b, err)
	}
	o, err := d.Observation(ctx, dropped.ID)
	if err != nil || o.BodySHA256 != "b" || !o.BodiesPruned {
		t.Errorf("observation with dropped bodies: %+v %v (its hash must stay, BodiesPruned set)", o, err)
	}
	if o, err := d.Observation(ctx, pinned[1]); err != nil || o.BodiesPruned {
		t.Errorf("pinned observation: %+v %v, want BodiesPruned unset", o, err)
	}
	// Again: nothing left to do.
	if got, err := d.Prune(ctx, opts); err != nil || !sameResult(got, PruneResult{PinnedKept: 2}) {
		t.Errorf("second prune: %+v %v, want only the pinned counted", got, err)
	}
	// Runs and everything else stay.
	var n int
	if err := d.db.QueryRow(`SELECT COUNT(*) FROM runs`).Scan(&n); err != nil || n != 6 {
		t.Errorf("runs: %d %v, want 6", n, err)
	}
}

// An empty response body is a body, not a pruned one.
func TestEmptyBodyIsNotPruned(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	runID, targetID := setupRun(t, d)
	o := &Observation{RunID: runID, TargetID: targetID, ProbeID: "p", RequestSHA256: "x", RequestBody: []byte(`{}`), Body: []byte{}, BodySHA256: "e3b0c442"}
	if err := d.InsertObservations(ctx, []*Observation{o}); err != nil {
		t.Fatal(err)
	}
	got, err := d.Observation(ctx, o.ID)
	if err != nil || got.BodiesPruned {
		t.Errorf("empty body read back as %+v %v, want BodiesPruned unset", got, err)
	}
}

// A prune cancelled part-way leaves a consistent database that the next
// prune finishes.
func TestPruneInterrupted(t *testing.T) {
	d, runs, _, day0 := pruneFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	batches := 0
	afterPruneBatch = func() {
		if batches++; batches == 3 {
			cancel()
		}
	}
	defer func() { afterPruneBatch = nil }()
	opts := PruneOptions{ObservationsBefore: day0.Add(100 * 24 * time.Hour), Batch: 2}
	if _, err := d.Prune(ctx, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled prune: %v", err)
	}
	left := 0
	for _, r := range runs[:5] {
		n, _ := countObs(t, d, r)
		left += n
	}
	if left != 20-3*2 {
		t.Fatalf("after 3 batches of 2: %d observations left in the finished runs, want 14", left)
	}
	got, err := d.Prune(context.Background(), opts)
	if err != nil || got.ObservationsDeleted != 14 {
		t.Fatalf("prune after the interruption: %+v %v, want the 14 observations left", got, err)
	}
	if n, _ := countObs(t, d, runs[5]); n != 4 {
		t.Errorf("the running run lost observations: %d left", n)
	}
}

func TestBackupAndStats(t *testing.T) {
	ctx := context.Background()
	d, runs, _, day0 := pruneFixture(t)
	st, err := d.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Runs != 6 || st.Observations != 24 || st.WithBodies != 24 || st.BodyBytes <= 0 || st.FileBytes <= 0 ||
		!st.OldestRun.Equal(day0) || !st.NewestRun.Equal(day0.Add(5*24*time.Hour+123*time.Millisecond)) || !st.OldestBodies.Equal(day0) {
		t.Errorf("stats: %+v", st)
	}
	if _, err := d.Prune(ctx, PruneOptions{BodiesBefore: day0.Add(50 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	st, err = d.Stats(ctx)
	if err != nil || st.WithBodies != 12 || !st.OldestBodies.Equal(day0.Add(72*time.Hour+123*time.Millisecond)) {
		t.Errorf("stats after dropping 3 runs' bodies: %+v %v", st, err)
	}

	dst := filepath.Join(t.TempDir(), "copy.db")
	if err := d.Backup(ctx, dst); err != nil {
		t.Fatal(err)
	}
	if err := d.Backup(ctx, dst); !errors.Is(err, ErrExists) {
		t.Errorf("backup over an existing file: %v, want ErrExists", err)
	}
	c, err := Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cs, err := c.Stats(ctx)
	if err != nil || cs.Runs != st.Runs || cs.Observations != st.Observations || cs.BodyBytes != st.BodyBytes {
		t.Errorf("backup stats %+v %v, want the original's %+v", cs, err, st)
	}
	o := runs[4]
	a, err1 := d.Observations(ctx, o, 0)
	b, err2 := c.Observations(ctx, o, 0)
	if err1 != nil || err2 != nil || len(a) != 4 || len(b) != 4 {
		t.Fatalf("observations: %d %v / %d %v", len(a), err1, len(b), err2)
	}
	_, ba, _ := d.ObservationBodies(ctx, a[0].ID)
	_, bb, _ := c.ObservationBodies(ctx, b[0].ID)
	if !bytes.Equal(ba, bb) || len(ba) == 0 {
		t.Error("backup's bodies differ from the original's")
	}
	if err := d.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
}

// pruneBenchDB makes a database of runs × n observations, a day apart,
// with 1% of the rows pinned.
func pruneBenchDB(b *testing.B, runs, n int) (*DB, []int64, time.Time) {
	b.Helper()
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, err := Open(ctx, filepath.Join(b.TempDir(), "p.db"))
	if err != nil {
		b.Fatal(err)
	}
	tgt, err := d.EnsureTarget(ctx, TargetRow{Name: "sim", Provider: "sim"})
	if err != nil {
		b.Fatal(err)
	}
	var pinned []int64
	for r := 0; r < runs; r++ {
		run, err := d.BeginRun(ctx, Run{StartedAt: day0.Add(time.Duration(r) * 24 * time.Hour), CorpusName: "c", CorpusVersion: "1"})
		if err != nil {
			b.Fatal(err)
		}
		obs := testObservations(run, tgt, n)
		insertBatches(b, d, obs, 256)
		for j := 0; j < n; j += 100 {
			pinned = append(pinned, obs[j].ID)
		}
		if err := d.FinishRun(ctx, run, RunComplete, nil); err != nil {
			b.Fatal(err)
		}
	}
	return d, pinned, day0
}

// BenchmarkPrune prunes a database of 20 runs × 5,000 observations: the
// observations of the oldest 5 runs are deleted and the bodies of the next
// 5 dropped, with 1% of the rows pinned. ns/obs is per row pruned.
// BenchmarkPruneAgain is the next prune with nothing new to prune (what
// every scheduled run pays): ns/old-obs is per row of the 10 pruned runs.
func BenchmarkPrune(b *testing.B)      { benchPrune(b, false) }
func BenchmarkPruneAgain(b *testing.B) { benchPrune(b, true) }

func benchPrune(b *testing.B, again bool) {
	const runs, n = 20, 5000
	ctx := context.Background()
	b.ReportAllocs()
	var rows int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d, pinned, day0 := pruneBenchDB(b, runs, n)
		o := PruneOptions{ObservationsBefore: day0.Add(5 * 24 * time.Hour), BodiesBefore: day0.Add(10 * 24 * time.Hour), Pinned: pinned}
		if again {
			if _, err := d.Prune(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		res, err := d.Prune(ctx, o)
		b.StopTimer()
		switch {
		case err != nil:
			b.Fatal(err)
		case again && (res.ObservationsDeleted != 0 || res.BodiesDropped != 0):
			b.Fatalf("second prune pruned %+v", res)
		case !again && (res.ObservationsDeleted == 0 || res.BodiesDropped == 0):
			b.Fatalf("prune: %+v", res)
		}
		if again {
			rows += 10 * n
		} else {
			rows += res.ObservationsDeleted + res.BodiesDropped
		}
		d.Close()
		b.StartTimer()
	}
	unit := "ns/obs"
	if again {
		unit = "ns/old-obs"
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), unit)
}

// A pruned run is marked and not walked again; what it kept because it was
// pinned is re-checked on every prune and goes once nothing pins it; a run
// marked for its bodies is walked once more when it ages past the
// observations cutoff. A dry run marks nothing.
func TestPruneMarksRunsAndRechecksKept(t *testing.T) {
	ctx := context.Background()
	d, runs, obs, day0 := pruneFixture(t)
	evidence, baseline := obs[runs[0]][1].ID, obs[runs[1]][2].ID
	opts := PruneOptions{BodiesBefore: day0.Add(36 * time.Hour), Pinned: []int64{evidence, baseline}} // runs 0 and 1
	mark := func(run int64) string {
		t.Helper()
		var m string
		if err := d.db.QueryRow(`SELECT pruned FROM runs WHERE id = ?`, run).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	dry := opts
	dry.DryRun = true
	if _, err := d.Prune(ctx, dry); err != nil {
		t.Fatal(err)
	}
	if mark(runs[0]) != "" {
		t.Fatal("a dry run marked a run")
	}
	if got, err := d.Prune(ctx, opts); err != nil || got.BodiesDropped != 6 || got.PinnedKept != 2 || got.Runs != 2 {
		t.Fatalf("first prune: %+v %v", got, err)
	}
	if mark(runs[0]) != "bodies" || mark(runs[1]) != "bodies" || mark(runs[2]) != "" {
		t.Fatalf("marks: %q %q %q", mark(runs[0]), mark(runs[1]), mark(runs[2]))
	}
	// A marked run is not walked again: a row with a body slipped into it
	// afterwards (it cannot happen; here it shows the walk is skipped)
	// stays as it is.
	// (InsertObservations refuses a finished run: reopen it for the insert.)
	var status string
	if err := d.db.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, runs[0]).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, `UPDATE runs SET status = 'running' WHERE id = ?`, runs[0]); err != nil {
		t.Fatal(err)
	}
	stray := &Observation{RunID: runs[0], TargetID: obs[runs[0]][0].TargetID, ProbeID: "stray", RequestSHA256: "r", Body: []byte(`{"x":1}`), BodySHA256: "s"}
	if err := d.InsertObservations(ctx, []*Observation{stray}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, `UPDATE runs SET status = ? WHERE id = ?`, status, runs[0]); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Prune(ctx, opts); err != nil || !sameResult(got, PruneResult{PinnedKept: 2}) {
		t.Fatalf("second prune: %+v %v, want nothing but the two pinned re-checked", got, err)
	}
	if _, b, _ := d.ObservationBodies(ctx, stray.ID); b == nil {
		t.Error("a marked run was walked again")
	}
	// The baseline moves on: its body goes, the evidence stays.
	opts.Pinned = []int64{evidence}
	if got, err := d.Prune(ctx, opts); err != nil || got.BodiesDropped != 1 || got.PinnedKept != 1 || got.Runs != 1 {
		t.Fatalf("prune after unpinning the baseline: %+v %v", got, err)
	}
	if _, b, _ := d.ObservationBodies(ctx, baseline); b != nil {
		t.Error("the unpinned baseline kept its body")
	}
	if _, b, _ := d.ObservationBodies(ctx, evidence); b == nil {
		t.Error("the evidence lost its body")
	}
	// Run 0 ages past the observations cutoff: walked once more, deleted
	// but for the evidence (and the stray row, which is unpinned).
	opts.ObservationsBefore = day0.Add(12 * time.Hour)
	got, err := d.Prune(ctx, opts)
	if err != nil || got.ObservationsDeleted != 4 || got.PinnedKept != 1 {
		t.Fatalf("prune past the observations cutoff: %+v %v, want run 0's 4 unpinned rows deleted", got, err)
	}
	if n, _ := countObs(t, d, runs[0]); n != 1 || mark(runs[0]) != "observations" {
		t.Errorf("run 0: %d rows left, marked %q; want the evidence alone, marked observations", n, mark(runs[0]))
	}
	// Nothing pins the evidence any more: it goes too.
	opts.Pinned = nil
	if got, err := d.Prune(ctx, opts); err != nil || got.ObservationsDeleted != 1 || got.PinnedKept != 0 {
		t.Fatalf("prune after unpinning the evidence: %+v %v", got, err)
	}
	var kept int
	if err := d.db.QueryRow(`SELECT COUNT(*) FROM pruned_kept`).Scan(&kept); err != nil || kept != 0 {
		t.Errorf("pruned_kept holds %d rows (%v), want none", kept, err)
	}
}

// A target kept whole (KeepTargets: diff.Pins.Targets, a detection state
// that does not decode) keeps every observation, bodies included, in every
// run, and is reported with its reason and how many of its rows it kept;
// the other target is pruned as usual. Its rows in pruned runs are listed
// in pruned_kept and re-checked, so once it is no longer kept the next
// prune prunes them as their age says. A row whose target_id is damaged
// (no reader returns it) is pruned as its age says.
func TestPruneKeepsTargetsWhole(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	kept, err := d.EnsureTarget(ctx, TargetRow{Name: "kept", Provider: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := d.EnsureTarget(ctx, TargetRow{Name: "other", Provider: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	var runs []int64
	byTarget := map[int64][]int64{}
	for i := 0; i < 4; i++ {
		at := day0.Add(time.Duration(i) * 24 * time.Hour)
		id, err := d.BeginRun(ctx, Run{StartedAt: at, CorpusName: "c", CorpusVersion: "1"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, id)
		var batch []*Observation
		for _, tgt := range []int64{kept, other} {
			for p := 0; p < 2; p++ {
				batch = append(batch, &Observation{RunID: id, TargetID: tgt, ProbeID: fmt.Sprintf("p%d", p), RequestSHA256: "r",
					RequestBody: []byte(`{"model":"m"}`), Body: []byte(`{"x":1}`), BodySHA256: "b", ObservedAt: at})
			}
		}
		if err := d.InsertObservations(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for _, o := range batch {
			byTarget[o.TargetID] = append(byTarget[o.TargetID], o.ID)
		}
		if err := d.FinishRun(ctx, id, RunComplete, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A row of run 0 whose target_id does not hold an integer.
	stray := &Observation{RunID: runs[0], TargetID: kept, ProbeID: "stray", RequestSHA256: "r", Body: []byte(`{"x":1}`), BodySHA256: "b", ObservedAt: day0}
	// (InsertObservations refuses a finished run: reopen it for the insert.)
	if _, err := d.db.ExecContext(ctx, `UPDATE runs SET status = 'running' WHERE id = ?`, runs[0]); err != nil {
		t.Fatal(err)
	}
	if err := d.InsertObservations(ctx, []*Observation{stray}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`PRAGMA foreign_keys = OFF`, `UPDATE observations SET target_id = 'x' WHERE id = ` + fmt.Sprint(stray.ID),
		`PRAGMA foreign_keys = ON`, `UPDATE runs SET status = 'complete' WHERE id = ` + fmt.Sprint(runs[0])} {
		if _, err := d.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// state is every observation of target: whether it is there, and with
	// its bodies.
	state := func(target int64) string {
		t.Helper()
		var b strings.Builder
		for _, id := range byTarget[target] {
			var bodies bool
			err := d.db.QueryRow(`SELECT body IS NOT NULL AND request_body IS NOT NULL FROM observations WHERE id = ?`, id).Scan(&bodies)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				b.WriteString("-")
			case err != nil:
				t.Fatal(err)
			case bodies:
				b.WriteString("B")
			default:
				b.WriteString("o")
			}
		}
		return b.String()
	}
	whole := strings.Repeat("B", 8)
	pinned := byTarget[other][0] // run 0's first
	keep := []KeepTarget{{ID: kept, Reason: "its detection state does not decode"}}
	keptOnly := func(n int64) []KeptTarget {
		return []KeptTarget{{TargetID: kept, Target: "kept", Reason: "its detection state does not decode", Observations: n}}
	}
	opts := PruneOptions{BodiesBefore: day0.Add(36 * time.Hour), Pinned: []int64{pinned}, KeepTargets: keep, Batch: 1} // runs 0 and 1

	dry := opts
	dry.DryRun = true
	got, err := d.Prune(ctx, dry)
	if err != nil || !sameResult(got, PruneResult{Runs: 2, BodiesDropped: 4, StoredBytes: got.StoredBytes, PinnedKept: 1, DryRun: true, KeptTargets: keptOnly(4)}) {
		t.Fatalf("dry run: %+v %v, want other's 3 unpinned bodies and the stray row's dropped, kept's 4 rows kept", got, err)
	}
	if state(kept) != whole || state(other) != whole {
		t.Fatalf("a dry run changed rows: kept %s, other %s", state(kept), state(other))
	}
	got, err = d.Prune(ctx, opts)
	if err != nil || !sameResult(got, PruneResult{Runs: 2, BodiesDropped: 4, StoredBytes: got.StoredBytes, PinnedKept: 1, KeptTargets: keptOnly(4)}) {
		t.Fatalf("prune: %+v %v", got, err)
	}
	if s := state(kept); s != whole {
		t.Errorf("kept target's rows after the prune: %s, want %s", s, whole)
	}
	if s := state(other); s != "BoooBBBB" {
		t.Errorf("other target's rows after the prune: %s, want BoooBBBB", s)
	}
	if _, b, err := d.ObservationBodies(ctx, stray.ID); err != nil || b != nil {
		t.Errorf("the row with a damaged target_id: body %q (%v), want it dropped", b, err)
	}
	// Again: the marked runs are not walked, their kept rows re-checked
	// and counted again.
	if got, err := d.Prune(ctx, opts); err != nil || !sameResult(got, PruneResult{PinnedKept: 1, KeptTargets: keptOnly(4)}) {
		t.Fatalf("second prune: %+v %v, want only kept rows counted", got, err)
	}
	// Run 0 ages past the observations cutoff: walked again; kept's rows
	// stay whole there too.
	opts.ObservationsBefore = day0.Add(12 * time.Hour)
	if got, err := d.Prune(ctx, opts); err != nil || !sameResult(got, PruneResult{Runs: 1, ObservationsDeleted: 2, PinnedKept: 1, KeptTargets: keptOnly(4)}) {
		t.Fatalf("prune past the observations cutoff: %+v %v", got, err)
	}
	if s, o := state(kept), state(other); s != whole || o != "B-ooBBBB" {
		t.Errorf("after run 0's observations went: kept %s, other %s; want %s, B-ooBBBB", s, o, whole)
	}
	// No longer kept (the damaged row removed): the next prune prunes its
	// rows as their runs' age says, from pruned_kept alone.
	opts.KeepTargets = nil
	got, err = d.Prune(ctx, opts)
	if err != nil || !sameResult(got, PruneResult{Runs: 2, ObservationsDeleted: 2, BodiesDropped: 2, StoredBytes: got.StoredBytes, PinnedKept: 1}) || got.KeptTargets == nil {
		t.Fatalf("prune once the target is no longer kept: %+v %v", got, err)
	}
	if s := state(kept); s != "--ooBBBB" {
		t.Errorf("kept target's rows once no longer kept: %s, want --ooBBBB", s)
	}
	var listed int
	if err := d.db.QueryRow(`SELECT COUNT(*) FROM pruned_kept`).Scan(&listed); err != nil || listed != 1 {
		t.Errorf("pruned_kept holds %d rows (%v), want the pinned one", listed, err)
	}
}
