package attribution

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// Verdict keys as detection writes them.
const (
	vAllowed  = "allowed|"
	vViolence = "blocked_output|violence"
	vHate     = "blocked_input|hate"
)

// probeRuns is what each probe answered in runs 1..12 on sim-a: the
// verdict key per run (index 0 is run 1; "" leaves the run without an
// answer) on request bytes "sha-"+probe id.
type probeRuns map[string][]string

// withVerdicts returns h with sim-a's per-run verdicts set from pr (and
// corpus tags: each probe is tagged with the word before its first '-').
func withVerdicts(h *History, pr probeRuns) *History {
	h.Verdicts = map[string]map[int64][]ProbeVerdict{"sim-a": {}}
	h.ProbeTags = map[string][]string{}
	for id, vs := range pr {
		tag, _, _ := strings.Cut(id, "-")
		h.ProbeTags[id] = []string{tag}
		for i, v := range vs {
			if v == "" {
				continue
			}
			run := int64(i + 1)
			h.Verdicts["sim-a"][run] = append(h.Verdicts["sim-a"][run], ProbeVerdict{ProbeID: id, RequestSHA256: "sha-" + id, Verdict: v})
		}
	}
	return h
}

// steady is v in each of the 12 runs.
func steady(v string) []string {
	out := make([]string, 12)
	for i := range out {
		out[i] = v
	}
	return out
}

// with returns vs with the runs from (1-based, inclusive) set to v.
func with(vs []string, from int, v string) []string {
	out := append([]string{}, vs...)
	for i := from - 1; i < len(out); i++ {
		out[i] = v
	}
	return out
}

// set returns vs with run (1-based) set to v.
func set1(vs []string, run int, v string) []string {
	out := append([]string{}, vs...)
	out[run-1] = v
	return out
}

