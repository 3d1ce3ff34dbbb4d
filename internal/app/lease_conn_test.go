package app

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
)

// Review: serve's delivery worker, the run's writer and the lease's
// renewals shared the store's one connection. Each statement ahead of a
// renewal may wait out the busy timeout (10 s) for another process's
// write lock (a `driftprobe run`, `db prune`, a second serve), and at the
// shortest lock_ttl (30 s) a renewal queued behind a few of them landed
// after the lease expired: another process took the lease over from a
// live serve or run, which was then aborted. A renewal has a connection
// of its own: it waits for SQLite's write lock only, as long as the busy
// timeout at most, never for the store's connection.
//
// The store's connection is taken throughout (standing in for statements
// queued on it, each waiting on another writer's lock) while another
// process holds the write lock when the renewal's tick comes and then
// lets it go: the renewal lands, and when the clock passes the first
// lease's expiry no other process can take the lease.
func TestRenewalDoesNotWaitForTheStoresConnection(t *testing.T) {
	ctx := context.Background()
	a, b, clock := leaseStores(t)
	ttl := config.MinLockTTL
	start := clock.Now()
	held, release, err := holdLease(ctx, a, &holdingLease, ttl, nil, clock)
	if err != nil {
		t.Fatal(err)
	}
	busy, err := a.SQL().Conn(ctx) // the store's one connection, taken
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close() // also on failure: nothing waiting for it may hang
	// Another process's writer.
	writer, err := sql.Open("sqlite", a.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	other, err := writer.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	clock.Advance(ttl / 3) // the renewal's tick
	tick := clock.Now()
	if _, err := other.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	want := tick.Add(ttl)
	var got time.Time
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		h, err := b.LockHolder(ctx)
		if err != nil || h == nil {
			t.Fatalf("lease %+v %v", h, err)
		}
		if got = h.ExpiresAt; got.Equal(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the renewal at %s never landed while the store's connection was taken (10 s): the lease still expires %s, want %s",
				tick.Sub(start), got.Sub(start), want.Sub(start))
			break
		}
	}
	clock.Advance(ttl - ttl/3 + time.Second) // past the first lease's expiry
	refused(t, ctx, b, clock, start)
	busy.Close()
	if err := release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := context.Cause(held); err != context.Canceled {
		t.Errorf("held ended with %v, want a plain release", err)
	}
}
