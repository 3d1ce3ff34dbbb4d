package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Lease identifies a run-lock holder.
type Lease struct {
	Holder     string // unique per process
	Host       string
	PID        int
	Command    string
	AcquiredAt time.Time
	ExpiresAt  time.Time
	// Gone, when set, reports whether another lease's holder is known to
	// have ended without releasing it (a process killed outright on this
	// very machine): AcquireLock then takes that lease over at once
	// instead of refusing until it expires. It must answer false whenever
	// it cannot be sure. Not stored.
	Gone func(held Lease) bool
}

// LockedError is returned when another live process holds the run lock.
type LockedError struct{ By Lease }

func (e *LockedError) Error() string {
	return fmt.Sprintf("another driftprobe holds the run lock: %s (pid %d on %s) since %s, lease expires %s",
		e.By.Command, e.By.PID, e.By.Host, e.By.AcquiredAt.Format(time.RFC3339), e.By.ExpiresAt.Format(time.RFC3339))
}

// ErrLocked matches any *LockedError with errors.Is.
var ErrLocked = errors.New("run lock held")

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// LeaseLostError is returned when a holder renews a lease it no longer
// holds: while it was paused or stalled past the lease's expiry, another
// process took the lease over (and may since have released it), and has
// marked the holder's run aborted. The holder must stop at once and write
// nothing more.
type LeaseLostError struct {
	Lease Lease // the holder that lost it
	// Now is the lease's holder now (nil when free or unknown); Free says
	// the lease is free: the process that took it over has released it.
	Now  *Lease
	Free bool
}

func (e *LeaseLostError) Error() string {
	msg := "lease lost: another process took over the run lease while this one was paused or stalled"
	var why []string
	switch {
	case e.Now != nil:
		why = append(why, fmt.Sprintf("it is now held by %s (pid %d on %s) since %s",
			e.Now.Command, e.Now.PID, e.Now.Host, e.Now.AcquiredAt.Format(time.RFC3339)))
	case e.Free:
		why = append(why, "that process has since released it")
	}
	if len(why) == 0 {
		return msg
	}
	return msg + " (" + strings.Join(why, "; ") + ")"
}

// ErrLeaseLost matches any *LeaseLostError with errors.Is.
var ErrLeaseLost = errors.New("run lease lost")

// Is makes errors.Is(err, ErrLeaseLost) true, and errors.Is(err, ErrLocked)
// too: whoever reacts to another holder having the lock (stop, write
// nothing, do not release) reacts the same to a lease taken over.
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost || target == ErrLocked }