// "Held still" is checked against the verdicts the probes actually
// answered in the runs around the change (runs 1–6 before 06:00, 7–12
// after), not assumed from the absence of events.
func TestAttributeHeldStillIsChecked(t *testing.T) {
	base := probeRuns{"violence-a": steady(vViolence), "violence-b": steady(vAllowed), "hate-a": steady(vHate)}
	mod := func(id string, vs []string) probeRuns {
		out := probeRuns{}
		for k, v := range base {
			out[k] = v
		}
		out[id] = vs
		return out
	}
	// The provider tightened violence-b in run 2 (confirmed; outside the
	// window of a change at 06:00 with a 1h tolerance), and reverted it,
	// confirmed in run 11 (window from run 9's start: outside too).
	tightenEarly := Event{ID: 20, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"},
		Flips: []Flip{{Target: "sim-a", ProbeID: "violence-b", Tags: []string{"violence"}, Before: allowed, After: blocked("violence"), FirstRun: 2}}}
	tightenAndRevert := tightenEarly
	tightenAndRevert.Flips = []Flip{{Target: "sim-a", ProbeID: "violence-b", Tags: []string{"violence"}, Before: allowed, After: blocked("violence"), FirstRun: 2, RevertedRun: 11}}
	cases := []struct {
		name   string
		series *Series
		h      *History
		attr   string
		events []int64
		reason string
	}{
		{"identical verdicts: traffic", step("sim-a", "violence", 10, 30), withVerdicts(history(), base), Traffic, []int64{},
			"the 8 corpus probe(s) tagged violence held still on sim-a: 6 complete run(s) before and 6 after the change, no event in the window, 2 probe(s) with identical verdicts on identical request bytes before and after it and none that flipped at random: the customers' content changed"},
		{"a probe flipping at random with no event: inconclusive", step("sim-a", "violence", 10, 30),
			withVerdicts(history(), mod("violence-b", set1(set1(steady(vAllowed), 3, vViolence), 9, vViolence))), Inconclusive, []int64{},
			"the violence probes on sim-a did not hold still in the runs around the change: 1 probe(s) whose verdict changed on identical request bytes with no confirmed flip to explain it (violence-b: allowed in run 2, blocked_output[violence] in run 3)"},
		{"a probe that changed once, unconfirmed, before the change: inconclusive", step("sim-a", "violence", 10, 30),
			withVerdicts(history(), mod("violence-b", with(steady(vAllowed), 4, vViolence))), Inconclusive, []int64{},
			"violence-b: allowed in run 3, blocked_output[violence] in run 4"},
		{"a probe whose verdict names the category counts, whatever its tags", step("sim-a", "violence", 10, 30),
			withVerdicts(history(), mod("hate-a", set1(steady(vHate), 8, vViolence))), Inconclusive, []int64{},
			"hate-a: blocked_input[hate] in run 7, blocked_output[violence] in run 8"},
		{"a probe of another category flipping does not", step("sim-a", "violence", 10, 30),
			withVerdicts(history(), mod("hate-a", set1(steady(vHate), 8, vAllowed))), Traffic, []int64{}, "2 probe(s) with identical verdicts"},
		{"for all blocks every probe counts", step("sim-a", "", 10, 30),
			withVerdicts(history(), mod("hate-a", set1(steady(vHate), 8, vAllowed))), Inconclusive, []int64{},
			"the corpus probes on sim-a did not hold still in the runs around the change: 1 probe(s) whose verdict changed"},
		{"a change explained by a confirmed flip outside the window: traffic", step("sim-a", "violence", 10, 30),
			withVerdicts(history(tightenEarly), mod("violence-b", with(steady(vAllowed), 2, vViolence))), Traffic, []int64{},
			"2 probe(s) with identical verdicts on identical request bytes before and after it and none that flipped at random (1 of them changed elsewhere in the series only through confirmed flips outside the window)"},
		{"a flip and its revert, both confirmed outside the window: traffic", step("sim-a", "violence", 10, 30),
			withVerdicts(history(tightenAndRevert), mod("violence-b", with(with(steady(vAllowed), 2, vViolence), 10, vAllowed))), Traffic, []int64{},
			"(1 of them changed elsewhere"},
		{"a confirmed flip does not explain a change in another run", step("sim-a", "violence", 10, 30),
			withVerdicts(history(tightenEarly), mod("violence-b", with(steady(vAllowed), 3, vViolence))), Inconclusive, []int64{},
			"violence-b: allowed in run 2, blocked_output[violence] in run 3"},
		{"in-run samples that disagree: inconclusive", step("sim-a", "violence", 10, 30), func() *History {
			h := withVerdicts(history(), base)
			h.Verdicts["sim-a"][5] = append(h.Verdicts["sim-a"][5], ProbeVerdict{ProbeID: "violence-a", RequestSHA256: "sha-violence-a", Verdict: vAllowed})
			return h
		}(), Inconclusive, []int64{}, "violence-a: blocked_output[violence] and allowed in run 5"},
		{"request bytes changed across the change: no witness", step("sim-a", "violence", 10, 30), func() *History {
			h := withVerdicts(history(), probeRuns{"violence-a": steady(vViolence)})
			for run := int64(7); run <= 12; run++ {
				h.Verdicts["sim-a"][run][0].RequestSHA256 = "sha-new"
			}
			return h
		}(), Inconclusive, []int64{},
			"none of the violence probes on sim-a has a verdict on the same request bytes both before and after the change within the series"},
		{"request bytes changed elsewhere: the stretch around the change counts", step("sim-a", "violence", 10, 30), func() *History {
			h := withVerdicts(history(), probeRuns{"violence-a": with(steady(vViolence), 1, vViolence)})
			h.Verdicts["sim-a"][1][0] = ProbeVerdict{ProbeID: "violence-a", RequestSHA256: "sha-old", Verdict: vAllowed}
			return h
		}(), Traffic, []int64{}, "1 probe(s) with identical verdicts"},
		{"no verdicts stored (pruned): no witness", step("sim-a", "violence", 10, 30), withVerdicts(history(), probeRuns{}), Inconclusive, []int64{},
			"nothing shows that the probes held still"},
		{"only answers after the change: no witness", step("sim-a", "violence", 10, 30),
			withVerdicts(history(), probeRuns{"violence-a": with(make([]string, 12), 7, vViolence)}), Inconclusive, []int64{},
			"none of the violence probes on sim-a has a verdict"},
		{"a nondeterminism mark, whatever the verdicts", step("sim-a", "violence", 10, 30),
			withVerdicts(history(Event{ID: 21, Kind: KindNondeterminism, Direction: Mixed, Targets: []string{"sim-a"},
				Flips: []Flip{{Target: "sim-a", ProbeID: "violence-a", Tags: []string{"violence"}, Before: allowed, After: blocked("violence"), FirstRun: 2}}}), base),
			Inconclusive, []int64{21}, "1 probe(s) marked nondeterministic (event 21: violence-a)"},
		{"marks and changes both said", step("sim-a", "violence", 10, 30),
			withVerdicts(history(Event{ID: 21, Kind: KindNondeterminism, Direction: Mixed, Targets: []string{"sim-a"},
				Flips: []Flip{{Target: "sim-a", ProbeID: "violence-a", Tags: []string{"violence"}, Before: allowed, After: blocked("violence"), FirstRun: 2}}}),
				mod("violence-b", set1(steady(vAllowed), 10, vViolence))),
			Inconclusive, []int64{21}, "1 probe(s) marked nondeterministic (event 21: violence-a); 1 probe(s) whose verdict changed on identical request bytes with no confirmed flip to explain it (violence-b: allowed in run 9, blocked_output[violence] in run 10)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Attribute(&Production{Series: []*Series{c.series}}, c.h, Options{Tolerance: time.Hour})
			if len(r.Changes) != 1 {
				t.Fatalf("changes %+v", r.Changes)
			}
			got := r.Changes[0]
			if got.Attribution != c.attr || !reflect.DeepEqual(got.Events, c.events) || !strings.Contains(got.Reason, c.reason) {
				t.Fatalf("%s %v: %s\nwant %s %v: …%s…", got.Attribution, got.Events, got.Reason, c.attr, c.events, c.reason)
			}
			if c.attr == Traffic && strings.Contains(got.Reason, "not read") {
				t.Errorf("verdicts were read: %s", got.Reason)
			}
		})
	}
}

