package ghissue_test

import (
	"strings"
	"testing"
)

// A person closed the issue as not planned; the revert keeps that state
// (ensureState skips the close edit), but the revert comment still tells
// the issue's readers "Closing this issue as completed": a statement of an
// action driftprobe does not take, contradicting the state GitHub shows.
func TestReviewDay2RevertCommentOnHumanClosedIssueDoesNotClaimToClose(t *testing.T) {
	o := newOneProbe(t, 3)
	run, deliver, f := o.run, o.deliver, o.f
	run("allowed|")
	run("allowed|")
	run("blocked_output|hate")
	run("blocked_output|hate")
	deliver()
	num := f.issueList()[0].Number
	o.closeByHand(num, "not_planned")
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
