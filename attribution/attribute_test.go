package attribution

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// hourlyRuns returns runs 1..n starting at promT0 + (id-1)h, each probing
// sim-a and sim-b with the given status (complete unless status says).
func hourlyRuns(n int, status func(id int64, target string) string) []Run {
	var runs []Run
	for i := 1; i <= n; i++ {
		id := int64(i)
		r := Run{ID: id, StartedAt: promT0.Add(time.Duration(i-1) * time.Hour), Targets: map[string]string{}}
		for _, t := range []string{"sim-a", "sim-b"} {
			st := StatusComplete
			if status != nil {
				st = status(id, t)
			}
			if st != "" {
				r.Targets[t] = st
			}
		}
		runs = append(runs, r)
	}
	return runs
}

var testCoverage = map[string]int{"violence": 8, "hate": 5, "harassment": 7}

func history(events ...Event) *History {
	return &History{Runs: hourlyRuns(12, nil), Events: events, Coverage: testCoverage, CorpusProbes: 62, ConfirmRuns: 2}
}

// step is 12 hourly points of sim-a's category c with totals, the rate
// moving from lo to hi per mille at hour 6 (run 7's start).
func step(target, c string, lo, hi float64) *Series {
	var b []float64
	for i := 0; i < 12; i++ {
		if i < 6 {
			b = append(b, lo)
		} else {
			b = append(b, hi)
		}
	}
	s := series(b, 1000)
	s.Segment = Segment{Target: target, Category: c}
	return s
}

var changeAt = promT0.Add(6 * time.Hour)

func blocked(cats ...string) Verdict { return Verdict{Blocked: true, Categories: cats} }

var allowed = Verdict{Categories: []string{}}

func flip(target string, tags []string, before, after Verdict, first int64) Flip {
	return Flip{Target: target, ProbeID: "p-" + strings.Join(tags, "-"), Tags: tags, Before: before, After: after, FirstRun: first}
}

func attributeOne(t *testing.T, s *Series, h *History) ChangeReport {
	t.Helper()
	r := Attribute(&Production{Series: []*Series{s}}, h, Options{})
	if len(r.Changes) != 1 {
		t.Fatalf("changes: %+v (warnings %q)", r.Changes, r.Warnings)
	}
	c := r.Changes[0]
	if !c.ChangeAt.Equal(changeAt) {
		t.Fatalf("change at %v, want %v", c.ChangeAt, changeAt)
	}
	return c
}

