package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// bigCorpus returns n probes derived from the default corpus's texts.
func bigCorpus(b *testing.B, n int) *corpus.Corpus {
	b.Helper()
	def, err := corpus.Default()
	if err != nil {
		b.Fatal(err)
	}
	var y bytes.Buffer
	y.WriteString("name: bench\nversion: \"1\"\nprobes:\n")
	for i := 0; i < n; i++ {
		p := def.Probes[i%len(def.Probes)]
		last := p.Messages[len(p.Messages)-1].Content
		fmt.Fprintf(&y, "  - {id: p%05d, prompt: %q, tags: [], expect: either, role: borderline}\n", i, fmt.Sprintf("%s (variant %d)", last, i))
	}
	cp, err := corpus.LoadFS(fstest.MapFS{"corpus.yaml": {Data: y.Bytes()}}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return cp
}

func benchSetup(b *testing.B, n int) (*config.Config, *corpus.Corpus, []*runner.Target, func()) {
	b.Helper()
	cfg := config.Default()
	cfg.Targets[0].Concurrency = 8
	cfg.Concurrency = 8
	cp := bigCorpus(b, n)
	targets, closeT, err := app.BuildTargets(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cfg, cp, targets, closeT
}

// BenchmarkRun5000 is a full run: 5,000 probes × 1 target against the
// loopback sim at concurrency 8, observations stored in SQLite.
func BenchmarkRun5000(b *testing.B) {
	const n = 5000
	cfg, cp, targets, closeT := benchSetup(b, n)
	defer closeT()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		st, err := storage.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		sum, err := runner.New(runner.Options{Config: cfg, Corpus: cp, Store: st, Targets: targets}).Run(context.Background())
		if err != nil || sum.Targets[0].Observations != n {
			b.Fatalf("run: %v %+v", err, sum)
		}
		b.StopTimer()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "probes/s")
}

// BenchmarkRawRoundTrips5000 is the floor: the same 5,000 rendered
// requests sent with a plain HTTP client at concurrency 8, bodies read and
// discarded, nothing classified or stored.
func BenchmarkRawRoundTrips5000(b *testing.B) {
	const n = 5000
	_, cp, targets, closeT := benchSetup(b, n)
	defer closeT()
	pr := targets[0].Prober
	reqs := make([]*probes.Request, n)
	for i, p := range cp.Probes {
		reqs[i], _ = pr.Render(p.Wire())
	}
	client := runner.DefaultClient()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		work := make(chan *probes.Request)
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range work {
					hr, _ := http.NewRequest(r.Method, r.URL, bytes.NewReader(r.Body))
					hr.Header = r.Header.Clone()
					resp, err := client.Do(hr)
					if err != nil {
						b.Error(err)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
		for _, r := range reqs {
			work <- r
		}
		close(work)
		wg.Wait()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "probes/s")
}
