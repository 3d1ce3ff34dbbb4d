package ghissue_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// oneProbe is a fake GitHub and a database with one sim target "a" and one
// probe "p", github.close_on_revert on: run records a run whose samples
// answer verdicts ("allowed|", "blocked_output|hate") and detects it
// (confirm_runs 2, window 3, nondeterministic after flips reverts, every
// event queued for GitHub); deliver runs one outbox pass.
type oneProbe struct {
	f       *fakeGitHub
	run     func(verdicts ...string)
	deliver func()
}

func newOneProbe(t *testing.T, flips int) *oneProbe {
	t.Helper()
	f := newFakeGitHub(t, "o", "r", testToken)
	t.Setenv(tokenEnv, testToken)
	ctx := context.Background()
	st, err := storage.Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.Parse("test.yaml", []byte(fmt.Sprintf("targets:\n  - {name: a, provider: sim, model: m}\ngithub:\n  repo: o/r\n  token_env: %s\n  base_url: %s\n  close_on_revert: true\n", tokenEnv, f.BaseURL())))
	if err != nil {
		t.Fatal(err)
	}
	tid, err := st.EnsureTarget(ctx, storage.TargetRow{Name: "a", Provider: "sim", Model: "m", Endpoint: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	sha := strings.Repeat("1", 64)
	o := &oneProbe{f: f}
	o.run = func(verdicts ...string) {
		t.Helper()
		id, err := st.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1", CorpusHash: "h"})
		if err != nil {
			t.Fatal(err)
		}
		var obs []*storage.Observation
		for i, v := range verdicts {
			k := diff.ParseKey(v)
			obs = append(obs, &storage.Observation{RunID: id, TargetID: tid, ProbeID: "p", ProbeSHA256: sha, RequestSHA256: sha, Sample: i,
				Result: probes.Result{Class: k.Class, Categories: k.Categories, ModelID: "m"}, Attempts: 1, ObservedAt: time.Unix(0, 0)})
		}
		if err := st.InsertObservations(ctx, obs); err != nil {
			t.Fatal(err)
		}
		_, err = diff.Apply(ctx, st, diff.Input{RunID: id, CorpusVersion: "1", CorpusHash: "h",
			Targets: []diff.TargetRun{{ID: tid, Name: "a", Provider: "sim", Status: storage.TargetComplete, Observations: obs}},
			Params:  diff.Params{ConfirmRuns: 2, NondeterministicFlips: flips, WindowRuns: 3, Enqueue: func(string) bool { return true }}})
		if err != nil {
			t.Fatal(err)
		}
	}
	o.deliver = func() {
		t.Helper()
		if _, err := ghissue.Deliver(ctx, st, cfg, ghissue.Options{Getenv: env}); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// closeByHand closes issue num as a person would, with reason.
func (o *oneProbe) closeByHand(num int, reason string) {
	o.f.mu.Lock()
	defer o.f.mu.Unlock()
	o.f.issues[num-1].State, o.f.issues[num-1].StateReason = "closed", reason
}
