package ghissue_test

import (
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
)

// scenarioYAML: sim-a tightens violence at run 3 (event 1 opens at run 4);
// from run 5 hate too (POLICY5); from run 7 POLICY7.
const scenarioYAML = `database: %s
confirm_runs: 2
targets:
  - name: sim-a
    provider: sim
    model: sim-large
    sim:
      policies:
        - {from_run: 1, fingerprint: fp-a, thresholds: {violence: 0.5, hate: 0.5}}
        - {from_run: 3, thresholds: {violence: 0.01}}
        - {from_run: 5, thresholds: {violence: 0.01, hate: 0.05}POLICY5}
POLICY7github:
  repo: acme/llm-drift
  token_env: DRIFTPROBE_TEST_GH_TOKEN
  base_url: %s
  labels: [llm]
`

func scenario(policy5, policy7 string) string {
	return strings.NewReplacer("POLICY5", policy5, "POLICY7", policy7).Replace(scenarioYAML)
}

// TestTitleAfterPartialRevert is QA D4: violence tightens at run 3, hate
// at run 5, and violence reverts at run 7 while hate holds. The issue
// title, edited after the partial revert, counts the probes still flipped
// and names only the categories that still hold (not violence), and says
// how many of the event's probes went back, as the comments count them.
func TestTitleAfterPartialRevert(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := newSysFrom(t, scenario("", "        - {from_run: 7, thresholds: {violence: 0.5, hate: 0.05}}\n"), filepath.Join(t.TempDir(), "test.db"), f.BaseURL())
	c := newClock()
	for run := 1; run <= 9; run++ {
		s.run()
		if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 {
			t.Fatalf("run %d: %+v", run, res)
		}
	}
	ev := events(t, s)[0]
	live, back := 0, 0
	for _, p := range ev.Probes {
		if p.Reverted {
			back++
			if !slices.Contains(p.After.Categories, "violence") {
				t.Fatalf("scenario changed: a hate probe reverted: %+v", p)
			}
		} else {
			live++
			if slices.Contains(p.After.Categories, "violence") && !slices.Contains(p.Before.Categories, "violence") {
				t.Fatalf("scenario changed: a violence flip still holds: %+v", p)
			}
		}
	}
	if ev.Status != "open" || live == 0 || back == 0 {
		t.Fatalf("scenario changed: status %s, %d live, %d back", ev.Status, live, back)
	}
	title := f.issueList()[0].Title
	t.Logf("title after the partial revert: %s", title)
	if title != ghissue.Title(ev) {
		t.Errorf("issue title %q, want %q", title, ghissue.Title(ev))
	}
	want := "Provider policy change on sim-a: "
	if !strings.HasPrefix(title, want) || !strings.Contains(title, "(hate)") || strings.Contains(title, "violence") ||
		!strings.HasSuffix(title, " ["+strconv.Itoa(back)+" of "+strconv.Itoa(len(ev.Probes))+" reverted]") || !strings.Contains(title, ": "+strconv.Itoa(live)+" probe") {
		t.Errorf("title after the partial revert %q: want %d probes still flipped, hate only, %d of %d reverted", title, live, back, len(ev.Probes))
	}
}

// TestKindLabelFollowsTheKind is QA D5: a policy change that turns into a
// model change (the model changed at run 5) has its title edited, and its
// labels too: model_change replaces policy_change; every other label
// stays, those a human added included. Without push access (GitHub dropped
// the labels when the issue was opened, and drops an edit's) no label
// edit is sent.
func TestKindLabelFollowsTheKind(t *testing.T) {
	for _, noPush := range []bool{false, true} {
		name := "push access"
		if noPush {
			name = "no push access"
		}
		t.Run(name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			f.dropLabels = noPush
			s := newSysFrom(t, scenario(", fingerprint: fp-b, model: sim-large-2026-05-05", ""), filepath.Join(t.TempDir(), "test.db"), f.BaseURL())
			c := newClock()
			for run := 1; run <= 4; run++ {
				s.run()
				deliver(t, s, c, ghissue.Options{})
			}
			iss := f.issueList()
			if len(iss) != 1 {
				t.Fatalf("scenario changed: %d issues", len(iss))
			}
			if !noPush && !slices.Equal(iss[0].Labels, []string{"driftprobe", diff.KindPolicy, "sim", "llm"}) {
				t.Fatalf("scenario changed: labels %v", iss[0].Labels)
			}
			f.mu.Lock()
			f.issues[0].Labels = append(f.issues[0].Labels, "triaged") // a human's
			f.mu.Unlock()
			for run := 5; run <= 9; run++ {
				s.run()
				if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 {
					t.Fatalf("run %d: %+v", run, res)
				}
			}
			ev := events(t, s)[0]
			if ev.Kind != diff.KindModel {
				t.Fatalf("scenario changed: kind %s", ev.Kind)
			}
			got := f.issueList()[0]
			if got.Title != ghissue.Title(ev) || !strings.HasPrefix(got.Title, "Model change on sim-a") {
				t.Errorf("title %q, want %q", got.Title, ghissue.Title(ev))
			}
			labelEdits := 0
			for _, r := range f.requests() {
				if r.Method == http.MethodPatch && strings.Contains(r.Body, `"labels"`) {
					labelEdits++
				}
			}
			if noPush {
				if labelEdits != 0 || !slices.Equal(got.Labels, []string{"triaged"}) {
					t.Errorf("no push access: %d label edits, labels %v; want none, [triaged]", labelEdits, got.Labels)
				}
				return
			}
			slices.Sort(got.Labels)
			if want := []string{"driftprobe", "llm", diff.KindModel, "sim", "triaged"}; !slices.Equal(got.Labels, want) {
				t.Errorf("labels %v, want %v", got.Labels, want)
			}
			if labelEdits != 1 {
				t.Errorf("%d label edits, want 1", labelEdits)
			}
		})
	}
}
