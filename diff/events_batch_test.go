package diff_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/storage"
)

// listEventsConfig is a system with events of every kind, in groups whose
// scripts start at different runs (so groups open separate events):
// provider-wide policy changes on two targets that revert and come back,
// a staged change whose probes move on, model changes by fingerprint and
// by model id, a classifier's score shift, and noise (nondeterminism,
// blips within a class) under a policy change.
func listEventsConfig(groups int) string {
	var b strings.Builder
	b.WriteString("confirm_runs: 2\ntargets:\n")
	cats := []string{"violence", "hate", "illicit", "weapons", "sexual", "harassment", "self_harm", "jailbreak"}
	for g := 0; g < groups; g++ {
		r := func(n int) int { return n + g%3 }
		c := func(i int) string { return cats[(i+g)%len(cats)] }
		for _, side := range []string{"a", "b"} {
			fmt.Fprintf(&b, "  - {name: pw%d%s, provider: sim, model: m, sim: {policies: [{from_run: %d, thresholds: {%s: 0.3}}, {from_run: %d, thresholds: {%s: 0.5}}, {from_run: %d, thresholds: {%s: 0.3}}, {from_run: %d, thresholds: {%s: 0.5, %s: 0.3}}]}}\n",
				g, side, r(3), c(0), r(6), c(0), r(8), c(1), r(11), c(1), c(2))
		}
		fmt.Fprintf(&b, "  - {name: st%d, provider: sim, model: m, sim: {policies: [{from_run: 1, fingerprint: fp-a}, {from_run: %d, thresholds: {%s: 0.3}}, {from_run: %d, thresholds: {%s: 0.04}}, {from_run: %d, thresholds: {%s: 0.5}}]}}\n",
			g, r(3), c(3), r(9), c(3), r(12), c(3))
		fmt.Fprintf(&b, "  - {name: mc%d, provider: sim, model: m, sim: {policies: [{from_run: 1, fingerprint: fp-a}, {from_run: %d, fingerprint: fp-b, thresholds: {%s: 0.3}}, {from_run: %d, model: m-2026-01-01, thresholds: {privacy: 0.4}}]}}\n",
			g, r(4), c(4), r(9))
		fmt.Fprintf(&b, "  - {name: sc%d, provider: sim, model: m, sim: {policies: [{from_run: %d, score_shift: {privacy: -0.2}}, {from_run: %d, score_shift: {privacy: 0}}]}}\n",
			g, r(4), r(10))
		fmt.Fprintf(&b, "  - {name: nz%d, provider: sim, model: m, sim: {noise: 0.15, seed: %d, policies: [{from_run: %d, thresholds: {%s: 0.3, %s: 0.3}}, {from_run: %d, thresholds: {%s: 0.5}}]}}\n",
			g, g+1, r(5), c(5), c(6), r(10), c(5))
	}
	return b.String()
}

func listEventsEnv(t testing.TB, groups, runs int) *testenv.Env {
	e := testenv.New(t, listEventsConfig(groups))
	e.Runs(runs)
	return e
}

func sameEvents(t *testing.T, name string, got, want []*diff.Event, gotErr, wantErr error) {
	t.Helper()
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%s: err = %v, reference err = %v", name, gotErr, wantErr)
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) || !reflect.DeepEqual(got, want) {
		for i := range want {
			if i < len(got) && !reflect.DeepEqual(got[i], want[i]) {
				a, _ := json.MarshalIndent(got[i], "", " ")
				b, _ := json.MarshalIndent(want[i], "", " ")
				t.Fatalf("%s: event %d differs:\ngot  %s\nwant %s", name, want[i].ID, a, b)
			}
		}
		t.Fatalf("%s: %d events, reference %d", name, len(got), len(want))
	}
}

