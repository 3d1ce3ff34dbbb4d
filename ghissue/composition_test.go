package ghissue_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
)

// extendYAML is the QA scenario: sim-a tightens violence at run 3
// (confirmed run 4: the event opens), then hate at run 6 (confirmed run 7:
// more probes extend the open event). %s in policies is the run-1 policy's
// extra thresholds: none (hate fires on the default corpus's positive
// controls from run 1, so hate is new to the event, not to the target),
// or hate: 1.01 (nothing fires hate before run 6: new to the target).
const extendYAML = `database: %s
confirm_runs: 2
targets:
  - name: sim-a
    provider: sim
    model: sim-large
    sim:
      policies:
        - {from_run: 1, fingerprint: fp-a, thresholds: {HATE}}
        - {from_run: 3, thresholds: {violence: 0.3}}
        - {from_run: 6, thresholds: {hate: 0.15}}
github:
  repo: acme/llm-drift
  token_env: DRIFTPROBE_TEST_GH_TOKEN
  base_url: %s
`

// extendSys builds the scenario; hateBefore is the run-1 hate threshold
// ("" keeps the sim's default).
func extendSys(t *testing.T, f *fakeGitHub, hateBefore string) *sys {
	t.Helper()
	th := ""
	if hateBefore != "" {
		th = "hate: " + hateBefore
	}
	return newSysFrom(t, strings.Replace(extendYAML, "{HATE}", "{"+th+"}", 1), filepath.Join(t.TempDir(), "test.db"), f.BaseURL())
}

// titleEdits counts the PATCH requests on issue paths that GitHub
// answered 200, and all of them.
func titleEdits(f *fakeGitHub) (ok, all int) {
	for _, r := range f.requests() {
		if r.Method == http.MethodPatch && issueRe.MatchString(r.Path) {
			all++
			if r.Status == http.StatusOK {
				ok++
			}
		}
	}
	return ok, all
}

// updateComments returns the comments of issue num that start with the
// marker of ev's update u.
func updateComments(f *fakeGitHub, num int, ev *diff.Event, u diff.EventUpdate) []string {
	var out []string
	for _, c := range f.commentsOf(num) {
		if strings.HasPrefix(c.Body, ghissue.UpdateMarker(ev, u)) {
			out = append(out, c.Body)
		}
	}
	return out
}

// theExtension returns the scenario's one event and its run-7
// probes_added update, failing when the scenario did not play out so.
func theExtension(t *testing.T, s *sys) (*diff.Event, diff.EventUpdate) {
	t.Helper()
	evs := events(t, s)
	if len(evs) != 1 {
		t.Fatalf("want 1 event, got %d", len(evs))
	}
	ev := evs[0]
	for _, u := range ev.Updates {
		if u.Change == diff.ChangeProbesAdded && u.RunID == 7 {
			return ev, u
		}
	}
	t.Fatalf("scenario changed: no probes_added update in run 7: %+v", ev.Updates)
	return nil, diff.EventUpdate{}
}

