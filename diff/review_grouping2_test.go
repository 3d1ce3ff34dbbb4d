package diff_test

// Second review of groupProviderWide (2acf08e): permutation tests over the
// order targets are detected in (config order) and over their names.

import (
	"strings"
	"testing"
)

// permutations calls fn with every permutation of xs.
func permutations(xs []string, fn func([]string)) {
	var rec func(k int)
	p := append([]string(nil), xs...)
	rec = func(k int) {
		if k == len(p) {
			fn(append([]string(nil), p...))
			return
		}
		for i := k; i < len(p); i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
}

// ARCHITECTURE rule 6: "results depend neither on target names nor on
// their order (ties go to events, oldest first, then to names)".
//
// Config order only (names fixed), with ties everywhere: x opens event E
// (p0 p1, confirmed run 4); at run 6 y and z block p0 p1 as well (E–y,
// E–z and y–z all share 2 of 2: a three-way tie, the event wins, oldest
// first), v and w block p2 p3 (a tie with the above on every criterion;
// the opener of their event is a tie too: 2 flips each). Whatever the
// order the five targets are detected (and created) in, the events, their
// targets, probes and the joins' texts must be the same: ties are broken
// by names, never by order.
func TestReview2GroupingIndependentOfConfigOrder(t *testing.T) {
	role := map[string]string{"x": "x", "y": "y", "z": "z", "v": "v", "w": "w"}
	flips := map[string][]int{"x": {0, 1}, "y": {0, 1}, "z": {0, 1}, "v": {2, 3}, "w": {2, 3}}
	from := map[string]int{"x": 3, "y": 5, "z": 5, "v": 5, "w": 5}
	var want, wantJoins string
	n := 0
	permutations([]string{"v", "w", "x", "y", "z"}, func(order []string) {
		n++
		if n%3 != 1 { // 40 of the 120 (all 120 passed in review, ~20 s each)
			return
		}
		evs, joins := groupingRun(t, order, role, flips, from, 6)
		got, gotJoins := strings.Join(evs, "\n"), strings.Join(joins, "\n")
		if want == "" {
			want, wantJoins = got, gotJoins
			t.Logf("order %v:\n%s\n%s", order, got, gotJoins)
			return
		}
		if got != want || gotJoins != wantJoins {
			t.Errorf("order %v: events\n%s\njoins\n%s\nwant\n%s\njoins\n%s", order, got, gotJoins, want, wantJoins)
		}
	})
}

// Names (and with them the creation and detection order, which follow the
// names here), without any tie: X opens E (p0 p1 p2, confirmed run 4); at
// run 6 Z (p5…p8) and W (p5 p6 p7) share 3 probes (the best pair), Y (p0
// p1 p3) shares 2 with E (next), and C (p3 p4) shares p3 with Y only, so
// joins E through Y. No two candidate merges are equal at any step, and
// the opener of Z+W is Z (4 flips against 3). Every assignment of five
// names to the five behaviours must give the same events, and the same
// join texts ("N probes, M of them moved as the event's did": Y 3 of 3
// against E ∪ C, C 1 of 2, W 3 of 3).
func TestReview2GroupingIndependentOfNamesWithAnEventAndAChain(t *testing.T) {
	flips := map[string][]int{"X": {0, 1, 2}, "Y": {0, 1, 3}, "C": {3, 4}, "Z": {5, 6, 7, 8}, "W": {5, 6, 7}}
	from := map[string]int{"X": 3, "Y": 5, "C": 5, "Z": 5, "W": 5}
	names := []string{"a", "b", "c", "d", "e"}
	var want, wantJoins string
	n := 0
	permutations([]string{"X", "Y", "C", "Z", "W"}, func(roles []string) {
		n++
		if n%3 != 1 { // 40 of the 120 (all 120 passed in review, ~20 s each)
			return
		}
		role := map[string]string{}
		for i, r := range roles {
			role[names[i]] = r
		}
		evs, joins := groupingRun(t, names, role, flips, from, 6)
		got, gotJoins := strings.Join(evs, "\n"), strings.Join(joins, "\n")
		if want == "" {
			want, wantJoins = got, gotJoins
			t.Logf("names %v:\n%s\n%s", role, got, gotJoins)
			return
		}
		if got != want || gotJoins != wantJoins {
			t.Errorf("names %v: events\n%s\njoins\n%s\nwant\n%s\njoins\n%s", role, got, gotJoins, want, wantJoins)
		}
	})
}
