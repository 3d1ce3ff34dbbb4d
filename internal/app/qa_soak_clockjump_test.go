package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/app"
)

// QA soak (probe, expected to pass): after the clock steps 3 days forward
// (a suspended VM resumed, an NTP step), an "@every 1h" daemon runs once,
// not a burst of 72 catch-up runs.
func TestQASoakClockStepForwardNoCatchUpBurst(t *testing.T) {
	dir := t.TempDir()
	h, _, _ := newFaultDaemon(t, writeCfg(t, dir, `
database: %DB%
schedule: "@every 1h"
targets:
  - name: a
    provider: sim
    model: m
`), app.DaemonOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := h.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(72 * time.Hour)
	runs := 0
	for {
		select {
		case <-h.done:
			runs++
			continue
		case <-time.After(3 * time.Second):
		}
		break
	}
	if runs != 1 {
		t.Fatalf("%d runs after a 72h clock step, want 1", runs)
	}
	// The next run is an interval after the step, not at once.
	if err := h.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(59 * time.Minute)
	select {
	case <-h.done:
		t.Fatal("ran again less than an interval after the step")
	case <-time.After(2 * time.Second):
	}
}
