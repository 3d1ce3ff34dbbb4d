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

// An event whose only probe proves nondeterministic is retracted, not
// reverted: its issue gets a comment saying the flips were not evidence
// and is closed as not planned (a revert closes as completed).
func TestRetractedEventClosesNotPlanned(t *testing.T) {
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
	run := func(verdicts ...string) {
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
			Params:  diff.Params{ConfirmRuns: 2, NondeterministicFlips: 2, WindowRuns: 3, Enqueue: func(string) bool { return true }}})
		if err != nil {
			t.Fatal(err)
		}
	}
	run("allowed|")
	run("allowed|")
	run("blocked_output|hate")
	run("blocked_output|hate") // confirmed: a policy_change, its issue opened
	run("blocked_output|hate", "allowed|")
	run("blocked_output|hate", "allowed|") // nondeterministic: withdrawn, the event retracted
	if _, err := ghissue.Deliver(ctx, st, cfg, ghissue.Options{Getenv: env}); err != nil {
		t.Fatal(err)
	}
	issues := f.issueList()
	var policy *fakeIssue
	for i := range issues {
		if strings.Contains(issues[i].Title, "policy") || strings.Contains(issues[i].Body, "policy_change") {
			policy = &issues[i]
		}
	}
	if policy == nil {
		t.Fatalf("no policy issue among %d", len(issues))
	}
	if policy.State != "closed" || policy.StateReason != "not_planned" || !strings.HasSuffix(policy.Title, "[retracted]") {
		t.Errorf("retracted event's issue: %s/%s %q, want closed/not_planned, its title ending [retracted]", policy.State, policy.StateReason, policy.Title)
	}
	var said bool
	for _, c := range f.commentsOf(policy.Number) {
		if strings.Contains(c.Body, "the event was retracted") && strings.Contains(c.Body, "not evidence of a policy change") && !strings.Contains(c.Body, "the provider reverted the change") {
			said = true
		}
	}
	if !said {
		t.Error("no comment saying the event was retracted (or one claiming a provider revert)")
	}
}

// An issue opened only after its event was retracted (delivery delayed)
// never claims the provider changed.
func TestRetractedEventBody(t *testing.T) {
	ev := &diff.Event{ID: 1, Fingerprint: "f", Target: "a", Targets: []string{"a"}, Provider: "sim", Kind: diff.KindPolicy, Direction: diff.Tightened, Status: diff.StatusReverted,
		Probes: []diff.EventProbe{{Target: "a", ProbeID: "p", Before: diff.ParseKey("allowed|"), After: diff.ParseKey("blocked_output|hate"), Reverted: true, Withdrawn: true, RevertedRun: 7}}}
	body := ghissue.IssueBody(ev, nil)
	if strings.Contains(body, "the provider changed, not the content") || !strings.Contains(body, "**retracted**") {
		t.Errorf("body of a retracted event:\n%s", body)
	}
	if title := ghissue.Title(ev); !strings.HasSuffix(title, "[retracted]") {
		t.Errorf("title %q", title)
	}
}
