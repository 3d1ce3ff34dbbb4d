package ghissue_test

import (
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
)

// An event whose only probe proves nondeterministic is retracted, not
// reverted: its issue gets a comment saying the flips were not evidence
// and is closed as not planned (a revert closes as completed).
func TestRetractedEventClosesNotPlanned(t *testing.T) {
	o := newOneProbe(t, 2)
	run, f := o.run, o.f
	run("allowed|")
	run("allowed|")
	run("blocked_output|hate")
	run("blocked_output|hate") // confirmed: a policy_change, its issue opened
	run("blocked_output|hate", "allowed|")
	run("blocked_output|hate", "allowed|") // nondeterministic: withdrawn, the event retracted
	o.deliver()
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
