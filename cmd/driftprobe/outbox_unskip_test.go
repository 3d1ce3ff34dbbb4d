package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/storage"
)

// outbox --unskip undoes --skip: the row is pending again, listed with
// why (here it waits as it did before the skip: its delivery had failed,
// nothing listens on the configured GitHub); with --json the note goes to stderr and stdout stays the rows. It
// writes, so it excludes --dry-run; --skip and --unskip of the same row in
// one command is a usage error (exit 2) that changes nothing; an id that
// was not skipped (unknown, pending) is named with its reason and exits
// 3, as --skip does for an id not pending, while the others are undone.
func TestOutboxUnskip(t *testing.T) {
	_, db, withGH, _ := outboxConfigs(t)
	for i := 0; i < 4; i++ {
		runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	}
	type pendingRow struct {
		ID        int64  `json:"id"`
		LastError string `json:"last_error"`
		Reason    string `json:"reason"`
	}
	list := func() []pendingRow {
		t.Helper()
		stdout, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--json")
		var rows []pendingRow
		if err := json.Unmarshal([]byte(stdout), &rows); err != nil || code != 0 {
			t.Fatalf("outbox --json: exit %d, %v\n%s%s", code, err, stdout, stderr)
		}
		return rows
	}
	if rows := list(); len(rows) != 1 || rows[0].ID != 1 {
		t.Fatalf("scenario changed: pending %+v", rows)
	}
	if _, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--skip", "1"); code != 0 {
		t.Fatalf("--skip 1: exit %d: %s", code, stderr)
	}

	if _, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--unskip", "1", "--dry-run"); code != 2 || !strings.Contains(stderr, "--unskip and --dry-run exclude each other") {
		t.Errorf("--unskip --dry-run: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--unskip", "7,1", "--skip", "1"); code != 2 || !strings.Contains(stderr, "--skip and --unskip both name outbox row(s) 1") {
		t.Errorf("--unskip 7,1 --skip 1: exit %d: %s", code, stderr)
	}
	if rows := list(); len(rows) != 0 {
		t.Errorf("a refused command changed the outbox: pending %+v", rows)
	}

	stdout, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--unskip", "1,99", "--unskip", "1", "--json")
	var rows []pendingRow
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 || rows[0].ID != 1 || rows[0].LastError != ghissue.UnskipNote || !strings.Contains(rows[0].Reason, ghissue.UnskipNote) {
		t.Errorf("--unskip 1,99 --json: stdout %s (%v), want row 1 pending again, noted", stdout, err)
	}
	for _, want := range []string{
		"outbox row 1 (event 1, open) is pending again: its skip is undone; delivered in turn",
		"outbox row 99 not unskipped: unknown: no outbox row has this id",
		"--unskip: outbox row(s) 99 were not skipped",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--unskip 1,99 --json: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != 3 {
		t.Errorf("--unskip of an unknown row: exit %d, want 3", code)
	}

	stdout, stderr, code = runIn(t, "outbox", "--config", withGH, "--db", db, "--unskip", "1")
	if code != 3 || !strings.Contains(stdout, "outbox row 1 not unskipped: pending, not skipped: nothing to undo") || !strings.Contains(stderr, "--unskip: outbox row(s) 1 were not skipped") {
		t.Errorf("--unskip of a pending row: exit %d\n%s%s", code, stdout, stderr)
	}
	if rows := list(); len(rows) != 1 || rows[0].ID != 1 {
		t.Errorf("after --unskip: pending %+v, want row 1", rows)
	}
	if stdout, _, _ := runIn(t, "outbox", "--help"); !strings.Contains(stdout, "--unskip") {
		t.Errorf("outbox --help does not mention --unskip:\n%s", stdout)
	}
}

