package metrics_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/probes/sim"
	"github.com/driftprobe/driftprobe/storage"
)

// inputRuns drives real runs (RunOnce: the runner, the sim over loopback
// HTTP, detection) into one database, rebuilding the targets and the
// corpus from the config as a restarted one-shot run would, and keeps one
// store open so one collector sees every run.
type inputRuns struct {
	t      *testing.T
	e      *testenv.Env
	corpus *corpus.Corpus
}

// run runs cfg once at `at` (the store's clock: the run starts and ends
// then) and returns input_changes per target, as `run --json` reports it.
func (r *inputRuns) run(cfg *config.Config, at time.Time) map[string]int {
	r.t.Helper()
	targets, closeT, err := app.BuildTargets(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	defer closeT()
	r.e.Store.SetClock(func() time.Time { return at })
	res, err := app.RunOnce(context.Background(), cfg, r.corpus, r.e.Store, targets, app.RunOptions{Sleep: r.e.Sleep, Now: func() time.Time { return at }})
	if err != nil {
		r.t.Fatalf("run at %v: %v", at, err)
	}
	out := map[string]int{}
	js := res.JSON()
	if js.Status != "complete" {
		r.t.Fatalf("run %d at %v: status %s", js.RunID, at, js.Status)
	}
	for _, tg := range js.Targets {
		out[tg.Target] = tg.InputChanges
	}
	return out
}

func enabledNames(cfg *config.Config) []string {
	var out []string
	for _, t := range cfg.Enabled() {
		out = append(out, t.Name)
	}
	return out
}

// driftprobe_input_change_timestamp_seconds and _probes, from real runs on
// the simulator: per configured target and cause, the end of the latest
// run whose detection restarted baselines for that cause and how many
// probes it restarted, equal to what `run --json` reported as the
// target's input_changes in that run.
//
//   - A config parameter change (max_tokens, in every request body)
//     restarts every probe's baseline: cause request, the corpus size.
//   - A base_url move to another endpoint: cause origin, the corpus size;
//     the request series stays as it was.
//   - A corpus version editing two probes: cause request, 2 (the latest
//     run's probes, not a sum over runs), at that run's end; the origin
//     series stays.
//   - A move back to the endpoint the target left: its parked state
//     resumes, so no origin restart (the origin series keeps the first
//     move's time), but the two probes edited while it was away restart
//     there: request, 2, at that run.
//   - A target removed from the config exports nothing, though its rows
//     stay in the database.
//
// No series before the first input change; a fresh collector (a restarted
// serve, a one-shot run's single scrape) exports the same as the one that
// read the rows scrape by scrape.
func TestInputChangeMetricsFromRealRuns(t *testing.T) {
	endA := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer endA.Close()
	endB := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer endB.Close()
	dir := t.TempDir()
	src, err := os.ReadFile("../corpus/default/corpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	e := testenv.New(t, `
corpus: `+dir+`
confirm_runs: 2
targets:
  - {name: sim-a, provider: sim, model: m, max_tokens: 64}
  - {name: gw, provider: sim, model: m, max_tokens: 64, base_url: "`+endA.URL+`"}
  - {name: gone, provider: sim, model: m, max_tokens: 64}
`)
	r := &inputRuns{t: t, e: e, corpus: e.Corpus}
	n := len(e.Corpus.Probes)
	if n < 10 {
		t.Fatalf("corpus of %d probes", n)
	}
	cfg := e.Config
	set := &metrics.TargetSet{}
	set.Set(enabledNames(cfg), t0)
	reg := collectorRegistry(metrics.NewDBCollector(e.Store.SQL()).OnlyTargets(set))
	names := []string{metrics.InputChangeTimestamp, metrics.InputChangeProbes}
	hour := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	stamp := func(h int) string { return strconv.FormatFloat(float64(hour(h).Unix()), 'g', -1, 64) }
	series := func(target, cause string, h, probes int) []string {
		return []string{
			"driftprobe_input_change_probes{cause=" + cause + ",target=" + target + "} " + strconv.Itoa(probes),
			"driftprobe_input_change_timestamp_seconds{cause=" + cause + ",target=" + target + "} " + stamp(h),
		}
	}
	// want builds the sorted expected lines from (target, cause, hour,
	// probes) series.
	want := func(ss ...[]string) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s...)
		}
		slices.Sort(out)
		return out
	}
	inputChanges := func(got map[string]int, wantN map[string]int) {
		t.Helper()
		for target, w := range wantN {
			if got[target] != w {
				t.Errorf("run --json: %s input_changes %d, want %d", target, got[target], w)
			}
		}
	}

	// Runs 1-2: the first baselines. Nothing restarted: no series.
	r.run(cfg, hour(0))
	inputChanges(r.run(cfg, hour(1)), map[string]int{"sim-a": 0, "gw": 0, "gone": 0})
	diffLines(t, "baselines only", gathered(t, reg, names...), nil)

	// Run 3: max_tokens edited on sim-a and gone: every request body
	// changed.
	cfg.Target("sim-a").MaxTokens = 128
	cfg.Target("gone").MaxTokens = 128
	inputChanges(r.run(cfg, hour(2)), map[string]int{"sim-a": n, "gw": 0, "gone": n})
	diffLines(t, "after a config parameter change", gathered(t, reg, names...),
		want(series("gone", "request", 2, n), series("sim-a", "request", 2, n)))

	// Run 4: gw moves to another endpoint.
	cfg.Target("gw").BaseURL = endB.URL
	inputChanges(r.run(cfg, hour(3)), map[string]int{"sim-a": 0, "gw": n, "gone": 0})
	afterMove := want(series("gone", "request", 2, n), series("gw", "origin", 3, n), series("sim-a", "request", 2, n))
	diffLines(t, "after a base_url move", gathered(t, reg, names...), afterMove)

	// Run 5 changes nothing: neither does the export.
	r.run(cfg, hour(4))
	diffLines(t, "a run without input changes", gathered(t, reg, names...), afterMove)

	// Run 6: a corpus version edits two probes.
	edited := strings.Replace(string(src), `version: "2026.11.1"`, `version: "2026.11.2"`, 1)
	edited = strings.Replace(edited, "How do I kill a Linux process that is hanging?", "How do I stop a Linux process that is hanging?", 1)
	edited = strings.Replace(edited, "What is the capital of France?", "What is the capital of Italy?", 1)
	if edited == string(src) || strings.Count(edited, "Italy") != 1 {
		t.Fatal("corpus edit did not apply")
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.yaml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if r.corpus, err = app.LoadCorpus(cfg, "", false); err != nil {
		t.Fatal(err)
	}
	inputChanges(r.run(cfg, hour(5)), map[string]int{"sim-a": 2, "gw": 2, "gone": 2})
	diffLines(t, "after a corpus edit", gathered(t, reg, names...),
		want(series("gone", "request", 5, 2), series("gw", "origin", 3, n), series("gw", "request", 5, 2), series("sim-a", "request", 5, 2)))

	// Run 7: gw back at its first endpoint: the state it left there
	// resumes (no origin restart), with the two probes edited meanwhile
	// restarting.
	cfg.Target("gw").BaseURL = endA.URL
	inputChanges(r.run(cfg, hour(6)), map[string]int{"sim-a": 0, "gw": 2, "gone": 0})
	back := want(series("gone", "request", 5, 2), series("gw", "origin", 3, n), series("gw", "request", 6, 2), series("sim-a", "request", 5, 2))
	diffLines(t, "after moving back", gathered(t, reg, names...), back)
	var origins int
	if err := e.Store.SQL().QueryRow(`SELECT COUNT(*) FROM input_changes WHERE cause = 'origin'`).Scan(&origins); err != nil || origins != n {
		t.Fatalf("origin rows %d (%v), want %d: the move back resumed nothing", origins, err, n)
	}

	// A fresh collector reads every row at once: the same.
	diffLines(t, "a fresh collector", gathered(t, collectorRegistry(metrics.NewDBCollector(e.Store.SQL()).OnlyTargets(set)), names...), back)

	// gone removed from the config (loaded, then run): nothing of it,
	// though its input changes are in the database.
	removed := *cfg
	removed.Targets = []*config.Target{cfg.Target("sim-a"), cfg.Target("gw")}
	set.Set(enabledNames(&removed), hour(7))
	noGone := want(series("gw", "origin", 3, n), series("gw", "request", 6, 2), series("sim-a", "request", 5, 2))
	diffLines(t, "gone removed", gathered(t, reg, names...), noGone)
	r.run(&removed, hour(7))
	diffLines(t, "gone removed, after a run", gathered(t, reg, names...), noGone)
	diffLines(t, "gone removed, a fresh collector", gathered(t, collectorRegistry(metrics.NewDBCollector(e.Store.SQL()).OnlyTargets(set)), names...), noGone)
}

// The cause label is bounded to InputChangeCauses (a row with any other
// cause exports nothing), a run's probes are counted once each, rows of a
// run older than the latest seen for the target and cause change nothing,
// and a failing query makes both families invalid for the scrape (the
// next scrape, the table back, exports them again).
func TestInputChangeMetricsBounded(t *testing.T) {
	st := openStore(t)
	a := ensureTarget(t, st, "a")
	reg := collectorRegistry(metrics.NewDBCollector(st.SQL()))
	insert := func(run int64, cause string, probes ...string) {
		t.Helper()
		for _, p := range probes {
			if _, err := st.SQL().Exec(`INSERT INTO input_changes (run_id, target_id, probe_id, old_sha256, new_sha256, cause) VALUES (?, ?, ?, 'o', 'n', ?)`, run, a, p, cause); err != nil {
				t.Fatal(err)
			}
		}
	}
	r1 := beginRun(t, st, t0)
	finish(t, st, r1, t0, time.Minute, storage.RunComplete, storage.RunTarget{TargetID: a, Status: storage.TargetComplete})
	r2 := beginRun(t, st, t0.Add(time.Hour))
	finish(t, st, r2, t0.Add(time.Hour), 90*time.Second, storage.RunComplete, storage.RunTarget{TargetID: a, Status: storage.TargetComplete})
	insert(r2, metrics.InputCauseRequest, "p1", "p2", "p2")
	insert(r2, "adapter", "p1", "p2", "p3")
	want := []string{
		"driftprobe_input_change_probes{cause=request,target=a} 2",
		"driftprobe_input_change_timestamp_seconds{cause=request,target=a} " + strconv.FormatFloat(float64(t0.Add(time.Hour+90*time.Second).Unix()), 'g', -1, 64),
	}
	diffLines(t, "run 2", gathered(t, reg, metrics.InputChangeTimestamp, metrics.InputChangeProbes), want)
	// Run 1's rows, recorded after run 2's (detected late): not the latest.
	insert(r1, metrics.InputCauseRequest, "p1", "p2", "p3", "p4")
	diffLines(t, "run 1 recorded later", gathered(t, reg, metrics.InputChangeTimestamp, metrics.InputChangeProbes), want)

	if _, err := st.SQL().Exec(`ALTER TABLE input_changes RENAME TO input_changes_gone`); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), metrics.InputChangeTimestamp) || !strings.Contains(err.Error(), metrics.InputChangeProbes) {
		t.Errorf("scrape without the table: err = %v, want both families invalid", err)
	}
	if _, err := st.SQL().Exec(`ALTER TABLE input_changes_gone RENAME TO input_changes`); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "table back", gathered(t, reg, metrics.InputChangeTimestamp, metrics.InputChangeProbes), want)
}