func TestAttributeVerdicts(t *testing.T) {
	tightenViolence := Event{ID: 3, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"},
		Flips: []Flip{flip("sim-a", []string{"violence"}, allowed, blocked("violence"), 7)}}
	cases := []struct {
		name   string
		series *Series
		h      *History
		attr   string
		events []int64
		reason string
	}{
		{"provider: probes tightened in the change's run", step("sim-a", "violence", 10, 30), history(tightenViolence),
			Provider, []int64{3}, "event 3 (policy_change, tightened) flipped 1 probe(s) on sim-a to stricter from run 7 (started 2026-11-20T06:00:00Z), whose flip window (2026-11-20T05:00:00Z to 2026-11-20T06:00:00Z ±2h) holds the change at 2026-11-20T06:00:00Z"},
		{"provider: flips first seen a run later (the change fell between runs)", step("sim-a", "violence", 10, 30),
			history(Event{ID: 4, Kind: "model_change", Direction: Tightened, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"violence"}, allowed, blocked("violence"), 8)}}),
			Provider, []int64{4}, "from run 8"},
		{"provider: flips three runs later are still within the window of the last run before them, widened by the tolerance", step("sim-a", "violence", 10, 30),
			history(Event{ID: 4, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"violence"}, allowed, blocked("violence"), 10)}}),
			Provider, []int64{4}, "from run 10"},
		{"not provider: flips four runs later are outside the window", step("sim-a", "violence", 10, 30),
			history(Event{ID: 4, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"violence"}, allowed, blocked("violence"), 11)}}),
			Traffic, []int64{}, "held still"},
		{"provider: the category matches by corpus tag", step("sim-a", "violence", 10, 30),
			history(Event{ID: 5, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"violence"}, allowed, blocked(), 7)}}),
			Provider, []int64{5}, "event 5"},
		{"provider: a new category the corpus has no tag for", step("sim-a", "sexual_minors", 1, 9),
			history(Event{ID: 6, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"}, NewCategories: []string{"sexual_minors"},
				Flips: []Flip{flip("sim-a", []string{"sexual"}, allowed, blocked("sexual_minors"), 7)}}),
			Provider, []int64{6}, "the provider changed sexual_minors"},
		{"provider: a blocked probe gained the category (recategorized)", step("sim-a", "harassment", 10, 30),
			history(Event{ID: 7, Kind: "policy_change", Direction: "recategorized", Targets: []string{"sim-a"},
				Flips: []Flip{flip("sim-a", []string{"violence"}, blocked("violence"), blocked("harassment", "violence"), 7)}}),
			Provider, []int64{7}, "event 7"},
		{"provider: a provider-wide event listing the target (its flips on another target)", step("sim-a", "violence", 10, 30),
			history(Event{ID: 8, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-b", "sim-a"},
				Flips: []Flip{flip("sim-b", []string{"violence"}, allowed, blocked("violence"), 7)}}),
			Provider, []int64{8}, "event 8"},
		// The revert was confirmed in run 11; with confirm_runs 2 the probe may
		// have flipped back as early as the run after run 9, so the window
		// opens at run 9's start minus the tolerance: 06:00.
		{"provider: a revert is a flip the other way", step("sim-a", "violence", 30, 10),
			history(Event{ID: 9, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"},
				Flips: []Flip{{Target: "sim-a", ProbeID: "v", Tags: []string{"violence"}, Before: allowed, After: blocked("violence"), FirstRun: 2, RevertedRun: 11}}}),
			Provider, []int64{9}, "to looser reverting, confirmed in run 11"},
		{"provider: score drift on identical verdicts", step("sim-a", "violence", 10, 30),
			history(Event{ID: 10, Kind: KindScoreDrift, Direction: Tightened, Targets: []string{"sim-a"},
				Flips: []Flip{flip("sim-a", []string{"violence"}, blocked("violence"), blocked("violence"), 7)}}),
			Provider, []int64{10}, "score_drift"},
		{"provider: a mixed event through its flips that went this way", step("sim-a", "violence", 10, 30),
			history(Event{ID: 11, Kind: "policy_change", Direction: Mixed, Targets: []string{"sim-a"}, Flips: []Flip{
				flip("sim-a", []string{"violence"}, allowed, blocked("violence"), 7),
				flip("sim-a", []string{"violence", "weapons"}, blocked("violence"), allowed, 7)}}),
			Provider, []int64{11}, "1 of its flips went the other way"},
		{"provider: all blocks match an event in any category", step("sim-a", "", 10, 30), history(Event{ID: 12, Kind: "policy_change", Direction: Tightened,
			Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"hate"}, allowed, blocked("hate"), 7)}}),
			Provider, []int64{12}, "the provider changed all categories"},

		{"traffic: covered, probes held still", step("sim-a", "violence", 10, 30), history(),
			Traffic, []int64{}, "the 8 corpus probe(s) tagged violence held still on sim-a: 6 complete run(s) before and 6 after the change, no event in the window: the customers' content changed"},
		{"traffic: events on another target do not count", step("sim-b", "violence", 10, 30), history(tightenViolence),
			Traffic, []int64{}, "held still on sim-b"},
		{"traffic: all blocks", step("sim-a", "", 10, 30), history(), Traffic, []int64{}, "the corpus's 62 probes held still on sim-a"},
		// A nondeterminism event is never evidence of a provider change,
		// and a probe it marks cannot show that the provider held still.
		{"inconclusive: nondeterminism is never provider evidence, nor shows the probes held still", step("sim-a", "violence", 10, 30),
			history(Event{ID: 13, Kind: KindNondeterminism, Direction: Tightened, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"violence"}, allowed, blocked("violence"), 7)}}),
			Inconclusive, []int64{13}, "the violence probes on sim-a did not hold still in the runs around the change: 1 probe(s) marked nondeterministic (event 13: p-violence)"},
		{"traffic: a nondeterminism mark after the compared runs", step("sim-a", "violence", 10, 30),
			history(Event{ID: 13, Kind: KindNondeterminism, Direction: Mixed, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"violence"}, allowed, blocked("violence"), 13)}}),
			Traffic, []int64{}, "held still"},
		{"traffic: a nondeterminism mark the probe left before the compared runs", step("sim-a", "violence", 10, 30),
			history(Event{ID: 13, Kind: KindNondeterminism, Direction: Mixed, Targets: []string{"sim-a"},
				Flips: []Flip{{Target: "sim-a", ProbeID: "v", Tags: []string{"violence"}, Before: allowed, After: blocked("violence"), FirstRun: 1, RevertedRun: 1}}}),
			Traffic, []int64{}, "held still"},
		{"traffic: a nondeterminism mark on a probe of another category", step("sim-a", "violence", 10, 30),
			history(Event{ID: 13, Kind: KindNondeterminism, Direction: Mixed, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"hate"}, allowed, blocked("hate"), 7)}}),
			Traffic, []int64{}, "held still"},
		{"inconclusive: a nondeterminism mark on any probe, for all blocks", step("sim-a", "", 10, 30),
			history(Event{ID: 13, Kind: KindNondeterminism, Direction: Mixed, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"hate"}, allowed, blocked("hate"), 3)}}),
			Inconclusive, []int64{13}, "the corpus probes on sim-a did not hold still"},

		{"inconclusive: an event moved the category the other way", step("sim-a", "violence", 10, 30),
			history(Event{ID: 14, Kind: "policy_change", Direction: Loosened, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"violence"}, blocked("violence"), allowed, 7)}}),
			Inconclusive, []int64{14}, "event 14 in the same window moved violence on sim-a the other way (14: policy_change loosened): the probes do not explain a move up"},
		{"inconclusive: an event touched the category without changing whether it blocks", step("sim-a", "violence", 10, 30),
			history(Event{ID: 15, Kind: "policy_change", Direction: "recategorized", Targets: []string{"sim-a"},
				Flips: []Flip{flip("sim-a", []string{"violence"}, blocked("violence"), blocked("violence"), 7)}}),
			Inconclusive, []int64{15}, "event 15 in the same window touched violence on sim-a without changing whether its probes block"},
		{"inconclusive: the corpus does not cover the category", step("sim-a", "sexual_minors", 1, 9), history(),
			Inconclusive, []int64{}, "the corpus covers no sexual_minors: no probe is tagged with it"},
		{"inconclusive: events in other categories only", step("sim-a", "violence", 10, 30),
			history(Event{ID: 16, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"hate"}, allowed, blocked("hate", "harassment"), 7)}}),
			Inconclusive, []int64{16}, "the violence probes held still, but the provider changed other categories on sim-a in the same window: event 16 (policy_change, tightened: harassment, hate)"},
		{"inconclusive: no complete run before the change", step("sim-a", "violence", 10, 30),
			&History{Runs: hourlyRuns(12, func(id int64, _ string) string {
				if id <= 6 {
					return ""
				}
				return StatusComplete
			}), Coverage: testCoverage, ConfirmRuns: 2},
			Inconclusive, []int64{}, "no complete run of sim-a between the series' start (2026-11-20T00:00:00Z) and the change"},
		{"inconclusive: the runs before were degraded", step("sim-a", "violence", 10, 30),
			&History{Runs: hourlyRuns(12, func(id int64, _ string) string {
				if id <= 6 {
					return "degraded"
				}
				return StatusComplete
			}), Coverage: testCoverage, ConfirmRuns: 2},
			Inconclusive, []int64{}, "the 6 run(s) of sim-a before the change within the series were degraded or aborted: they confirm nothing"},
		{"inconclusive: too few complete runs after", step("sim-a", "violence", 10, 30),
			&History{Runs: hourlyRuns(12, func(id int64, _ string) string {
				if id == 7 || id <= 5 {
					return StatusComplete
				}
				return ""
			}), Coverage: testCoverage, ConfirmRuns: 2},
			Inconclusive, []int64{}, "1 complete run(s) of sim-a after the change within the series (until 2026-11-20T12:00:00Z); a flip needs 2 (confirm_runs)"},
		{"inconclusive: the runs after were degraded", step("sim-a", "violence", 10, 30),
			&History{Runs: hourlyRuns(12, func(id int64, _ string) string {
				if id >= 7 {
					return "degraded"
				}
				return StatusComplete
			}), Coverage: testCoverage, ConfirmRuns: 2},
			Inconclusive, []int64{}, "0 complete run(s) of sim-a after the change within the series (6 degraded or aborted)"},
		{"inconclusive: all blocks without a corpus", step("sim-a", "", 10, 30), &History{Runs: hourlyRuns(12, nil), ConfirmRuns: 2},
			Inconclusive, []int64{}, "no corpus probes"},
		{"inconclusive: no runs at all", step("sim-a", "violence", 10, 30), &History{Coverage: testCoverage},
			Inconclusive, []int64{}, "no complete run of sim-a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := attributeOne(t, c.series, c.h)
			if got.Attribution != c.attr || !reflect.DeepEqual(got.Events, c.events) || !strings.Contains(got.Reason, c.reason) {
				t.Fatalf("%s %v: %s\nwant %s %v: …%s…", got.Attribution, got.Events, got.Reason, c.attr, c.events, c.reason)
			}
		})
	}
}

