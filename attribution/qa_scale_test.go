package attribution_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/storage"
)

// verdictRead is one VerdictRows call: the target and runs it read.
type verdictRead struct {
	target int64
	runs   []int64
}

// countingStore counts what is read through it: every call of the
// VerdictStore methods and the verdict rows VerdictRows passes.
type countingStore struct {
	*storage.DB
	rows, tags, targets, perRun int
	reads                       []verdictRead
}

func (c *countingStore) VerdictRows(ctx context.Context, targetID int64, runIDs []int64, fn func(*storage.VerdictRow) error) error {
	c.reads = append(c.reads, verdictRead{targetID, slices.Sorted(slices.Values(runIDs))})
	return c.DB.VerdictRows(ctx, targetID, runIDs, func(r *storage.VerdictRow) error { c.rows++; return fn(r) })
}

func (c *countingStore) ProbeTags(ctx context.Context) (map[string][]string, error) {
	c.tags++
	return c.DB.ProbeTags(ctx)
}

func (c *countingStore) Targets(ctx context.Context) ([]storage.TargetRow, error) {
	c.targets++
	return c.DB.Targets(ctx)
}

func (c *countingStore) ObservationsWithDamage(ctx context.Context, run, target int64) ([]*storage.Observation, []storage.DamagedObservation, error) {
	c.perRun++
	return c.DB.ObservationsWithDamage(ctx, run, target)
}

// failingStore fails every verdict read with err.
type failingStore struct {
	*storage.DB
	err error
}

func (f failingStore) VerdictRows(context.Context, int64, []int64, func(*storage.VerdictRow) error) error {
	return f.err
}

