package diff_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes/sim"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// setErrors makes the sim of target name fail every attempt with status
// (rate 1) or none (rate 0) from the next run on, rebuilding the probers
// as a restarted process would; the corpus loaded is kept.
func setErrors(t *testing.T, e *testenv.Env, name string, rate float64, status int) {
	t.Helper()
	tc := e.Config.Target(name)
	if tc == nil {
		t.Fatalf("no target %s", name)
	}
	if tc.Sim == nil {
		tc.Sim = &sim.Config{}
	}
	tc.Sim.ErrorRate, tc.Sim.ErrorStatus = rate, status
	e.Rebuild()
}

// ndSet is the probes known nondeterministic on a target, read the way a
// reader outside diff can: its detection state, and the open
// nondeterminism events' probes.
func ndSet(t *testing.T, e *testenv.Env, target string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	tr, err := e.Store.TargetByName(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := diff.States(ctx, e.Store.SQL(), tr.ID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, st := range sts {
		if st.Nondeterministic {
			out[st.ProbeID] = true
		}
	}
	evs, err := diff.ListEvents(ctx, e.Store, diff.Filter{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind != diff.KindNondeterminism || ev.Status != "open" {
			continue
		}
		for _, p := range ev.Probes {
			if p.Target == target && !p.Reverted {
				out[p.ProbeID] = true
			}
		}
	}
	return out
}

// A candidate whose verdicts go back and forth near its thresholds (the
// sim's seeded noise) differs from the current target on probes it is
// known nondeterministic on: those differences are listed, flagged and
// counted apart, and the gate counts only the others — a coin flip is no
// evidence of what the candidate blocks.
func TestCompareSetsNondeterministicProbesApart(t *testing.T) {
	e := testenv.New(t, `
confirm_runs: 2
targets:
  - {name: cur, provider: sim, model: sim-large}
  - {name: noisy, provider: sim, model: sim-large, sim: {noise: 0.5, noise_band: 0.3}}
`)
	e.Runs(6)
	nd := ndSet(t, e, "noisy")
	if len(nd) == 0 {
		t.Fatal("setup: no probe of noisy is known nondeterministic after 6 runs")
	}
	c, err := diff.Compare(context.Background(), e.Store, e.Corpus, "cur", "noisy", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var over, overND, under, underND, flagged int
	check := func(ps []diff.ProbeDiff) {
		for _, p := range ps {
			if got, want := len(p.NondeterministicOn) > 0, nd[p.ProbeID]; got != want {
				t.Errorf("%s: flagged nondeterministic %v (%v), known nondeterministic on noisy %v", p.ProbeID, got, p.NondeterministicOn, want)
			}
			if len(p.NondeterministicOn) > 0 {
				flagged++
				if !slices.Equal(p.NondeterministicOn, []string{"noisy"}) {
					t.Errorf("%s: nondeterministic_on %v, want [noisy]", p.ProbeID, p.NondeterministicOn)
				}
			}
		}
	}
	check(c.NewBlocks)
	check(c.NewAllows)
	check(c.Recategorized)
	for _, p := range c.NewBlocks {
		if p.Role == corpus.RoleBenign || p.Role == corpus.RoleBorderline {
			if nd[p.ProbeID] {
				overND++
			} else {
				over++
			}
		}
	}
	for _, p := range c.NewAllows {
		if p.Role == corpus.RolePositive {
			if nd[p.ProbeID] {
				underND++
			} else {
				under++
			}
		}
	}
	if overND+underND == 0 || flagged == 0 {
		t.Fatalf("setup: no over- or under-blocking difference on a nondeterministic probe (%d flagged)", flagged)
	}
	if c.OverBlocking != over || c.OverBlockingNondeterministic != overND || c.UnderBlocking != under || c.UnderBlockingNondeterministic != underND {
		t.Errorf("over %d+%d nd, under %d+%d nd; want over %d+%d, under %d+%d", c.OverBlocking, c.OverBlockingNondeterministic,
			c.UnderBlocking, c.UnderBlockingNondeterministic, over, overND, under, underND)
	}
	if c.Nondeterministic < flagged {
		t.Errorf("nondeterministic %d, want at least the %d flagged differences", c.Nondeterministic, flagged)
	}
	// The gate counts the deterministic differences only.
	c, err = diff.CompareWith(context.Background(), e.Store, "cur", "noisy", diff.CompareOptions{MaxNewBlocks: over, MaxLostBlocks: under})
	if err != nil {
		t.Fatal(err)
	}
	if c.GateFailed {
		t.Errorf("gate failed with --max-new-blocks %d --max-lost-blocks %d: the %d+%d nondeterministic differences were gated", over, under, overND, underND)
	}
	// The detection state's marks count on their own, without an open
	// event.
	if _, err := e.Store.SQL().Exec(`UPDATE events SET status = 'reverted' WHERE kind = 'nondeterminism'`); err != nil {
		t.Fatal(err)
	}
	nd = ndSet(t, e, "noisy")
	if len(nd) == 0 {
		t.Fatal("setup: no probe of noisy is marked nondeterministic in its detection state")
	}
	if c, err = diff.Compare(context.Background(), e.Store, e.Corpus, "cur", "noisy", 0, 0); err != nil {
		t.Fatal(err)
	}
	flagged = 0
	check(c.NewBlocks)
	check(c.NewAllows)
	check(c.Recategorized)
	if flagged == 0 {
		t.Error("with the events closed, no difference is flagged nondeterministic")
	}
}

// A probe of an open nondeterminism event is known nondeterministic on the
// request bytes the event recorded, not on other bytes, and not once the
// event's probe is reverted.
func TestCompareNondeterminismEventProbes(t *testing.T) {
	e, want, over := compareEnv(t)
	ctx := context.Background()
	cand, err := e.Store.TargetByName(ctx, "cand")
	if err != nil {
		t.Fatal(err)
	}
	reqSHA := map[string]string{}
	obs, err := e.Store.Observations(ctx, want.ToRun, cand.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		reqSHA[o.ProbeID] = o.RequestSHA256
	}
	now := e.Store.Now().Format("2006-01-02T15:04:05Z")
	if _, err := e.Store.SQL().Exec(`INSERT INTO events (id, fingerprint, target_id, provider, kind, direction, opened_kind, opened_direction, status,
		first_run, confirmed_run, last_run, corpus_version, corpus_hash, created_at, updated_at)
		VALUES (99, 'nd-test', ?, 'sim', 'nondeterminism', 'mixed', 'nondeterminism', 'mixed', 'open', 1, 1, 1, ?, '', ?, ?)`,
		cand.ID, want.CorpusVersion, now, now); err != nil {
		t.Fatal(err)
	}
	for i, sha := range []string{reqSHA[over[0]], strings.Repeat("0", 64), reqSHA[over[2]]} {
		reverted := 0
		if i == 2 {
			reverted = 1
		}
		if _, err := e.Store.SQL().Exec(`INSERT INTO event_probes (event_id, target_id, probe_id, request_sha256, before, after, first_run, confirmed_run, reverted_run)
			VALUES (99, ?, ?, ?, 'allowed|', 'blocked_output|violence', 1, 1, ?)`, cand.ID, over[i], sha, reverted); err != nil {
			t.Fatal(err)
		}
	}
	c, err := diff.Compare(ctx, e.Store, e.Corpus, "prod", "cand", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.NewBlocks {
		wantND := p.ProbeID == over[0]
		if got := slices.Equal(p.NondeterministicOn, []string{"cand"}); got != wantND || !wantND && len(p.NondeterministicOn) > 0 {
			t.Errorf("%s: nondeterministic_on %v, want cand only for %s", p.ProbeID, p.NondeterministicOn, over[0])
		}
	}
	if c.OverBlocking != 2 || c.OverBlockingNondeterministic != 1 || c.Nondeterministic != 1 || len(c.NewBlocks) != len(want.NewBlocks) {
		t.Errorf("over_blocking %d (+%d nondeterministic), nondeterministic %d, %d new blocks; want 2 (+1), 1, %d (listed, not dropped)",
			c.OverBlocking, c.OverBlockingNondeterministic, c.Nondeterministic, len(c.NewBlocks), len(want.NewBlocks))
	}
}

// A candidate that answers the probes it would block with errors does not
// pass: those probes are not compared, listed with what each side
// answered, and, since each could hide a new block, fail the gate unless
// --max-not-compared allows them.
func TestCompareNotComparedProbesGate(t *testing.T) {
	e, want, over := compareEnv(t)
	ctx := context.Background()
	if _, err := e.Store.SQL().Exec(`UPDATE observations SET class = 'transient', categories = '', stage = '', http_status = 503
		WHERE target_id = (SELECT id FROM targets WHERE name = 'cand') AND probe_id IN (?, ?, ?)`, over[0], over[1], over[2]); err != nil {
		t.Fatal(err)
	}
	c, err := diff.Compare(ctx, e.Store, e.Corpus, "prod", "cand", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if c.OverBlocking != 0 {
		t.Fatalf("setup: over_blocking %d, want 0 with the three new blocks erased", c.OverBlocking)
	}
	if !c.GateFailed || c.NotCompared != 3 || c.NotComparedGated != 3 || c.Total != want.Total || c.Compared+c.NotCompared != c.Total || c.Total != 62 {
		t.Fatalf("gate_failed %v, not_compared %d (gated %d), compared %d of %d; want failed, 3 (3), 59 of 62", c.GateFailed, c.NotCompared, c.NotComparedGated, c.Compared, c.Total)
	}
	for i, p := range c.NotComparedProbes {
		if p.ProbeID != over[i] || p.Role != corpus.RoleBorderline || p.From != "allowed" || p.To != "transient" || p.ToHTTPStatus != 503 ||
			!slices.Equal(p.NoVerdictOn, []string{"cand"}) || !p.Gated || !slices.Contains(p.Tags, "violence") {
			t.Errorf("not compared %+v: want %s, borderline, allowed → transient (HTTP 503), no verdict on cand, gated", p, over[i])
		}
	}
	// Allowed explicitly, or the limit off (then a warning says it).
	for _, o := range []diff.CompareOptions{{MaxNotCompared: 3, MaxLostBlocks: -1}, {MaxNotCompared: -1, MaxLostBlocks: -1}} {
		c, err := diff.CompareWith(ctx, e.Store, "prod", "cand", o)
		if err != nil {
			t.Fatal(err)
		}
		if c.GateFailed {
			t.Errorf("--max-not-compared %d: gate failed", o.MaxNotCompared)
		}
		if warned := len(c.Warnings) == 1 && strings.Contains(c.Warnings[0], "3 probe(s) without a verdict"); warned != (o.MaxNotCompared < 0) {
			t.Errorf("--max-not-compared %d: warnings %q", o.MaxNotCompared, c.Warnings)
		}
	}
}

// Which missing verdicts could hide a gated change: a benign or borderline
// probe the current target blocks cannot become a new block, nor can one
// the candidate allows; a positive control counts only when under-blocking
// is gated.
func TestCompareNotComparedGatedRule(t *testing.T) {
	e, want, _ := compareEnv(t)
	ctx := context.Background()
	var benign, posBlocked string
	for _, id := range []string{"benign-haiku-autumn", "violence-positive-beat-up"} {
		var role string
		e.Store.SQL().QueryRow(`SELECT role FROM probes WHERE probe_id = ?`, id).Scan(&role)
		switch role {
		case corpus.RoleBenign:
			benign = id
		case corpus.RolePositive:
			posBlocked = id
		}
	}
	if benign == "" || posBlocked == "" {
		t.Fatalf("setup: probes missing from the corpus (benign %q, positive %q)", benign, posBlocked)
	}
	set := func(target, probe, class string) {
		t.Helper()
		if _, err := e.Store.SQL().Exec(`UPDATE observations SET class = ?, categories = '', http_status = 404 WHERE probe_id = ?
			AND target_id = (SELECT id FROM targets WHERE name = ?)`, class, probe, target); err != nil {
			t.Fatal(err)
		}
	}
	// The current target has no verdict on the benign probe, which the
	// candidate allows: no new block can hide there.
	set("prod", benign, "client_error")
	// The candidate has no verdict on a positive control the current one
	// blocks: a lost block could hide there.
	set("cand", posBlocked, "client_error")
	for _, maxLost := range []int{-1, 0} {
		c, err := diff.Compare(ctx, e.Store, e.Corpus, "prod", "cand", 10, maxLost)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, p := range c.NotComparedProbes {
			got[p.ProbeID] = p.Gated
		}
		if len(got) != 2 || got[benign] || got[posBlocked] != (maxLost >= 0) || c.NotComparedGated != len(c.NotComparedProbes)-1-map[bool]int{true: 0, false: 1}[maxLost >= 0] {
			t.Errorf("--max-lost-blocks %d: gated %v (count %d); want %s not gated, %s gated only with under-blocking gated", maxLost, got, c.NotComparedGated, benign, posBlocked)
		}
		if c.GateFailed != (maxLost >= 0) {
			t.Errorf("--max-lost-blocks %d: gate_failed %v (want 3 new blocks allowed by --max-new-blocks 10 and %v)", maxLost, c.GateFailed, maxLost >= 0)
		}
	}
	_ = want
}

// Each side names the run it read — its start, corpus version, the model
// as configured and the models its answers reported — and a candidate's
// newer complete runs on another corpus version, skipped because the
// current target has none on it, are listed and warned about.
func TestCompareSidesAndSkippedNewerRuns(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: cur, provider: sim, model: sim-large, sim: {policies: [{from_run: 1, fingerprint: fp-cur}]}}
  - {name: cand, provider: sim, model: sim-xl, sim: {policies: [{from_run: 1, fingerprint: fp-cand}]}}
`)
	e.Runs(2)
	// The corpus is bumped; only the candidate runs on it (runs 3 and 4),
	// and its run 5 is degraded (every answer a 503).
	e.Corpus = writeCorpus(t, func(s string) string { return editProbeLines(s, nil, "2026.12.9", nil) })
	cand := e.Target("cand")
	sub := *e.Config
	sub.Targets = []*config.Target{cand.Config}
	for range 2 {
		if _, err := app.RunOnce(context.Background(), &sub, e.Corpus, e.Store, []*runner.Target{cand}, app.RunOptions{Sleep: e.Sleep, SubsetRun: true, FullConfig: e.Config}); err != nil {
			t.Fatal(err)
		}
	}
	setErrors(t, e, "cand", 1, 503)
	cand = e.Target("cand")
	if _, err := app.RunOnce(context.Background(), &sub, e.Corpus, e.Store, []*runner.Target{cand}, app.RunOptions{Sleep: e.Sleep, SubsetRun: true, FullConfig: e.Config}); err != nil {
		t.Fatal(err)
	}
	c, err := diff.Compare(context.Background(), e.Store, e.Corpus, "cur", "cand", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if c.FromRun != 2 || c.ToRun != 2 || c.CorpusVersion == "2026.12.9" {
		t.Fatalf("compared runs %d and %d on %s; want 2 and 2 on the old version", c.FromRun, c.ToRun, c.CorpusVersion)
	}
	for _, s := range []struct {
		side        diff.CompareSide
		name, model string
		fp          string
	}{{c.FromSide, "cur", "sim-large", "fp-cur"}, {c.ToSide, "cand", "sim-xl", "fp-cand"}} {
		if s.side.Target != s.name || s.side.Run != 2 || s.side.StartedAt.IsZero() || s.side.CorpusVersion != c.CorpusVersion || s.side.Provider != "sim" ||
			s.side.Model != s.model || len(s.side.AnsweredBy) == 0 || s.side.AnsweredBy[0].ModelFingerprint != s.fp ||
			!strings.HasPrefix(s.side.AnsweredBy[0].ModelID, s.model) || s.side.AnsweredBy[0].Answers == 0 {
			t.Errorf("side %+v: want %s's run 2 with its start, corpus, model %s and answers under fingerprint %s", s.side, s.name, s.model, s.fp)
		}
	}
	if len(c.FromSide.NewerRuns) != 0 {
		t.Errorf("cur's newer runs %+v, want none", c.FromSide.NewerRuns)
	}
	got := c.ToSide.NewerRuns
	if len(got) != 3 || got[0].Run != 3 || got[1].Run != 4 || got[2].Run != 5 ||
		got[0].Reason != diff.SkippedCorpusVersion || got[1].Reason != diff.SkippedCorpusVersion || got[2].Reason != diff.SkippedIncomplete ||
		got[0].CorpusVersion != "2026.12.9" || got[0].Status != storage.TargetComplete || got[2].Status != storage.TargetDegraded || got[0].StartedAt.IsZero() {
		t.Fatalf("cand's newer runs %+v: want 3 and 4 (corpus_version, 2026.12.9) and 5 (incomplete, degraded)", got)
	}
	if len(c.Warnings) != 2 || !strings.Contains(c.Warnings[0], "cand has newer complete runs that were not compared: runs 3, 4 on corpus 2026.12.9, on which cur has no complete run") ||
		!strings.Contains(c.Warnings[1], "cand's newer runs 5 (degraded) did not answer the whole corpus") {
		t.Errorf("warnings %q", c.Warnings)
	}
}

// compare --run compares the run it made: a target's part of it that is
// not complete is refused with its counts, even when an older complete
// run exists (which is named instead of being read silently).
func TestCompareNamedRunMustBeComplete(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: cur, provider: sim, model: sim-large}
  - {name: cand, provider: sim, model: sim-xl, max_attempts: 1}
`)
	e.Run()
	setErrors(t, e, "cand", 1, 503)
	res := e.Run()
	_, err := diff.CompareWith(context.Background(), e.Store, "cur", "cand", diff.CompareOptions{Run: res.Summary.RunID})
	if !errors.Is(err, diff.ErrRunIncomplete) {
		t.Fatalf("err = %v, want ErrRunIncomplete", err)
	}
	for _, w := range []string{"target cand: run 2 was degraded for it", "of 62 probes, 0 answered with a verdict, 62 transient errors", "latest complete run, run 1"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	// Without a named run, the latest complete one is read, and the
	// degraded run 2 is named as skipped.
	c, err := diff.CompareWith(context.Background(), e.Store, "cur", "cand", diff.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.FromRun != 2 || c.ToRun != 1 || len(c.ToSide.NewerRuns) != 1 || c.ToSide.NewerRuns[0].Reason != diff.SkippedIncomplete {
		t.Errorf("runs %d → %d, cand's newer runs %+v: want 2 → 1 with run 2 skipped as incomplete", c.FromRun, c.ToRun, c.ToSide.NewerRuns)
	}
	// A run that is complete for both is compared as named.
	setErrors(t, e, "cand", 0, 0)
	res = e.Run()
	c, err = diff.CompareWith(context.Background(), e.Store, "cur", "cand", diff.CompareOptions{Run: res.Summary.RunID})
	if err != nil || c.FromRun != res.Summary.RunID || c.ToRun != res.Summary.RunID {
		t.Fatalf("named complete run %d: %+v, %v", res.Summary.RunID, c, err)
	}
}
