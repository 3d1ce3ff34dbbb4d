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
func (d *DB) AcquireLock(ctx context.Context, l Lease, ttl time.Duration) error {
	now := d.now()
	return d.Tx(ctx, func(tx *sql.Tx) error {
		var cur Lease
		var acq, exp string
		err := tx.QueryRowContext(ctx, `SELECT holder, host, pid, command, acquired_at, expires_at FROM run_lock WHERE id = 1`).
			Scan(&cur.Holder, &cur.Host, &cur.PID, &cur.Command, &acq, &exp)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			cur.AcquiredAt, cur.ExpiresAt = ParseTime(acq), ParseTime(exp)
			if cur.Holder != l.Holder && cur.ExpiresAt.After(now) && (l.Gone == nil || !l.Gone(cur)) {
				return &LockedError{By: cur}
			}
			if cur.Holder == l.Holder {
				now = cur.AcquiredAt
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO run_lock (id, holder, host, pid, command, acquired_at, expires_at) VALUES (1, ?, ?, ?, ?, ?, ?)`,
			l.Holder, l.Host, l.PID, l.Command, ts(now), ts(d.now().Add(ttl)))
		return err
	})
}

// RenewLock extends, to ttl from now, the lease l holds. It only ever
// extends the lease row l's holder still has: when the row is gone (the
// lease was taken over and since released) or another holder's (taken
// over), the lease was lost and RenewLock returns a *LeaseLostError
// (matching ErrLeaseLost and ErrLocked), changing nothing. One UPDATE;
// the current holder is read only when the lease was lost.
func (d *DB) RenewLock(ctx context.Context, l Lease, ttl time.Duration) error {
	expires := d.now().Add(ttl)
	res, err := d.db.ExecContext(ctx, `UPDATE run_lock SET expires_at = ? WHERE id = 1 AND holder = ?`, ts(expires), l.Holder)
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
	lost := &LeaseLostError{Lease: l}
	if cur, err := d.LockHolder(ctx); err == nil {
		lost.Now, lost.Free = cur, cur == nil
	}
	return lost
}

// ReleaseLock drops the lease if l still holds it.
func (d *DB) ReleaseLock(ctx context.Context, l Lease) error {
	_, err := d.db.ExecContext(ctx, `DELETE FROM run_lock WHERE id = 1 AND holder = ?`, l.Holder)
	return err
}

// LockHolder returns the current lease, if any.
func (d *DB) LockHolder(ctx context.Context) (*Lease, error) {
	var l Lease
	var acq, exp string
	err := d.db.QueryRowContext(ctx, `SELECT holder, host, pid, command, acquired_at, expires_at FROM run_lock WHERE id = 1`).
		Scan(&l.Holder, &l.Host, &l.PID, &l.Command, &acq, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	l.AcquiredAt, l.ExpiresAt = ParseTime(acq), ParseTime(exp)
	return &l, err
}