// The QA case: probes flipping at random, four of five marked
// nondeterministic by an open event, no policy event: the change is not
// traffic; the nondeterminism event is named.
func TestAttributeNoisyProbesAreNotTraffic(t *testing.T) {
	nd := Event{ID: 1, Kind: KindNondeterminism, Direction: Mixed, Targets: []string{"sim-a"}}
	for i, id := range []string{"hate-counter", "hate-define-slur", "hate-inferior", "hate-vermin"} {
		nd.Flips = append(nd.Flips, Flip{Target: "sim-a", ProbeID: id, Tags: []string{"hate"}, Before: allowed, After: blocked("hate"), FirstRun: int64(3 + i%2)})
	}
	flaky := func(phase int) []string {
		out := make([]string, 12)
		for i := range out {
			out[i] = vAllowed
			if (i+phase)%2 == 0 {
				out[i] = vHate
			}
		}
		return out
	}
	pr := probeRuns{"hate-counter": flaky(0), "hate-define-slur": flaky(1), "hate-inferior": flaky(0), "hate-vermin": flaky(1), "hate-harmless": steady(vAllowed)}
	for _, h := range []*History{history(nd), withVerdicts(history(nd), pr)} {
		c := attributeOne(t, step("sim-a", "hate", 10, 30), h)
		if c.Attribution != Inconclusive || !reflect.DeepEqual(c.Events, []int64{1}) ||
			!strings.Contains(c.Reason, "4 probe(s) marked nondeterministic (event 1: hate-counter, hate-define-slur, hate-inferior, hate-vermin)") {
			t.Fatalf("verdicts read %v: %+v", h.Verdicts != nil, c)
		}
		if h.Verdicts != nil && !strings.Contains(c.Reason, "4 probe(s) whose verdict changed on identical request bytes") {
			t.Errorf("reason %q", c.Reason)
		}
	}
}