// TestExtendingUpdateNamesItsNewCategory is QA finding 9: a category that
// arrives by extending an open event (hate, run 7, on an event opened in
// run 4 for violence) is named first in the update's comment, the issue
// title is edited to name it (not only on close), and the comment gives
// the exact commands that show its own flips.
func TestExtendingUpdateNamesItsNewCategory(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := extendSys(t, f, "")
	c := newClock()
	for run := 1; run <= 8; run++ {
		s.run()
		for i := 0; i < 3; i++ { // repeated deliveries change nothing
			if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 {
				t.Fatalf("run %d: %+v", run, res)
			}
		}
		if run == 4 {
			iss := f.issueList()
			if len(iss) != 1 || strings.Contains(iss[0].Title, "hate") {
				t.Fatalf("scenario changed: after run 4, issues %+v", iss)
			}
		}
	}
	ev, u := theExtension(t, s)
	if slices.Contains(ev.NewCategories, "hate") {
		t.Fatalf("scenario changed: hate new to the target: %v", ev.NewCategories)
	}
	iss := f.issueList()
	if len(iss) != 1 || ev.IssueNumber != iss[0].Number {
		t.Fatalf("want 1 issue mapped, got %+v", iss)
	}
	if iss[0].Title != ghissue.Title(ev) || !strings.Contains(iss[0].Title, "hate") {
		t.Errorf("issue title %q, want the event's current title %q (naming hate)", iss[0].Title, ghissue.Title(ev))
	}
	if ok, all := titleEdits(f); ok != 1 || all != 1 {
		t.Errorf("title edited %d times (%d requests), want once: after run 7", ok, all)
	}
	cs := updateComments(f, iss[0].Number, ev, u)
	if len(cs) != 1 {
		t.Fatalf("update %d: %d comments, want 1", u.ID, len(cs))
	}
	body := cs[0]
	note := strings.Index(body, "**New to this event: `hate`.**")
	detail := strings.Index(body, "more probe\\(s\\) on")
	if note < 0 || detail < 0 || note > detail {
		t.Errorf("the comment does not name hate as new to the event before anything else:\n%s", body)
	}
	if strings.Contains(body, "never fired on this target") {
		t.Errorf("hate fired on sim-a from run 1, the comment says it never did:\n%s", body)
	}
	for _, want := range []string{"driftprobe diff --target sim-a --from 5 --to 7\n", "driftprobe evidence 1 --json"} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment lacks %q:\n%s", want, body)
		}
	}
	// The command shows exactly this update's flips.
	d, err := diff.DiffRuns(context.Background(), s.st, "sim-a", 5, 7)
	if err != nil {
		t.Fatal(err)
	}
	var shown, listed []string
	for _, p := range d.Probes {
		shown = append(shown, p.ProbeID)
	}
	for _, m := range tableRowRe.FindAllStringSubmatch(body, -1) {
		listed = append(listed, m[2])
	}
	slices.Sort(shown)
	slices.Sort(listed)
	if len(listed) == 0 || !slices.Equal(shown, listed) {
		t.Errorf("diff --from 5 --to 7 shows %v, the comment lists %v", shown, listed)
	}
}

// TestExtendingUpdateNamesACategoryNewToTheTarget: when the category the
// update brings never fired on the target before (hate held at 1.01 until
// run 6), the comment says so, the strongest signal, and the title names
// it as new.
func TestExtendingUpdateNamesACategoryNewToTheTarget(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := extendSys(t, f, "1.01")
	c := newClock()
	for run := 1; run <= 8; run++ {
		s.run()
		if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 {
			t.Fatalf("run %d: %+v", run, res)
		}
	}
	ev, u := theExtension(t, s)
	if !slices.Contains(ev.NewCategories, "hate") {
		t.Fatalf("scenario changed: hate not new to the target: %v", ev.NewCategories)
	}
	iss := f.issueList()
	if len(iss) != 1 || !strings.Contains(iss[0].Title, "new: hate") || iss[0].Title != ghissue.Title(ev) {
		t.Errorf("issue title %+v, want %q", iss, ghissue.Title(ev))
	}
	cs := updateComments(f, ev.IssueNumber, ev, u)
	if len(cs) != 1 {
		t.Fatalf("update %d: %d comments, want 1", u.ID, len(cs))
	}
	want := "### driftprobe update: more probes flipped (run 7)\n\n**New category on `sim-a`, never fired on this target before run 7: `hate`.**"
	if !strings.Contains(cs[0], want) {
		t.Errorf("the comment does not open with hate as new to sim-a:\n%s", cs[0])
	}
	if strings.Contains(cs[0], "New to this event:") {
		t.Errorf("hate named twice:\n%s", cs[0])
	}
}

