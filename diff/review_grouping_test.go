package diff_test

// Review of the provider-wide grouping (groupProviderWide) and the
// establishing rule of f535985. Each test names the sentence of docs/DETECTION.md
// ("How it decides") or docs/ARCHITECTURE.md it checks.

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
)

// groupingRun drives newMulti: targets are created and detected in the
// order given in names (the order Input.Targets has), role[name] says which
// behaviour each one has, and flips[role] lists the probes (p0…p8) that
// role blocks from run from[role] on (allowed before). It returns the
// events, each summarised with roles instead of names (order-free), and the
// target_joined details with names replaced by roles.
func groupingRun(t *testing.T, names []string, role map[string]string, flips map[string][]int, from map[string]int, runs int) (events []string, joins []string) {
	t.Helper()
	m := newMulti(t, names...)
	for run := 1; run <= runs; run++ {
		m.round(func(n string, i int) (string, string) {
			r := role[n]
			if run >= from[r] && slices.Contains(flips[r], i) {
				return "blocked_output|violence", "m|fp"
			}
			return "allowed|", "m|fp"
		})
	}
	toRoles := func(s string) string {
		// Longest names first, so that no name is replaced inside another.
		ns := append([]string(nil), names...)
		sort.Slice(ns, func(i, j int) bool { return len(ns[i]) > len(ns[j]) })
		for _, n := range ns {
			s = strings.ReplaceAll(s, "target "+n+" ", "target <"+role[n]+"> ")
			s = strings.ReplaceAll(s, " on "+n+":", " on <"+role[n]+">:")
		}
		return s
	}
	for _, e := range m.events() {
		var rs []string
		for _, n := range e.Targets {
			rs = append(rs, role[n])
		}
		sort.Strings(rs)
		var ps []string
		for _, p := range e.Probes {
			ps = append(ps, fmt.Sprintf("%s:%s", role[p.Target], p.ProbeID))
		}
		sort.Strings(ps)
		events = append(events, fmt.Sprintf("%s/%s/%s opener=%s targets=%v probes=%v", e.Kind, e.Direction, e.Status, role[e.Target], rs, ps))
		for _, u := range e.Updates {
			if u.Change == diff.ChangeTargetJoined {
				joins = append(joins, toRoles(u.Detail))
			}
		}
	}
	sort.Strings(events)
	sort.Strings(joins)
	return events, joins
}

// (b) Order independence, checked (this test passes): four targets of one
// provider, every assignment of four names to four behaviours (24), each
// detected in name order. X opens an event (p0 p1 p2, confirmed run 4); at
// run 6 Y (p0 p1 p3) matches X's event, Z (p3…p7) and W (p4 p5 p6 p8)
// match each other and nothing else. Whatever the names: X's event gains
// Y, and Z opens one (5 flips against W's 4) that W joins. No tie is
// involved, so none may be broken by name.
func TestReviewGroupingIndependentOfNames(t *testing.T) {
	flips := map[string][]int{"X": {0, 1, 2}, "Y": {0, 1, 3}, "Z": {3, 4, 5, 6, 7}, "W": {4, 5, 6, 8}}
	from := map[string]int{"X": 3, "Y": 5, "Z": 5, "W": 5}
	roles := []string{"X", "Y", "Z", "W"}
	names := []string{"a", "b", "c", "d"}
	var want, wantJoins string
	var perm func(k int)
	used := map[string]bool{}
	assign := map[string]string{}
	perm = func(k int) {
		if k == len(names) {
			evs, joins := groupingRun(t, names, assign, flips, from, 6)
			got, gotJoins := strings.Join(evs, "\n"), strings.Join(joins, "\n")
			if want == "" {
				want, wantJoins = got, gotJoins
				t.Logf("events:\n%s\njoins:\n%s", got, gotJoins)
				return
			}
			if got != want || gotJoins != wantJoins {
				t.Errorf("names %v: events\n%s\njoins\n%s\nwant\n%s\njoins\n%s", assign, got, gotJoins, want, wantJoins)
			}
			return
		}
		for _, r := range roles {
			if used[r] {
				continue
			}
			used[r] = true
			assign[names[k]] = r
			perm(k + 1)
			used[r] = false
		}
	}
	perm(0)
}

// docs/DETECTION.md: "the groups with the most such probes in common merge first ...
// (only a tie between equally good merges is broken by name, and the opener
// of a new event among equals)"; ARCHITECTURE rule 6: "results do not
// depend on target names (ties aside)".
//
// Three targets with the same names, the same behaviour, only detected in
// another order (Input.Targets: config order in `run`, name order when an
// undetected run is detected later, storage.RunTargets ORDER BY name).
// a blocks p0 p1; b blocks p0 p2 p3 p4; c blocks p1 p5 p6 p7. a+b and a+c
// are equally good merges (1 shared probe, half of a's 2), and b+c share
// nothing; once a merged with one of them, the other shares 1 of its 4
// with the pair: less than half. A tie broken by name would always pick
// a+b (b sorts before c). groupProviderWide compares only the smaller name
// of each pair ("a" for both), then keeps the pair found first, i.e. the
// one earlier in Input.Targets: the events follow the detection order.
func TestReviewGroupingTieFollowsInputOrder(t *testing.T) {
	role := map[string]string{"a": "a", "b": "b", "c": "c"}
	flips := map[string][]int{"a": {0, 1}, "b": {0, 2, 3, 4}, "c": {1, 5, 6, 7}}
	from := map[string]int{"a": 3, "b": 3, "c": 3}
	abc, _ := groupingRun(t, []string{"a", "b", "c"}, role, flips, from, 4)
	acb, _ := groupingRun(t, []string{"a", "c", "b"}, role, flips, from, 4)
	t.Logf("detected a, b, c:\n%s", strings.Join(abc, "\n"))
	t.Logf("detected a, c, b:\n%s", strings.Join(acb, "\n"))
	if strings.Join(abc, "\n") != strings.Join(acb, "\n") {
		t.Errorf("the same targets (same names) changing the same way form other events when detected in another order")
	}
}

