package diff_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// synthRun builds one run's observations: every probe answers its stable
// verdict, except, when churn is set, a rotating 1% that flip for two
// runs and go back (candidates, confirmations, events and reverts).
func synthRun(run int64, targets []int64, nProbes int, churn bool) []diff.TargetRun {
	out := make([]diff.TargetRun, len(targets))
	for ti, tid := range targets {
		obs := make([]*storage.Observation, nProbes)
		for i := 0; i < nProbes; i++ {
			r := probes.Result{Class: probes.Allowed, ModelID: "m", ModelFP: "fp"}
			if i%7 == 0 {
				r = probes.Result{Class: probes.BlockedInput, Categories: []string{"violence"}}
			}
			if churn && (i+int(run/4)*97)%100 == 0 && run%4 < 2 {
				r = probes.Result{Class: probes.BlockedOutput, Categories: []string{"hate"}, ModelID: "m", ModelFP: "fp"}
			}
			obs[i] = &storage.Observation{ID: run*int64(nProbes)*10 + int64(ti*nProbes+i), RunID: run, TargetID: tid,
				ProbeID: fmt.Sprintf("p%05d", i), RequestSHA256: fmt.Sprintf("%064d", i), Result: r}
		}
		out[ti] = diff.TargetRun{ID: tid, Name: fmt.Sprintf("t%d", ti), Provider: "sim", Status: storage.TargetComplete, Observations: obs}
	}
	return out
}

func benchDiff(b *testing.B, history int, churn bool) {
	const nProbes, nTargets = 10000, 10
	ctx := context.Background()
	st, err := storage.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var tids []int64
	for i := 0; i < nTargets; i++ {
		id, _ := st.EnsureTarget(ctx, storage.TargetRow{Name: fmt.Sprintf("t%d", i), Provider: "sim", Model: "m", Endpoint: "chat"})
		tids = append(tids, id)
	}
	apply := func(run int64, in []diff.TargetRun) {
		if _, err := st.BeginRun(ctx, storage.Run{CorpusName: "b", CorpusVersion: "1", CorpusHash: "h"}); err != nil {
			b.Fatal(err)
		}
		if _, err := diff.Apply(ctx, st, diff.Input{RunID: run, CorpusVersion: "1", CorpusHash: "h", Targets: in, Params: diff.Params{ConfirmRuns: 2}}); err != nil {
			b.Fatal(err)
		}
	}
	run := int64(0)
	for ; run < int64(history); run++ {
		apply(run+1, synthRun(run+1, tids, nProbes, churn))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		run++
		in := synthRun(run, tids, nProbes, churn)
		b.StartTimer()
		apply(run, in)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
}

// BenchmarkDiff is one run's detection over 10,000 probes × 10 targets
// after 3, 30 and 100 runs of history: "steady" when every probe holds
// still, "churn" when 1% of probes flip every run.
func BenchmarkDiff(b *testing.B) {
	for _, h := range []int{3, 30, 100} {
		b.Run(fmt.Sprintf("steady/history=%d", h), func(b *testing.B) { benchDiff(b, h, false) })
	}
	for _, h := range []int{3, 30} {
		b.Run(fmt.Sprintf("churn/history=%d", h), func(b *testing.B) { benchDiff(b, h, true) })
	}
}
