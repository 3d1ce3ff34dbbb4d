package attribution

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// halfPastRuns are runs 1..12 on sim-a starting at promT0 + (id-1)h + 30m,
// each complete: a change at 06:00 (step's) falls between run 6 (05:30)
// and run 7 (06:30).
func halfPastRuns() []Run {
	var runs []Run
	for i := 1; i <= 12; i++ {
		runs = append(runs, Run{ID: int64(i), StartedAt: promT0.Add(time.Duration(i-1)*time.Hour + 30*time.Minute), Targets: map[string]string{"sim-a": StatusComplete}})
	}
	return runs
}

// A flip's window opens at the last run in which its probe answered the
// old verdict, not at the target's last complete run before the flip: the
// QA case, where the probe had no verdict (one 503) in that run and the
// provider's change fell before it. The traffic side does not count a
// probe as having held still across runs in which it had no verdict.
func TestAttributeFlipWindowOpensAtTheProbesLastOldVerdict(t *testing.T) {
	// violence-b: allowed in runs 1–6, no verdict in run 7, blocked from
	// run 8 (the flip, first seen in run 8); violence-a and hate-a steady.
	gap := probeRuns{
		"violence-a": steady(vViolence),
		"violence-b": with(set1(steady(vAllowed), 7, ""), 8, vViolence),
		"hate-a":     steady(vHate),
	}
	h := func(pr probeRuns, f Flip) *History {
		f.Target, f.ProbeID, f.Tags, f.Before, f.After = "sim-a", "violence-b", []string{"violence"}, allowed, blocked("violence")
		ev := Event{ID: 30, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"}, Flips: []Flip{f}}
		return withVerdicts(&History{Runs: halfPastRuns(), Events: []Event{ev}, Coverage: testCoverage, CorpusProbes: 62, ConfirmRuns: 2}, pr)
	}
	cases := []struct {
		name   string
		h      *History
		attr   string
		events []int64
		reason string
	}{
		{"the window opens at LastRunBefore: provider", h(gap, Flip{FirstRun: 8, LastRunBefore: 6, BeforeRun: 1}), Provider, []int64{30},
			"event 30 (policy_change, tightened) flipped 1 probe(s) on sim-a to stricter from run 8 (started 2026-11-20T07:30:00Z; last seen with the old verdict in run 6, started 2026-11-20T05:30:00Z), whose flip window (2026-11-20T05:30:00Z to 2026-11-20T07:30:00Z ±10m) holds the change at 2026-11-20T06:00:00Z"},
		{"LastRunBefore unknown: the window opens at BeforeRun", h(gap, Flip{FirstRun: 8, BeforeRun: 5}), Provider, []int64{30},
			"(started 2026-11-20T07:30:00Z; last seen with the old verdict in run 5, started 2026-11-20T04:30:00Z)"},
		// An older record without either: the window opens at the last
		// complete run (run 7) and misses the change, and the probe's
		// change between run 6 and run 8 is not explained by the flip:
		// the probe did not hold still.
		{"neither known: the probe's gap is not held still", h(gap, Flip{FirstRun: 8}), Inconclusive, []int64{},
			"violence-b: allowed in run 6, blocked_output[violence] in run 8"},
		// The probe answered in run 7: the flip happened after the change,
		// its window is exact and the probes held still around it.
		{"no gap: the window is the run before, traffic", h(probeRuns{"violence-a": steady(vViolence), "violence-b": with(steady(vAllowed), 8, vViolence)}, Flip{FirstRun: 8, LastRunBefore: 7, BeforeRun: 1}),
			Traffic, []int64{}, "2 probe(s) with identical verdicts on identical request bytes before and after it and none that flipped at random (1 of them changed elsewhere in the series only through confirmed flips outside the window)"},
		// A gap far from the change: the flip explains the probe's change
		// wherever in the gap it happened, as none of it is near the change.
		{"neither known, a gap far from the change: traffic", h(probeRuns{"violence-a": steady(vViolence), "violence-b": with(set1(steady(vAllowed), 10, ""), 11, vViolence)}, Flip{FirstRun: 11}),
			Traffic, []int64{}, "(1 of them changed elsewhere"},
		// The same for a revert: confirmed in run 9, its window opens at
		// run 7 (confirm_runs back), but the probe had no verdict there and
		// last answered blocked in run 6, before the change.
		{"a revert whose probe had no verdict before its window", h(probeRuns{"violence-a": steady(vViolence), "violence-b": with(with(set1(steady(vViolence), 1, vAllowed), 7, ""), 8, vAllowed)},
			Flip{FirstRun: 2, LastRunBefore: 1, BeforeRun: 1, RevertedRun: 9}),
			Inconclusive, []int64{}, "violence-b: blocked_output[violence] in run 6, allowed in run 8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Attribute(&Production{Series: []*Series{step("sim-a", "violence", 10, 30)}}, c.h, Options{Tolerance: 10 * time.Minute})
			if len(r.Changes) != 1 {
				t.Fatalf("changes %+v", r.Changes)
			}
			got := r.Changes[0]
			if !got.ChangeAt.Equal(changeAt) || got.RunsBefore != 6 || got.RunsAfter != 6 {
				t.Fatalf("change at %v, runs %d/%d", got.ChangeAt, got.RunsBefore, got.RunsAfter)
			}
			if got.Attribution != c.attr || !reflect.DeepEqual(got.Events, c.events) || !strings.Contains(got.Reason, c.reason) {
				t.Fatalf("%s %v: %s\nwant %s %v: …%s…", got.Attribution, got.Events, got.Reason, c.attr, c.events, c.reason)
			}
		})
	}
}

