package ghissue_test

import (
	"strings"
	"testing"
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
			o := newOneProbe(t, 3)
			run, deliver, f := o.run, o.deliver, o.f
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
			o.closeByHand(num, tc.reason) // a person closes it

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
