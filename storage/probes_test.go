package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSaveProbes covers multi-row chunks, re-saving (no duplicates, no
// changes to stored rows) and a corpus listing one probe twice.
func TestSaveProbes(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	rec := func(i int, version string) ProbeRecord {
		return ProbeRecord{SHA256: fmt.Sprintf("sha%04d", i), ProbeID: fmt.Sprintf("p%04d", i), CorpusVersion: version, Role: "benign", Expect: "allowed", Tags: []string{"a", "b"}, Canonical: fmt.Sprintf(`{"id":"p%04d"}`, i)}
	}
	var first []ProbeRecord
	for i := 0; i < 150; i++ {
		first = append(first, rec(i, "1"))
	}
	if err := d.SaveProbes(ctx, first); err != nil {
		t.Fatal(err)
	}
	// Again, with 70 new ones, one of them twice, and old ones under a new
	// version label (the stored row keeps the version it was first seen in).
	var second []ProbeRecord
	for i := 100; i < 220; i++ {
		second = append(second, rec(i, "2"))
	}
	second = append(second, rec(219, "2"))
	if err := d.SaveProbes(ctx, second); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM probes`).Scan(&n); err != nil || n != 220 {
		t.Fatalf("probes stored: %d %v, want 220", n, err)
	}
	for _, c := range []struct {
		i       int
		version string
	}{{0, "1"}, {63, "1"}, {64, "1"}, {149, "1"}, {150, "2"}, {219, "2"}} {
		p, err := d.Probe(ctx, fmt.Sprintf("sha%04d", c.i))
		want := rec(c.i, c.version)
		if err != nil || p.ProbeID != want.ProbeID || p.CorpusVersion != want.CorpusVersion || p.Canonical != want.Canonical || len(p.Tags) != 2 {
			t.Errorf("probe %d: %+v %v", c.i, p, err)
		}
	}
}

// RunStatuses lists runs oldest first with each target's status;
// ProbeTags gives a probe id the tags it was last stored with.
func TestRunStatusesAndProbeTags(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	run1, tgt := setupRun(t, d)
	if err := d.FinishRun(ctx, run1, RunPartial, []RunTarget{{TargetID: tgt, Status: TargetDegraded}}); err != nil {
		t.Fatal(err)
	}
	run2, err := d.BeginRun(ctx, Run{CorpusName: "c", CorpusVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := d.RunStatuses(ctx)
	if err != nil || len(rs) != 2 || rs[0].ID != run1 || rs[0].Status != RunPartial || rs[0].Targets["sim"] != TargetDegraded ||
		rs[1].ID != run2 || rs[1].Status != RunRunning || len(rs[1].Targets) != 0 {
		t.Fatalf("run statuses %+v %v", rs, err)
	}
	for _, r := range []ProbeRecord{
		{SHA256: "s1", ProbeID: "p1", CorpusVersion: "1", Tags: []string{"hate", "violence"}, Canonical: "{}"},
		{SHA256: "s2", ProbeID: "p1", CorpusVersion: "2", Tags: []string{"privacy"}, Canonical: "{}"},
		{SHA256: "s3", ProbeID: "p2", CorpusVersion: "2", Canonical: "{}"},
	} {
		if err := d.SaveProbes(ctx, []ProbeRecord{r}); err != nil {
			t.Fatal(err)
		}
	}
	tags, err := d.ProbeTags(ctx)
	if err != nil || len(tags) != 2 || fmt.Sprint(tags["p1"]) != "[privacy]" || tags["p2"] != nil {
		t.Errorf("probe tags %v %v", tags, err)
	}
}

// A run another lease holder recorded aborted (this process lost its
// lease) is not finished again: its status and per-target rows stay.
func TestFinishRunRefusesAFinishedRun(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tgt, err := d.EnsureTarget(ctx, TargetRow{Name: "a", Provider: "sim", Model: "m", Endpoint: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.BeginRun(ctx, Run{CorpusName: "c", CorpusVersion: "1", CorpusHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.AbandonStaleRuns(ctx, d.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("abandon: %d %v", n, err)
	}
	err = d.FinishRun(ctx, run, RunComplete, []RunTarget{{TargetID: tgt, Status: TargetComplete}})
	if !errors.Is(err, ErrRunFinished) {
		t.Fatalf("finishing an aborted run: %v", err)
	}
	r, _ := d.Run(ctx, run)
	rts, _ := d.RunTargets(ctx, run)
	if r.Status != RunAborted || len(rts) != 0 {
		t.Fatalf("run %s with %d target rows, want aborted with none", r.Status, len(rts))
	}
}

// BenchmarkSaveProbes stores a corpus of 5,000 probes into a fresh
// database, as a first run's writer does (canonical forms of ~300 bytes,
// hashes in random order, as SHA-256 digests are).
func BenchmarkSaveProbes(b *testing.B) {
	const n = 5000
	ctx := context.Background()
	recs := make([]ProbeRecord, n)
	for i := range recs {
		sum := sha256.Sum256([]byte(fmt.Sprint(i)))
		recs[i] = ProbeRecord{SHA256: hex.EncodeToString(sum[:]), ProbeID: fmt.Sprintf("p%05d", i), CorpusVersion: "1", Role: "borderline", Expect: "either",
			Canonical: fmt.Sprintf(`{"id":"p%05d","messages":[{"role":"user","content":%q}],"params":{}}`, i, strings.Repeat("a borderline question, variant ", 8))}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d, err := Open(ctx, filepath.Join(b.TempDir(), "b.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := d.SaveProbes(ctx, recs); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		d.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/probe")
}
