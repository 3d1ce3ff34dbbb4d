package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/storage"
)

// runHourly makes n runs whose start times are testenv.AttributionT0 + (i-1)h and
// returns their results.
func runHourly(t *testing.T, e *testenv.Env, n int) []*app.RunResult {
	t.Helper()
	var out []*app.RunResult
	for i := 0; i < n; i++ {
		at := testenv.AttributionT0.Add(time.Duration(i) * time.Hour)
		res, err := app.RunOnce(context.Background(), e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Now: func() time.Time { return at }})
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if res.Summary.Status != storage.RunComplete {
			t.Fatalf("run %d: %s", i+1, res.Summary.Status)
		}
		out = append(out, res)
	}
	return out
}

// hourlyJSONL renders points at testenv.AttributionT0 + (i-1)h for i in 1..n: blocked per
// 1000 requests is lo before hour `jump` (0-based) and hi from it on.
func hourlyJSONL(b *strings.Builder, target, category string, n, jump int, lo, hi int) {
	for i := 0; i < n; i++ {
		v := lo
		if i >= jump {
			v = hi
		}
		fmt.Fprintf(b, `{"time":%q,"target":%q,"category":%q,"blocked":%d,"total":1000}`+"\n",
			testenv.AttributionT0.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), target, category, v)
	}
}

// The glue end to end in-process: history read from a real store written
// by real runs against the sim, production from JSONL.
func TestAttributeFromStore(t *testing.T) {
	e := testenv.New(t, testenv.AttributionConfig)
	runHourly(t, e, 10)
	ctx := context.Background()

	h, err := app.LoadHistory(ctx, e.Store, e.Corpus, e.Config.ConfirmRuns, e.Config.Detection.ScoreTolerance)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 10 || !h.Runs[3].StartedAt.Equal(testenv.AttributionT0.Add(3*time.Hour)) || h.Runs[3].Targets["sim-a"] != storage.TargetComplete {
		t.Fatalf("runs: %+v", h.Runs[:4])
	}
	if len(h.Events) != 1 || h.Events[0].Direction != "tightened" || len(h.Events[0].Flips) == 0 {
		t.Fatalf("events: %+v", h.Events)
	}
	newlyBlocked := 0
	for _, f := range h.Events[0].Flips {
		if f.Target != "sim-a" || f.FirstRun != 4 || len(f.Tags) == 0 {
			t.Errorf("flip %+v", f)
		}
		if !f.Before.Blocked && f.After.Blocked {
			newlyBlocked++
		}
	}
	if newlyBlocked == 0 {
		t.Errorf("no probe went from allowed to blocked: %+v", h.Events[0].Flips)
	}
	if h.Coverage["violence"] == 0 || h.Coverage["sexual_minors"] != 0 || h.CorpusProbes != len(e.Corpus.Probes) || h.ConfirmRuns != 2 {
		t.Fatalf("coverage %v", h.Coverage)
	}

	var b strings.Builder
	hourlyJSONL(&b, "sim-a", "violence", 10, 3, 10, 30) // jumps at run 4
	hourlyJSONL(&b, "sim-a", "hate", 10, 7, 5, 20)      // jumps at run 8, no flip anywhere near
	hourlyJSONL(&b, "sim-b", "violence", 10, 3, 10, 30) // sim-b's probes held still at run 4
	sess := &app.Session{Config: e.Config, Corpus: e.Corpus, Store: e.Store}
	rep, err := app.Attribute(ctx, sess, &attribution.JSONL{Name: "p.jsonl", R: strings.NewReader(b.String())}, attribution.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]attribution.ChangeReport{}
	for _, c := range rep.Changes {
		got[c.Target+"/"+c.Category] = c
	}
	if c := got["sim-a/violence"]; c.Attribution != attribution.Provider || len(c.Events) != 1 || c.Events[0] != h.Events[0].ID || !c.ChangeAt.Equal(testenv.AttributionT0.Add(3*time.Hour)) {
		t.Errorf("sim-a/violence: %+v", c)
	}
	if c := got["sim-a/hate"]; c.Attribution != attribution.Traffic || c.RunsBefore != 7 || c.RunsAfter != 3 {
		t.Errorf("sim-a/hate: %+v", c)
	}
	if c := got["sim-b/violence"]; c.Attribution != attribution.Traffic {
		t.Errorf("sim-b/violence: %+v", c)
	}
	if len(rep.Changes) != 3 {
		t.Errorf("changes: %+v", rep.Changes)
	}

	// Input errors are usage errors (exit 2); the message locates them.
	_, err = app.Attribute(ctx, sess, &attribution.JSONL{Name: "p.jsonl", R: strings.NewReader(`{"time":"2026-11-20T00:00:00Z","target":"nope","blocked":1}`)}, attribution.Options{})
	if !app.IsUsage(err) || !strings.Contains(err.Error(), `p.jsonl:1: target: "nope" is not a target in the config`) {
		t.Fatalf("unknown target: %v (usage %v)", err, app.IsUsage(err))
	}
}