// AcquireLock takes the run lease for ttl, unless another holder's lease is
// still valid. An expired lease (a process that died), or one whose
// holder l.Gone says has ended, is taken over. A holder keeps its lease
// with RenewLock, which never takes back a lease it lost.
//
// Like every lease operation, AcquireLock goes through the lease's own
// connection (LeaseSQL), never waiting for the store's. The lease is read
// first outside any write transaction (in WAL mode a read never waits for
// a writer): while another holder's lease is live,
// AcquireLock returns its *LockedError at once, even when that holder is
// in a statement holding SQLite's write lock for longer than the busy
// timeout (db prune --vacuum), instead of failing on the busy database.
// Only a lease found free, expired or gone is then taken, in an immediate
// (write-locked) transaction that reads it again: another process may
// have taken it meanwhile. l.Gone is asked at most once per holder.
//
// A database a newer driftprobe migrated after this one opened it (an idle
// serve during an upgrade) is refused in that transaction with an error
// wrapping ErrNewerSchema, the lease left as it was: every writer starts
// under the lease, and none may write a schema it does not know.
func (d *DB) AcquireLock(ctx context.Context, l Lease, ttl time.Duration) error {
	gone := goneOnce(l.Gone)
	if _, err := d.liveLease(ctx, d.LeaseSQL(), l, gone); err != nil {
		return err
	}
	return d.txOn(ctx, d.LeaseSQL(), func(tx *sql.Tx) error {
		if err := d.refuseNewerSchema(ctx, tx, ": a newer driftprobe migrated it while this one had it open; stop this process and run the newer driftprobe in its place"); err != nil {
			return err
		}
		cur, err := d.liveLease(ctx, tx, l, gone)
		if err != nil {
			return err
		}
		now := d.now()
		if cur != nil && cur.Holder == l.Holder {
			now = cur.AcquiredAt // a holder acquiring again keeps its start
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO run_lock (id, holder, host, pid, command, acquired_at, expires_at) VALUES (1, ?, ?, ?, ?, ?, ?)`,
			l.Holder, l.Host, l.PID, l.Command, ts(now), ts(d.now().Add(ttl)))
		return err
	})
}

// liveLease reads the lease through q and returns it (nil when there is
// none), or a *LockedError when it is another holder's and live:
// unexpired, and not known gone.
func (d *DB) liveLease(ctx context.Context, q querier, l Lease, gone func(Lease) bool) (*Lease, error) {
	cur, err := readLease(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read the run lease: %w", err)
	}
	if cur != nil && cur.Holder != l.Holder && cur.ExpiresAt.After(d.now()) && !gone(*cur) {
		return nil, &LockedError{By: *cur}
	}
	return cur, nil
}

// goneOnce returns gone (nil: never gone) asked at most once per lease
// holder: AcquireLock reads the lease twice, and a holder found ended
// stays ended (HoldLease's Gone logs the takeover it decides).
func goneOnce(gone func(Lease) bool) func(Lease) bool {
	if gone == nil {
		return func(Lease) bool { return false }
	}
	asked := map[string]bool{}
	return func(h Lease) bool {
		key := h.Holder + "\x00" + ts(h.AcquiredAt)
		v, ok := asked[key]
		if !ok {
			v = gone(h)
			asked[key] = v
		}
		return v
	}
}

// querier is what reads the lease: the lease's handle or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readLease returns the lease row read through q, nil when there is none.
func readLease(ctx context.Context, q querier) (*Lease, error) {
	var l Lease
	var acq, exp string
	err := q.QueryRowContext(ctx, `SELECT holder, host, pid, command, acquired_at, expires_at FROM run_lock WHERE id = 1`).
		Scan(&l.Holder, &l.Host, &l.PID, &l.Command, &acq, &exp)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	}
	l.AcquiredAt, l.ExpiresAt = ParseTime(acq), ParseTime(exp)
	return &l, nil
}

// RenewLock extends, to ttl from now, the lease l holds. It only ever
// extends the lease row l's holder still has: when the row is gone (the
// lease was taken over and since released) or another holder's (taken
// over), the lease was lost and RenewLock returns a *LeaseLostError
// (matching ErrLeaseLost and ErrLocked), changing nothing. One UPDATE,
// through the lease's own connection (LeaseSQL): it waits for SQLite's
// write lock, through the busy timeout at most, never for the store's
// connection; should it time out (this process's own writes can keep the
// lock taken back to back), once more in line on the store's connection,
// behind them. The current holder is read only when the lease was lost.
//
// A database a newer driftprobe has migrated meanwhile (possible only once
// this lease had expired: this process paused or stalled past it, since
// no driftprobe migrates under a live lease) is not renewed: RenewLock
// returns an error wrapping ErrNewerSchema, and the holder stops, as it
// would refuse to start on that schema (AcquireLock).
func (d *DB) RenewLock(ctx context.Context, l Lease, ttl time.Duration) error {
	expires := d.now().Add(ttl)
	// One statement, the schema checked in it: a renewal is one use of
	// the lease's connection.
	const renew = `UPDATE run_lock SET expires_at = ? WHERE id = 1 AND holder = ? AND (SELECT user_version FROM pragma_user_version) <= ?`
	res, err := d.LeaseSQL().ExecContext(ctx, renew, ts(expires), l.Holder, SchemaLatest())
	if isBusy(err) && d.lease != nil && ctx.Err() == nil {
		// SQLite's busy handler polls and is not fair: this process's
		// own writer, committing back to back on the store's connection,
		// can keep the write lock from it through the busy timeout. Wait
		// in line behind those writes instead, on their connection.
		res, err = d.db.ExecContext(ctx, renew, ts(d.now().Add(ttl)), l.Holder, SchemaLatest())
	}
	if err != nil {
		return fmt.Errorf("renew run lease: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("renew run lease: %w", err)
	}
	if n == 1 {
		return nil
	}
	// No row renewed: the lease lost, or the schema newer (the UPDATE's
	// condition). A failed read of the schema reports the lease lost;
	// either stops the holder.
	if err := d.refuseNewerSchema(ctx, d.LeaseSQL(), ": a newer driftprobe migrated it while this one's run lease had lapsed; stop this process and run the newer driftprobe in its place"); errors.Is(err, ErrNewerSchema) {
		return err
	}
	lost := &LeaseLostError{Lease: l}
	if cur, err := d.LockHolder(ctx); err == nil {
		lost.Now, lost.Free = cur, cur == nil
	}
	return lost
}

// ReleaseLock drops the lease if l still holds it (through LeaseSQL).
func (d *DB) ReleaseLock(ctx context.Context, l Lease) error {
	_, err := d.LeaseSQL().ExecContext(ctx, `DELETE FROM run_lock WHERE id = 1 AND holder = ?`, l.Holder)
	return err
}

// LockHolder returns the current lease, if any (read through LeaseSQL).
func (d *DB) LockHolder(ctx context.Context) (*Lease, error) {
	return readLease(ctx, d.LeaseSQL())
}