// TestListEventsMatchesPerEventReads: the batched ListEvents returns what
// reading each event's rows one query at a time returned, byte for byte,
// for every kind of filter.
func TestListEventsMatchesPerEventReads(t *testing.T) {
	groups, runs := 3, 16
	if testing.Short() {
		groups = 1
	}
	e := listEventsEnv(t, groups, runs)
	ctx := context.Background()
	all, err := diff.ListEventsPerEvent(ctx, e.Store, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// What the data covers (so the comparison means something).
	kinds, changes := map[string]int{}, map[string]int{}
	var probesN, lastBefore, offByOne, movedOn, withdrawn, reverted, multi, modelTarget int
	for _, ev := range all {
		kinds[ev.Kind]++
		if len(ev.Targets) > 1 {
			multi++
		}
		if ev.ModelTarget != "" {
			modelTarget++
		}
		for _, u := range ev.Updates {
			changes[u.Change]++
		}
		for _, p := range ev.Probes {
			probesN++
			if p.LastRunBefore != 0 {
				lastBefore++
				if p.LastRunBefore != p.FirstRun-1 {
					offByOne++
				}
			}
			if p.MovedOn {
				movedOn++
			}
			if p.Withdrawn {
				withdrawn++
			}
			if p.Reverted {
				reverted++
			}
		}
	}
	t.Logf("%d events %v, %d probes (last_run_before %d, not first_run-1 %d, moved on %d, withdrawn %d, reverted %d), multi-target %d, model target %d, updates %v",
		len(all), kinds, probesN, lastBefore, offByOne, movedOn, withdrawn, reverted, multi, modelTarget, changes)
	for _, k := range []string{diff.KindPolicy, diff.KindModel, diff.KindNondeterminism} {
		if kinds[k] == 0 {
			t.Errorf("no %s event in the data", k)
		}
	}
	if len(kinds) < 4 || multi == 0 || lastBefore == 0 || reverted == 0 || movedOn == 0 || changes[diff.ChangeProbesAdded] == 0 {
		t.Errorf("the data lacks a case (kinds %v, multi-target %d, last_run_before %d, reverted %d, moved on %d, probes added %d)",
			kinds, multi, lastBefore, reverted, movedOn, changes[diff.ChangeProbesAdded])
	}

	filters := map[string]diff.Filter{"all": {}, "no such target": {Target: "nope"}, "no such id": {IDs: []int64{1 << 40}}}
	var last int64
	for _, ev := range all {
		last = max(last, ev.LastRun)
	}
	for s := int64(0); s <= last+1; s++ {
		filters[fmt.Sprintf("since %d", s)] = diff.Filter{Since: s}
	}
	var names []string
	rows, err := e.Store.SQL().Query(`SELECT name FROM targets ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	for _, n := range names {
		filters["target "+n] = diff.Filter{Target: n}
		filters["target+since "+n] = diff.Filter{Target: n, Since: last / 2}
	}
	var ids []int64
	for i, ev := range all {
		filters[fmt.Sprintf("id %d", ev.ID)] = diff.Filter{IDs: []int64{ev.ID}}
		if i%3 == 0 {
			ids = append(ids, ev.ID)
		}
	}
	filters["ids"] = diff.Filter{IDs: append(ids, ids[0], 1<<40)}
	filters["ids+since"] = diff.Filter{IDs: ids, Since: last / 2}
	filters["ids+target+since"] = diff.Filter{IDs: ids, Target: names[0], Since: 2}
	for name, f := range filters {
		want, werr := diff.ListEventsPerEvent(ctx, e.Store, f)
		got, gerr := diff.ListEvents(ctx, e.Store, f)
		sameEvents(t, name, got, want, gerr, werr)
	}
	for _, ev := range all {
		got, err := diff.GetEvent(ctx, e.Store, ev.ID)
		sameEvents(t, fmt.Sprintf("GetEvent %d", ev.ID), []*diff.Event{got}, []*diff.Event{ev}, err, nil)
	}
	if _, err := diff.GetEvent(ctx, e.Store, 1<<40); err == nil {
		t.Error("GetEvent of a missing id: no error")
	}
}

// copyEvents adds copies-1 copies of every event (targets, probes and
// updates included; ids shifted, fingerprints suffixed) to a database:
// many events over the same observations.
func copyEvents(b *testing.B, st *storage.DB, copies int) {
	db := st.SQL()
	var maxEvent, maxUpdate int64
	db.QueryRow(`SELECT MAX(id) FROM events`).Scan(&maxEvent)
	db.QueryRow(`SELECT MAX(id) FROM event_updates`).Scan(&maxUpdate)
	cols := func(table string, shift map[string]string) (string, string) {
		rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		var names, exprs []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			names = append(names, n)
			if x, ok := shift[n]; ok {
				exprs = append(exprs, x)
			} else {
				exprs = append(exprs, n)
			}
		}
		return strings.Join(names, ", "), strings.Join(exprs, ", ")
	}
	for k := 1; k < copies; k++ {
		ev := fmt.Sprintf("event_id + %d", int64(k)*maxEvent)
		for _, c := range []struct {
			table string
			shift map[string]string
			where string
		}{
			{"events", map[string]string{"id": fmt.Sprintf("id + %d", int64(k)*maxEvent), "fingerprint": fmt.Sprintf("fingerprint || '-%d'", k)}, "id <= ?"},
			{"event_targets", map[string]string{"event_id": ev}, "event_id <= ?"},
			{"event_probes", map[string]string{"event_id": ev}, "event_id <= ?"},
			{"event_updates", map[string]string{"event_id": ev, "id": fmt.Sprintf("id + %d", int64(k)*maxUpdate)}, "event_id <= ?"},
		} {
			names, exprs := cols(c.table, c.shift)
			if _, err := db.Exec(`INSERT INTO `+c.table+` (`+names+`) SELECT `+exprs+` FROM `+c.table+` WHERE `+c.where, maxEvent); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkListEvents lists every event (Filter{}, as attribution does on
// every run) of a database whose events were copied 16, 64 and 256
// times, with the batched ListEvents and the per-event reference.
func BenchmarkListEvents(b *testing.B) {
	e := listEventsEnv(b, 3, 16)
	ctx := context.Background()
	have := 1
	for _, copies := range []int{16, 64, 256} {
		// Copies of the original events (ids up to the first batch).
		e.Store.SQL().Exec(`DELETE FROM event_targets WHERE event_id > (SELECT MAX(id) FROM events) / ?`, have)
		if have > 1 {
			var base int64
			e.Store.SQL().QueryRow(`SELECT MAX(id) / ? FROM events`, have).Scan(&base)
			for _, t := range []string{"event_probes", "event_updates"} {
				e.Store.SQL().Exec(`DELETE FROM `+t+` WHERE event_id > ?`, base)
			}
			e.Store.SQL().Exec(`DELETE FROM events WHERE id > ?`, base)
		}
		copyEvents(b, e.Store, copies)
		have = copies
		evs, err := diff.ListEvents(ctx, e.Store, diff.Filter{})
		if err != nil {
			b.Fatal(err)
		}
		for _, impl := range []struct {
			name string
			list func(context.Context, *storage.DB, diff.Filter) ([]*diff.Event, error)
		}{{"batched", diff.ListEvents}, {"per-event", diff.ListEventsPerEvent}} {
			b.Run(fmt.Sprintf("%s/events=%d", impl.name, len(evs)), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := impl.list(ctx, e.Store, diff.Filter{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
