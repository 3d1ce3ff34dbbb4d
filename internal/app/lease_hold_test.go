package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/storage"
)

// leaseStores opens one database twice, as the lease's holder and another
// process would, both on one fake clock, which also ticks the holder's
// renewals (holdLease).
func leaseStores(t *testing.T) (a, b *storage.DB, clock *clockwork.FakeClock) {
	t.Helper()
	clock = clockwork.NewFakeClockAt(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	p := filepath.Join(t.TempDir(), "d.db")
	for _, d := range []**storage.DB{&a, &b} {
		st, err := storage.Open(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		st.SetClock(clock.Now)
		*d = st
	}
	// b waits 100 ms, not 10 s, for a's write lock: only when it may take
	// the lease, a failure. (b's lease operations go through its lease
	// connection, the one connection of that handle.)
	if _, err := b.LeaseSQL().Exec(`PRAGMA busy_timeout = 100`); err != nil {
		t.Fatal(err)
	}
	return a, b, clock
}

var (
	holdingLease = storage.Lease{Holder: "holder", Host: "h", PID: 1, Command: "driftprobe serve"}
	otherLease   = storage.Lease{Holder: "other", Host: "h2", PID: 2, Command: "driftprobe run"}
)

// waitUntil waits for cond, which another goroutine makes true; the
// deadline only ends a test that would otherwise hang.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitingFor returns once a request for st's lease connection
// (storage.DB.LeaseSQL), made after waits (a DBStats.WaitCount), waits
// for it.
func waitingFor(t *testing.T, st *storage.DB, waits int64, what string) {
	t.Helper()
	waitUntil(t, what, func() bool { return st.LeaseSQL().Stats().WaitCount > waits })
}

// renewAt advances clock by d, firing the holder's renewal tick, and
// returns once that renewal has landed: it is made to wait for a's lease
// connection, then is the only one given it, and that connection is
// taken back only after it.
func renewAt(t *testing.T, ctx context.Context, a *storage.DB, clock *clockwork.FakeClock, d time.Duration) {
	t.Helper()
	conn, err := a.LeaseSQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() // also when the wait fails: the holder's release needs it
	waits := a.LeaseSQL().Stats().WaitCount
	clock.Advance(d)
	waitingFor(t, a, waits, "the renewal waits for the lease's connection")
	conn.Close()
	if conn, err = a.LeaseSQL().Conn(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// refusal returns nil when another process cannot take the lease now.
func refusal(ctx context.Context, b *storage.DB, clock *clockwork.FakeClock, since time.Time) error {
	err := b.AcquireLock(ctx, otherLease, time.Hour)
	if err == nil {
		return fmt.Errorf("%s after the holder took it, its lease was taken over from it, alive and renewing", clock.Since(since))
	}
	if !errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("%s in: %w, want the lease held", clock.Since(since), err)
	}
	return nil
}

// refused checks that another process cannot take the lease now.
func refused(t *testing.T, ctx context.Context, b *storage.DB, clock *clockwork.FakeClock, since time.Time) {
	t.Helper()
	if err := refusal(ctx, b, clock, since); err != nil {
		t.Fatal(err)
	}
}

// QA soak: lock_ttl accepted 1s, and HoldLease renewed every max(ttl/3,
// 1s): at 1s the lease was expired at every renewal's tick, and another
// process (a manual run, a CronJob) took it over from a live run. The
// lease is renewed every third of it, and the shortest lock_ttl leaves the
// remaining two thirds for a renewal to wait on another process's write
// lock through the busy timeout, and fail, and the next to land. Here, at
// config.MinLockTTL, renewals land every third of it, and one held up for
// the busy timeout still lands before the lease expires: at no instant can
// another process take it.
func TestHoldLeaseAtMinLockTTLNeverLapsesWhileHeld(t *testing.T) {
	ttl := config.MinLockTTL
	if period := ttl / 3; ttl-period < 2*storage.BusyTimeout {
		t.Errorf("lock_ttl %s, renewed every %s: a renewal has %s to land, less than two busy timeouts (%s)", ttl, period, ttl-period, storage.BusyTimeout)
	}
	ctx := context.Background()
	a, b, clock := leaseStores(t)
	start := clock.Now()
	_, release, err := holdLease(ctx, a, &holdingLease, ttl, nil, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	expires := func() time.Time {
		h, err := b.LockHolder(ctx)
		if err != nil || h == nil {
			t.Fatalf("lease %+v %v", h, err)
		}
		return h.ExpiresAt
	}
	for i := 0; i < 3; i++ {
		renewAt(t, ctx, a, clock, ttl/3)
		if got, want := expires(), clock.Now().Add(ttl); !got.Equal(want) {
			t.Fatalf("renewal %d: lease expires %s, want %s (ttl from the renewal)", i+1, got, want)
		}
		refused(t, ctx, b, clock, start)
	}
	// The next renewal waits (as for another process's write lock) through
	// the busy timeout, a tenth of a period at a time.
	conn, err := a.LeaseSQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() // also on failure: the holder's release needs it
	waits := a.LeaseSQL().Stats().WaitCount
	clock.Advance(ttl / 3)
	waitingFor(t, a, waits, "the renewal waits for the lease's connection")
	for end := clock.Now().Add(storage.BusyTimeout); clock.Now().Before(end); {
		clock.Advance(ttl / 30)
		refused(t, ctx, b, clock, start)
	}
	conn.Close()
	if conn, err = a.LeaseSQL().Conn(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	refused(t, ctx, b, clock, start)
}

// QA (scale): a statement that holds SQLite's write lock longer than
// lock_ttl (db prune --vacuum's VACUUM: ~60 s for 3.3 GB) blocks every
// renewal, through the lease's own connection or any other; the lease
// lapsed mid-VACUUM and another process took it over from the live prune
// (which then logged "run lease lost" and its checkpoint failed). The
// holder extends its lease first (ExtendLease): through the statement,
// long past ttl, the lease stays live, and the renewals due meanwhile
// renew nothing (they would wait out the busy timeout for the statement's
// write lock, and fail) until the extension is less than ttl away; then
// they renew again. The statement here is a write transaction on the
// holder's store.
func TestExtendLeaseCoversALongStatement(t *testing.T) {
	ctx := context.Background()
	a, b, clock := leaseStores(t)
	ttl := config.MinLockTTL
	start := clock.Now()
	held, release, err := holdLease(ctx, a, &holdingLease, ttl, nil, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	const long = 20 * time.Minute
	if err := ExtendLease(held, long); err != nil {
		t.Fatal(err)
	}
	until := start.Add(long)
	if err := a.Tx(held, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(held, `UPDATE runs SET note = note WHERE 0`); err != nil {
			return err
		}
		clock.Advance(ttl / 3)
		// A renewal now renews nothing: it never waits for the write
		// lock this transaction holds (here: for the lease's
		// connection, taken).
		conn, err := a.LeaseSQL().Conn(held)
		if err != nil {
			return err
		}
		defer conn.Close()
		rctx, cancel := context.WithTimeout(held, 5*time.Second)
		defer cancel()
		if err := held.Value(leaseHoldKey{}).(*leaseHold).renew(rctx, 0); err != nil {
			return fmt.Errorf("a renewal during the extended statement: %w, want nothing to renew", err)
		}
		conn.Close()
		// Tick by tick, up to the last tick that finds the extension at
		// least ttl away: the renewals renew nothing, and the lease
		// stays live.
		for until.Sub(clock.Now().Add(ttl/3)) >= ttl {
			clock.Advance(ttl / 3)
			if err := refusal(ctx, b, clock, start); err != nil {
				return err // not t.Fatal: the transaction must end
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if h, err := b.LockHolder(ctx); err != nil || h == nil || !h.ExpiresAt.Equal(until) {
		t.Fatalf("after the statement the lease is %+v %v; want it still extended to %s, no renewal landed", h, err, until)
	}
	refused(t, ctx, b, clock, start)
	// Less than ttl from the extension's end, renewals renew again.
	renewAt(t, ctx, a, clock, ttl/3)
	if h, err := b.LockHolder(ctx); err != nil || h == nil || !h.ExpiresAt.Equal(clock.Now().Add(ttl)) {
		t.Fatalf("renewed %s before the extension's end, the lease is %+v %v; want it to expire ttl from now", until.Sub(clock.Now()), h, err)
	}
	refused(t, ctx, b, clock, start)
	if held.Err() != nil {
		t.Fatalf("the holder was stopped: %v", context.Cause(held))
	}
}

// db prune --vacuum extends its lease by the vacuum's bound before it
// starts (Vacuum).
func TestVacuumExtendsTheLeaseFirst(t *testing.T) {
	ctx := context.Background()
	a, b, clock := leaseStores(t)
	held, release, err := holdLease(ctx, a, &holdingLease, config.MinLockTTL, nil, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	bound, err := a.VacuumBound(ctx)
	if err != nil || bound < time.Minute {
		t.Fatalf("bound %s %v", bound, err)
	}
	if err := Vacuum(held, a); err != nil {
		t.Fatal(err)
	}
	if h, err := b.LockHolder(ctx); err != nil || h == nil || !h.ExpiresAt.Equal(clock.Now().Add(bound)) {
		t.Fatalf("lease %+v %v after the vacuum; want it extended by %s", h, err, bound)
	}
}

// A run that ends while a renewal waits for the store interrupts that
// renewal: no error is logged for it, and a tick taken meanwhile renews
// nothing; the lease is released.
func TestReleaseDuringRenewalIsQuiet(t *testing.T) {
	ctx := context.Background()
	a, _, clock := leaseStores(t)
	var logs leaseLogBuffer
	ttl := config.MinLockTTL
	held, release, err := holdLease(ctx, a, &holdingLease, ttl, slog.New(slog.NewTextHandler(&logs, nil)), clock)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := a.LeaseSQL().Conn(ctx) // the renewal held up (as by another writer's lock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() // also on failure: the release needs it
	waits := a.LeaseSQL().Stats().WaitCount
	clock.Advance(ttl / 3)
	waitingFor(t, a, waits, "the renewal waits for the lease's connection")
	clock.Advance(ttl / 3) // the next tick, taken with the release
	released := make(chan error, 1)
	go func() { released <- release() }()
	// The renewal ended, release waits for the connection to drop the lease.
	waitingFor(t, a, waits+1, "release waits for the lease's connection")
	conn.Close()
	if err := <-released; err != nil {
		t.Fatalf("release: %v", err)
	}
	if l := logs.String(); strings.Contains(l, "level=ERROR") {
		t.Errorf("a renewal the release interrupted was logged:\n%s", l)
	}
	if h, err := a.LockHolder(ctx); err != nil || h != nil {
		t.Errorf("lease %+v %v after release, want none", h, err)
	}
	if errors.Is(context.Cause(held), storage.ErrLocked) {
		t.Errorf("cause %v, want a plain release", context.Cause(held))
	}
}
