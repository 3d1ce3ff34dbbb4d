package attribution_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// perRunStore hides *storage.DB's VerdictRows: LoadVerdicts reads it run
// by run through ObservationsWithDamage, as it did before VerdictRows.
type perRunStore struct{ db *storage.DB }

func (s perRunStore) Targets(ctx context.Context) ([]storage.TargetRow, error) {
	return s.db.Targets(ctx)
}

func (s perRunStore) ObservationsWithDamage(ctx context.Context, run, target int64) ([]*storage.Observation, []storage.DamagedObservation, error) {
	return s.db.ObservationsWithDamage(ctx, run, target)
}

func (s perRunStore) ProbeTags(ctx context.Context) (map[string][]string, error) {
	return s.db.ProbeTags(ctx)
}

// span is a one-point series of target covering [from, to).
func span(target string, from, to time.Time) *attribution.Series {
	return &attribution.Series{Segment: attribution.Segment{Target: target, Category: "violence"},
		Points: []attribution.Point{{Time: from}}, Step: to.Sub(from)}
}

// LoadVerdicts reads the same verdicts from a real store through
// VerdictRows as through ObservationsWithDamage run by run: sim runs with
// a policy change, some rows damaged in various columns, one target's
// series covering only some runs, an aborted run.
func TestLoadVerdictsNarrowReadMatchesPerRun(t *testing.T) {
	ctx := context.Background()
	e := testenv.New(t, testenv.AttributionConfig)
	e.Runs(6)
	raw, err := sql.Open("sqlite", "file:"+e.Config.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// Damage verdict rows that the loaders read: sim-a's (its series spans
	// every run), outside run 3 (marked aborted below). Which target a
	// low id belongs to depends on which answers arrived first.
	const readRows = `SELECT id FROM observations WHERE target_id = (SELECT id FROM targets WHERE name = 'sim-a') AND run_id != 3
		AND class NOT IN ('transient', 'client_error', 'filter_unavailable')`
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM (` + readRows + `)`).Scan(&n); err != nil || n < 40 {
		t.Fatalf("%d observations, %v", n, err)
	}
	for i, set := range []string{`class = 'allowee'`, `signals = X'01ff'`, `observed_at = 'yesterday'`, `stage = 'middle'`,
		`http_status = 'x'`, `message = 5`, `categories = X'68617465'`, `heuristic = 2`} {
		q := fmt.Sprintf(`UPDATE observations SET %s WHERE id = (%s ORDER BY id LIMIT 1 OFFSET %d)`, set, readRows, 3+i*(n/10))
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	h, err := app.LoadHistory(ctx, e.Store, e.Corpus, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 6 {
		t.Fatalf("%d runs", len(h.Runs))
	}
	h.Runs[2].Aborted = true
	last := h.Runs[5].StartedAt.Add(time.Second)
	p := &attribution.Production{Series: []*attribution.Series{
		span("sim-a", h.Runs[0].StartedAt, last),
		span("sim-b", h.Runs[1].StartedAt, h.Runs[4].StartedAt), // runs 2–4
		span("sim-c", h.Runs[0].StartedAt, last),                // never run
	}}
	tags := map[string][]string{"x": {"violence"}}
	hOld, hNew := *h, *h
	if err := attribution.LoadVerdicts(ctx, perRunStore{e.Store}, p, &hOld, tags); err != nil {
		t.Fatal(err)
	}
	if err := attribution.LoadVerdicts(ctx, e.Store, p, &hNew, tags); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hNew.Verdicts, hOld.Verdicts) {
		t.Fatalf("narrow read:\n%v\nper-run read:\n%v", hNew.Verdicts, hOld.Verdicts)
	}
	if !reflect.DeepEqual(hNew.ProbeTags, hOld.ProbeTags) {
		t.Errorf("tags differ")
	}
	verdicts, blocks := 0, 0
	for _, byRun := range hNew.Verdicts {
		for _, vs := range byRun {
			verdicts += len(vs)
			for _, v := range vs {
				if !strings.HasPrefix(v.Verdict, "allowed|") {
					blocks++
				}
			}
		}
	}
	if len(hNew.Verdicts["sim-a"]) != 5 || len(hNew.Verdicts["sim-b"]) != 2 || len(hNew.Verdicts["sim-c"]) != 0 || verdicts < 40 || blocks == 0 {
		t.Errorf("runs read: sim-a %d, sim-b %d, sim-c %d; %d verdicts, %d blocks", len(hNew.Verdicts["sim-a"]), len(hNew.Verdicts["sim-b"]), len(hNew.Verdicts["sim-c"]), verdicts, blocks)
	}
	// Every damaged row left the verdicts: 8 fewer than sound rows would give.
	if _, err := raw.Exec(`UPDATE observations SET class = 'blocked_output' WHERE class = 'allowee'`); err != nil {
		t.Fatal(err)
	}
	hFixed := *h
	if err := attribution.LoadVerdicts(ctx, e.Store, p, &hFixed, tags); err != nil {
		t.Fatal(err)
	}
	if hFixed.Verdicts["sim-a"] == nil || reflect.DeepEqual(hFixed.Verdicts, hNew.Verdicts) {
		t.Errorf("repairing a damaged class changed nothing")
	}
}

// BenchmarkLoadVerdictsWindow reads the verdicts of 48 hourly runs × 3
// targets × 300 probes (43,200 observations shaped like real ones), the
// way a run with an attribution block does: "narrow" through VerdictRows,
// "per-run" through ObservationsWithDamage as before.
func BenchmarkLoadVerdictsWindow(b *testing.B) {
	const runs, targets, nprobes = 48, 3, 300
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cats := []string{"hate", "harassment", "self_harm", "sexual", "violence", "illicit", "privacy", "jailbreak", "weapons", "other"}
	h := &attribution.History{}
	p := &attribution.Production{}
	var tids []int64
	for t := 0; t < targets; t++ {
		name := fmt.Sprintf("prod-%d", t)
		id, err := db.EnsureTarget(ctx, storage.TargetRow{Name: name, Provider: "sim"})
		if err != nil {
			b.Fatal(err)
		}
		tids = append(tids, id)
		p.Series = append(p.Series, span(name, t0, t0.Add(runs*time.Hour)))
	}
	for r := 0; r < runs; r++ {
		at := t0.Add(time.Duration(r) * time.Hour)
		run, err := db.BeginRun(ctx, storage.Run{StartedAt: at, CorpusName: "c", CorpusVersion: "1"})
		if err != nil {
			b.Fatal(err)
		}
		st := map[string]string{}
		for t, tid := range tids {
			st[fmt.Sprintf("prod-%d", t)] = attribution.StatusComplete
			var obs []*storage.Observation
			for i := 0; i < nprobes; i++ {
				var sigs []probes.Signal
				for k, c := range cats {
					sigs = append(sigs, probes.Signal{Category: c, Raw: strings.ToUpper(c), Score: float64((i+k*13)%100) / 100, HasScore: true, Fired: (i+k)%7 == 0})
				}
				res := probes.Result{Class: probes.Allowed, Signals: sigs, ModelID: "sim-large", RequestID: fmt.Sprintf("req-%d-%d-%d", r, t, i)}
				switch i % 5 {
				case 0:
					res.Class, res.Stage, res.Categories = probes.BlockedOutput, probes.StageOutput, []string{cats[i%len(cats)], "violence"}
				case 1:
					res.Class, res.Stage, res.Categories = probes.BlockedInput, probes.StageInput, []string{cats[i%len(cats)]}
				}
				obs = append(obs, &storage.Observation{RunID: run, TargetID: tid, ProbeID: fmt.Sprintf("probe-%04d", i), ProbeSHA256: fmt.Sprintf("%064d", i),
					RequestSHA256: fmt.Sprintf("%064x", i), RequestMethod: "POST", RequestPath: "/v1/chat/completions", HTTPStatus: 200,
					Result: res, Latency: 120 * time.Millisecond, Attempts: 1, ObservedAt: at})
			}
			if err := db.InsertObservations(ctx, obs); err != nil {
				b.Fatal(err)
			}
		}
		h.Runs = append(h.Runs, attribution.Run{ID: run, StartedAt: at, Targets: st})
	}
	for _, c := range []struct {
		name string
		st   attribution.VerdictStore
	}{{"narrow", db}, {"per-run", perRunStore{db}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				hh := *h
				if err := attribution.LoadVerdicts(ctx, c.st, p, &hh, nil); err != nil {
					b.Fatal(err)
				}
				if n := len(hh.Verdicts["prod-0"][h.Runs[0].ID]); n != nprobes {
					b.Fatalf("%d verdicts", n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(runs*targets*nprobes), "ns/verdict")
		})
	}
}
