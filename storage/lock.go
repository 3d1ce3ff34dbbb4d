package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// AcquireLock takes the run lease for ttl, unless another holder's lease is
// still valid. An expired lease (a process that died), or one whose
// holder l.Gone says has ended, is taken over. The same holder may
// re-acquire (renew) its own lease.
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
