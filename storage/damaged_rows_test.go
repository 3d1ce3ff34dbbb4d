package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// damageCase damages observation id with set (an UPDATE's SET clause, as
// a bad write or an edit would leave it) and names what the readers must
// say about it, column by column in obsColumns order.
type damageCase struct {
	id   int64
	set  string
	want []ColumnDamage
}

var damageCases = []damageCase{
	{2, `http_status = 'x'`, []ColumnDamage{{"http_status", `holds text "x", not an integer`}}},
	{3, `sample = 'x'`, []ColumnDamage{{"sample", `holds text "x", not an integer`}}},
	{4, `body_truncated = 'x'`, []ColumnDamage{{"body_truncated", `holds text "x", not 0 or 1`}}},
	{5, `latency_ms = 'abc'`, []ColumnDamage{{"latency_ms", `holds text "abc", not a number`}}},
	{6, `bodies_pruned = 'garbage'`, []ColumnDamage{{"bodies_pruned", `holds text "garbage", not 0 or 1`}}},
	{7, `heuristic = 2`, []ColumnDamage{{"heuristic", `holds integer 2, not 0 or 1`}}},
	{8, `class = 'allowee'`, []ColumnDamage{{"class", `holds text "allowee", not a verdict class`}}},
	{9, `stage = 'middle'`, []ColumnDamage{{"stage", `holds text "middle", not a verdict stage`}}},
	{12, `observed_at = 'yesterday'`, []ColumnDamage{{"observed_at", `holds text "yesterday", not an RFC 3339 time`}}},
	{13, `signals = X'01ff'`, []ColumnDamage{{"signals", `holds a 2-byte blob, which does not decode as signals (signals: corrupt encoding)`}}},
	{14, `cost_usd = X'00'`, []ColumnDamage{{"cost_usd", `holds a 1-byte blob, not a number`}}},
	{15, `tokens_in = 1.5`, []ColumnDamage{{"tokens_in", `holds real 1.5, not an integer`}}},
	{16, `request_path = X'2f'`, []ColumnDamage{{"request_path", `holds a 1-byte blob, not text`}}},
	{17, `http_status = 'y', sample = 'z', run_id = 'r'`, []ColumnDamage{{"run_id", `holds text "r", not an integer`},
		{"sample", `holds text "z", not an integer`}, {"http_status", `holds text "y", not an integer`}}},
}

// damaged stores 40 sound observations with true fingerprints and applies
// damageCases, with foreign keys off (a damaged run_id has no parent).
func damaged(t *testing.T) (d *DB, run, tgt int64) {
	t.Helper()
	ctx := context.Background()
	d = openTestDB(t)
	run, tgt = setupRun(t, d)
	if err := d.InsertObservations(ctx, checkedObservations(run, tgt, 40)); err != nil {
		t.Fatal(err)
	}
	exec := func(q string) {
		t.Helper()
		if _, err := d.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`PRAGMA foreign_keys = OFF`)
	for _, c := range damageCases {
		exec(fmt.Sprintf(`UPDATE observations SET %s WHERE id = %d`, c.set, c.id))
	}
	exec(`PRAGMA foreign_keys = ON`)
	return d, run, tgt
}

