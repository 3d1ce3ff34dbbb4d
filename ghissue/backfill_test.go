package ghissue_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/app"
)

// Events recorded before the github block was configured have no outbox
// row, and detection queues an event's later changes only when its
// opening was queued: they were never filed. QueueUnfiled queues their
// issues (once), delivery opens them, and later changes then comment.
func TestBackfillFilesEventsRecordedWithoutGitHub(t *testing.T) {
	db := filepath.Join(t.TempDir(), "b.db")
	// The same story without a github block, for its first 6 runs.
	noGH := simYAML[:strings.Index(simYAML, "github:")] + "# no github block (base URL %s unused)\n"
	s := newSysFrom(t, noGH, db, "-")
	for i := 0; i < 6; i++ {
		s.run()
	}
	s.close()

	gh := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s = newSys(t, db, gh.BaseURL())
	ctx := context.Background()
	file := app.DetectionParams(s.cfg).Enqueue
	if p := pending(t, s); len(p) != 0 {
		t.Fatalf("runs without a github block queued %d deliveries", len(p))
	}
	ids, err := ghissue.Unfiled(ctx, s.st, file)
	if err != nil || len(ids) != 2 {
		t.Fatalf("Unfiled = %v, %v; want the 2 open events", ids, err)
	}
	// The filter reads the kind an event opened as, as detection does: an
	// event that opened as nondeterminism (not filed by default) stays
	// unfiled whatever it is now.
	if _, err := s.st.SQL().Exec(`UPDATE events SET opened_kind = 'nondeterminism' WHERE id = ?`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if only, err := ghissue.Unfiled(ctx, s.st, file); err != nil || !slices.Equal(only, ids[1:]) {
		t.Fatalf("Unfiled with event %d opened as nondeterminism = %v, %v; want %v", ids[0], only, err, ids[1:])
	}
	if _, err := s.st.SQL().Exec(`UPDATE events SET opened_kind = kind WHERE id = ?`, ids[0]); err != nil {
		t.Fatal(err)
	}
	queued, err := ghissue.QueueUnfiled(ctx, s.st, file)
	if err != nil || !slices.Equal(queued, ids) {
		t.Fatalf("QueueUnfiled = %v, %v; want %v", queued, err, ids)
	}
	if again, err := ghissue.QueueUnfiled(ctx, s.st, file); err != nil || len(again) != 0 {
		t.Fatalf("a second QueueUnfiled queued %v (%v)", again, err)
	}
	if p := pending(t, s); len(p) != 2 || p[0].Action != ghissue.ActionOpen || p[1].Action != ghissue.ActionOpen {
		t.Fatalf("pending after backfill: %+v", p)
	}
	c := newClock()
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 2 || len(res.Errors) != 0 {
		t.Fatalf("deliver: %+v", res)
	}
	if n := len(gh.issueList()); n != 2 {
		t.Fatalf("%d issues opened, want 2", n)
	}
	if ids, _ := ghissue.Unfiled(ctx, s.st, file); len(ids) != 0 {
		t.Errorf("events %v still unfiled after delivery", ids)
	}
	// The revert at run 7 (confirmed run 8) now comments and closes.
	s.run()
	s.run()
	deliver(t, s, c, ghissue.Options{})
	closed := 0
	for _, is := range gh.issueList() {
		if is.State == "closed" {
			closed++
		}
	}
	if closed != 1 {
		t.Errorf("%d issues closed after the revert, want 1 (its changes are queued once the opening was)", closed)
	}
}
