package diff_test

import (
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/storage"
)

// A probe that flips back still counts in its event's direction: its flip
// was confirmed, so the provider did change that way; the event's status
// and the probe's row say it was undone (docs/DETECTION.md). Unlike a
// probe withdrawn as nondeterministic (TestWithdrawnProbeLeavesDirection),
// it never was noise, and a later join recomputes the direction over it.
func TestRevertedProbeKeepsDirection(t *testing.T) {
	s := newSynth(t)
	steady := func(p, q, r string) []*storage.Observation {
		return []*storage.Observation{obsFP("p", sha1, 0, p, "fp"), obsFP("q", sha2, 0, q, "fp"), obsFP("r", sha3, 0, r, "fp")}
	}
	for range 2 { // baselines: p allowed, q blocked, r allowed
		s.run(storage.TargetComplete, 0, false, steady("allowed|", "blocked_output|violence", "allowed|")...)
	}
	for range 2 { // runs 3-4: p tightens, q loosens: one mixed event
		s.run(storage.TargetComplete, 0, false, steady("blocked_output|hate", "allowed|", "allowed|")...)
	}
	if evs := s.events(); len(evs) != 1 || evs[0].Direction != diff.Mixed {
		t.Fatalf("events %+v: want one mixed event", evs)
	}
	// Run 5: q flips back (blocked again); run 6: the same, and r starts
	// tightening; run 7: r confirmed, joining the event.
	s.run(storage.TargetComplete, 0, false, steady("blocked_output|hate", "blocked_output|violence", "allowed|")...)
	for range 2 {
		s.run(storage.TargetComplete, 0, false, steady("blocked_output|hate", "blocked_output|violence", "blocked_output|hate")...)
	}
	evs := s.events()
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	e := evs[0]
	q := findProbe(e, "q")
	if q == nil || !q.Reverted || q.Withdrawn || findProbe(e, "r") == nil {
		t.Fatalf("event probes %+v: want q reverted (not withdrawn) and r joined", e.Probes)
	}
	if e.Status != diff.StatusOpen || e.Direction != diff.Mixed {
		t.Errorf("event after q flipped back and r joined: %s %s, want open and mixed (q's confirmed loosening still counts)", e.Status, e.Direction)
	}
}
