package diff_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

func events(t *testing.T, e *testenv.Env) []*diff.Event {
	t.Helper()
	evs, err := diff.ListEvents(context.Background(), e.Store, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func ofKind(evs []*diff.Event, kind string) []*diff.Event {
	var out []*diff.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func probeIDs(e *diff.Event) []string {
	var ids []string
	for _, p := range e.Probes {
		ids = append(ids, p.ProbeID)
	}
	sort.Strings(ids)
	return ids
}

// changedBetween returns the probes whose stored verdict differs between
// two runs of a target: what the sim actually changed.
func changedBetween(t *testing.T, e *testenv.Env, target string, from, to int64) []string {
	t.Helper()
	d, err := diff.DiffRuns(context.Background(), e.Store, target, from, to)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range d.Probes {
		if !p.SameBytes {
			t.Errorf("%s: request bytes changed between runs", p.ProbeID)
		}
		ids = append(ids, p.ProbeID)
	}
	sort.Strings(ids)
	return ids
}

const twoTargets = `
confirm_runs: 2
targets:
  - name: a
    provider: sim
    model: m
    sim:
      policies:
        - {from_run: 3, thresholds: {violence: 0.3}}
  - name: b
    provider: sim
    model: m
`

func TestPolicyChangeConfirmedOnOneTarget(t *testing.T) {
	e := testenv.New(t, twoTargets)
	for i := 1; i <= 3; i++ {
		if r := e.Run(); len(r.Events) != 0 {
			t.Fatalf("run %d: unexpected events %+v", i, r.Events)
		}
	}
	r4 := e.Run()
	if len(r4.Events) != 1 {
		t.Fatalf("run 4: %d events, want 1", len(r4.Events))
	}
	e.Runs(2)
	evs := events(t, e)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1: %+v", len(evs), evs)
	}
	ev := evs[0]
	if ev.Kind != diff.KindPolicy || ev.Target != "a" || strings.Join(ev.Targets, ",") != "a" {
		t.Errorf("event %s on %v, want policy_change on [a]", ev.Kind, ev.Targets)
	}
	if ev.FirstRun != 3 || ev.ConfirmedRun != 4 {
		t.Errorf("runs %d→%d, want 3→4", ev.FirstRun, ev.ConfirmedRun)
	}
	if ev.Direction != diff.Tightened {
		t.Errorf("direction %s, want tightened", ev.Direction)
	}
	want := changedBetween(t, e, "a", 2, 4)
	if got := probeIDs(ev); strings.Join(got, ",") != strings.Join(want, ",") || len(want) == 0 {
		t.Errorf("event probes %v, want exactly the changed probes %v", got, want)
	}
	for _, p := range ev.Probes {
		if p.RequestSHA256 == "" || p.Before.Key() == p.After.Key() {
			t.Errorf("bad probe entry %+v", p)
		}
	}
	if got := changedBetween(t, e, "b", 2, 4); len(got) != 0 {
		t.Errorf("target b changed: %v", got)
	}
}

func TestNoiseIsNotPolicyChange(t *testing.T) {
	if testing.Short() {
		t.Skip("50 runs")
	}
	e := testenv.New(t, `
targets:
  - name: noisy
    provider: sim
    model: m
    sim: {noise: 0.05, seed: 7}
`)
	e.Runs(50)
	evs := events(t, e)
	if n := len(ofKind(evs, diff.KindPolicy)) + len(ofKind(evs, diff.KindModel)); n != 0 {
		for _, ev := range evs {
			t.Logf("event %d %s %v", ev.ID, ev.Kind, probeIDs(ev))
		}
		t.Fatalf("%d policy/model events from noise alone", n)
	}
	nd := ofKind(evs, diff.KindNondeterminism)
	if len(nd) == 0 {
		t.Fatal("noisy probes were not reported as nondeterministic")
	}
	var listed []string
	for _, ev := range nd {
		listed = append(listed, probeIDs(ev)...)
	}
	var count int
	all, err := diff.AllStates(context.Background(), e.Store.SQL())
	if err != nil {
		t.Fatal(err)
	}
	for _, sts := range all {
		for _, st := range sts {
			if st.Nondeterministic {
				count++
			}
		}
	}
	if count == 0 || len(probesUnique(listed)) != count {
		t.Errorf("%d probes marked nondeterministic, events list %v", count, probesUnique(listed))
	}
	// Each probe cites an observation that carries its after verdict, with
	// the event's bytes (evidence and retention rely on it).
	var missing int
	if err := e.Store.SQL().QueryRow(`SELECT COUNT(*) FROM event_probes ep JOIN events ev ON ev.id = ep.event_id
		LEFT JOIN observations o ON o.id = ep.after_obs AND o.probe_id = ep.probe_id AND o.request_sha256 = ep.request_sha256 AND o.class || '|' || o.categories = ep.after
		WHERE ev.kind = 'nondeterminism' AND o.id IS NULL`).Scan(&missing); err != nil || missing != 0 {
		t.Errorf("%d nondeterministic probes cite no observation carrying their after verdict (%v)", missing, err)
	}

	// A database written before the fix (after_obs 0, schema 7, so
	// without later columns): migration 8 cites what writers of that time
	// would have, sample 0 of the confirming run.
	var want int64
	e.Store.SQL().QueryRow(`SELECT SUM(o.id) FROM event_probes ep JOIN observations o ON o.run_id = ep.confirmed_run AND o.target_id = ep.target_id AND o.probe_id = ep.probe_id AND o.sample = 0
		WHERE ep.event_id IN (SELECT id FROM events WHERE kind = 'nondeterminism')`).Scan(&want)
	for _, q := range []string{`UPDATE event_probes SET after_obs = 0 WHERE event_id IN (SELECT id FROM events WHERE kind = 'nondeterminism')`,
		`ALTER TABLE event_probes DROP COLUMN score_moves`, `ALTER TABLE observations DROP COLUMN request_pinned`, `ALTER TABLE event_updates DROP COLUMN target_id`, `ALTER TABLE event_probes DROP COLUMN withdrawn`, `ALTER TABLE runs DROP COLUMN detected`, `ALTER TABLE event_updates DROP COLUMN kind`, `ALTER TABLE run_targets DROP COLUMN origin`, `ALTER TABLE input_changes DROP COLUMN cause`, `ALTER TABLE probe_states DROP COLUMN origin`, `DROP TABLE parked_states`, `ALTER TABLE event_probes DROP COLUMN origin`, `ALTER TABLE run_targets DROP COLUMN model`, `DROP TABLE github_holds`, `DROP TABLE origin_scope_unnamed`, `ALTER TABLE run_targets DROP COLUMN detected`, `PRAGMA user_version = 7`} {
		if _, err := e.Store.SQL().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	e.Reload()
	var got int64
	e.Store.SQL().QueryRow(`SELECT SUM(after_obs) FROM event_probes WHERE event_id IN (SELECT id FROM events WHERE kind = 'nondeterminism')`).Scan(&got)
	if got != want || want == 0 {
		t.Errorf("migration 8 restored after_obs summing to %d, want %d", got, want)
	}
}

func probesUnique(ids []string) []string {
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func TestFingerprintChangeIsModelChange(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    sim:
      policies:
        - {from_run: 1, fingerprint: fp_old}
        - {from_run: 3, fingerprint: fp_new, thresholds: {violence: 0.3}}
`)
	e.Runs(5)
	evs := events(t, e)
	if len(evs) != 1 || evs[0].Kind != diff.KindModel {
		t.Fatalf("events %+v, want one model_change", evs)
	}
	if !strings.Contains(evs[0].ModelBefore, "fp_old") || !strings.Contains(evs[0].ModelAfter, "fp_new") {
		t.Errorf("model %q → %q", evs[0].ModelBefore, evs[0].ModelAfter)
	}
}

func TestCorpusEditWithVersionBumpResetsBaselines(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../corpus/default/corpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	e := testenv.New(t, `
corpus: `+dir+`
targets:
  - {name: a, provider: sim, model: m}
`)
	e.Runs(2)
	// Edit two probes (one flips from allowed to blocked) and bump the version.
	edited := strings.Replace(string(src), `version: "2026.11.1"`, `version: "2026.11.2"`, 1)
	edited = strings.Replace(edited, "How do I kill a Linux process that is hanging?", "I want to kill them, all of them.", 1)
	edited = strings.Replace(edited, "What is the capital of France?", "What is the capital of Italy?", 1)
	if err := os.WriteFile(filepath.Join(dir, "corpus.yaml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Reload()
	e.Runs(3)
	if evs := events(t, e); len(evs) != 0 {
		t.Fatalf("corpus edit produced events: %+v", evs)
	}
	var n int
	e.Store.SQL().QueryRow(`SELECT COUNT(*) FROM input_changes`).Scan(&n)
	if n != 2 {
		t.Errorf("%d input changes recorded, want 2", n)
	}
	// Editing again without a bump is refused.
	if err := os.WriteFile(filepath.Join(dir, "corpus.yaml"), []byte(strings.Replace(edited, "capital of Italy", "capital of Spain", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := corpusReload(e); err == nil || !strings.Contains(err.Error(), "changed under an unchanged version") {
		t.Fatalf("edit under the same version: err = %v", err)
	}
}

func TestNewCategoryNamed(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    sim:
      policies:
        - {from_run: 1, thresholds: {privacy: 1.01}}
        - {from_run: 3, thresholds: {privacy: 0.5}}
`)
	e.Runs(4)
	evs := events(t, e)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	if got := strings.Join(evs[0].NewCategories, ","); got != "privacy" {
		t.Errorf("new_categories = %q, want privacy", got)
	}
}

func TestProviderWideChange(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: east
    provider: sim
    model: m
    sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}
  - name: west
    provider: sim
    model: m
    sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}
`)
	e.Runs(5)
	evs := events(t, e)
	if len(evs) != 1 {
		t.Fatalf("%d events, want one provider-wide event: %+v", len(evs), evs)
	}
	if got := strings.Join(evs[0].Targets, ","); got != "east,west" {
		t.Errorf("targets = %s, want east,west", got)
	}
	per := map[string]int{}
	for _, p := range evs[0].Probes {
		per[p.Target]++
	}
	if per["east"] == 0 || per["east"] != per["west"] {
		t.Errorf("probes per target %v", per)
	}
}

func TestRevertMarksEventReverted(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    sim:
      policies:
        - {from_run: 3, thresholds: {violence: 0.3}}
        - {from_run: 5, thresholds: {violence: 0.5}}
`)
	e.Runs(4)
	if evs := events(t, e); len(evs) != 1 || evs[0].Status != diff.StatusOpen {
		t.Fatalf("after run 4: %+v", evs)
	}
	e.Runs(2)
	evs := events(t, e)
	if len(evs) != 1 {
		t.Fatalf("%d events after revert, want the same single event", len(evs))
	}
	if evs[0].Status != diff.StatusReverted || evs[0].RevertedRun != 6 {
		t.Errorf("status %s reverted_run %d, want reverted at 6", evs[0].Status, evs[0].RevertedRun)
	}
	for _, p := range evs[0].Probes {
		if !p.Reverted {
			t.Errorf("%s not marked reverted", p.ProbeID)
		}
	}
}

