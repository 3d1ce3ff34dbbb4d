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

// A person closed the issue as not planned; the revert keeps that state
// (ensureState skips the close edit), but the revert comment still tells
// the issue's readers "Closing this issue as completed": a statement of an
// action driftprobe does not take, contradicting the state GitHub shows.
func TestReviewDay2RevertCommentOnHumanClosedIssueDoesNotClaimToClose(t *testing.T) {
	f := newFakeGitHub(t, "o", "r", testToken)
	t.Setenv(tokenEnv, testToken)
	ctx := context.Background()
	st, err := storage.Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg, err := config.Parse("test.yaml", []byte(fmt.Sprintf("targets:\n  - {name: a, provider: sim, model: m}\ngithub:\n  repo: o/r\n  token_env: %s\n  base_url: %s\n  close_on_revert: true\n", tokenEnv, f.BaseURL())))
	if err != nil {
		t.Fatal(err)
	}
	tid, err := st.EnsureTarget(ctx, storage.TargetRow{Name: "a", Provider: "sim", Model: "m", Endpoint: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	sha := strings.Repeat("1", 64)
	run := func(v string) {
		t.Helper()
		id, err := st.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1", CorpusHash: "h"})
		if err != nil {
			t.Fatal(err)
		}
		k := diff.ParseKey(v)
		obs := []*storage.Observation{{RunID: id, TargetID: tid, ProbeID: "p", ProbeSHA256: sha, RequestSHA256: sha,
			Result: probes.Result{Class: k.Class, Categories: k.Categories, ModelID: "m"}, Attempts: 1, ObservedAt: time.Unix(0, 0)}}
		if err := st.InsertObservations(ctx, obs); err != nil {
			t.Fatal(err)
		}
		_, err = diff.Apply(ctx, st, diff.Input{RunID: id, CorpusVersion: "1", CorpusHash: "h",
			Targets: []diff.TargetRun{{ID: tid, Name: "a", Provider: "sim", Status: storage.TargetComplete, Observations: obs}},
			Params:  diff.Params{ConfirmRuns: 2, NondeterministicFlips: 3, WindowRuns: 3, Enqueue: func(string) bool { return true }}})
		if err != nil {
			t.Fatal(err)
		}
	}
	deliver := func() {
		t.Helper()
		if _, err := ghissue.Deliver(ctx, st, cfg, ghissue.Options{Getenv: env}); err != nil {
			t.Fatal(err)
		}
	}
	run("allowed|")
	run("allowed|")
	run("blocked_output|hate")
	run("blocked_output|hate")
	deliver()
	num := f.issueList()[0].Number
	f.mu.Lock()
	f.issues[num-1].State, f.issues[num-1].StateReason = "closed", "not_planned"
	f.mu.Unlock()
	run("allowed|")
	run("allowed|")
	deliver()
	got := f.issueList()[num-1]
	if got.State != "closed" || got.StateReason != "not_planned" {
		t.Fatalf("state %s/%s, want the person's closed/not_planned", got.State, got.StateReason)
	}
	for _, c := range f.commentsOf(num) {
		if strings.Contains(c.Body, "Closing this issue as") {
			t.Errorf("the revert comment on an issue a person closed as not planned says it closes it (state kept as %s/%s):\n%s",
				got.State, got.StateReason, c.Body[strings.Index(c.Body, "Closing this issue"):][:80])
		}
	}
}