// Aborted runs confirm nothing, whatever their targets say.
func TestAttributeAbortedRunsDoNotCount(t *testing.T) {
	h := history()
	for i := range h.Runs {
		if h.Runs[i].ID >= 8 {
			h.Runs[i].Aborted = true
		}
	}
	c := attributeOne(t, step("sim-a", "violence", 10, 30), h)
	if c.Attribution != Inconclusive || c.RunsAfter != 1 || c.RunsBefore != 6 {
		t.Fatalf("%+v", c)
	}
}

func TestAttributeReport(t *testing.T) {
	p := &Production{
		Series: []*Series{
			step("sim-a", "hate", 10, 30),
			step("sim-a", "other", 4, 4),
			step("sim-a", "sexual_minors", 0, 0),
			step("sim-b", "sexual_minors", 1, 9),
			{Segment: Segment{Target: "sim-b", Category: "violence"}, Points: []Point{{Time: promT0, Blocked: 1}}},
		},
		Skipped:  nil,
		Warnings: []string{"from the source"},
	}
	r := Attribute(p, history(), Options{Tolerance: 30 * time.Minute})
	if r.Series != 5 || len(r.Changes) != 2 || r.Skipped == nil {
		t.Fatalf("%+v", r)
	}
	if r.Changes[0].Target != "sim-a" || r.Changes[0].Category != "hate" || r.Changes[0].Tolerance != "30m" || r.Changes[0].RateUnit != "share" || r.Changes[0].Z == nil {
		t.Fatalf("%+v", r.Changes[0])
	}
	if r.Changes[1].Target != "sim-b" || r.Changes[1].Category != "sexual_minors" || r.Changes[1].Attribution != Inconclusive {
		t.Fatalf("%+v", r.Changes[1])
	}
	// Uncovered: blocked at all, no tag; a category with no blocks is no gap.
	want := []UncoveredReport{{Target: "sim-a", Category: "other", Blocked: 48}, {Target: "sim-b", Category: "sexual_minors", Blocked: 60}}
	if !reflect.DeepEqual(r.Uncovered, want) {
		t.Fatalf("uncovered %+v", r.Uncovered)
	}
	if len(r.Warnings) != 2 || r.Warnings[0] != "from the source" || !strings.Contains(r.Warnings[1], "target sim-b, category violence: 1 point(s), a change needs 3 on each side") {
		t.Fatalf("warnings %q", r.Warnings)
	}
	// Without totals the rates are means per interval and there is no z.
	s := step("sim-a", "hate", 10, 30)
	for i := range s.Points {
		s.Points[i].HasTotal = false
	}
	r = Attribute(&Production{Series: []*Series{s}}, &History{}, Options{})
	if c := r.Changes[0]; c.Z != nil || c.RateUnit != "blocked_per_interval" || c.BeforeRate != 10 || c.AfterRate != 30 || c.Tolerance != "2h" {
		t.Fatalf("%+v", c)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "the database has no runs") {
		t.Fatalf("warnings %q", r.Warnings)
	}
}

