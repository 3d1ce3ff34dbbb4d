package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/sim"
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
	return benchSetupLatency(b, n, 0, "")
}

// benchSetupLatency is benchSetup with a sim that holds each answer back
// for latency. With simURL, or else DRIFTPROBE_BENCH_SIM_URL, set (e.g.
// http://127.0.0.1:8089), the target is the sim already listening there
// instead of an in-process one.
func benchSetupLatency(b *testing.B, n int, latency time.Duration, simURL string) (*config.Config, *corpus.Corpus, []*runner.Target, func()) {
	b.Helper()
	cfg := config.Default()
	cfg.Targets[0].Concurrency = 8
	cfg.Concurrency = 8
	if latency > 0 {
		sc := sim.Config{}
		if cfg.Targets[0].Sim != nil {
			sc = *cfg.Targets[0].Sim
		}
		sc.Latency = latency
		cfg.Targets[0].Sim = &sc
	}
	if simURL == "" {
		simURL = os.Getenv("DRIFTPROBE_BENCH_SIM_URL")
	}
	if u := simURL; u != "" {
		if latency > 0 {
			b.Skip("DRIFTPROBE_BENCH_SIM_URL: the external sim's latency is its own --sim-config's")
		}
		// A sim in its own process (driftprobe sim --listen), as a
		// provider is: its work no longer shares this process's heap
		// and garbage collector with the run's.
		cfg.Targets[0].BaseURL = u
	}
	cp := bigCorpus(b, n)
	targets, closeT, err := app.BuildTargets(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cfg, cp, targets, closeT
}

// runOnce is one full run of cp into a fresh database; only the run itself
// is timed (the caller brackets it).
func runOnce(b *testing.B, cfg *config.Config, cp *corpus.Corpus, targets []*runner.Target, timed func(func())) {
	b.Helper()
	st := openBenchDB(b)
	defer st.Close()
	runInto(b, st, cfg, cp, targets, timed)
}

func openBenchDB(b *testing.B) *storage.DB {
	b.Helper()
	st, err := storage.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// runInto is one full run of cp into st, timed as runOnce.
func runInto(b *testing.B, st *storage.DB, cfg *config.Config, cp *corpus.Corpus, targets []*runner.Target, timed func(func())) {
	b.Helper()
	timed(func() {
		sum, err := runner.New(runner.Options{Config: cfg, Corpus: cp, Store: st, Targets: targets}).Run(context.Background())
		if err != nil || sum.Targets[0].Observations != len(cp.Probes) || sum.Status != storage.RunComplete {
			b.Fatalf("run: %v %+v", err, sum)
		}
	})
}

// rawOnce sends reqs with a plain HTTP client at concurrency 8, bodies read
// and discarded, nothing classified or stored: the floor a run is compared
// with.
func rawOnce(b *testing.B, client *http.Client, reqs []*probes.Request) {
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

func renderAll(cp *corpus.Corpus, t *runner.Target) []*probes.Request {
	reqs := make([]*probes.Request, len(cp.Probes))
	for i, p := range cp.Probes {
		reqs[i], _ = t.Prober.Render(p.Wire())
	}
	return reqs
}

// BenchmarkRun5000 is a full run: 5,000 probes × 1 target against the
// loopback sim at concurrency 8, observations stored in SQLite.
func BenchmarkRun5000(b *testing.B) {
	cfg, cp, targets, closeT := benchSetup(b, 5000)
	defer closeT()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runOnce(b, cfg, cp, targets, func(f func()) { b.StartTimer(); f(); b.StopTimer() })
		b.StartTimer()
	}
	b.ReportMetric(float64(len(cp.Probes)*b.N)/b.Elapsed().Seconds(), "probes/s")
}

// BenchmarkRawRoundTrips5000 is the floor: the same 5,000 rendered
// requests sent with a plain HTTP client at concurrency 8, bodies read and
// discarded, nothing classified or stored.
func BenchmarkRawRoundTrips5000(b *testing.B) {
	_, cp, targets, closeT := benchSetup(b, 5000)
	defer closeT()
	reqs := renderAll(cp, targets[0])
	client := runner.DefaultClient()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rawOnce(b, client, reqs)
	}
	b.ReportMetric(float64(len(cp.Probes)*b.N)/b.Elapsed().Seconds(), "probes/s")
}

// BenchmarkRunOverhead5000 measures the run's overhead over raw round
// trips directly: each iteration times one raw pass and one full run back
// to back, so a noisy machine slows both alike, and reports the median of
// the per-iteration ratios as overhead-% (run/raw − 1), with the median
// run and raw times. cpu-overhead-% is the same ratio of the process's CPU
// time (user + system, the client, the in-process sim and SQLite alike),
// steadier than wall time on a shared machine; it is omitted where the
// platform has no getrusage. Use -benchtime Nx with N ≥ 5.
//
// first-run writes each run into a fresh database, so every run also
// stores the 5,000 probes' canonical forms. scheduled is the steady state
// of a monitor: one database, a first run before timing, then every
// iteration is the next run of the same corpus.
func BenchmarkRunOverhead5000(b *testing.B) {
	benchOverhead(b, 0, false)
}

// BenchmarkRunOverheadSimProcess5000 is BenchmarkRunOverhead5000 against
// the simulator in a process of its own (this test binary re-executed as
// one, serving on loopback), as a provider is: its work no longer shares
// the run's heap, garbage collector and scheduler, only the machine's
// CPUs. cpu-overhead-% counts both processes' CPU time (where /proc gives
// the simulator's), so it compares the run's whole cost with the raw
// pass's, the simulator's answers included on both sides.
func BenchmarkRunOverheadSimProcess5000(b *testing.B) {
	benchOverhead(b, 0, true)
}

// BenchmarkRunOverheadLatency5000 is BenchmarkRunOverhead5000 against a
// sim that answers after 2 ms (a fast provider; real chat endpoints take
// hundreds): the run's own work then overlaps the waits, as it does in
// production, where the loopback sim's instant answers leave the client,
// the sim and SQLite competing for the same CPUs.
func BenchmarkRunOverheadLatency5000(b *testing.B) {
	benchOverhead(b, 2*time.Millisecond, false)
}

// benchOverhead runs the overhead comparison against a sim answering after
// latency, in its own process when simProcess is set.
func benchOverhead(b *testing.B, latency time.Duration, simProcess bool) {
	var simURL string
	cpuTime := cpuTime
	if simProcess {
		p := startSimProcess(b)
		simURL = p.URL
		if _, ok := p.cpu(); ok && cpuTime() > 0 {
			own := cpuTime
			cpuTime = func() time.Duration { c, _ := p.cpu(); return own() + c }
		}
	}
	cfg, cp, targets, closeT := benchSetupLatency(b, 5000, latency, simURL)
	defer closeT()
	reqs := renderAll(cp, targets[0])
	client := runner.DefaultClient()
	measure := func(b *testing.B, run func(timed func(func()))) {
		var runs, raws, ratios, cpuRatios []float64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0, c0 := time.Now(), cpuTime()
			rawOnce(b, client, reqs)
			raw, rawCPU := time.Since(t0), cpuTime()-c0
			var took, tookCPU time.Duration
			run(func(f func()) {
				t, c := time.Now(), cpuTime()
				f()
				took, tookCPU = time.Since(t), cpuTime()-c
			})
			runs, raws = append(runs, float64(took.Milliseconds())), append(raws, float64(raw.Milliseconds()))
			ratios = append(ratios, float64(took)/float64(raw))
			if rawCPU > 0 {
				cpuRatios = append(cpuRatios, float64(tookCPU)/float64(rawCPU))
			}
		}
		b.ReportMetric(median(runs), "run-ms")
		b.ReportMetric(median(raws), "raw-ms")
		b.ReportMetric(100*(median(ratios)-1), "overhead-%")
		if len(cpuRatios) > 0 {
			b.ReportMetric(100*(median(cpuRatios)-1), "cpu-overhead-%")
		}
	}
	b.Run("first-run", func(b *testing.B) {
		measure(b, func(timed func(func())) { runOnce(b, cfg, cp, targets, timed) })
	})
	b.Run("scheduled", func(b *testing.B) {
		st := openBenchDB(b)
		defer st.Close()
		// Runs through runner.Run alone (no detection): no baselines are
		// established, so no run screens; every timed run sends each
		// probe once, as a monitor's steady state does.
		runInto(b, st, cfg, cp, targets, func(f func()) { f() })
		measure(b, func(timed func(func())) { runInto(b, st, cfg, cp, targets, timed) })
	})
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkRunRetained5000 measures the memory a run's result holds: what
// Summary.Observations keeps of each observation (bodies dropped once
// stored) for the detection that follows it in the same process, which
// reads it instead of the database. retained-KB/obs is the live heap
// with the summary held, after a collection, minus the live heap before
// the run (the corpus, the targets, the simulator), per observation: how
// a run's peak memory grows with probes × targets × samples.
func BenchmarkRunRetained5000(b *testing.B) {
	cfg, cp, targets, closeT := benchSetup(b, 5000)
	defer closeT()
	var per []float64
	for i := 0; i < b.N; i++ {
		st := openBenchDB(b)
		before := liveHeap()
		sum, err := runner.New(runner.Options{Config: cfg, Corpus: cp, Store: st, Targets: targets}).Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		after := liveHeap()
		n := 0
		for _, obs := range sum.Observations {
			n += len(obs)
		}
		per = append(per, float64(after-before)/1024/float64(n))
		runtime.KeepAlive(sum)
		st.Close()
	}
	b.ReportMetric(median(per), "retained-KB/obs")
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