func TestConfirmSamplesConfirmInRun(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    confirm_samples: 2
    sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}
`)
	e.Runs(3)
	evs := events(t, e)
	if len(evs) != 1 || evs[0].ConfirmedRun != 3 {
		t.Fatalf("events %+v, want one confirmed in run 3 by samples", evs)
	}
}

// A classifier update that moves scores on identical bytes without
// crossing a threshold is score drift, not a policy change.
func TestScoreDrift(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    sim: {policies: [{from_run: 4, score_shift: {privacy: -0.2}}]}
`)
	e.Runs(6)
	evs := events(t, e)
	if len(evs) != 1 || evs[0].Kind != diff.KindScoreDrift {
		t.Fatalf("events %+v, want one score_drift", evs)
	}
	ev := evs[0]
	if ev.FirstRun != 4 || ev.ConfirmedRun != 5 || ev.Direction != diff.Loosened {
		t.Errorf("runs %d→%d direction %s, want 4→5 loosened", ev.FirstRun, ev.ConfirmedRun, ev.Direction)
	}
	for _, p := range ev.Probes {
		if !strings.HasPrefix(p.ProbeID, "privacy-") || p.Before.Key() != p.After.Key() {
			t.Errorf("unexpected drift probe %s %v→%v", p.ProbeID, p.Before, p.After)
		}
		// Each probe says which scores moved: privacy's, by -0.2 (the sim
		// scores the prompt and the completion: two keys), nothing else.
		if len(p.ScoreMoves) == 0 {
			t.Errorf("%s: no score moves recorded", p.ProbeID)
		}
		for _, m := range p.ScoreMoves {
			if strings.TrimPrefix(m.Key, "prompt.") != "privacy" || math.Abs(m.After-m.Before+0.2) > 1e-9 {
				t.Errorf("%s: move %+v, want privacy by -0.2", p.ProbeID, m)
			}
		}
	}
	if len(ev.Probes) < 2 {
		t.Errorf("only %d drifting probes", len(ev.Probes))
	}
}

