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

// An issue a person closed keeps the state and reason they gave it: a
// later revert with close_on_revert still posts its comment and fixes the
// title, but never turns a "not planned" into "completed" (nor reopens
// anything). Sent twice (a retry after a lost answer), nothing changes.
func TestCloseOnRevertKeepsAHumanClose(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
	}{{"not_planned", "not_planned"}, {"completed", "completed"}, {"no reason", ""}} {
		t.Run(tc.name, func(t *testing.T) {
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
			run("blocked_output|hate") // confirmed: a policy_change
			deliver()
			issues := f.issueList()
			if len(issues) != 1 || issues[0].State != "open" {
				t.Fatalf("issues after the change: %+v", issues)
			}
			num := issues[0].Number
			f.mu.Lock() // a person closes it
			f.issues[num-1].State, f.issues[num-1].StateReason = "closed", tc.reason
			f.mu.Unlock()

			run("allowed|")
			run("allowed|") // the flip back is confirmed: reverted
			deliver()
			got := f.issueList()[num-1]
			if got.State != "closed" || got.StateReason != tc.reason {
				t.Errorf("after the revert: %s/%q, want the person's closed/%q", got.State, got.StateReason, tc.reason)
			}
			if !strings.HasSuffix(got.Title, "[reverted]") {
				t.Errorf("title %q does not end [reverted]", got.Title)
			}
			var said bool
			for _, c := range f.commentsOf(num) {
				if strings.Contains(c.Body, "the provider reverted the change") {
					said = true
				}
			}
			if !said {
				t.Error("no revert comment on the closed issue")
			}
			for _, r := range f.requests() {
				if r.Method == "PATCH" && strings.Contains(r.Body, `"state"`) {
					t.Errorf("state edited on a closed issue: %s %s", r.Path, r.Body)
				}
			}
		})
	}
}
