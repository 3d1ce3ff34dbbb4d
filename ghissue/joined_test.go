package ghissue_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
)

// providerWideYAML scripts one provider-wide event over three sim targets:
// all tighten violence at run 3 (confirmed run 4: sim-0 opens the event,
// sim-1 and sim-2 join it), then in run 6 sim-1 flips more probes while
// sim-2 flips back.
const providerWideYAML = `database: %s
confirm_runs: 2
targets:
  - {name: sim-0, provider: sim, model: sim-large, sim: {policies: [{from_run: 1, thresholds: {privacy: 1.01}}, {from_run: 3, thresholds: {violence: 0.3}}]}}
  - {name: sim-1, provider: sim, model: sim-large, sim: {policies: [{from_run: 1, thresholds: {privacy: 1.01}}, {from_run: 3, thresholds: {violence: 0.3}}, {from_run: 5, thresholds: {harassment: 0.25}}]}}
  - {name: sim-2, provider: sim, model: sim-large, sim: {policies: [{from_run: 1, thresholds: {privacy: 1.01}}, {from_run: 3, thresholds: {violence: 0.3}}, {from_run: 5, thresholds: {violence: 0.5}}]}}
github:
  repo: acme/llm-drift
  token_env: DRIFTPROBE_TEST_GH_TOKEN
  base_url: %s
`

var (
	// diff's update details: what the update says it is about.
	joinedRe = regexp.MustCompile(`^target (\S+) changed the same way \((\d+) probes[,)]`)
	probesRe = regexp.MustCompile(`^\d+ (?:more )?probe\(s\) on ([^\s:]+)(?::| flipped back:| changed again:) (.*)$`)
	// a probe table row: | `target` | `probe` | ...
	tableRowRe = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `([^`]+)` \\|")
)

// TestProviderWideCommentsListOnlyTheirTarget: in a provider-wide event,
// the comment for a joining target lists that target's probes only (not
// every probe confirmed in the run on any target), and updates of one run
// on different targets (more probes on one, a partial revert on another)
// each list their own target's probes.
func TestProviderWideCommentsListOnlyTheirTarget(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := newSysFrom(t, providerWideYAML, filepath.Join(t.TempDir(), "test.db"), f.BaseURL())
	// Delivered after every run, as run and serve do.
	c := newClock()
	for i := 0; i < 7; i++ {
		s.run()
		if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 {
			t.Fatalf("run %d: delivery: %+v", i+1, res)
		}
	}
	if p := pending(t, s); len(p) != 0 {
		t.Fatalf("pending: %+v", p)
	}
	evs := events(t, s)
	if len(evs) != 1 || len(evs[0].Targets) != 3 {
		t.Fatalf("want one event over 3 targets, got %d events", len(evs))
	}
	ev := evs[0]
	changes := map[string]int{}
	for _, u := range ev.Updates {
		changes[u.Change]++
	}
	if changes[diff.ChangeTargetJoined] != 2 || changes[diff.ChangeProbesAdded] != 1 || changes[diff.ChangePartialRevert] != 1 {
		t.Fatalf("scenario changed: updates %v", changes)
	}
	comments := f.commentsOf(ev.IssueNumber)
	for _, u := range ev.Updates {
		if u.Change == diff.ChangeOpened {
			continue
		}
		var body string
		for _, cm := range comments {
			if strings.Contains(cm.Body, ghissue.UpdateMarker(ev, u)) {
				body = cm.Body
			}
		}
		if body == "" {
			t.Fatalf("update %d (%s): no comment", u.ID, u.Change)
		}
		var target string
		var want []string // probe ids, when the detail lists them
		n := 0
		if m := joinedRe.FindStringSubmatch(u.Detail); m != nil {
			target = m[1]
			fmt.Sscan(m[2], &n)
		} else if m := probesRe.FindStringSubmatch(strings.Split(u.Detail, "; ")[0]); m != nil {
			// "N more probe(s) on T: a, b; M probe(s) on T changed again: c"
			target = m[1]
			for _, part := range strings.Split(u.Detail, "; ") {
				if m := probesRe.FindStringSubmatch(part); m != nil {
					want = append(want, strings.Split(m[2], ", ")...)
				}
			}
			n = len(want)
		} else {
			t.Fatalf("update %d: unexpected detail %q", u.ID, u.Detail)
		}
		if u.Target != target {
			t.Errorf("update %d (%s): recorded target %q, the detail names %q", u.ID, u.Change, u.Target, target)
		}
		rows := tableRowRe.FindAllStringSubmatch(body, -1)
		var got []string
		for _, r := range rows {
			if r[1] != target {
				t.Errorf("update %d (%s on %s): row of target %s in its comment", u.ID, u.Change, target, r[1])
			}
			got = append(got, r[2])
		}
		if len(rows) != n || !strings.Contains(body, fmt.Sprintf("Probes in this update (%d)", n)) {
			t.Errorf("update %d (%s on %s): %d rows, want %d", u.ID, u.Change, target, len(rows), n)
		}
		if want != nil {
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("update %d (%s on %s): probes %v, want %v", u.ID, u.Change, target, got, want)
			}
		}
	}
}

// outbox names, for an update row, the target the update is about (the
// one that joined, the one that flipped back), not the event's first.
func TestPendingRowsNameTheUpdatesTarget(t *testing.T) {
	s := newSysFrom(t, providerWideYAML, filepath.Join(t.TempDir(), "test.db"), "http://127.0.0.1:1/")
	for i := 0; i < 7; i++ {
		s.run() // nothing delivered: every row stays pending
	}
	byUpdate := map[int64]string{}
	for _, ev := range events(t, s) {
		for _, u := range ev.Updates {
			byUpdate[u.ID] = u.Target
		}
	}
	joined := 0
	for _, p := range pending(t, s) {
		if p.Change != diff.ChangeTargetJoined {
			continue
		}
		joined++
		if want := byUpdate[p.UpdateID]; want == "" || p.Target != want {
			t.Errorf("row %d (%s): target %q, want the update's %q", p.ID, p.Change, p.Target, want)
		}
	}
	if joined == 0 {
		t.Fatal("scenario changed: no target_joined row")
	}
}