func TestOpenProductionMissingFileIsUsage(t *testing.T) {
	_, _, err := app.OpenProduction(t.TempDir()+"/none.jsonl", nil)
	if !app.IsUsage(err) || !strings.Contains(err.Error(), "none.jsonl: --production: no such file") {
		t.Fatalf("%v", err)
	}
}

// Score drift carries each category's own direction, read from the
// observations before and after: a classifier update that lowered privacy
// scores and raised hate scores (a "mixed" event) explains privacy blocks
// falling, not rising, and flips no verdict.
func TestAttributeScoreDriftPerCategory(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: sim-a
    provider: sim
    model: sim-large
    sim: {policies: [{from_run: 4, score_shift: {privacy: -0.2, hate: 0.16}}]}
  - {name: sim-b, provider: sim, model: sim-small}
`)
	runHourly(t, e, 10)
	ctx := context.Background()
	h, err := app.LoadHistory(ctx, e.Store, e.Corpus, e.Config.ConfirmRuns, e.Config.Detection.ScoreTolerance)
	if err != nil {
		t.Fatal(err)
	}
	var drift *attribution.Event
	for i := range h.Events {
		if h.Events[i].Kind == attribution.KindScoreDrift {
			drift = &h.Events[i]
		}
	}
	if drift == nil || drift.Direction != attribution.Mixed || len(drift.Flips) == 0 {
		t.Fatalf("events: %+v", h.Events)
	}
	// Every probe's hate scores moved up past the tolerance; the privacy
	// probes' privacy scores moved down.
	privacyDown := 0
	for _, f := range drift.Flips {
		if f.ScoreDirs["hate"] != attribution.Up {
			t.Errorf("flip %s: score directions %v, want hate up", f.ProbeID, f.ScoreDirs)
		}
		if f.ScoreDirs["privacy"] == attribution.Down {
			privacyDown++
		}
	}
	if privacyDown == 0 {
		t.Fatalf("no flip moved privacy down: %+v", drift.Flips)
	}
	sess := &app.Session{Config: e.Config, Corpus: e.Corpus, Store: e.Store}
	for _, c := range []struct {
		lo, hi int
		attr   string
		reason string
	}{
		{30, 10, attribution.Provider, fmt.Sprintf("event %d (score_drift, mixed) moved the scores of %d probe(s) on sim-a down, on identical probe bytes and without a verdict flip, from run 4", drift.ID, privacyDown)},
		{10, 30, attribution.Inconclusive, "moved privacy on sim-a the other way"},
	} {
		var b strings.Builder
		hourlyJSONL(&b, "sim-a", "privacy", 10, 3, c.lo, c.hi)
		rep, err := app.Attribute(ctx, sess, &attribution.JSONL{Name: "p.jsonl", R: strings.NewReader(b.String())}, attribution.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Changes) != 1 {
			t.Fatalf("changes: %+v", rep.Changes)
		}
		got := rep.Changes[0]
		if got.Attribution != c.attr || len(got.Events) != 1 || got.Events[0] != drift.ID || !strings.Contains(got.Reason, c.reason) {
			t.Errorf("privacy %d→%d: %s %v: %s\nwant %s: …%s…", c.lo, c.hi, got.Attribution, got.Events, got.Reason, c.attr, c.reason)
		}
	}
}

// LoadHistory hands attribution, per flip, what detection knows of it: the
// last run that answered its old verdict (where its window opens), the run
// its baseline rests on, and how it left its event — withdrawn as
// nondeterministic (no evidence) or moved on (no flip back) — as
// diff.ListEvents reads them.
func TestAttributeLoadHistoryCarriesFlipProvenance(t *testing.T) {
	for _, c := range []struct {
		name, config string
		runs         int
		want         func(p diff.EventProbe) bool // at least one probe has it
	}{
		// violence tightened hard at run 3, then loosened below the
		// original threshold at run 12: the probes that had moved to the
		// input filter moved on.
		{"moved on", `
targets:
  - name: sim-a
    provider: sim
    model: sim-large
    sim:
      policies:
        - {from_run: 1, thresholds: {violence: 0.5}}
        - {from_run: 3, thresholds: {violence: 0.01}}
        - {from_run: 12, thresholds: {violence: 0.9}}
`, 14, func(p diff.EventProbe) bool { return p.MovedOn && p.RevertedRun != 0 }},
		// violence flapping: the policy_change's flips are withdrawn.
		{"withdrawn", `
targets:
  - name: t
    provider: sim
    model: sim-large
    sim:
      policies:
        - {from_run: 1, thresholds: {violence: 0.5}, fingerprint: fp-a}
        - {from_run: 3, thresholds: {violence: 0.3}}
        - {from_run: 4, thresholds: {violence: 0.5}}
        - {from_run: 5, thresholds: {violence: 0.3}}
        - {from_run: 7, thresholds: {violence: 0.5}}
        - {from_run: 8, thresholds: {violence: 0.3}}
`, 10, func(p diff.EventProbe) bool { return p.Withdrawn && p.RevertedRun != 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := testenv.New(t, c.config)
			runHourly(t, e, c.runs)
			ctx := context.Background()
			evs, err := diff.ListEvents(ctx, e.Store, diff.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			h, err := app.LoadHistory(ctx, e.Store, e.Corpus, e.Config.ConfirmRuns, e.Config.Detection.ScoreTolerance)
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Events) != len(evs) {
				t.Fatalf("%d events, the store lists %d", len(h.Events), len(evs))
			}
			seen, lastBefore := false, false
			for i, ev := range evs {
				if len(h.Events[i].Flips) != len(ev.Probes) {
					t.Fatalf("event %d: %d flips, %d probes", ev.ID, len(h.Events[i].Flips), len(ev.Probes))
				}
				for j, p := range ev.Probes {
					f := h.Events[i].Flips[j]
					if f.ProbeID != p.ProbeID || f.FirstRun != p.FirstRun || f.LastRunBefore != p.LastRunBefore || f.BeforeRun != p.BeforeRun ||
						f.RevertedRun != p.RevertedRun || f.Withdrawn != p.Withdrawn || f.MovedOn != p.MovedOn {
						t.Errorf("event %d: flip %+v, stored %s first %d last-before %d before %d reverted %d withdrawn %v moved on %v",
							ev.ID, f, p.ProbeID, p.FirstRun, p.LastRunBefore, p.BeforeRun, p.RevertedRun, p.Withdrawn, p.MovedOn)
					}
					seen = seen || c.want(p)
					lastBefore = lastBefore || p.LastRunBefore != 0
				}
			}
			if !seen || !lastBefore {
				t.Fatalf("no stored probe shows what the test is about (%s: %v, last_run_before: %v)", c.name, seen, lastBefore)
			}
		})
	}
}