// The tolerance widens the window: an event whose flips were first seen
// 3h after the change, with the run before them 2h after it, is outside
// a 1h tolerance and inside a 2h one.
func TestAttributeTolerance(t *testing.T) {
	ev := Event{ID: 1, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"}, Flips: []Flip{flip("sim-a", []string{"violence"}, allowed, blocked("violence"), 10)}}
	for tol, want := range map[time.Duration]string{time.Hour: Traffic, 2 * time.Hour: Provider, 0: Provider} {
		r := Attribute(&Production{Series: []*Series{step("sim-a", "violence", 10, 30)}}, history(ev), Options{Tolerance: tol})
		if got := r.Changes[0].Attribution; got != want {
			t.Errorf("tolerance %v: %s, want %s (%s)", tol, got, want, r.Changes[0].Reason)
		}
	}
}

// Score drift moves scores on identical bytes without flipping a verdict:
// it counts with its direction, and the production category's own
// direction where the flips carry it; a mixed one matches neither way.
func TestAttributeScoreDrift(t *testing.T) {
	drift := func(id int64, dir string, tags []string, scoreDirs map[string]string) Event {
		f := flip("sim-a", tags, blocked(tags[0]), blocked(tags[0]), 7)
		f.ScoreDirs = scoreDirs
		return Event{ID: id, Kind: KindScoreDrift, Direction: dir, Targets: []string{"sim-a"}, Flips: []Flip{f}}
	}
	violence := []string{"violence"}
	cases := []struct {
		name   string
		series *Series
		ev     Event
		attr   string
		reason string
	}{
		{"tightened drift, move up", step("sim-a", "violence", 10, 30), drift(10, Tightened, violence, nil), Provider,
			"event 10 (score_drift, tightened) moved the scores of 1 probe(s) on sim-a up, on identical probe bytes and without a verdict flip, from run 7 (started 2026-11-20T06:00:00Z)"},
		{"loosened drift, move up", step("sim-a", "violence", 10, 30), drift(10, Loosened, violence, nil), Inconclusive, "the other way"},
		{"mixed drift, move up", step("sim-a", "violence", 10, 30), drift(11, Mixed, violence, nil), Inconclusive,
			"event 11 in the same window moved the scores of violence probes on sim-a, on identical probe bytes and without a verdict flip, in no single direction (11: score_drift mixed): no direction to set against the move up"},
		{"mixed drift, move down", step("sim-a", "violence", 30, 10), drift(11, Mixed, violence, nil), Inconclusive, "no direction to set against the move down"},
		{"mixed event, the category's own scores went up", step("sim-a", "violence", 10, 30),
			drift(12, Mixed, violence, map[string]string{"violence": Up, "hate": Down}), Provider, "event 12 (score_drift, mixed) moved the scores of 1 probe(s) on sim-a up"},
		{"mixed event, the category's own scores went down", step("sim-a", "violence", 10, 30),
			drift(13, Mixed, violence, map[string]string{"violence": Down, "hate": Up}), Inconclusive, "moved violence on sim-a the other way"},
		{"tightened event, the category's own scores moved both ways", step("sim-a", "violence", 10, 30),
			drift(14, Tightened, violence, map[string]string{"violence": "", "hate": Up}), Inconclusive, "in no single direction"},
		{"all blocks: the flip's categories all went up", step("sim-a", "", 10, 30),
			drift(15, Mixed, violence, map[string]string{"violence": Up, "hate": Up}), Provider, "moved the scores of 1 probe(s) on sim-a up"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := attributeOne(t, c.series, history(c.ev))
			if got.Attribution != c.attr || !reflect.DeepEqual(got.Events, []int64{c.ev.ID}) || !strings.Contains(got.Reason, c.reason) || strings.Contains(got.Reason, "flipped") {
				t.Fatalf("%s %v: %s\nwant %s [%d]: …%s…", got.Attribution, got.Events, got.Reason, c.attr, c.ev.ID, c.reason)
			}
		})
	}
}