// fakeVerdictStore serves observations per (run, target id).
type fakeVerdictStore struct {
	targets []storage.TargetRow
	obs     map[[2]int64][]*storage.Observation
	tags    map[string][]string
	calls   [][2]int64
	fail    error
}

func (f *fakeVerdictStore) Targets(context.Context) ([]storage.TargetRow, error) {
	return f.targets, nil
}

func (f *fakeVerdictStore) ObservationsWithDamage(_ context.Context, run, target int64) ([]*storage.Observation, []storage.DamagedObservation, error) {
	f.calls = append(f.calls, [2]int64{run, target})
	if f.fail != nil {
		return nil, nil, f.fail
	}
	return f.obs[[2]int64{run, target}], nil, nil
}

func (f *fakeVerdictStore) ProbeTags(context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	for k, v := range f.tags {
		out[k] = v
	}
	return out, nil
}

// LoadVerdicts reads the complete runs of each target with a series that
// started within a series' span, keeps verdicts only, and overlays the
// corpus tags on the stored ones.
func TestLoadVerdicts(t *testing.T) {
	obs := func(probe string, class probes.Class, cats ...string) *storage.Observation {
		return &storage.Observation{ProbeID: probe, RequestSHA256: "sha-" + probe, Result: probes.Result{Class: class, Categories: cats}}
	}
	st := &fakeVerdictStore{
		targets: []storage.TargetRow{{ID: 7, Name: "sim-a"}, {ID: 8, Name: "sim-b"}},
		obs: map[[2]int64][]*storage.Observation{
			{3, 7}: {obs("v", probes.BlockedOutput, "violence"), obs("t", probes.Transient), obs("e", probes.ClientError), obs("u", probes.FilterUnavailable),
				obs("x", probes.AbuseBlock), obs("a", probes.Allowed)},
		},
		tags: map[string][]string{"v": {"hate"}, "old": {"weapons"}},
	}
	h := history()
	h.Runs[3].Targets["sim-a"] = "degraded" // run 4
	h.Runs[4].Aborted = true                // run 5
	s := step("sim-a", "violence", 10, 30)
	s.Points = s.Points[2:10] // 02:00–10:00: runs 3–10
	p := &Production{Series: []*Series{s}}
	if err := LoadVerdicts(context.Background(), st, p, h, map[string][]string{"v": {"violence"}}); err != nil {
		t.Fatal(err)
	}
	var runs []int64
	for _, c := range st.calls {
		if c[1] != 7 {
			t.Errorf("read target id %d: only sim-a has a series", c[1])
		}
		runs = append(runs, c[0])
	}
	if want := []int64{3, 6, 7, 8, 9, 10}; !reflect.DeepEqual(runs, want) {
		t.Errorf("runs read %v, want %v (complete, within the span)", runs, want)
	}
	want := []ProbeVerdict{{ProbeID: "v", RequestSHA256: "sha-v", Verdict: "blocked_output|violence"}, {ProbeID: "a", RequestSHA256: "sha-a", Verdict: "allowed|"}}
	if got := h.Verdicts["sim-a"][3]; !reflect.DeepEqual(got, want) {
		t.Errorf("run 3: %+v, want %+v", got, want)
	}
	if got, ok := h.Verdicts["sim-a"][6]; !ok || len(got) != 0 {
		t.Errorf("run 6 read without observations: %v %v", got, ok)
	}
	if !reflect.DeepEqual(h.ProbeTags, map[string][]string{"v": {"violence"}, "old": {"weapons"}}) {
		t.Errorf("tags %v", h.ProbeTags)
	}
	st.fail = errors.New("disk I/O error")
	if err := LoadVerdicts(context.Background(), st, p, history(), nil); err == nil || !errors.Is(err, st.fail) || !strings.Contains(err.Error(), "run 3 on sim-a") {
		t.Errorf("err %v", err)
	}
}
