package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/storage"
)

// leaseLogBuffer is a bytes.Buffer safe for a logger's goroutine.
type leaseLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *leaseLogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *leaseLogBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A holder paused past its lease's expiry, whose lease another process
// took over (and released, or still holds), has its run context cancelled
// at its next renewal with the lost lease as cause; it takes nothing back
// and releases nothing.
func TestHoldLeaseCancelsOnLostLease(t *testing.T) {
	for _, c := range []struct {
		name     string
		released bool
	}{{"taken over and released", true}, {"taken over and held", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := filepath.Join(t.TempDir(), "d.db")
			clock, advance := pausableClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
			var dbs [2]*storage.DB
			for i := range dbs {
				st, err := storage.Open(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				st.SetClock(clock)
				dbs[i] = st
			}
			a, b := dbs[0], dbs[1]
			lb := storage.Lease{Holder: "B", Host: "host-b", PID: 2, Command: "driftprobe run"}
			held, release, logs := holdAsA(t, a)
			// A is paused: by the injected clock its lease expires, and B
			// takes it over (and perhaps releases it) before A's next
			// renewal, which its real ticker makes within a second.
			advance(10 * time.Second)
			if err := b.AcquireLock(ctx, lb, time.Hour); err != nil {
				t.Fatalf("B takes over the expired lease: %v", err)
			}
			if c.released {
				if err := b.ReleaseLock(ctx, lb); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-held.Done():
			case <-time.After(10 * time.Second):
				h, _ := a.LockHolder(ctx)
				release()
				t.Fatalf("the run was not cancelled when its renewal found the lease lost (holder now %+v)", h)
			}
			cause := context.Cause(held)
			if !errors.Is(cause, storage.ErrLeaseLost) || !errors.Is(cause, storage.ErrLocked) {
				t.Fatalf("cause %v, want the lease lost", cause)
			}
			if !strings.Contains(logs.String(), "lease lost: another process took over the run lease") {
				t.Errorf("log: %s", logs.String())
			}
			if err := release(); err != nil {
				t.Fatalf("release: %v", err)
			}
			h, err := a.LockHolder(ctx)
			switch {
			case err != nil:
				t.Fatal(err)
			case c.released && h != nil:
				t.Fatalf("the lost lease was taken back: %+v", h)
			case !c.released && (h == nil || h.Holder != "B"):
				t.Fatalf("B's lease was disturbed: %+v", h)
			}
		})
	}
}

// pausableClock returns a clock starting at start, safe for the lease's
// renewal goroutine, and advance, which moves it on: a process paused as
// long, seen from its own store.
func pausableClock(start time.Time) (clock func() time.Time, advance func(time.Duration)) {
	var mu sync.Mutex
	now := start
	return func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
}

// holdAsA holds the run lease on st as holder "A" (ttl 3 s: the real
// ticker renews it within a second), logging to logs, released at the
// end of the test if the test has not released it.
func holdAsA(t *testing.T, st *storage.DB) (held context.Context, release func() error, logs *leaseLogBuffer) {
	t.Helper()
	logs = &leaseLogBuffer{}
	la := &storage.Lease{Holder: "A", Host: "host-a", PID: 1, Command: "driftprobe run"}
	held, release, err := HoldLease(context.Background(), st, la, 3*time.Second, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return held, release, logs
}