// gapRuns are runs every six hours from promT0+2h (02:00, 08:00, 14:00,
// 20:00, ...), as `driftprobe demo` spaces them, each complete on sim-a.
func gapRuns(n int) []Run {
	var runs []Run
	for i := 1; i <= n; i++ {
		runs = append(runs, Run{ID: int64(i), StartedAt: promT0.Add(2*time.Hour + time.Duration(i-1)*6*time.Hour), Targets: map[string]string{"sim-a": StatusComplete}})
	}
	return runs
}

// gapSeries is hourly violence on sim-a with totals, 60 blocked per 20000
// before and 170 after, from promT0 to promT0+46h, without the points from
// missFrom to missTo (hours after promT0, inclusive); the rate moves at
// hour jump.
func gapSeries(missFrom, missTo, jump int) *Series {
	s := &Series{Segment: Segment{Target: "sim-a", Category: "violence"}, Step: time.Hour}
	for h := 0; h <= 46; h++ {
		if h >= missFrom && h <= missTo {
			continue
		}
		b := 60.0 + float64(h%3)
		if h >= jump {
			b = 170 + float64(h%3)
		}
		s.Points = append(s.Points, Point{Time: promT0.Add(time.Duration(h) * time.Hour), Blocked: b, Total: 20000, HasTotal: true})
	}
	return s
}

