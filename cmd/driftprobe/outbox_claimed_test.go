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

	"github.com/driftprobe/driftprobe/storage"
)

// A row whose previous attempt failed, claimed by an `outbox --send` whose
// call is in flight, is listed as being delivered (claimed until the
// claim's end, with the previous attempt's error), not as waiting on that
// error; `outbox --json` marks it claimed and keeps last_error the
// previous attempt's error.
func TestOutboxListsAClaimedRowAsBeingDelivered(t *testing.T) {
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
		w.Header().Set("X-GitHub-Request-Id", "0D3A:1BCC6E:B442C:C99F5:6650A1B2") // GitHub's own 503
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

	// Row 1's previous attempt failed; it is due again.
	const prev = "GitHub unavailable (503 Server Error)"
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.SQL().ExecContext(ctx, `UPDATE outbox SET attempts = 1, last_error = ?, next_attempt_at = ? WHERE id = 1`, prev, time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano))
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

	stdout, stderr, code := runIn(t, "outbox", "--config", fake, "--db", db, "--json")
	var rows []struct {
		ID        int64      `json:"id"`
		Claimed   bool       `json:"claimed"`
		LastError string     `json:"last_error"`
		Next      *time.Time `json:"next_attempt_at"`
		Reason    string     `json:"reason"`
	}
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || code != 0 || len(rows) != 1 {
		t.Fatalf("outbox --json while row 1 is being delivered: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	r := rows[0]
	if !r.Claimed || r.LastError != prev || r.Next == nil || !r.Next.After(time.Now().Add(9*time.Minute)) ||
		!strings.HasPrefix(r.Reason, "being delivered (claimed until ") || !strings.HasSuffix(r.Reason, "; its previous attempt failed: "+prev+")") {
		t.Errorf("outbox --json while row 1 is being delivered: %+v; want it claimed (for 10 minutes), its previous error kept", r)
	}
	stdout, stderr, code = runIn(t, "outbox", "--config", fake, "--db", db)
	if code != 0 || !strings.Contains(stdout, "being delivered (claimed until ") || strings.Contains(stdout, "waiting until") {
		t.Errorf("outbox while row 1 is being delivered: exit %d\n%s%s", code, stdout, stderr)
	}

	unblock()
	s := <-done
	if s.code != 3 || !strings.Contains(s.stderr, "1 row(s) failed") {
		t.Errorf("outbox --send (GitHub answered 503): exit %d\n%s%s", s.code, s.stdout, s.stderr)
	}
	stdout, _, _ = runIn(t, "outbox", "--config", fake, "--db", db, "--json")
	rows = nil
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 || rows[0].Claimed || !strings.HasPrefix(rows[0].Reason, "waiting until ") ||
		!strings.HasPrefix(rows[0].LastError, "GitHub unavailable (503") {
		t.Errorf("after the failed attempt: %v\n%s", err, stdout)
	}
}
