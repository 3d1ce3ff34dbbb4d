package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// A process killed mid-run leaves its run "running"; the next run, holding
// the lease, records it as aborted, and run ids keep counting.
func TestDeadRunMarkedAborted(t *testing.T) {
	e := testenv.New(t, "targets:\n  - {name: a, provider: sim, model: m}\n")
	ctx := context.Background()
	id, err := e.Store.BeginRun(ctx, storage.Run{CorpusName: "default", CorpusVersion: e.Corpus.Version, CorpusHash: e.Corpus.Hash})
	if err != nil {
		t.Fatal(err)
	}
	res := e.Run()
	if res.Summary.RunID != id+1 || res.Summary.Status != storage.RunComplete {
		t.Fatalf("run %d %s", res.Summary.RunID, res.Summary.Status)
	}
	dead, err := e.Store.Run(ctx, id)
	if err != nil || dead.Status != storage.RunAborted || dead.Note == "" {
		t.Fatalf("dead run %+v %v, want aborted with a note", dead, err)
	}
}

// A run whose lease is taken over (it expired, another process took it)
// stops and is recorded aborted instead of writing alongside the new holder.
func TestLostLeaseAbortsRun(t *testing.T) {
	e := testenv.New(t, "lock_ttl: 30s\ntargets:\n  - {name: a, provider: sim, model: m, concurrency: 1, sim: {error_status: 503, fail_first: 1}}\n")
	ctx := context.Background()
	started := make(chan struct{}, 100)
	done := make(chan error, 1)
	clock := clockwork.NewFakeClock() // the lease's renewals
	go func() {
		_, err := app.RunOnce(ctx, e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{
			Clock: clock,
			Sleep: func(ctx context.Context, _ time.Duration) error {
				started <- struct{}{}
				<-ctx.Done() // sits in its backoff until stopped
				return ctx.Err()
			}})
		done <- err
	}()
	<-started
	// Another process finds the lease expired and takes it over.
	other, err := storage.Open(ctx, e.Config.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetClock(func() time.Time { return time.Now().Add(time.Hour) })
	if err := other.AcquireLock(ctx, storage.Lease{Holder: "B", Host: "h", PID: 2, Command: "driftprobe run"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second) // the run's next renewal finds the lease lost
	select {
	case err := <-done:
		if !errors.Is(err, storage.ErrLocked) {
			t.Fatalf("run returned %v, want the lost lease", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run kept going after losing its lease")
	}
	r, err := e.Store.Run(ctx, 1)
	if err != nil || r.Status != storage.RunAborted {
		t.Fatalf("run %+v %v, want aborted", r, err)
	}
	if h, _ := e.Store.LockHolder(ctx); h == nil || h.Holder != "B" {
		t.Fatalf("the new holder's lease was disturbed: %+v", h)
	}
}

// The events text prints the provider's model ids and the changes'
// details inert: no escape sequence or bidirectional override reaches
// the terminal.
func TestWriteEventsEscapesProviderText(t *testing.T) {
	var b strings.Builder
	app.WriteEvents(&b, []*diff.Event{{ID: 1, Kind: diff.KindModel, Direction: "stricter", Targets: []string{"t"}, Provider: "openai",
		ModelBefore: "gpt-x @octocat \x1b]0;pwn\x07", ModelAfter: "gpt-x-2 #9 \x1b[2J|fp_\u202e<i>b</i>"}},
		[]diff.Change{{EventID: 1, Change: "model_change", Detail: "model gpt-x \x1b[31m→ gpt-x-2"}})
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\u202e") || !strings.Contains(out, `\x1b[2J`) || !strings.Contains(out, `\u202e`) {
		t.Fatalf("events text:\n%q", out)
	}
}

// While baselines are being established (bytes seen in an earlier run, no
// baseline yet) every answer is screened with detection.screen_samples
// extra samples, so a probe answering at random never becomes its own
// reference; a corpus's first run and runs on settled baselines take no
// extra samples.
func TestBaselinesAreScreenedWhileEstablished(t *testing.T) {
	e := testenv.New(t, `
detection: {screen_samples: 1}
targets:
  - {name: sim-a, provider: sim, model: m}
`)
	n := len(e.Corpus.Probes)
	srv := e.Sim("sim-a")
	want := []int{n, 2 * n, n, n} // run 2 screens every probe; its baselines confirm there
	prev := 0
	for i, w := range want {
		e.Run()
		if got := srv.Total() - prev; got != w {
			t.Errorf("run %d: %d requests, want %d", i+1, got, w)
		}
		prev = srv.Total()
	}
}

// A run recorded finished whose detection never committed (the process
// was killed in between) is detected by the next run, first: a change it
// confirmed is an event confirmed in that run, and a revert right after
// it does not erase the change.
func TestUndetectedRunIsDetectedNext(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: sim-a
    provider: sim
    model: m
    sim: {policies: [{from_run: 1, thresholds: {violence: 0.5}}, {from_run: 3, thresholds: {violence: 0.2}}, {from_run: 5, thresholds: {violence: 0.5}}]}
`)
	e.Runs(3)
	// Run 4 confirms the tightening, but its process dies after recording
	// the run and before detecting it: the runner alone.
	sum, err := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep}).Run(context.Background())
	if err != nil || sum.Status != storage.RunComplete {
		t.Fatalf("run 4: %v %+v", err, sum)
	}
	if ids, err := e.Store.UndetectedRuns(context.Background()); err != nil || len(ids) != 1 || ids[0] != sum.RunID {
		t.Fatalf("undetected runs %v %v, want [%d]", ids, err, sum.RunID)
	}
	e.Runs(2) // runs 5 and 6: the policy is back
	evs, err := diff.ListEvents(context.Background(), e.Store, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != diff.KindPolicy || evs[0].ConfirmedRun != sum.RunID || evs[0].Status != diff.StatusReverted {
		t.Fatalf("events %+v: want one policy change confirmed in run %d, reverted since", evs, sum.RunID)
	}
	if ids, _ := e.Store.UndetectedRuns(context.Background()); len(ids) != 0 {
		t.Errorf("still undetected: %v", ids)
	}
}

// replay of a run whose process died before recording per-target
// summaries replays its stored answers (by the targets they belong to);
// a run still marked running is refused, never "0 replayed".
func TestReplayOfKilledRun(t *testing.T) {
	e := testenv.New(t, "targets:\n  - {name: a, provider: sim, model: m}\n")
	ctx := context.Background()
	e.Run()
	// A run killed mid-way: observations stored, no FinishRun.
	sum, err := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.SQL().Exec(`UPDATE runs SET status = 'running', finished_at = NULL WHERE id = ?`, sum.RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.SQL().Exec(`DELETE FROM run_targets WHERE run_id = ?`, sum.RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Replay(ctx, e.Store, sum.RunID, e.Targets, ""); !app.IsUsage(err) || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("replay of a running run: %v", err)
	}
	e.Run() // marks it aborted (abandoned)
	// Its note does not claim the process died: a process only paused
	// past the lease's TTL is taken over too.
	var note string
	if err := e.Store.SQL().QueryRow(`SELECT note FROM runs WHERE id = ?`, sum.RunID).Scan(&note); err != nil || !strings.Contains(note, "another run took over its lease") {
		t.Errorf("abandoned run's note %q (%v)", note, err)
	}
	rep, err := app.Replay(ctx, e.Store, sum.RunID, e.Targets, "")
	if err != nil || rep.Replayed != len(e.Corpus.Probes) || rep.Same != rep.Replayed {
		t.Fatalf("replay of the killed run: %+v %v, want its %d answers replayed", rep, err, len(e.Corpus.Probes))
	}
}

// A missed run whose detection fails now (the very failure that may have
// left it undetected) is given up, never blocking every later run; a
// missed run is detected only for the targets still configured. A
// target whose detection state does not decode stops that target's
// detection only: the missed run, and every run after it, is detected for
// the other targets (not given up), the damaged target reported failed in
// each (logged, DetectionFailed), until its row is removed.
func TestUndetectedRunThatFailsIsGivenUp(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: sim-a, provider: sim, model: m}
  - {name: sim-b, provider: sim, model: m}
`)
	ctx := context.Background()
	e.Runs(2)
	missed := func() int64 {
		t.Helper()
		sum, err := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep}).Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return sum.RunID
	}
	bad := missed()
	// sim-b's detection state is damaged: detecting any run fails for it,
	// the missed one first, and for it alone. Runs go on probing all the
	// same (each recorded and detected for sim-a), the missed one detected
	// for sim-a too, not given up.
	if _, err := e.Store.SQL().Exec(`UPDATE probe_states SET states = x'ff' WHERE target_id = (SELECT id FROM targets WHERE name = 'sim-b')`); err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 2; i++ {
		var logs bytes.Buffer
		res, err := app.RunOnce(ctx, e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatalf("run with sim-b's state damaged: %v, want it detected for sim-a", err)
		}
		if id := res.Summary.RunID; id != bad+i {
			t.Fatalf("run %d, want %d: a missed run that cannot be detected blocked the next run", id, bad+i)
		}
		if err := app.DetectionFailed(res); !errors.Is(err, app.ErrDetectionFailed) || !strings.Contains(err.Error(), "target sim-b: detection state of target 2: corrupt probe state") ||
			!strings.Contains(err.Error(), "DELETE FROM probe_states WHERE target_id = 2") {
			t.Errorf("run %d: DetectionFailed %v, want sim-b's failure with its remedy", res.Summary.RunID, err)
		}
		if len(res.Detection.Stats) != 1 || res.Detection.Stats[0].Target != "sim-a" {
			t.Errorf("run %d: detected %+v, want sim-a", res.Summary.RunID, res.Detection.Stats)
		}
		l := logs.String()
		if !strings.Contains(l, `level=ERROR msg="detection failed for a target`) || !strings.Contains(l, "target=sim-b run="+fmt.Sprint(bad+i)) || !strings.Contains(l, "DELETE FROM probe_states WHERE target_id = 2") {
			t.Errorf("run %d: log, want an ERROR naming sim-b and the row to remove:\n%s", res.Summary.RunID, l)
		}
		if i == 1 && (!strings.Contains(l, "detected now") || !strings.Contains(l, "target=sim-b run="+fmt.Sprint(bad)) || strings.Contains(l, "given up")) {
			t.Errorf("log, want the missed run %d detected now (sim-b's failure logged), not given up:\n%s", bad, l)
		}
	}
	if ids, _ := e.Store.UndetectedRuns(ctx); len(ids) != 0 {
		t.Errorf("undetected runs %v, want none", ids)
	}
	if _, err := e.Store.SQL().Exec(`DELETE FROM probe_states WHERE target_id = (SELECT id FROM targets WHERE name = 'sim-b')`); err != nil {
		t.Fatal(err)
	}
	res := e.Run()
	if err := app.DetectionFailed(res); err != nil {
		t.Errorf("the row removed: %v", err)
	}
	// The row removed, sim-b's baselines restarted: the first detection
	// to write its state again (this run's) recorded every probe as an
	// input change caused by the lost state, which
	// DriftprobeBaselinesRestarted tickets on; sim-a restarted nothing.
	byCause := func(target string) map[string]int {
		t.Helper()
		out := map[string]int{}
		rows, err := e.Store.SQL().Query(`SELECT ic.cause || ' ' || ic.run_id, COUNT(*) FROM input_changes ic JOIN targets t ON t.id = ic.target_id WHERE t.name = ? GROUP BY 1`, target)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				t.Fatal(err)
			}
			out[k] = n
		}
		return out
	}
	if got, want := byCause("sim-b"), fmt.Sprintf("state %d", res.Summary.RunID); len(got) != 1 || got[want] != len(e.Corpus.Probes) {
		t.Errorf("sim-b input changes %v, want %d of %q", got, len(e.Corpus.Probes), want)
	}
	if got := byCause("sim-a"); len(got) != 0 {
		t.Errorf("sim-a input changes %v, want none", got)
	}

	// A missed run whose detection fails otherwise (a damaged observation
	// row of sim-b: detection never reads it as a verdict) fails whole, and
	// is given up by the next run, which goes on.
	gone := missed()
	if _, err := e.Store.SQL().Exec(`UPDATE observations SET http_status = 'x' WHERE id = (SELECT MIN(o.id) FROM observations o JOIN targets t ON t.id = o.target_id WHERE o.run_id = ? AND t.name = 'sim-b')`, gone); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	res, err := app.RunOnce(ctx, e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil || res.Summary.RunID != gone+1 || app.DetectionFailed(res) != nil {
		t.Fatalf("the run after a missed run that cannot be detected: %v", err)
	}
	if l := logs.String(); !strings.Contains(l, "given up") || !strings.Contains(l, fmt.Sprintf("run=%d", gone)) {
		t.Errorf("log, want missed run %d given up:\n%s", gone, l)
	}
	if ids, _ := e.Store.UndetectedRuns(ctx); len(ids) != 0 {
		t.Errorf("still undetected: %v", ids)
	}

	// A target removed since: the missed run is detected for the others.
	missed()
	if _, err := e.Store.SQL().Exec(`UPDATE probe_states SET states = x'ff' WHERE target_id = (SELECT id FROM targets WHERE name = 'sim-b')`); err != nil {
		t.Fatal(err)
	}
	only := *e.Config
	only.Targets = []*config.Target{e.Config.Target("sim-a")}
	res, err = app.RunOnce(ctx, &only, e.Corpus, e.Store, e.Targets[:1], app.RunOptions{Sleep: e.Sleep})
	if err != nil || app.DetectionFailed(res) != nil {
		t.Fatalf("run: %v, %v", err, app.DetectionFailed(res))
	}
	if ids, _ := e.Store.UndetectedRuns(ctx); len(ids) != 0 {
		t.Errorf("still undetected: %v", ids)
	}
}

// An event's heading names only what it has: a model change without a
// direction or categories leaves no double space where they would be,
// and a policy change shows both.
func TestWriteEventsHeadingHasNoGaps(t *testing.T) {
	var b strings.Builder
	app.WriteEvents(&b, []*diff.Event{
		{ID: 1, Kind: diff.KindModel, Targets: []string{"t"}, Provider: "openai", FirstRun: 2, ConfirmedRun: 3, Status: "open"},
		{ID: 2, Kind: diff.KindPolicy, Direction: "tightened", Targets: []string{"t"}, Provider: "openai", FirstRun: 4, ConfirmedRun: 5, Status: "open",
			Probes: []diff.EventProbe{{Target: "t", ProbeID: "p", After: diff.Verdict{Class: "blocked_input", Categories: []string{"violence"}}}}},
	}, nil)
	out := b.String()
	for _, want := range []string{"event 1 [MODEL_CHANGE] on t (openai)", "event 2 [POLICY_CHANGE] tightened (violence) on t (openai)"} {
		if !strings.Contains(out, want) {
			t.Errorf("events text lacks %q:\n%s", want, out)
		}
	}
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "event ") && strings.Contains(line, "  ") {
			t.Errorf("event heading has a gap: %q", line)
		}
	}
}