// A gap in production around the change: the change is placed only to the
// gap, flips are matched against the whole gap (widened by the
// tolerance), runs inside it count on neither side, and when the flips
// explain only part of it the change is inconclusive rather than traffic.
func TestAttributeProductionGap(t *testing.T) {
	h := func(events ...Event) *History {
		return &History{Runs: gapRuns(8), Events: events, Coverage: testCoverage, CorpusProbes: 62, ConfirmRuns: 2}
	}
	// The provider tightened violence between run 2 (08:00) and run 3
	// (14:00): run 3 saw the new verdicts first.
	tightened := Event{ID: 1, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"},
		Flips: []Flip{flip("sim-a", []string{"violence"}, allowed, blocked("violence"), 3)}}
	at := func(h int) time.Time { return promT0.Add(time.Duration(h) * time.Hour) }
	cases := []struct {
		name                  string
		series                *Series
		h                     *History
		from, to              time.Time
		attr                  string
		events                []int64
		runsBefore, runsAfter int
		reason                []string
	}{
		// The QA case: no points from 09:00 to 18:00, the new rate from
		// 19:00. The flips (window 06:00–16:00 with the tolerance) fall in
		// the gap but do not explain 16:00–19:00, where run 3 had already
		// seen the new verdicts: not traffic, and not claimed as provider.
		{"flips inside a wide gap: inconclusive", gapSeries(9, 18, 19), h(tightened), at(9), at(19), Inconclusive, []int64{1}, 2, 5, []string{
			"production data is missing between 2026-11-20T09:00:00Z and 2026-11-20T19:00:00Z (10h, 10 × the 1h step) and the change happened somewhere in it: event 1 (policy_change, tightened) flipped 1 probe(s) on sim-a to stricter from run 3 (started 2026-11-20T14:00:00Z), which explains a change between 2026-11-20T08:00:00Z and 2026-11-20T14:00:00Z (the flips' window, ±2h)",
			"the customers' content may have moved instead: fill in the production data to tell"}},
		// A gap the flips' window holds whole: provider, the gap said.
		{"a gap within the flips' window: provider", gapSeries(10, 12, 13), h(tightened), at(10), at(13), Provider, []int64{1}, 2, 6, []string{
			"whose flip window (2026-11-20T08:00:00Z to 2026-11-20T14:00:00Z ±2h) holds the change between 2026-11-20T10:00:00Z and 2026-11-20T13:00:00Z: the provider changed violence on identical probe bytes; production data is missing between 2026-11-20T10:00:00Z and 2026-11-20T13:00:00Z (3h, 3 × the 1h step): the change happened somewhere in it"}},
		// No event: traffic, judged on runs outside the gap (run 3, inside
		// it, counts on neither side), the gap said.
		{"no event: traffic over the runs outside the gap", gapSeries(9, 18, 19), h(), at(9), at(19), Traffic, []int64{}, 2, 5, []string{
			"held still on sim-a: 2 complete run(s) before and 5 after the change, no event in the window: the customers' content changed (per-run verdicts not read: only events and nondeterminism marks were checked); production data is missing between 2026-11-20T09:00:00Z and 2026-11-20T19:00:00Z (10h, 10 × the 1h step): the change happened somewhere in it (1 complete run(s) of sim-a within it count on neither side)"}},
		// One missing hour is no gap worth a word.
		{"one missing interval: no note", gapSeries(18, 18, 19), h(), at(18), at(19), Traffic, []int64{}, 3, 5, []string{"the customers' content changed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Attribute(&Production{Series: []*Series{c.series}}, c.h, Options{})
			if len(r.Changes) != 1 {
				t.Fatalf("changes %+v warnings %q", r.Changes, r.Warnings)
			}
			got := r.Changes[0]
			if !got.ChangeFrom.Equal(c.from) || !got.ChangeAt.Equal(c.to) {
				t.Fatalf("change between %v and %v, want %v and %v", got.ChangeFrom, got.ChangeAt, c.from, c.to)
			}
			if got.Attribution != c.attr || !reflect.DeepEqual(got.Events, c.events) || got.RunsBefore != c.runsBefore || got.RunsAfter != c.runsAfter {
				t.Fatalf("%s %v runs %d/%d: %s\nwant %s %v runs %d/%d", got.Attribution, got.Events, got.RunsBefore, got.RunsAfter, got.Reason, c.attr, c.events, c.runsBefore, c.runsAfter)
			}
			for _, want := range c.reason {
				if !strings.Contains(got.Reason, want) {
					t.Errorf("reason %q\nlacks %q", got.Reason, want)
				}
			}
			if c.name == "one missing interval: no note" && strings.Contains(got.Reason, "missing") {
				t.Errorf("reason %q", got.Reason)
			}
		})
	}
}