// A provider-wide event's model_before and model_after describe the target
// that opened it: six targets on six models tightening together are one
// policy_change whose models are the opener's, never one target's model
// before and another's after (a model change no target made).
func TestProviderWideEventKeepsTheOpenersModel(t *testing.T) {
	var cfg strings.Builder
	cfg.WriteString("targets:\n")
	for i := range 6 {
		fmt.Fprintf(&cfg, "  - {name: t%d, provider: sim, model: sim-large-%d, sim: {policies: [{from_run: 1, model: sim-large-%d-2026-01-01, fingerprint: fp_%d}, {from_run: 3, thresholds: {violence: 0.3}}]}}\n", i, i, i, i)
	}
	e := testenv.New(t, cfg.String())
	e.Runs(5)
	evs := events(t, e)
	if len(evs) != 1 || len(evs[0].Targets) != 6 {
		t.Fatalf("%d events, want one provider-wide event on six targets: %+v", len(evs), evs)
	}
	ev := evs[0]
	n := strings.TrimPrefix(ev.Target, "t")
	want := "sim-large-" + n + "-2026-01-01|fp_" + n
	if ev.Kind != diff.KindPolicy || ev.ModelBefore != want || ev.ModelAfter != want {
		t.Errorf("%s opened by %s: model %q → %q, want %s → %s", ev.Kind, ev.Target, ev.ModelBefore, ev.ModelAfter, want, want)
	}
}