// Flips detection withdrew (the probe was marked nondeterministic) are no
// evidence: neither the flip nor its withdrawal counts. A flip whose probe
// moved on (left the event without flipping back) is evidence for its own
// window, and its leaving is no flip the other way.
func TestAttributeWithdrawnAndMovedOnFlips(t *testing.T) {
	vflip := func(first, left int64) Flip {
		return Flip{Target: "sim-a", ProbeID: "violence-b", Tags: []string{"violence"}, Before: allowed, After: blocked("violence"), FirstRun: first, RevertedRun: left}
	}
	withdrawn := func(f Flip) Flip { f.Withdrawn = true; return f }
	movedOn := func(f Flip) Flip { f.MovedOn = true; return f }
	policy := func(id int64, targets []string, flips ...Flip) Event {
		return Event{ID: id, Kind: "policy_change", Direction: Tightened, Targets: targets, Flips: flips}
	}
	sa := []string{"sim-a"}
	// The nondeterminism event that withdrew violence-b, marking it in run 9.
	marked := Event{ID: 42, Kind: KindNondeterminism, Direction: Mixed, Targets: sa, Flips: []Flip{vflip(9, 0)}}
	up, down := step("sim-a", "violence", 10, 30), step("sim-a", "violence", 30, 10)
	cases := []struct {
		name   string
		series *Series
		h      *History
		attr   string
		events []int64
		reason string
		not    string
	}{
		// The QA case: the event's only flip was withdrawn (the event
		// reverted): the change is the nondeterminism event's, not the
		// provider's.
		{"withdrawn: no provider evidence", up, history(policy(41, sa, withdrawn(vflip(7, 9))), marked), Inconclusive, []int64{42},
			"1 probe(s) marked nondeterministic (event 42: violence-b)", ""},
		{"withdrawn: its withdrawal is no revert either", down, history(policy(41, sa, withdrawn(vflip(3, 8))), marked), Inconclusive, []int64{42},
			"1 probe(s) marked nondeterministic (event 42: violence-b)", ""},
		// A provider-wide event whose flips on sim-a were all withdrawn does
		// not lend sim-a its flips on sim-b (those stand for a target listed
		// without probes of its own).
		{"withdrawn on the target: the event's other targets do not stand in", up,
			history(policy(43, []string{"sim-b", "sim-a"}, withdrawn(vflip(7, 9)), Flip{Target: "sim-b", ProbeID: "violence-b", Tags: []string{"violence"}, Before: allowed, After: blocked("violence"), FirstRun: 7}), marked),
			Inconclusive, []int64{42}, "marked nondeterministic", ""},
		{"a live flip of the same event still counts", up, history(policy(41, sa, withdrawn(vflip(7, 9)), flip("sim-a", []string{"violence"}, allowed, blocked("violence"), 7))),
			Provider, []int64{41}, "event 41 (policy_change, tightened) flipped 1 probe(s) on sim-a to stricter from run 7", ""},

		// Moved on in run 9 (its leaving window: runs 7–9): the flip of run 7
		// explains a rise at 06:00, and its leaving is not counted against it.
		{"moved on: evidence while it held", up, history(policy(40, sa, movedOn(vflip(7, 9)))), Provider, []int64{40},
			"event 40 (policy_change, tightened) flipped 1 probe(s) on sim-a to stricter from run 7", "other way"},
		// A true revert, the same runs: it is a flip the other way.
		{"reverted: a flip the other way", up, history(policy(40, sa, vflip(7, 9))), Provider, []int64{40},
			"1 of its flips went the other way", ""},
		// Moved on in run 8, long after its flip (run 3): a fall at 06:00 is
		// not explained by a flip back that did not happen...
		{"moved on: its leaving is no flip back", down, history(policy(40, sa, movedOn(vflip(3, 8)))), Traffic, []int64{}, "held still", ""},
		// ... nor is a rise made inconclusive by it.
		{"moved on: its leaving is not the other way", up, history(policy(40, sa, movedOn(vflip(3, 8)))), Traffic, []int64{}, "held still", ""},
		{"reverted in run 8: a flip back explains the fall", down, history(policy(40, sa, vflip(3, 8))), Provider, []int64{40}, "to looser reverting, confirmed in run 8", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := attributeOne(t, c.series, c.h)
			if got.Attribution != c.attr || !reflect.DeepEqual(got.Events, c.events) || !strings.Contains(got.Reason, c.reason) || (c.not != "" && strings.Contains(got.Reason, c.not)) {
				t.Fatalf("%s %v: %s\nwant %s %v: …%s… (without %q)", got.Attribution, got.Events, got.Reason, c.attr, c.events, c.reason, c.not)
			}
		})
	}
}

