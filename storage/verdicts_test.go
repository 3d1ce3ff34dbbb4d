package storage

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// VerdictRows passes exactly the rows ObservationsWithDamage reads as
// sound, in its order, with the columns it decoded; every damaged row of
// damageCases (a column of any kind, the class, stage, time or signals)
// is skipped.
func TestVerdictRowsSkipsDamagedRows(t *testing.T) {
	ctx := context.Background()
	d, run, tgt := damaged(t)
	// Categories and a second sample, so the order is exercised.
	if _, err := d.db.ExecContext(ctx, `UPDATE observations SET categories = 'hate,violence' WHERE id IN (20, 21)`); err != nil {
		t.Fatal(err)
	}
	sound, bad, err := d.ObservationsWithDamage(ctx, run, tgt)
	if err != nil || len(bad) == 0 {
		t.Fatalf("%d damaged, %v", len(bad), err)
	}
	var want []VerdictRow
	for _, o := range sound {
		want = append(want, VerdictRow{RunID: o.RunID, ProbeID: o.ProbeID, RequestSHA256: o.RequestSHA256, Class: o.Result.Class,
			Categories: strings.Join(o.Result.Categories, ",")})
	}
	var got []VerdictRow
	err = d.VerdictRows(ctx, tgt, []int64{run, run + 100, run}, func(r *VerdictRow) error {
		got = append(got, *r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("VerdictRows:\n%+v\nwant (ObservationsWithDamage's sound rows):\n%+v", got, want)
	}
	if err := d.VerdictRows(ctx, tgt+1, []int64{run}, func(*VerdictRow) error { t.Fatal("row of another target"); return nil }); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	if err := d.VerdictRows(ctx, tgt, []int64{run}, func(*VerdictRow) error { return stop }); err != stop {
		t.Fatalf("fn's error: %v", err)
	}
	// Many runs bind in chunks, and the rows still come ordered by run.
	var many []int64
	for i := int64(0); i < 3*verdictRunChunk; i++ {
		many = append(many, 1_000_000-i)
	}
	many = append(many, run)
	n := 0
	if err := d.VerdictRows(ctx, tgt, many, func(*VerdictRow) error { n++; return nil }); err != nil || n != len(want) {
		t.Fatalf("%d rows over %d runs, %v", n, len(many), err)
	}
}

// The query is served by the unique (run_id, target_id, probe_id, sample)
// index, with no sort of its own.
func TestVerdictRowsUsesIndex(t *testing.T) {
	d := openTestDB(t)
	q := `EXPLAIN QUERY PLAN SELECT run_id, probe_id, request_sha256, class, categories, observed_at, signals FROM observations` +
		` WHERE run_id IN (?, ?) AND target_id = ? AND ` + soundRow + ` ORDER BY run_id, probe_id, sample`
	rows, err := d.db.QueryContext(context.Background(), q, 1, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	p := strings.Join(plan, "; ")
	if !strings.Contains(p, "USING INDEX") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("plan: %s", p)
	}
}