// docs/DETECTION.md: a target joins "as one provider-wide change" and its update says
// it "changed the same way (N probes, M of them moved as the event's
// did)".
//
// A blocks p0…p3 (4 flips: the opener), B blocks p2 p3 p4 (2 shared with
// A), C blocks p4 p5 (1 shared with B, none with A). The group is {A, B, C}
// (C through B, as joins chained before). The joiners are recorded in name
// order and each one's M is counted against the event as recorded so far:
// when C's name sorts before B's, C joins an event holding only A's flips
// and its update reads "2 probes, 0 of them moved as the event's did" — a
// "changed the same way" with nothing the same, and a different text than
// with B named first (the update text, sent as the issue comment, depends
// on the names).
func TestReviewChainedJoinCountsNothingTheSame(t *testing.T) {
	flips := map[string][]int{"A": {0, 1, 2, 3}, "B": {2, 3, 4}, "C": {4, 5}}
	from := map[string]int{"A": 3, "B": 3, "C": 3}
	same := regexp.MustCompile(`\((\d+) probes, (\d+) of them moved as the event's did\)`)
	var texts []string
	for _, names := range [][]string{{"a", "b-bridge", "c-chain"}, {"a", "z-bridge", "c-chain"}} {
		role := map[string]string{names[0]: "A", names[1]: "B", names[2]: "C"}
		evs, joins := groupingRun(t, names, role, flips, from, 4)
		t.Logf("names %v:\n%s\n%s", names, strings.Join(evs, "\n"), strings.Join(joins, "\n"))
		if len(evs) != 1 || len(joins) != 2 {
			t.Fatalf("names %v: want one event that B and C join, got %v / %v", names, evs, joins)
		}
		for _, j := range joins {
			if m := same.FindStringSubmatch(j); m == nil || m[2] == "0" {
				t.Errorf("names %v: join %q says the target changed the same way with no probe moved as the event's did", names, j)
			}
		}
		texts = append(texts, strings.Join(joins, "\n"))
	}
	if texts[0] != texts[1] {
		t.Errorf("the joins' updates depend on the names:\n%s\nvs\n%s", texts[0], texts[1])
	}
}

// Pre-existing (the old providerWide read the same rows), kept by
// groupProviderWide: docs/DETECTION.md "Candidates that go back ...: the probe is
// marked nondeterministic ...; its flips are never policy evidence — flips
// it already contributed to an open policy or model event are withdrawn
// from it".
//
// Target a tightens p1 (run 3, confirmed 4: event E), p2 (5–6) and p3
// (7–8), which keep E in the window; its p0 tightened with p1 but then went
// back and forth (runs 5–8) and is marked nondeterministic at run 8: its
// row is withdrawn from E. Target b tightens p0 and p5 (run 8, confirmed
// 9). The only probe b shares with E is p0 — a's withdrawn, noisy one — yet
// it counts as "the same probe changed the same way" (eventMoves reads
// every row, withdrawn ones too), so b joins E as a provider-wide change on
// the strength of evidence E itself retracted.
func TestReviewWithdrawnRowGroupsAProviderWideJoin(t *testing.T) {
	m := newMulti(t, "a", "b")
	// a's p0 from run 3: blocked, blocked (confirmed), then allowed,
	// blocked, allowed, blocked (two candidates going back: marked at 8).
	aP0 := map[int]bool{3: true, 4: true, 5: false, 6: true, 7: false, 8: true, 9: true}
	aFrom := map[int]int{1: 3, 2: 5, 3: 7}
	bl := "blocked_output|violence"
	for run := 1; run <= 9; run++ {
		m.round(func(n string, i int) (string, string) {
			switch {
			case n == "a" && i == 0 && aP0[run]:
				return bl, "m|fp"
			case n == "a" && aFrom[i] > 0 && run >= aFrom[i]:
				return bl, "m|fp"
			case n == "b" && (i == 0 || i == 5) && run >= 8:
				return bl, "m|fp"
			}
			return "allowed|", "m|fp"
		})
	}
	var withdrawn bool
	for _, e := range m.events() {
		t.Logf("event %d %s %s %s targets %v", e.ID, e.Kind, e.Direction, e.Status, e.Targets)
		for _, u := range e.Updates {
			t.Logf("  run %d %s: %s", u.RunID, u.Change, u.Detail)
			if strings.Contains(u.Detail, "withdrawn") && strings.Contains(u.Detail, "p0") {
				withdrawn = true
			}
		}
	}
	if !withdrawn {
		t.Fatalf("setup: a's p0 was not withdrawn from a's event")
	}
	for _, e := range m.events() {
		if e.Kind == diff.KindPolicy && slices.Contains(e.Targets, "a") && slices.Contains(e.Targets, "b") {
			t.Errorf("event %d: b joined a's event though the only probe they share (p0) was withdrawn from it as nondeterministic", e.ID)
		}
	}
}
