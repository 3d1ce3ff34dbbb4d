package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/storage"
)

// A holder paused past its lease's expiry, during which a newer driftprobe
// migrated the database (nothing refuses that once the lease has lapsed),
// stops at its next renewal instead of extending the lease and writing on
// into a schema it does not know: its run context is cancelled with a
// cause matching storage.ErrNewerSchema, and the database's schema
// version is left as the newer driftprobe set it.
func TestHoldLeaseStopsOnANewerSchema(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "d.db")
	clock, advance := pausableClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	a, err := storage.Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.SetClock(clock)
	held, release, logs := holdAsA(t, a)
	// A is paused past its lease; a newer driftprobe migrates meanwhile.
	advance(10 * time.Second)
	newer := storage.SchemaLatest() + 1
	if _, err := a.LeaseSQL().ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", newer)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		release()
		t.Fatal("the run was not stopped when its renewal found a newer schema")
	}
	cause := context.Cause(held)
	if !errors.Is(cause, storage.ErrNewerSchema) || leaseStop(held) == nil {
		t.Fatalf("cause %v, want the newer schema", cause)
	}
	if !strings.Contains(logs.String(), "database migrated by a newer driftprobe: stopping") {
		t.Errorf("log: %s", logs.String())
	}
	if err := release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if v, err := a.SchemaVersion(ctx); err != nil || v != newer {
		t.Fatalf("schema %d (%v), want %d left as the newer driftprobe set it", v, err, newer)
	}
}

// An extension (ExtendLease, before VACUUM) that finds the database
// migrated by a newer driftprobe stops the holder as a renewal does: held
// is cancelled with the newer schema as its cause, not left running for
// whatever the holder writes next.
func TestExtendLeaseStopsOnANewerSchema(t *testing.T) {
	ctx := context.Background()
	a, err := storage.Open(ctx, filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	held, release, _ := holdAsA(t, a)
	defer release()
	if _, err := a.LeaseSQL().ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", storage.SchemaLatest()+1)); err != nil {
		t.Fatal(err)
	}
	if err := ExtendLease(held, time.Hour); !errors.Is(err, storage.ErrNewerSchema) {
		t.Fatalf("ExtendLease on a newer schema: %v, want ErrNewerSchema", err)
	}
	if cause := context.Cause(held); !errors.Is(cause, storage.ErrNewerSchema) || leaseStop(held) == nil {
		t.Fatalf("held after the refused extension: cause %v, want the newer schema", cause)
	}
}