// A damaged row is never read as an observation: the single and the run
// readers fail with a *DamagedError naming the row and each damaged
// column (not a Scan error), ObservationsWithDamage returns the sound rows
// and the damaged ones apart, and the sound rows read as before.
func TestObservationReadersReportDamagedRows(t *testing.T) {
	ctx := context.Background()
	d, run, tgt := damaged(t)
	for _, c := range damageCases {
		o, err := d.Observation(ctx, c.id)
		var de *DamagedError
		if o != nil || !errors.As(err, &de) || !IsDamagedRow(err) || !errors.Is(err, ErrDamagedRow) || len(de.Rows) != 1 {
			t.Fatalf("observation %d (%s): %+v, %v", c.id, c.set, o, err)
		}
		row := de.Rows[0]
		if row.ID != c.id || !reflect.DeepEqual(row.Columns, c.want) {
			t.Errorf("observation %d (%s): %+v, want columns %+v", c.id, c.set, row, c.want)
		}
		// The identity is given as far as its own columns read.
		if wantRun := run; c.id == 17 {
			if row.RunID != 0 || row.Sample != 0 {
				t.Errorf("observation 17: damaged run_id and sample read as %d, %d", row.RunID, row.Sample)
			}
		} else if row.RunID != wantRun || row.TargetID != tgt || row.ProbeID == "" {
			t.Errorf("observation %d: identity %+v", c.id, row)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, fmt.Sprintf("damaged row: observation %d (run ", c.id)) || !strings.Contains(msg, c.want[0].String()) || !strings.Contains(msg, "db check") {
			t.Errorf("observation %d: message %q", c.id, msg)
		}
	}

	obs, err := d.Observations(ctx, run, tgt)
	var de *DamagedError
	if obs != nil || !errors.As(err, &de) {
		t.Fatalf("Observations: %d rows, %v", len(obs), err)
	}
	// 17's run_id is damaged: it is not found by run.
	var ids []int64
	for _, r := range de.Rows {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	want := []int64{2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16}
	if !slices.Equal(ids, want) || !strings.HasPrefix(err.Error(), "13 observations are damaged: observation ") || !strings.Contains(err.Error(), "and 10 more") {
		t.Errorf("Observations: damaged %v, want %v: %v", ids, want, err)
	}

	sound, bad, err := d.ObservationsWithDamage(ctx, run, tgt)
	if err != nil || len(bad) != len(want) || len(sound) != 40-len(damageCases) {
		t.Fatalf("ObservationsWithDamage: %d sound, %d damaged, %v", len(sound), len(bad), err)
	}
	for _, o := range sound {
		if slices.Contains(want, o.ID) || o.ID == 17 {
			t.Errorf("damaged observation %d returned as sound", o.ID)
		}
		one, err := d.Observation(ctx, o.ID)
		if err != nil || !reflect.DeepEqual(one, o) {
			t.Errorf("observation %d: %+v, %v; in the run %+v", o.ID, one, err, o)
		}
		if o.ObservedAt.IsZero() || o.Result.Class == "" {
			t.Errorf("observation %d read without its time or class: %+v", o.ID, o)
		}
	}
}

// db check names every damaged observation, with each damaged column and
// what it holds, and goes on: the evidence of the other rows is checked.
func TestCheckListsDamagedObservations(t *testing.T) {
	ctx := context.Background()
	d, run, tgt := damaged(t)
	// And a tampered body after them: found all the same.
	if _, err := d.db.ExecContext(ctx, `UPDATE observations SET body_sha256 = 'feed' WHERE id = 39`); err != nil {
		t.Fatal(err)
	}
	rep, err := d.Check(ctx, CheckOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.Observations != 40 || rep.ProblemCount != int64(len(damageCases))+1 {
		t.Fatalf("report: %+v", rep)
	}
	got := map[int64]BodyProblem{}
	for _, p := range rep.Problems {
		got[p.ObservationID] = p
	}
	for _, c := range damageCases {
		p := got[c.id]
		var text []string
		for _, w := range c.want {
			text = append(text, w.String())
		}
		if p.Problem != ProblemDamagedRow+": "+strings.Join(text, "; ") || !reflect.DeepEqual(p.Columns, c.want) {
			t.Errorf("observation %d: %+v, want %q", c.id, p, text)
		}
		if c.id != 17 && (p.RunID != run || p.TargetID != tgt || p.Target != "sim" || p.ProbeID == "") {
			t.Errorf("observation %d: identity %+v", c.id, p)
		}
	}
	if p := got[39]; p.Problem != ProblemResponseMismatch || p.Columns != nil {
		t.Errorf("tampered body after the damaged rows: %+v", p)
	}
	// SQLite's own check sees none of this (the file is sound); run_id
	// 'r' has no parent run.
	if len(rep.ForeignKeys) != 1 || rep.ForeignKeys[0].Table != "observations" || rep.ForeignKeys[0].RowID != 17 {
		t.Errorf("foreign keys: %+v", rep.ForeignKeys)
	}
}

// The typed columns of the other tables are checked too: each damaged row
// is a structure message naming the table, the row and the column; at most
// MaxProblems per table, the rest counted.
func TestCheckListsDamagedRowsOfOtherTables(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	run, tgt := setupRun(t, d)
	if err := d.InsertObservations(ctx, checkedObservations(run, tgt, 4)); err != nil {
		t.Fatal(err)
	}
	if err := d.FinishRun(ctx, run, RunComplete, []RunTarget{{TargetID: tgt, Status: TargetComplete, CostUSD: 0.5, Duration: time.Second}}); err != nil {
		t.Fatal(err)
	}
	for _, cat := range []string{"hate", "violence", "weapons"} {
		if _, err := d.db.ExecContext(ctx, `INSERT INTO target_categories (target_id, category, first_run) VALUES (?, ?, ?)`, tgt, cat, run); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := d.Check(ctx, CheckOptions{})
	if err != nil || !rep.OK || len(rep.Structure) != 0 {
		t.Fatalf("sound database: %+v, %v", rep, err)
	}
	for _, q := range []string{
		`UPDATE runs SET detected = 7`,
		`UPDATE run_targets SET cost_usd = 'free'`,
		`UPDATE target_categories SET first_run = 'x'`,
		`UPDATE targets SET provider = X'00'`,
	} {
		if _, err := d.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = d.Check(ctx, CheckOptions{MaxProblems: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("runs row %d: column detected holds integer 7, not 0 or 1", run),
		`targets row 1: column provider holds a 1-byte blob, not text`,
		`run_targets row 1: column cost_usd holds text "free", not a number`,
		fmt.Sprintf(`target_categories row (target_id %d, category "hate"): column first_run holds text "x", not an integer`, tgt),
		fmt.Sprintf(`target_categories row (target_id %d, category "violence"): column first_run holds text "x", not an integer`, tgt),
		`target_categories: and 1 more damaged rows (--max-problems)`,
	}
	if rep.OK || !slices.Equal(rep.Structure, want) || rep.ProblemCount != 0 {
		t.Errorf("structure:\n%s\nwant:\n%s\n(%+v)", strings.Join(rep.Structure, "\n"), strings.Join(want, "\n"), rep)
	}
}

// Retention reads a damaged bodies_pruned as not pruned: db prune goes on
// (the QA found "prune run 1: sql: Scan error"), prunes the row as its age
// says, in a run's first prune and when it re-checks the pinned rows it
// kept.
func TestPruneGoesOnPastADamagedFlag(t *testing.T) {
	ctx := context.Background()
	d, runs, obs, day0 := pruneFixture(t)
	first, kept := obs[runs[0]][0].ID, obs[runs[1]][0].ID
	if _, err := d.db.ExecContext(ctx, `UPDATE observations SET bodies_pruned = 'garbage' WHERE id = ?`, first); err != nil {
		t.Fatal(err)
	}
	cut := day0.Add(36 * time.Hour) // runs 0 and 1
	res, err := d.Prune(ctx, PruneOptions{BodiesBefore: cut, Pinned: []int64{kept}})
	if err != nil || res.BodiesDropped != 7 || res.PinnedKept != 1 {
		t.Fatalf("first prune: %+v, %v", res, err)
	}
	if o, err := d.Observation(ctx, first); err != nil || !o.BodiesPruned {
		t.Errorf("damaged row after the prune: %+v, %v", o, err)
	}
	// The kept row is damaged since; the pin is gone: re-checked, pruned.
	if _, err := d.db.ExecContext(ctx, `UPDATE observations SET bodies_pruned = 'garbage' WHERE id = ?`, kept); err != nil {
		t.Fatal(err)
	}
	res, err = d.Prune(ctx, PruneOptions{BodiesBefore: cut})
	if err != nil || res.BodiesDropped != 1 {
		t.Fatalf("second prune: %+v, %v", res, err)
	}
	if o, err := d.Observation(ctx, kept); err != nil || !o.BodiesPruned {
		t.Errorf("kept row after the second prune: %+v, %v", o, err)
	}
}

// A raw byte-level damage, deterministic: half of a leaf page of the
// observations table in the middle of the file is scrambled. db check
// reports what SQLite's integrity_check says and every row it cannot read
// or that does not verify, and goes on past the page: a tampered body
// after it is still found.
func TestCheckGoesOnPastADamagedPage(t *testing.T) {
	ctx := context.Background()
	const n = 600
	p := checkedDB(t, t.TempDir(), n)
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, `UPDATE observations SET body_sha256 = 'feed' WHERE id = ?`, n); err != nil {
		t.Fatal(err)
	}
	var pages []int64
	rows, err := d.db.QueryContext(ctx, `SELECT pageno FROM dbstat WHERE name = 'observations' AND pagetype = 'leaf' ORDER BY path`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var pg int64
		if err := rows.Scan(&pg); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, pg)
	}
	rows.Close()
	var pageSize int64
	if err := d.db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("only %d leaf pages", len(pages))
	}
	if err := d.Close(); err != nil { // checkpoints: every page is in the file
		t.Fatal(err)
	}
	page := pages[len(pages)/2]
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, pageSize/2)
	off := (page-1)*pageSize + pageSize/2
	if _, err := f.ReadAt(buf, off); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] ^= 0xa5
	}
	if _, err := f.WriteAt(buf, off); err != nil {
		t.Fatal(err)
	}
	f.Close()

	d, err = OpenReadOnly(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rep, err := d.Check(ctx, CheckOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.Structure) == 0 {
		t.Fatalf("damage not reported: %+v", rep)
	}
	var damagedIDs []int64
	last := BodyProblem{}
	for _, p := range rep.Problems {
		if p.ObservationID < n {
			damagedIDs = append(damagedIDs, p.ObservationID)
			if !strings.HasPrefix(p.Problem, ProblemRowUnreadable+": ") {
				t.Errorf("observation %d on the damaged page: %q", p.ObservationID, p.Problem)
			}
		}
		last = p
	}
	// The rows of one page: consecutive ids, found through the index.
	if len(damagedIDs) == 0 || damagedIDs[len(damagedIDs)-1]-damagedIDs[0] != int64(len(damagedIDs)-1) || last.ObservationID != n || last.Problem != ProblemResponseMismatch {
		t.Errorf("problems: %+v", rep.Problems)
	}
	// Every row but the damaged page's is read and verified.
	if rep.Observations != n || rep.BodiesChecked < n-int64(len(damagedIDs))-n/10 {
		t.Errorf("read %d observations, %d bodies checked, after %d damaged rows", rep.Observations, rep.BodiesChecked, len(damagedIDs))
	}
	t.Logf("page %d (leaf %d of %d): structure %q; rows unreadable %v", page, len(pages)/2+1, len(pages), rep.Structure, damagedIDs)
}

// The damage a column can hold is described by its storage class and,
// but for a blob, its value: escaped, clipped.
func TestColumnDamageDescribesTheValue(t *testing.T) {
	long := strings.Repeat("é", 30)
	for _, c := range []struct {
		k    colKind
		v    any
		want string
	}{
		{colInt, nil, "holds NULL, not an integer"},
		{colInt, int64(3), ""},
		{colReal, int64(3), ""},
		{colText, int64(5), "holds integer 5, not text"},
		{colText, "a\x1b[31m", ""},
		{colInt, "a\x1b[31m", `holds text "a\x1b[31m", not an integer`},
		{colInt, long, fmt.Sprintf("holds text %q… (60 bytes), not an integer", long[:40])},
		{colTextOrNull, nil, ""},
		{colTextOrBlob, 2.5, "holds real 2.5, not text or a blob"},
		{colBlob, "", `holds text "", not a blob`},
		{colBool, int64(-1), "holds integer -1, not 0 or 1"},
	} {
		if got := c.k.damage(c.v); got != c.want {
			t.Errorf("%d %#v: %q, want %q", c.k, c.v, got, c.want)
		}
	}
}