// outbox --skip and --unskip of a row an `outbox --send` of another
// process is delivering (its call in flight): the row is pending again
// under that delivery's claim, and `outbox` lists it as being delivered
// (`--json`: claimed, last_error the unskip note), never as waiting on
// the unskip note; --unskip says the delivery still has it (exit 0). The
// delivery's outcome (GitHub's 503) is then recorded on the row as for
// any claimed row: --send exits 3 for its failed row.
func TestOutboxUnskipOfARowBeingDelivered(t *testing.T) {
	dir, db, withGH, _ := outboxConfigs(t)
	for i := 0; i < 4; i++ {
		runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	}
	inFlight, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			close(inFlight)
			<-release
		})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-GitHub-Request-Id", "0D3A:1BCC6E:B442C:C99F5:6650A1B2")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"message":"Server Error"}`))
	}))
	t.Cleanup(srv.Close)
	var released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before srv.Close: a hung handler would block it
	fake := filepath.Join(dir, "fake.yaml")
	targets := "targets:\n  - name: sim-a\n    provider: sim\n    model: sim-large\n    sim: {policies: [{from_run: 3, thresholds: {violence: 0.01}}]}\n"
	if err := os.WriteFile(fake, []byte(targets+"github: {repo: o/r, base_url: \""+srv.URL+"/\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.SQL().ExecContext(ctx, `UPDATE outbox SET next_attempt_at = '' WHERE id = 1`) // due
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	type sendOut struct {
		stdout, stderr string
		code           int
	}
	done := make(chan sendOut, 1)
	go func() {
		var out, errb bytes.Buffer
		code := Run(ctx, []string{"outbox", "--config", fake, "--db", db, "--send"}, &out, &errb)
		done <- sendOut{out.String(), errb.String(), code}
	}()
	select {
	case <-inFlight:
	case s := <-done:
		t.Fatalf("outbox --send ended without calling GitHub: exit %d\n%s%s", s.code, s.stdout, s.stderr)
	case <-time.After(30 * time.Second):
		t.Fatal("outbox --send never called GitHub")
	}

	if _, stderr, code := runIn(t, "outbox", "--config", fake, "--db", db, "--skip", "1"); code != 0 {
		t.Fatalf("--skip 1 while it is being delivered: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := runIn(t, "outbox", "--config", fake, "--db", db, "--unskip", "1")
	if code != 0 || !strings.Contains(stdout, "outbox row 1 (event 1, open) is pending again: its skip is undone; still being delivered by the delivery that had it claimed when it was skipped (claimed until ") {
		t.Errorf("--unskip 1 while it is being delivered: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "being delivered (claimed until ") || strings.Contains(stdout, "waiting until") {
		t.Errorf("--unskip 1's listing: the row is not listed as being delivered\n%s", stdout)
	}
	stdout, stderr, code = runIn(t, "outbox", "--config", fake, "--db", db, "--json")
	var rows []struct {
		ID        int64      `json:"id"`
		Claimed   bool       `json:"claimed"`
		LastError string     `json:"last_error"`
		Next      *time.Time `json:"next_attempt_at"`
		Reason    string     `json:"reason"`
	}
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || code != 0 || len(rows) != 1 {
		t.Fatalf("outbox --json after --unskip: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	if r := rows[0]; !r.Claimed || r.LastError != ghissue.UnskipNote || r.Next == nil || !r.Next.After(time.Now().Add(9*time.Minute)) ||
		r.Reason != "being delivered (claimed until "+r.Next.UTC().Format(time.RFC3339Nano)+"; "+ghissue.UnskipNote+")" {
		t.Errorf("outbox --json after --unskip of the row being delivered: %+v; want it claimed (for 10 minutes), the unskip note its last_error", r)
	}

	unblock()
	s := <-done
	if s.code != 3 || !strings.Contains(s.stderr, "1 row(s) failed") || strings.Contains(s.stdout, "left to another process") {
		t.Errorf("outbox --send (GitHub answered 503): exit %d, want its failure recorded\n%s%s", s.code, s.stdout, s.stderr)
	}
	stdout, _, _ = runIn(t, "outbox", "--config", fake, "--db", db, "--json")
	rows = nil
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 || rows[0].Claimed || !strings.HasPrefix(rows[0].LastError, "GitHub unavailable (503") {
		t.Errorf("after the failed attempt: %v\n%s", err, stdout)
	}
}