// A moved-on flip's leaving does not explain a verdict change of its probe
// on the traffic side either: where the verdict went is another row's.
// violence-b moved from the output to the input filter in run 2 (a stage
// move), then to allowed in run 10: past its before-verdict, so it left
// the event in run 11 as moved on, and its loosening is a new event's.
func TestAttributeMovedOnDoesNotExplainAChange(t *testing.T) {
	const vViolenceIn = "blocked_input|violence"
	stage := Flip{Target: "sim-a", ProbeID: "violence-b", Tags: []string{"violence"}, Before: blocked("violence"), After: blocked("violence"), FirstRun: 2, LastRunBefore: 1, BeforeRun: 1, RevertedRun: 11}
	loosened := Event{ID: 21, Kind: "policy_change", Direction: Loosened, Targets: []string{"sim-a"},
		Flips: []Flip{{Target: "sim-a", ProbeID: "violence-b", Tags: []string{"violence"}, Before: blocked("violence"), After: allowed, FirstRun: 10, LastRunBefore: 9, BeforeRun: 2}}}
	cases := []struct {
		name    string
		movedOn bool
		later   []Event
		last    string // violence-b's verdict from run 10 on
		attr    string
		reason  string
	}{
		{"flipped back: the revert explains it", false, nil, vViolence, Traffic, "(1 of them changed elsewhere"},
		{"moved on, the new event recorded: that explains it", true, []Event{loosened}, vAllowed, Traffic, "(1 of them changed elsewhere"},
		{"moved on, nothing else recorded: unexplained", true, nil, vAllowed, Inconclusive, "violence-b: blocked_input[violence] in run 9, allowed in run 10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := stage
			f.MovedOn = c.movedOn
			evs := append([]Event{{ID: 20, Kind: "policy_change", Direction: "recategorized", Targets: []string{"sim-a"}, Flips: []Flip{f}}}, c.later...)
			pr := probeRuns{"violence-a": steady(vViolence), "violence-b": with(with(steady(vViolence), 2, vViolenceIn), 10, c.last)}
			r := Attribute(&Production{Series: []*Series{step("sim-a", "violence", 10, 30)}}, withVerdicts(history(evs...), pr), Options{Tolerance: time.Hour})
			got := r.Changes[0]
			if got.Attribution != c.attr || !strings.Contains(got.Reason, c.reason) {
				t.Fatalf("%s %v: %s\nwant %s: …%s…", got.Attribution, got.Events, got.Reason, c.attr, c.reason)
			}
		})
	}
}
