package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A driftprobe that has the database open when a newer one migrates it
// (an idle serve during an upgrade) takes no lease afterwards: every
// writer starts under the lease, and writing a database whose schema it
// does not know could leave rows or state a newer reader misreads. It
// says why, as opening such a database does, and the lease stays free.
func TestAcquireLockRefusesANewerSchema(t *testing.T) {
	a, b, _ := lockTwoProcesses(t)
	ctx := context.Background()
	// b stands in for the newer driftprobe's migration.
	if _, err := b.SQL().ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaLatest()+1)); err != nil {
		t.Fatal(err)
	}
	err := a.AcquireLock(ctx, lockLeaseA, time.Minute)
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), fmt.Sprintf("schema %d, this binary knows %d", SchemaLatest()+1, SchemaLatest())) {
		t.Fatalf("AcquireLock after a newer migration: %v, want ErrNewerSchema naming both schemas", err)
	}
	if h, err := a.LockHolder(ctx); err != nil || h != nil {
		t.Fatalf("the lease after the refusal: %+v, %v; want it free", h, err)
	}
	// At the schema this binary knows, it is taken as before.
	if _, err := b.SQL().ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaLatest())); err != nil {
		t.Fatal(err)
	}
	if err := a.AcquireLock(ctx, lockLeaseA, time.Minute); err != nil {
		t.Fatalf("AcquireLock at this binary's schema: %v", err)
	}
}

// A holder whose lease lapsed (paused or stalled past it) while a newer
// driftprobe migrated the database does not renew it: RenewLock returns
// ErrNewerSchema, not a lost lease, and the lease keeps its old expiry.
// At this binary's schema it renews as before.
func TestRenewLockRefusesANewerSchema(t *testing.T) {
	a, b, _ := lockTwoProcesses(t)
	ctx := context.Background()
	if err := a.AcquireLock(ctx, lockLeaseA, time.Minute); err != nil {
		t.Fatal(err)
	}
	before, err := a.LockHolder(ctx)
	if err != nil || before == nil {
		t.Fatalf("lease %+v, %v", before, err)
	}
	if _, err := b.SQL().ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaLatest()+1)); err != nil {
		t.Fatal(err)
	}
	err = a.RenewLock(ctx, lockLeaseA, time.Hour)
	if !errors.Is(err, ErrNewerSchema) || errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "lapsed") {
		t.Fatalf("RenewLock after a newer migration: %v, want ErrNewerSchema", err)
	}
	if h, err := a.LockHolder(ctx); err != nil || h == nil || !h.ExpiresAt.Equal(before.ExpiresAt) {
		t.Fatalf("the lease after the refusal: %+v, %v; want it as it was (%s)", h, err, before.ExpiresAt)
	}
	if _, err := b.SQL().ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaLatest())); err != nil {
		t.Fatal(err)
	}
	if err := a.RenewLock(ctx, lockLeaseA, time.Hour); err != nil {
		t.Fatalf("RenewLock at this binary's schema: %v", err)
	}
}
