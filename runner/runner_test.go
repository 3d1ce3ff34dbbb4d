package runner_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

func bodySHA(t *testing.T, e *testenv.Env, target, probeID string) string {
	t.Helper()
	tg := e.Target(target)
	req, err := tg.Prober.Render(e.Corpus.Probe(probeID).Wire())
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(req.Body)
	return hex.EncodeToString(s[:])
}

func observations(t *testing.T, e *testenv.Env, run int64) []*storage.Observation {
	t.Helper()
	obs, err := e.Store.Observations(context.Background(), run, 0)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// A policy block is an answer: it is sent exactly once.
func TestPolicyBlockSentOnce(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: s, provider: sim, model: m, max_attempts: 5}
`)
	res := e.Run()
	srv := e.Sim("s")
	blocks := 0
	for _, o := range observations(t, e, res.Summary.RunID) {
		if !o.Result.Class.IsBlock() {
			continue
		}
		blocks++
		if n := srv.Requests(res.Summary.RunID, bodySHA(t, e, "s", o.ProbeID)); n != 1 {
			t.Errorf("%s (%s) was sent %d times, want 1", o.ProbeID, o.Result.Class, n)
		}
		if o.Attempts != 1 {
			t.Errorf("%s attempts = %d", o.ProbeID, o.Attempts)
		}
	}
	if blocks < 15 {
		t.Fatalf("only %d blocks; the default corpus should show many", blocks)
	}
	if len(e.Sleeps) != 0 {
		t.Errorf("slept %v on a run without transient errors", e.Sleeps)
	}
}

// A 503 is transient: retried up to max_attempts with backoff.
func TestTransientRetriedUpToAttempts(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: s
    provider: sim
    model: m
    max_attempts: 3
    breaker: {failures: 1000}
    sim: {error_status: 503, error_rate: 1}
`)
	res := e.Run()
	srv := e.Sim("s")
	for _, o := range observations(t, e, res.Summary.RunID) {
		if o.Result.Class != probes.Transient || o.HTTPStatus != 503 {
			t.Fatalf("%s: class %s status %d, want transient 503", o.ProbeID, o.Result.Class, o.HTTPStatus)
		}
		if o.Attempts != 3 {
			t.Errorf("%s attempts = %d, want 3", o.ProbeID, o.Attempts)
		}
		if n := srv.Requests(res.Summary.RunID, bodySHA(t, e, "s", o.ProbeID)); n != 3 {
			t.Errorf("%s sent %d times, want 3", o.ProbeID, n)
		}
	}
	if want := 2 * len(e.Corpus.Probes); len(e.Sleeps) != want {
		t.Errorf("%d backoff waits, want %d", len(e.Sleeps), want)
	}
	for _, d := range e.Sleeps {
		if d <= 0 || d > 5*time.Minute {
			t.Errorf("backoff wait %v out of range", d)
		}
	}
	if ts := res.Summary.Targets[0]; ts.Status != storage.TargetDegraded {
		t.Errorf("target status %s, want degraded", ts.Status)
	}
}

// A 429's Retry-After is honoured: every wait is at least what the provider asked.
func TestRetryAfterHonoured(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: s
    provider: sim
    model: m
    max_attempts: 2
    sim: {error_status: 429, fail_first: 1, retry_after: 7}
`)
	res := e.Run()
	if len(e.Sleeps) != len(e.Corpus.Probes) {
		t.Fatalf("%d waits, want one per probe (%d)", len(e.Sleeps), len(e.Corpus.Probes))
	}
	for _, d := range e.Sleeps {
		if d < 7*time.Second {
			t.Errorf("waited %v, provider asked for 7s", d)
		}
	}
	for _, o := range observations(t, e, res.Summary.RunID) {
		if !o.Result.Class.IsVerdict() || o.Attempts != 2 {
			t.Errorf("%s: %s after %d attempts, want a verdict on attempt 2", o.ProbeID, o.Result.Class, o.Attempts)
		}
	}
}

// Blocks are the upstream working: 100% blocks never open the breaker.
func TestAllBlocksNeverOpenBreaker(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: s
    provider: sim
    model: m
    breaker: {failures: 2}
    sim:
      policies:
        - {from_run: 1, thresholds: {hate: 0, harassment: 0, self_harm: 0, sexual: 0, violence: 0, illicit: 0, weapons: 0, privacy: 0, jailbreak: 0}}
`)
	opened := false
	res, err := runWithHooks(e, func(bool) { opened = true })
	if err != nil {
		t.Fatal(err)
	}
	ts := res.Targets[0]
	if opened || ts.BreakerOpened {
		t.Fatal("breaker opened on policy blocks")
	}
	if got := ts.Counts[probes.BlockedInput] + ts.Counts[probes.BlockedOutput] + ts.Counts[probes.ModelRefusal]; got != len(e.Corpus.Probes) {
		t.Errorf("%d blocks, want every probe (%d): %v", got, len(e.Corpus.Probes), ts.Counts)
	}
	if ts.Status != storage.TargetComplete {
		t.Errorf("status %s, want complete", ts.Status)
	}
}

