package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/storage"
)

// syntheticHistory fills st with runs hourly runs of targets targets each
// (every target in every run; one run in 50 aborted), written with
// multi-row inserts. It returns the target names.
func syntheticHistory(tb testing.TB, st *storage.DB, runs, targets int) []string {
	tb.Helper()
	ctx := context.Background()
	names := make([]string, targets)
	ids := make([]int64, targets)
	for i := range targets {
		names[i] = fmt.Sprintf("t%02d", i)
		ids[i] = ensureTarget(tb, st, names[i])
	}
	db := st.SQL()
	const batch = 500
	for first := 1; first <= runs; first += batch {
		var rs, rts []string
		for id := first; id < first+batch && id <= runs; id++ {
			start := t0.Add(time.Duration(id) * time.Hour)
			status, tstatus := "complete", "complete"
			if id%50 == 0 {
				status, tstatus = "aborted", "aborted"
			}
			rs = append(rs, fmt.Sprintf("(%d, '%s', '%s', '%s', 'c', '1', 'h')", id, start.Format(time.RFC3339Nano), start.Add(90*time.Second).Format(time.RFC3339Nano), status))
			for _, tid := range ids {
				rts = append(rts, fmt.Sprintf("(%d, %d, '%s', 62, 60, 1, 1, 0, 64, 2, 6200, 620, 0.01)", id, tid, tstatus))
			}
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO runs (id, started_at, finished_at, status, corpus_name, corpus_version, corpus_hash) VALUES `+strings.Join(rs, ",")); err != nil {
			tb.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO run_targets (run_id, target_id, status, observations, verdicts, transient, client_errors, unavailable, requests, retries, tokens_in, tokens_out, cost_usd) VALUES `+strings.Join(rts, ",")); err != nil {
			tb.Fatal(err)
		}
	}
	return names
}

// BenchmarkCollect is one scrape of a database with 50,000 runs of 10
// targets: "scrape" after a first one, as serve's /metrics is scraped
// every 15-60 s; "first" by a new collector, as every one-shot run
// exports (it reads the run history once).
func BenchmarkCollect(b *testing.B) {
	st := openStore(b)
	syntheticHistory(b, st, 50000, 10)
	gather := func(c *metrics.DBCollector) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("scrape", func(b *testing.B) {
		c := metrics.NewDBCollector(st.SQL())
		gather(c)
		for b.Loop() {
			gather(c)
		}
	})
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			gather(metrics.NewDBCollector(st.SQL()))
		}
	})
}
