package storage

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockTwoProcesses opens one database twice, as two processes would, both
// reading one injected clock; advance moves it on.
func lockTwoProcesses(t *testing.T) (a, b *DB, advance func(time.Duration)) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lock.db")
	var mu sync.Mutex
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	for _, d := range []**DB{&a, &b} {
		db, err := Open(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		db.SetClock(clock)
		*d = db
	}
	return a, b, func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}

var (
	lockLeaseA = Lease{Holder: "A", Host: "host-a", PID: 1, Command: "driftprobe run"}
	lockLeaseB = Lease{Holder: "B", Host: "host-b", PID: 2, Command: "driftprobe run"}
)

// wantLeaseLost checks that err reports A's lease lost, as both ErrLeaseLost
// and ErrLocked (what HoldLease and RunOnce react to).
func wantLeaseLost(t *testing.T, what string, err error) *LeaseLostError {
	t.Helper()
	var lost *LeaseLostError
	if !errors.Is(err, ErrLeaseLost) || !errors.Is(err, ErrLocked) || !errors.As(err, &lost) {
		t.Fatalf("%s: %v, want the lease lost", what, err)
	}
	if !strings.HasPrefix(err.Error(), "lease lost: another process took over the run lease while this one was paused or stalled") {
		t.Errorf("%s: message %q", what, err)
	}
	return lost
}

// A holder renews its own lease, even past its expiry when nobody took it
// over: the expiry moves on, the rest stays.
func TestRenewLockExtendsOwnLease(t *testing.T) {
	ctx := context.Background()
	a, _, advance := lockTwoProcesses(t)
	if err := a.AcquireLock(ctx, lockLeaseA, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	first, _ := a.LockHolder(ctx)
	advance(5 * time.Second) // paused past the expiry; nobody came
	if err := a.AcquireLock(ctx, lockLeaseA, 2*time.Second); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	h, _ := a.LockHolder(ctx)
	if h == nil || h.Holder != "A" || !h.AcquiredAt.Equal(first.AcquiredAt) || !h.ExpiresAt.Equal(a.Now().Add(2*time.Second)) {
		t.Fatalf("after renewal %+v (first %+v)", h, first)
	}
	if err := a.RenewLock(ctx, lockLeaseA, time.Minute); err != nil {
		t.Fatalf("RenewLock: %v", err)
	}
	if h, _ := a.LockHolder(ctx); h == nil || !h.ExpiresAt.Equal(a.Now().Add(time.Minute)) {
		t.Fatalf("after RenewLock %+v", h)
	}
}

// A paused holder whose lease another process took over and released
// does not take it back on renewal: the lease is lost, the row not
// recreated. It may acquire afresh later (serve's next run).
func TestRenewLockAfterTakeoverAndRelease(t *testing.T) {
	ctx := context.Background()
	a, b, advance := lockTwoProcesses(t)
	if err := a.AcquireLock(ctx, lockLeaseA, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	advance(3 * time.Second) // A paused: its lease expires
	if err := b.AcquireLock(ctx, lockLeaseB, 2*time.Second); err != nil {
		t.Fatalf("B takes over the expired lease: %v", err)
	}
	if err := b.ReleaseLock(ctx, lockLeaseB); err != nil {
		t.Fatal(err)
	}
	// A resumes: its renewal (HoldLease renews through RenewLock).
	lost := wantLeaseLost(t, "renewal", a.RenewLock(ctx, lockLeaseA, 2*time.Second))
	if !lost.Free || lost.Now != nil || !strings.Contains(lost.Error(), "released") {
		t.Errorf("lost %+v: %v", lost, lost)
	}
	if h, err := a.LockHolder(ctx); err != nil || h != nil {
		t.Fatalf("the lost lease was recreated: %+v %v", h, err)
	}
	wantLeaseLost(t, "RenewLock", a.RenewLock(ctx, lockLeaseA, 2*time.Second))
	if h, err := a.LockHolder(ctx); err != nil || h != nil {
		t.Fatalf("RenewLock recreated the lost lease: %+v %v", h, err)
	}
	// A first acquisition is unchanged: the free lease is taken.
	if err := a.AcquireLock(ctx, lockLeaseA, 2*time.Second); err != nil {
		t.Fatalf("acquiring afresh: %v", err)
	}
	if h, _ := a.LockHolder(ctx); h == nil || h.Holder != "A" {
		t.Fatalf("holder %+v", h)
	}
}

// A paused holder whose lease another process took over and still holds
// fails its renewal, leaving the other's lease untouched — even once that
// lease has expired too.
func TestRenewLockAfterTakeoverStillHeld(t *testing.T) {
	ctx := context.Background()
	a, b, advance := lockTwoProcesses(t)
	if err := a.AcquireLock(ctx, lockLeaseA, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	advance(3 * time.Second)
	if err := b.AcquireLock(ctx, lockLeaseB, 2*time.Second); err != nil {
		t.Fatalf("B takes over the expired lease: %v", err)
	}
	before, _ := b.LockHolder(ctx)
	lost := wantLeaseLost(t, "renewal", a.RenewLock(ctx, lockLeaseA, 2*time.Second))
	if lost.Now == nil || lost.Now.Holder != "B" || !strings.Contains(lost.Error(), "now held by driftprobe run (pid 2 on host-b)") {
		t.Errorf("lost %+v: %v", lost, lost)
	}
	if h, _ := b.LockHolder(ctx); !sameLockLease(h, before) {
		t.Fatalf("B's lease changed: %+v, was %+v", h, before)
	}
	advance(time.Minute) // B's lease expires too: a renewal still takes nothing
	wantLeaseLost(t, "RenewLock past B's expiry", a.RenewLock(ctx, lockLeaseA, 2*time.Second))
	if h, _ := b.LockHolder(ctx); !sameLockLease(h, before) {
		t.Fatalf("B's lease changed: %+v, was %+v", h, before)
	}
}

func sameLockLease(x, y *Lease) bool {
	return x != nil && y != nil && x.Holder == y.Holder && x.Host == y.Host && x.PID == y.PID && x.Command == y.Command &&
		x.AcquiredAt.Equal(y.AcquiredAt) && x.ExpiresAt.Equal(y.ExpiresAt)
}