// 100% 503 opens the breaker; remaining probes are recorded as
// unavailable (transient, breaker_open), never as verdicts.
func TestAll503OpensBreaker(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: s
    provider: sim
    model: m
    concurrency: 1
    max_attempts: 1
    breaker: {failures: 5, cooldown: 1h}
    sim: {error_status: 503, error_rate: 1}
`)
	opened := false
	res, err := runWithHooks(e, func(open bool) { opened = opened || open })
	if err != nil {
		t.Fatal(err)
	}
	if !opened {
		t.Fatal("breaker never opened")
	}
	srv := e.Sim("s")
	if srv.Total() != 5 {
		t.Errorf("sim received %d requests, want 5 before the breaker opened", srv.Total())
	}
	breaker := 0
	for _, o := range observations(t, e, res.RunID) {
		if o.Result.Class.IsVerdict() {
			t.Errorf("%s recorded as verdict %s", o.ProbeID, o.Result.Class)
		}
		if o.Result.Reason == runner.ReasonBreakerOpen {
			breaker++
		}
	}
	if want := len(e.Corpus.Probes) - 5; breaker != want {
		t.Errorf("%d breaker_open observations, want %d", breaker, want)
	}
	if res.Status != storage.RunPartial || res.Targets[0].Status != storage.TargetDegraded {
		t.Errorf("run %s / target %s, want partial / degraded", res.Status, res.Targets[0].Status)
	}
}

func runWithHooks(e *testenv.Env, onBreaker func(open bool)) (*runner.Summary, error) {
	r := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep,
		OnBreaker: func(_ *runner.Target, open bool) { onBreaker(open) }})
	return r.Run(context.Background())
}

// Exactly one observation per probe × target, with the class the sim decided.
func TestOneObservationPerProbeAndTarget(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: a, provider: sim, model: m1}
  - {name: b, provider: sim, model: m2}
`)
	res := e.Run()
	obs := observations(t, e, res.Summary.RunID)
	if len(obs) != 2*len(e.Corpus.Probes) {
		t.Fatalf("%d observations, want %d", len(obs), 2*len(e.Corpus.Probes))
	}
	seen := map[[2]int64]map[string]bool{}
	for _, o := range obs {
		k := [2]int64{o.TargetID, int64(o.Sample)}
		if seen[k] == nil {
			seen[k] = map[string]bool{}
		}
		if seen[k][o.ProbeID] {
			t.Errorf("duplicate observation %s", o.ProbeID)
		}
		seen[k][o.ProbeID] = true
		// The sim blocks exactly when a category's score reaches 0.5.
		req, _, _ := e.Store.ObservationBodies(context.Background(), o.ID)
		blocked := false
		for _, s := range simScores(req) {
			blocked = blocked || s >= 0.5
		}
		if blocked != o.Result.Class.IsBlock() {
			t.Errorf("%s: stored %s, sim scores say blocked=%v", o.ProbeID, o.Result.Class, blocked)
		}
		if o.RequestSHA256 == "" || o.BodySHA256 == "" || o.Result.RequestID == "" {
			t.Errorf("%s: missing fingerprint, body hash or request id: %+v", o.ProbeID, o)
		}
	}
}

// Cancelling mid-run stores what was done and marks the run aborted.
func TestCancelMarksAborted(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: s, provider: sim, model: m, concurrency: 1}
`)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	r := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep,
		Progress: func(done, total int) {
			n = done
			if done == 10 {
				cancel()
			}
		}})
	sum, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != storage.RunAborted {
		t.Fatalf("status %s, want aborted", sum.Status)
	}
	run, err := e.Store.Run(context.Background(), sum.RunID)
	if err != nil || run.Status != storage.RunAborted || run.FinishedAt.IsZero() {
		t.Fatalf("stored run %+v, %v", run, err)
	}
	obs := observations(t, e, sum.RunID)
	if len(obs) < 10 || len(obs) >= len(e.Corpus.Probes) {
		t.Errorf("%d observations stored after cancelling at 10 (progress %d)", len(obs), n)
	}
}

// blockLast is a transport that holds the request whose body contains
// marker until release is closed.
type blockLast struct {
	next    http.RoundTripper
	marker  []byte
	release chan struct{}
}

func (b *blockLast) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, b.marker) {
		<-b.release
	}
	return b.next.RoundTrip(r)
}

// Answers do not wait for a full batch: while one request hangs, every
// answer before it is already in the database (FlushEvery), so a process
// killed outright loses at most that interval.
func TestPartialBatchFlushedWhileRunWaits(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: s, provider: sim, model: m, concurrency: 1}
`)
	req, err := e.Target("s").Prober.Render(e.Corpus.Probes[len(e.Corpus.Probes)-1].Wire())
	if err != nil {
		t.Fatal(err)
	}
	tr := &blockLast{next: runner.DefaultClient().Transport, marker: req.Body, release: make(chan struct{})}
	r := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: e.Sleep,
		Client: &http.Client{Transport: tr}, FlushEvery: 5 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background())
		done <- err
	}()
	want := len(e.Corpus.Probes) - 1
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := e.Store.SQL().QueryRow(`SELECT COUNT(*) FROM observations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			close(tr.release)
			<-done
			t.Fatalf("%d of the %d answers before the hanging request stored", n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(tr.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