// TestTitleEditFailures: the title edit after an update's comment fails
// (its answer lost after GitHub applied it, a secondary rate limit, a
// primary one). The row records the failure and waits; the retry never
// posts the comment again and edits the title only if GitHub does not
// show the new one yet: one comment, one successful edit.
func TestTitleEditFailures(t *testing.T) {
	isPatch := func(r *http.Request) bool { return r.Method == http.MethodPatch }
	for _, tc := range []struct {
		name    string
		ft      func(c *clock) fault
		wait    time.Duration
		reason  string
		applied bool // GitHub applied the failed edit
	}{
		{"lost answer", func(*clock) fault {
			return fault{match: isPatch, after: true, status: 502, body: `{"message":"Bad Gateway"}`}
		}, time.Minute, "GitHub unavailable (502", true},
		{"secondary rate limit", func(*clock) fault {
			ft := secondaryRateLimit(403, 90)
			ft.match = isPatch
			return ft
		}, 90 * time.Second, "secondary rate limit", false},
		{"primary rate limit", func(c *clock) fault {
			ft := primaryRateLimit(c.Now().Add(20 * time.Minute))
			ft.match = isPatch
			return ft
		}, 20 * time.Minute, "primary rate limit", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := extendSys(t, f, "")
			c := newClock()
			for run := 1; run <= 6; run++ {
				s.run()
				if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 {
					t.Fatalf("run %d: %+v", run, res)
				}
			}
			s.run() // run 7: hate extends the event
			ev, u := theExtension(t, s)
			old := f.issueList()[0].Title
			if old == ghissue.Title(ev) {
				t.Fatalf("scenario changed: title %q already current", old)
			}
			f.addFault(tc.ft(c))
			res := deliver(t, s, c, ghissue.Options{})
			if res.Failed != 1 || res.Sent != 0 {
				t.Fatalf("failed edit: %+v", res)
			}
			if n := len(updateComments(f, ev.IssueNumber, ev, u)); n != 1 {
				t.Fatalf("after the failed edit: %d comments, want 1", n)
			}
			p := pending(t, s)
			if len(p) != 1 || p[0].NextAttemptAt == nil || !strings.Contains(p[0].LastError, tc.reason) {
				t.Fatalf("pending %+v, want the row waiting on %q", p, tc.reason)
			}
			if applied := f.issueList()[0].Title != old; applied != tc.applied {
				t.Fatalf("title applied %v, want %v", applied, tc.applied)
			}
			n := len(f.requests())
			c.Advance(tc.wait - time.Second)
			if res := deliver(t, s, c, ghissue.Options{}); res.Sent+res.Failed != 0 || len(f.requests()) != n {
				t.Fatalf("attempted before the wait was over: %+v", res)
			}
			c.Advance(time.Second)
			if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 1 || res.Failed != 0 {
				t.Fatalf("retry: %+v", res)
			}
			for i := 0; i < 2; i++ {
				s.run() // runs 8 and 9: nothing changes
				if res := deliver(t, s, c, ghissue.Options{}); res.Sent+res.Failed != 0 {
					t.Fatalf("quiet run: %+v", res)
				}
			}
			if n := len(updateComments(f, ev.IssueNumber, ev, u)); n != 1 {
				t.Errorf("%d comments for update %d, want 1", n, u.ID)
			}
			ev = events(t, s)[0]
			if got := f.issueList()[0].Title; got != ghissue.Title(ev) {
				t.Errorf("title %q, want %q", got, ghissue.Title(ev))
			}
			// One edit applied in all: the failed one when GitHub applied
			// it (the retry then sees the title right and sends none),
			// else the retry's.
			wantOK, wantAll := 1, 2
			if tc.applied {
				wantOK, wantAll = 0, 1
			}
			if ok, all := titleEdits(f); ok != wantOK || all != wantAll {
				t.Errorf("title edits: %d answered 200 of %d sent, want %d of %d", ok, all, wantOK, wantAll)
			}
			if len(pending(t, s)) != 0 {
				t.Errorf("pending: %+v", pending(t, s))
			}
		})
	}
}
