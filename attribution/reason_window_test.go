package attribution

import (
	"strings"
	"testing"
	"time"
)

// A provider attribution's reason says what matched: the flip window
// (from the run the probe last answered its old verdict to the run that
// first saw the new one), widened by the tolerance, holds the change time.
// It does not say the flip's run is within the tolerance of the change:
// here run 8 started 1h30m after the change, and the tolerance is 10m.
func TestProviderReasonDoesNotClaimTheRunIsWithinTheTolerance(t *testing.T) {
	pr := probeRuns{
		"violence-a": steady(vViolence),
		"violence-b": with(set1(steady(vAllowed), 7, ""), 8, vViolence),
		"hate-a":     steady(vHate),
	}
	f := Flip{Target: "sim-a", ProbeID: "violence-b", Tags: []string{"violence"}, Before: allowed, After: blocked("violence"), FirstRun: 8, LastRunBefore: 6, BeforeRun: 1}
	ev := Event{ID: 30, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"}, Flips: []Flip{f}}
	h := withVerdicts(&History{Runs: halfPastRuns(), Events: []Event{ev}, Coverage: testCoverage, CorpusProbes: 62, ConfirmRuns: 2}, pr)
	r := Attribute(&Production{Series: []*Series{step("sim-a", "violence", 10, 30)}}, h, Options{Tolerance: 10 * time.Minute})
	if len(r.Changes) != 1 || r.Changes[0].Attribution != Provider {
		t.Fatalf("changes %+v", r.Changes)
	}
	reason := r.Changes[0].Reason
	if strings.Contains(reason, "within 10m of the change") {
		t.Errorf("the reason says the flip is within the tolerance of the change; run 8 started 1h30m after it: %s", reason)
	}
	want := "event 30 (policy_change, tightened) flipped 1 probe(s) on sim-a to stricter from run 8 (started 2026-11-20T07:30:00Z; last seen with the old verdict in run 6, started 2026-11-20T05:30:00Z), " +
		"whose flip window (2026-11-20T05:30:00Z to 2026-11-20T07:30:00Z ±10m) holds the change at 2026-11-20T06:00:00Z: the provider changed violence on identical probe bytes"
	if !strings.HasPrefix(reason, want) {
		t.Errorf("reason\n%s\nwant it to start\n%s", reason, want)
	}
}
