package ghissue_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
)

// restoreYAML: sim-a tightens violence at run 3 (event 1 opens at run
// 4); from run 5, %s: hate too (timeline 1: more probes, a comment), or
// back to the run-1 policy (timeline 2: the provider reverts).
const restoreYAML = `database: %s
confirm_runs: 2
targets:
  - name: sim-a
    provider: sim
    model: sim-large
    sim:
      policies:
        - {from_run: 1, fingerprint: fp-a, thresholds: {violence: 0.5, hate: 0.5}}
        - {from_run: 3, thresholds: {violence: 0.01}}
        - {from_run: 5, thresholds: {FROM5}}
github:
  repo: acme/llm-drift
  token_env: DRIFTPROBE_TEST_GH_TOKEN
  base_url: %s
  close_on_revert: true
`

func restoreConfig(from5 string) string { return strings.Replace(restoreYAML, "FROM5", from5, 1) }

const (
	hateFrom5   = "violence: 0.01, hate: 0.05"
	revertFrom5 = "violence: 0.5, hate: 0.5"
)

var keyedMarkerRe = regexp.MustCompile(`^(<!-- driftprobe:update=[0-9]+ -->)<!-- driftprobe:key=[0-9a-f]{16} -->`)

// legacyComments rewrites the update markers of issue num's comments as
// driftprobe wrote them before markers carried a key.
func legacyComments(f *fakeGitHub, num int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.comments[num] {
		c.Body = keyedMarkerRe.ReplaceAllString(c.Body, "$1")
	}
}

// copyFile copies a closed database file (its WAL checkpointed), leaving
// no -wal or -shm of the destination behind.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []string{"-wal", "-shm"} {
		os.Remove(to + x)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRestoredDatabaseDoesNotSilenceUpdates is QA D3: the database is
// restored from a backup taken before update 2 (more probes, commented on
// the issue). The restored timeline records its own update 2 (the
// provider reverts): the same database-local id, another change. Its
// comment must be posted and the issue closed, not taken for the lost
// timeline's comment, whether that comment carries a keyed marker or an
// older version's (the id alone).
func TestRestoredDatabaseDoesNotSilenceUpdates(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := "keyed marker"
		if legacy {
			name = "legacy marker"
		}
		t.Run(name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			dir := t.TempDir()
			db, backup := filepath.Join(dir, "test.db"), filepath.Join(dir, "backup.db")
			s := newSysFrom(t, restoreConfig(hateFrom5), db, f.BaseURL())
			c := newClock()
			f.now = c.Now
			step := func(s *sys, runs int) {
				t.Helper()
				for i := 0; i < runs; i++ {
					s.run()
					c.Advance(time.Hour)
					if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 {
						t.Fatalf("delivery: %+v", res)
					}
				}
			}
			step(s, 4)
			s.close()
			copyFile(t, db, backup) // db backup
			s.open()
			step(s, 2) // runs 5-6: update 2, more probes, commented
			lost := events(t, s)[0]
			if len(lost.Updates) != 2 || lost.Updates[1].Change != diff.ChangeProbesAdded || len(f.commentsOf(1)) != 1 {
				t.Fatalf("scenario changed: timeline 1 updates %+v, %d comments", lost.Updates, len(f.commentsOf(1)))
			}
			if legacy {
				legacyComments(f, 1)
			}
			s.close()
			copyFile(t, backup, db) // disaster recovery
			s2 := newSysFrom(t, restoreConfig(revertFrom5), db, f.BaseURL())
			step(s2, 3) // runs 5-7 again: the provider reverts
			ev := events(t, s2)[0]
			if len(ev.Updates) != 2 || ev.Updates[1].ID != lost.Updates[1].ID || ev.Updates[1].Change != diff.ChangeReverted || ev.Status != diff.StatusReverted {
				t.Fatalf("scenario changed: timeline 2 updates %+v (%s)", ev.Updates, ev.Status)
			}
			u := ev.Updates[1]
			if n := len(updateComments(f, 1, ev, u)); n != 1 {
				t.Errorf("the restored timeline's update %d (%s): %d comments, want 1", u.ID, u.Change, n)
			}
			if n := len(f.commentsOf(1)); n != 2 {
				t.Errorf("%d comments, want 2 (the lost timeline's and the revert)", n)
			}
			if iss := f.issueList()[0]; iss.State != "closed" || iss.Title != ghissue.Title(ev) {
				t.Errorf("issue %s %q, want closed, titled %q", iss.State, iss.Title, ghissue.Title(ev))
			}
			if p := pending(t, s2); len(p) != 0 {
				t.Errorf("pending: %+v", p)
			}
		})
	}
}

// TestLegacyMarkerOfTheSameUpdateCounts: a comment an older driftprobe
// posted (its marker the update id alone) whose answer was lost is still
// recognised as the update's own: it is not posted again.
func TestLegacyMarkerOfTheSameUpdateCounts(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := newSysFrom(t, restoreConfig(hateFrom5), filepath.Join(t.TempDir(), "test.db"), f.BaseURL())
	c := newClock()
	for run := 1; run <= 6; run++ {
		s.run()
		if run == 6 {
			f.addFault(fault{match: func(r *http.Request) bool {
				return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments")
			}, after: true, status: 502, body: `{"message":"Bad Gateway"}`})
		}
		deliver(t, s, c, ghissue.Options{})
	}
	if p := pending(t, s); len(p) != 1 || len(f.commentsOf(1)) != 1 {
		t.Fatalf("scenario changed: pending %+v, %d comments", p, len(f.commentsOf(1)))
	}
	legacyComments(f, 1) // as an older version posted it
	if strings.Contains(f.commentsOf(1)[0].Body, "driftprobe:key=") {
		t.Fatal("the comment still has a key")
	}
	c.Advance(time.Hour)
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 1 || res.Failed != 0 {
		t.Fatalf("retry: %+v", res)
	}
	if n := len(f.commentsOf(1)); n != 1 {
		t.Errorf("%d comments, want 1: the legacy-marked comment was not recognised", n)
	}
}