// eagerReport is the report as app.Attribute made it before
// AttributeStore: every verdict of the span read first (LoadVerdicts),
// then Attribute. It returns the report's JSON and the rows read.
func eagerReport(t *testing.T, db *storage.DB, prod *attribution.Production, h attribution.History, tags map[string][]string) (string, int) {
	t.Helper()
	st := &countingStore{DB: db}
	if err := attribution.LoadVerdicts(context.Background(), st, prod, &h, tags); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(attribution.Attribute(prod, &h, attribution.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	return string(b), st.rows
}

func corpusTags(e *testenv.Env) map[string][]string {
	tags := map[string][]string{}
	for _, p := range e.Corpus.Probes {
		tags[p.ID] = p.Tags
	}
	return tags
}

// QA (scale): the per-run verdicts are only read by the "held still" check
// of a change point (stillness, per Change), but LoadVerdicts read every
// sample of every probe of every target in every complete run of the whole
// production span before any change point was looked for. Continuous
// attribution (an attribution: block) did this after every run: with the
// default since: 7d that is 168 runs x probes x targets rows per run, almost
// always for a report with no change at all (measured: 420k rows, ~6 s and
// 75 MB per run for 500 probes x 5 targets; 14d 117 MB, 28d 50 s and 200 MB).
// Here production counts are flat (no change point): AttributeStore, which
// app.Attribute uses, reads nothing from the store, and its report is the
// eager one.
func TestQAScaleAttributionReadsNoVerdictsWithoutAChange(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: a, provider: sim, model: sim-large}
  - {name: b, provider: sim, model: sim-large}
`)
	e.Runs(6)
	now := time.Now().UTC().Truncate(time.Hour)
	var b strings.Builder
	for h := -12; h <= 2; h++ {
		at := now.Add(time.Duration(h) * time.Hour).Format(time.RFC3339)
		for _, tg := range []string{"a", "b"} {
			fmt.Fprintf(&b, `{"time":%q,"target":%q,"category":"violence","blocked":20,"total":1000}`+"\n", at, tg)
		}
	}
	prod, err := attribution.ReadJSONL("flat.jsonl", strings.NewReader(b.String()), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := app.LoadHistory(ctx, e.Store, e.Corpus, e.Config.ConfirmRuns, e.Config.Detection.ScoreTolerance)
	if err != nil {
		t.Fatal(err)
	}
	st := &countingStore{DB: e.Store}
	rep, err := attribution.AttributeStore(ctx, st, prod, h, corpusTags(e), attribution.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changes) != 0 || rep.Series != 2 {
		t.Fatalf("flat series: %d series, %d changes, want 2 and none", rep.Series, len(rep.Changes))
	}
	if st.rows != 0 || len(st.reads) != 0 || st.perRun != 0 || st.tags != 0 || st.targets != 0 {
		t.Errorf("a report with no change read from the store: %d verdict rows in %d queries, %d per-run reads, %d tag reads, %d target reads; the verdicts only serve a change's held-still check",
			st.rows, len(st.reads), st.perRun, st.tags, st.targets)
	}
	got, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	want, eagerRows := eagerReport(t, e.Store, prod, *h, corpusTags(e))
	if string(got) != want {
		t.Errorf("report:\n%s\nwant (verdicts read first):\n%s", got, want)
	}
	if eagerRows == 0 {
		t.Errorf("the eager read read no rows: the test shows nothing")
	}
}

// QA (scale), with changes: a change explained by an event (provider)
// reads no verdicts; a change that reaches the held-still check reads its
// own target's verdicts in the compared runs, in one query, once however
// many of that target's series need them; a target whose series have no
// change is never read. Every report is the eager one to the byte.
func TestQAScaleAttributionReadsOnlyTheChangedTargets(t *testing.T) {
	e := testenv.New(t, testenv.AttributionConfig)
	for i := range 10 {
		at := testenv.AttributionT0.Add(time.Duration(i) * time.Hour)
		res, err := app.RunOnce(context.Background(), e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep, Now: func() time.Time { return at }})
		if err != nil || res.Summary.Status != storage.RunComplete {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	ctx := context.Background()
	h, err := app.LoadHistory(ctx, e.Store, e.Corpus, e.Config.ConfirmRuns, e.Config.Detection.ScoreTolerance)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	rows, err := e.Store.Targets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		ids[r.Name] = r.ID
	}
	var allRuns []int64
	for _, r := range h.Runs {
		allRuns = append(allRuns, r.ID)
	}
	// hourly: 10 hourly points of target/category, blocked per 1000
	// requests lo before hour jump and hi from it on.
	hourly := func(b *strings.Builder, target, category string, jump, lo, hi int) {
		for i := range 10 {
			v := lo
			if i >= jump {
				v = hi
			}
			fmt.Fprintf(b, `{"time":%q,"target":%q,"category":%q,"blocked":%d,"total":1000}`+"\n",
				testenv.AttributionT0.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), target, category, v)
		}
	}
	for _, c := range []struct {
		name   string
		series func(b *strings.Builder)
		attrs  []string      // the changes' attributions, in order
		reads  []verdictRead // the VerdictRows calls, in order
		tags   int           // ProbeTags calls
		all    bool          // every target read: as many rows as the eager read
	}{
		{name: "provider only: nothing read", series: func(b *strings.Builder) {
			hourly(b, "sim-a", "violence", 3, 10, 30) // the event's flips at run 4
			hourly(b, "sim-b", "violence", 10, 10, 10)
		}, attrs: []string{attribution.Provider}},
		{name: "traffic on sim-a: sim-a read once", series: func(b *strings.Builder) {
			hourly(b, "sim-a", "hate", 7, 5, 20)       // no flip anywhere near
			hourly(b, "sim-a", "harassment", 7, 5, 20) // the same runs: no second read
			hourly(b, "sim-a", "violence", 3, 10, 30)  // provider: reads nothing
			hourly(b, "sim-b", "violence", 10, 10, 10)
		}, attrs: []string{attribution.Traffic, attribution.Traffic, attribution.Provider},
			reads: []verdictRead{{ids["sim-a"], allRuns}}, tags: 1},
		{name: "traffic on both", series: func(b *strings.Builder) {
			hourly(b, "sim-a", "hate", 7, 5, 20)
			hourly(b, "sim-b", "violence", 3, 10, 30) // sim-b's probes held still at run 4
		}, attrs: []string{attribution.Traffic, attribution.Traffic},
			reads: []verdictRead{{ids["sim-a"], allRuns}, {ids["sim-b"], allRuns}}, tags: 1, all: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			c.series(&b)
			prod, err := attribution.ReadJSONL("p.jsonl", strings.NewReader(b.String()), []string{"sim-a", "sim-b"})
			if err != nil {
				t.Fatal(err)
			}
			st := &countingStore{DB: e.Store}
			rep, err := attribution.AttributeStore(ctx, st, prod, h, corpusTags(e), attribution.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var attrs []string
			for _, ch := range rep.Changes {
				attrs = append(attrs, ch.Attribution)
			}
			if !slices.Equal(attrs, c.attrs) {
				t.Fatalf("attributions %v, want %v: %+v", attrs, c.attrs, rep.Changes)
			}
			if fmt.Sprint(st.reads) != fmt.Sprint(c.reads) || st.tags != c.tags || st.perRun != 0 {
				t.Errorf("verdict reads (target, runs) %v, want %v; %d tag reads, want %d; %d per-run reads", st.reads, c.reads, st.tags, c.tags, st.perRun)
			}
			got, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			want, eagerRows := eagerReport(t, e.Store, prod, *h, corpusTags(e))
			if string(got) != want {
				t.Errorf("report:\n%s\nwant (verdicts read first):\n%s", got, want)
			}
			// The per-run path (a store without VerdictRows) reads the same.
			if perRun, err := attribution.AttributeStore(ctx, perRunStore{e.Store}, prod, h, corpusTags(e), attribution.Options{}); err != nil {
				t.Fatal(err)
			} else if b, _ := json.Marshal(perRun); string(b) != want {
				t.Errorf("per-run read:\n%s\nwant:\n%s", b, want)
			}
			// A failed read fails the report, wrapped.
			boom := errors.New("disk on fire")
			_, err = attribution.AttributeStore(ctx, failingStore{e.Store, boom}, prod, h, corpusTags(e), attribution.Options{})
			if len(c.reads) > 0 && !errors.Is(err, boom) || len(c.reads) == 0 && err != nil {
				t.Errorf("failing store: %v", err)
			}
			if st.rows > eagerRows || !c.all && st.rows >= eagerRows || c.all && st.rows != eagerRows {
				t.Errorf("%d verdict rows read, the eager read %d (every target read: %v)", st.rows, eagerRows, c.all)
			}
			t.Logf("%d verdict rows read in %d queries (eager: %d)", st.rows, len(st.reads), eagerRows)
		})
	}
}
