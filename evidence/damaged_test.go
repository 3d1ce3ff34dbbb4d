package evidence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// An observation the event cites whose row is damaged (a column not of the
// type the schema means) does not fail the record: the side is a problem
// naming the observation, the column and what it holds; nothing of the row
// is shown; the record does not verify, also after a JSON round trip.
// Before, Build failed with "sql: Scan error on column index 18".
func TestDamagedCitedObservationIsAProblem(t *testing.T) {
	for _, c := range []struct {
		side, set, want string
	}{
		{"after", `http_status = 'x'`, `column http_status holds text "x", not an integer`},
		{"after", `sample = 'x'`, `column sample holds text "x", not an integer`},
		{"before", `body_truncated = 'x'`, `column body_truncated holds text "x", not 0 or 1`},
		{"before", `latency_ms = 'abc'`, `column latency_ms holds text "abc", not a number`},
	} {
		t.Run(c.side+" "+c.set, func(t *testing.T) {
			e := testenv.New(t, violence)
			e.Runs(4)
			ev := eventOfKind(t, e, diff.KindPolicy)
			ep := ev.Probes[0]
			cited := ep.AfterObs
			if c.side == "before" {
				cited = ep.BeforeObs
			}
			exec(t, e, `UPDATE observations SET `+c.set+` WHERE id = ?`, cited)
			rec, err := evidence.Build(context.Background(), e.Store, ev.ID, e.Store.Now())
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			want := fmt.Sprintf("observation %d, which the event cites as its %s observation, is damaged (%s): its row cannot be read as an observation; driftprobe db check lists it", cited, c.side, c.want)
			p := byProbe(rec)[ep.Target+"/"+ep.ProbeID]
			shown, other, problem, absent := p.After, p.Before, p.AfterProblem, p.AfterAbsent
			if c.side == "before" {
				shown, other, problem, absent = p.Before, p.After, p.BeforeProblem, p.BeforeAbsent
			}
			if rec.AllVerified || shown != nil || problem != want || !strings.Contains(absent, fmt.Sprintf("observation %d is damaged", cited)) {
				t.Fatalf("all_verified %v, %s shown %+v, problem %q, absent %q", rec.AllVerified, c.side, shown, problem, absent)
			}
			// The other side is shown and checked; the request bytes are
			// read from it.
			if other == nil || other.Problem != "" || other.VerdictMatches == nil || !*other.VerdictMatches || !p.Request.Verified {
				t.Errorf("other side %+v, request %+v", other, p.Request)
			}
			if ps := rec.Problems(); len(ps) != 1 || ps[0] != fmt.Sprintf("%s/%s: %s: %s", ep.Target, ep.ProbeID, c.side, want) {
				t.Errorf("problems: %q", ps)
			}
			var ue *evidence.UnverifiedError
			if _, err := evidence.VerifyJSON(writeLikeTheCLI(t, rec)); !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
				t.Errorf("VerifyJSON: %v", err)
			}
			if md := markdown(rec); !strings.Contains(md, "record verifies (all_verified): false") || !strings.Contains(md, c.want) {
				t.Errorf("text:\n%s", md)
			}
		})
	}
}

// With both cited observations damaged, and the nearest other stored copy
// of the same request too, the request bytes come from a sound copy: a
// damaged row is never read for them.
func TestDamagedRowsNeverSupplyRequestBytes(t *testing.T) {
	e := testenv.New(t, violence)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindPolicy)
	ep := ev.Probes[0]
	var nearest int64
	if err := e.Store.SQL().QueryRow(`SELECT o.id FROM observations o JOIN targets t ON t.id = o.target_id WHERE t.name = ? AND o.probe_id = ? AND o.request_sha256 = ?
		AND o.id NOT IN (?, ?) ORDER BY ABS(o.run_id - ?), o.sample, o.id LIMIT 1`, ep.Target, ep.ProbeID, ep.RequestSHA256, ep.BeforeObs, ep.AfterObs, ep.ConfirmedRun).Scan(&nearest); err != nil {
		t.Fatal(err)
	}
	exec(t, e, `UPDATE observations SET attempts = 'many' WHERE id IN (?, ?, ?)`, ep.BeforeObs, ep.AfterObs, nearest)
	rec := build(t, e, ev.ID)
	p := byProbe(rec)[ep.Target+"/"+ep.ProbeID]
	if rec.AllVerified || p.Before != nil || p.After != nil || p.BeforeProblem == "" || p.AfterProblem == "" {
		t.Fatalf("all_verified %v, before %+v (%q), after %+v (%q)", rec.AllVerified, p.Before, p.BeforeProblem, p.After, p.AfterProblem)
	}
	if !p.Request.Verified || p.Request.ObservationID == 0 || p.Request.ObservationID == nearest || p.Request.ObservationID == ep.BeforeObs || p.Request.ObservationID == ep.AfterObs {
		t.Errorf("request %+v (damaged: %d, %d, %d)", p.Request, ep.BeforeObs, ep.AfterObs, nearest)
	}
	if len(rec.Problems()) != 2 {
		t.Errorf("problems: %q", rec.Problems())
	}
}

// A nondeterminism event's damaged cited observation is not replaced by
// another answer of the same bytes (which would hide the damage): it is a
// problem.
func TestDamagedNondeterminismObservationIsNotReplaced(t *testing.T) {
	e := testenv.New(t, noisy)
	e.Runs(6)
	ev := eventOfKind(t, e, diff.KindNondeterminism)
	var ep diff.EventProbe
	for _, q := range ev.Probes {
		if q.AfterObs != 0 {
			ep = q
			break
		}
	}
	if ep.AfterObs == 0 {
		t.Fatal("no probe citing an after observation")
	}
	exec(t, e, `UPDATE observations SET stage = 'middle' WHERE id = ?`, ep.AfterObs)
	rec := build(t, e, ev.ID)
	p := byProbe(rec)[ep.Target+"/"+ep.ProbeID]
	if rec.AllVerified || p.After != nil || !strings.Contains(p.AfterProblem, `is damaged (column stage holds text "middle", not a verdict stage)`) {
		t.Fatalf("all_verified %v, after %+v, problem %q", rec.AllVerified, p.After, p.AfterProblem)
	}
}
