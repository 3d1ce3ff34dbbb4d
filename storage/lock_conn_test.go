package storage

import (
	"context"
	"testing"
	"time"
)

// The run lease is read and written through a connection of its own: its
// operations never wait for the store's one connection, which a run's
// writer or serve's delivery worker may hold while it waits out the busy
// timeout for another process's write lock (see
// app.TestRenewalDoesNotWaitForTheStoresConnection).
func TestLeaseOperationsDoNotWaitForTheStoresConnection(t *testing.T) {
	a, _, advance := lockTwoProcesses(t)
	conn, err := a.SQL().Conn(context.Background()) // the store's connection, taken
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.AcquireLock(ctx, lockLeaseA, time.Minute); err != nil {
		t.Fatalf("AcquireLock while the store's connection is taken: %v", err)
	}
	advance(20 * time.Second)
	if err := a.RenewLock(ctx, lockLeaseA, time.Minute); err != nil {
		t.Fatalf("RenewLock while the store's connection is taken: %v", err)
	}
	if h, err := a.LockHolder(ctx); err != nil || h == nil || h.Holder != lockLeaseA.Holder || !h.ExpiresAt.Equal(a.Now().Add(time.Minute)) {
		t.Fatalf("LockHolder while the store's connection is taken: %+v %v, want A's lease renewed", h, err)
	}
	if err := a.ReleaseLock(ctx, lockLeaseA); err != nil {
		t.Fatalf("ReleaseLock while the store's connection is taken: %v", err)
	}
	if h, err := a.LockHolder(ctx); err != nil || h != nil {
		t.Fatalf("lease %+v %v after release, want none", h, err)
	}
}
