package evidence_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

func build(t *testing.T, e *testenv.Env, id int64) *evidence.Record {
	t.Helper()
	rec, err := evidence.Build(context.Background(), e.Store, id, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func byProbe(r *evidence.Record) map[string]evidence.Probe {
	m := map[string]evidence.Probe{}
	for _, p := range r.Probes {
		m[p.Target+"/"+p.ProbeID] = p
	}
	return m
}

// supportsEvent fails t for every observation of r that does not carry the
// verdict its event claims for its side, or does not say whether it does.
func supportsEvent(t *testing.T, r *evidence.Record) {
	t.Helper()
	for _, ep := range r.Event.Probes {
		p, ok := byProbe(r)[ep.Target+"/"+ep.ProbeID]
		if !ok {
			t.Errorf("%s: not in the record", ep.ProbeID)
			continue
		}
		for _, s := range []struct {
			name  string
			o     *evidence.Observation
			claim diff.Verdict
		}{{"before", p.Before, ep.Before}, {"after", p.After, ep.After}} {
			if s.o == nil {
				continue
			}
			if s.o.Verdict.Key() != s.claim.Key() || s.o.VerdictMatches == nil || !*s.o.VerdictMatches || s.o.Sample == nil {
				t.Errorf("%s %s: observation %d (sample %v) answered %s, the event claims %s (verdict_matches_event %v)",
					ep.ProbeID, s.name, s.o.ID, s.o.Sample, s.o.Verdict, s.claim, s.o.VerdictMatches)
			}
		}
	}
}

// observationWith returns a stored observation of ep's request bytes, up to
// its confirming run, whose verdict is v (0: none).
func observationWith(t *testing.T, e *testenv.Env, ep diff.EventProbe, v diff.Verdict) int64 {
	t.Helper()
	ctx := context.Background()
	rows, err := e.Store.SQL().QueryContext(ctx, `SELECT id FROM observations WHERE probe_id = ? AND request_sha256 = ? AND run_id <= ? ORDER BY id`,
		ep.ProbeID, ep.RequestSHA256, ep.ConfirmedRun)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		o, err := e.Store.Observation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if diff.VerdictOf(o.Result).Key() == v.Key() {
			return id
		}
	}
	return 0
}

// QA (2): the evidence of a nondeterminism event shows, for every probe,
// observations that carry the verdicts the event states — the answers
// that disagreed — whatever observation detection cited, and a before
// observation where the event cites none.
func TestNondeterminismEvidenceShowsTheDisagreeingAnswers(t *testing.T) {
	e := testenv.New(t, noisy)
	e.Runs(6)
	ev := eventOfKind(t, e, diff.KindNondeterminism)
	// Whatever detection cites today, make one probe cite, as its after
	// observation, an answer that carried its before verdict (what
	// detection did for a probe marked on disagreeing samples).
	var victim diff.EventProbe
	var wrong int64
	for _, ep := range ev.Probes {
		if ep.Before.Key() == ep.After.Key() {
			continue
		}
		if id := observationWith(t, e, ep, ep.Before); id != 0 && observationWith(t, e, ep, ep.After) != 0 {
			victim, wrong = ep, id
			break
		}
	}
	if wrong == 0 {
		t.Fatal("no probe with both verdicts stored")
	}
	exec(t, e, `UPDATE event_probes SET after_obs = ? WHERE event_id = ? AND probe_id = ?`, wrong, ev.ID, victim.ProbeID)

	rec := build(t, e, ev.ID)
	if err := evidence.Verify(rec); err != nil || !rec.AllVerified {
		t.Fatalf("verify: %v (all_verified %v)", err, rec.AllVerified)
	}
	supportsEvent(t, rec)
	p := byProbe(rec)[victim.Target+"/"+victim.ProbeID]
	if p.After == nil || p.After.ID == wrong || p.After.CitedID != wrong || !strings.Contains(p.After.Selection, fmt.Sprintf("cites observation %d", wrong)) {
		t.Fatalf("after side of %s: %+v", victim.ProbeID, p.After)
	}
	if p.Before == nil {
		t.Errorf("%s: no before observation although one carrying %s is stored: %s", victim.ProbeID, victim.Before, p.BeforeAbsent)
	}
	// A probe citing no before observation (no baseline held) shows the
	// answer that carried its before verdict.
	for _, ep := range ev.Probes {
		if q := byProbe(rec)[ep.Target+"/"+ep.ProbeID]; ep.BeforeObs == 0 && ep.Before.Class != "" && observationWith(t, e, ep, ep.Before) != 0 &&
			(q.Before == nil || q.Before.Selection == "" || q.BeforeAbsent != "") {
			t.Errorf("%s: before verdict %s stored but not shown: %+v %q", ep.ProbeID, ep.Before, q.Before, q.BeforeAbsent)
		}
	}
	md := markdown(rec)
	if !strings.Contains(md, "shown in place of what the event cites") || !strings.Contains(md, " sample ") {
		t.Errorf("text does not say which observation replaced the cited one:\n%s", md)
	}
	b := writeLikeTheCLI(t, rec)
	if _, err := evidence.VerifyJSON(b); err != nil {
		t.Fatalf("VerifyJSON: %v", err)
	}

	// When no stored answer carries the claimed verdict any more: retention
	// deleted it (the run is marked pruned) is an absence; otherwise the
	// cited observation is shown, and its verdict is a problem.
	exec(t, e, `DELETE FROM observations WHERE probe_id = ? AND id NOT IN (?, ?) AND class = ?`, victim.ProbeID, wrong, victim.BeforeObs, string(victim.After.Class))
	rec = build(t, e, ev.ID)
	p = byProbe(rec)[victim.Target+"/"+victim.ProbeID]
	if rec.AllVerified || p.After == nil || p.After.ID != wrong || p.After.VerdictMatches == nil || *p.After.VerdictMatches {
		t.Fatalf("claimed verdict stored nowhere, runs not pruned: all_verified %v, after %+v", rec.AllVerified, p.After)
	}
	var ue *evidence.UnverifiedError
	if err := evidence.Verify(rec); !errors.As(err, &ue) || !strings.Contains(err.Error(), fmt.Sprintf("after observation %d", wrong)) {
		t.Fatalf("verify: %v", err)
	}
	exec(t, e, `UPDATE runs SET pruned = 'observations'`)
	rec = build(t, e, ev.ID)
	p = byProbe(rec)[victim.Target+"/"+victim.ProbeID]
	if err := evidence.Verify(rec); err != nil || p.After != nil || !strings.Contains(p.AfterAbsent, "retention deleted") || !p.Request.Verified {
		t.Fatalf("claimed verdict pruned: verify %v, after %+v, absent %q, request %+v", err, p.After, p.AfterAbsent, p.Request)
	}
}

// QA (3): an observation whose recorded verdict is not the one the event
// claims — the observation edited (tamper A), or the event's claim edited
// (tamper B) — makes the record not verify, naming the probe, the
// observation, the claim and the recorded verdict.
func TestVerdictNotTheEventsClaimDoesNotVerify(t *testing.T) {
	for _, tamper := range []string{"observation", "event"} {
		t.Run(tamper, func(t *testing.T) {
			e := testenv.New(t, violence)
			e.Runs(4)
			ev := eventOfKind(t, e, diff.KindPolicy)
			ep := ev.Probes[0]
			var want string
			if tamper == "observation" {
				exec(t, e, `UPDATE observations SET class = 'allowed', categories = '' WHERE id = ?`, ep.AfterObs)
				want = fmt.Sprintf("%s/%s: after observation %d (run %d) recorded verdict allowed, but the event claims after %s", ep.Target, ep.ProbeID, ep.AfterObs, ep.ConfirmedRun, ep.After)
			} else {
				exec(t, e, `UPDATE event_probes SET after = 'blocked_input|hate' WHERE event_id = ? AND probe_id = ?`, ev.ID, ep.ProbeID)
				want = fmt.Sprintf("%s/%s: after observation %d (run %d) recorded verdict %s, but the event claims after blocked_input[hate]", ep.Target, ep.ProbeID, ep.AfterObs, ep.ConfirmedRun, ep.After)
			}
			rec := build(t, e, ev.ID)
			if rec.AllVerified {
				t.Fatal("all_verified with an observation contradicting the event")
			}
			if ps := rec.Problems(); len(ps) != 1 || ps[0] != want {
				t.Fatalf("problems %q, want %q", ps, want)
			}
			if p := byProbe(rec)[ep.Target+"/"+ep.ProbeID]; p.After == nil || p.After.VerdictMatches == nil || *p.After.VerdictMatches || p.After.CitedID != 0 {
				t.Fatalf("after: %+v", p.After)
			}
			var ue *evidence.UnverifiedError
			if _, err := evidence.VerifyJSON(writeLikeTheCLI(t, rec)); !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
				t.Fatalf("VerifyJSON: %v", err)
			}
			if md := markdown(rec); !strings.Contains(md, "record verifies (all_verified): false") || !strings.Contains(md, "DOES NOT VERIFY: the event claims after") {
				t.Errorf("text:\n%s", md)
			}
		})
	}
}

// QA (7): observations the event cites that the database does not hold
// (retention keeps them) make the record not verify; they are not counted
// as legitimately absent.
func TestMissingCitedObservationDoesNotVerify(t *testing.T) {
	e := testenv.New(t, violence)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindPolicy)
	exec(t, e, `DELETE FROM observations WHERE id IN (SELECT before_obs FROM event_probes UNION SELECT after_obs FROM event_probes)`)
	rec := build(t, e, ev.ID)
	if rec.AllVerified || len(rec.Problems()) != 2*len(ev.Probes) {
		t.Fatalf("all_verified %v, problems %q", rec.AllVerified, rec.Problems())
	}
	ep := ev.Probes[0]
	p := byProbe(rec)[ep.Target+"/"+ep.ProbeID]
	if p.Before != nil || !strings.Contains(p.BeforeProblem, fmt.Sprintf("observation %d, which the event cites as its before observation, is not in the database", ep.BeforeObs)) ||
		p.AfterProblem == "" || p.AfterAbsent == "" {
		t.Fatalf("probe: %+v", p)
	}
	var ue *evidence.UnverifiedError
	if err := evidence.Verify(rec); !errors.As(err, &ue) {
		t.Fatalf("verify: %v", err)
	}
	md := markdown(rec)
	if !strings.Contains(md, "every observation the event cites is in the database: false") || strings.Contains(md, "absent, so not checked") ||
		!strings.Contains(md, "OBSERVATION MISSING") {
		t.Errorf("text:\n%s", md)
	}
}

// QA (9): reverted and withdrawn probes say so, with the run, in the
// record and the text, and the text gives the event's history.
func TestRevertsAndHistoryInTheRecord(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: p1, provider: sim, model: m, sim: {policies: [{from_run: 1, thresholds: {violence: 0.5}}, {from_run: 3, thresholds: {violence: 0.1}}, {from_run: 6, thresholds: {violence: 0.5}}]}}
  - {name: p2, provider: sim, model: m, sim: {policies: [{from_run: 1, thresholds: {violence: 0.5}}, {from_run: 3, thresholds: {violence: 0.1}}]}}
`)
	e.Runs(7)
	ev := eventOfKind(t, e, diff.KindPolicy)
	rec := build(t, e, ev.ID)
	if err := evidence.Verify(rec); err != nil {
		t.Fatal(err)
	}
	reverted := 0
	for _, p := range rec.Probes {
		if p.Target == "p1" {
			if !p.Reverted || p.RevertedRun != 7 {
				t.Errorf("%s/%s: reverted %v in run %d, want run 7", p.Target, p.ProbeID, p.Reverted, p.RevertedRun)
			}
			reverted++
		} else if p.Reverted || p.RevertedRun != 0 {
			t.Errorf("%s/%s: reverted %v in run %d", p.Target, p.ProbeID, p.Reverted, p.RevertedRun)
		}
	}
	if reverted == 0 || len(rec.Event.Updates) < 3 {
		t.Fatalf("%d reverted probes, %d updates", reverted, len(rec.Event.Updates))
	}
	md := markdown(rec)
	for _, want := range []string{"## History", "`partially_reverted`, target `p1`", "`target_joined`, target `p2`",
		fmt.Sprintf("partially reverted: %d of %d probe(s)", reverted, len(rec.Probes)), "**reverted in run 7**"} {
		if !strings.Contains(md, want) {
			t.Errorf("text lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "**reverted in run 7**"); n != reverted {
		t.Errorf("%d probes said reverted in the text, %d are", n, reverted)
	}
}

// QA (12): a record carrying a key twice (a first-wins reader reads
// another record than the one hashed) or a key spelt otherwise than the
// record spells it (encoding/json reads keys in any case) fails
// verification (exit 1: tampered), and is not taken for a non-record.
func TestVerifyRejectsDuplicateAndMisspeltKeys(t *testing.T) {
	e := testenv.New(t, violence)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindPolicy)
	b := string(writeLikeTheCLI(t, build(t, e, ev.ID)))
	if _, err := evidence.VerifyJSON([]byte(b)); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(b, `"all_verified": true`)
	for name, in := range map[string]string{
		"duplicate":         b[:i] + `"all_verified": false, ` + b[i:],
		"folded duplicate":  b[:i] + `"ALL_VERIFIED": false, ` + b[i:],
		"kelvin duplicate":  strings.Replace(b, `"kind":`, "\"\u212aind\": \"x\", \"kind\":", 1),
		"nested duplicate":  strings.Replace(b, `"reverted": false`, `"reverted": true, "reverted": false`, 1),
		"case":              strings.Replace(b, `"all_verified"`, `"All_Verified"`, 1),
		"duplicate in list": strings.Replace(b, `"probe_id":`, `"probe_id": "x", "probe_id":`, 1),
	} {
		var nr *evidence.NotRecordError
		_, err := evidence.VerifyJSON([]byte(in))
		if err == nil || errors.As(err, &nr) || !strings.Contains(err.Error(), "not covered by record_sha256") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A format 2 record's verdict_matches_event must agree with its verdicts;
// a format 1 record (written before verdicts were checked) still verifies
// when its observations carry its event's verdicts, and fails, saying why,
// when they do not.
func TestVerifyChecksVerdictClaims(t *testing.T) {
	e := testenv.New(t, violence)
	e.Runs(4)
	rec := build(t, e, eventOfKind(t, e, diff.KindPolicy).ID)
	if rec.Format != evidence.Format {
		t.Fatalf("format %q", rec.Format)
	}
	var r evidence.Record
	json.Unmarshal(writeLikeTheCLI(t, rec), &r)
	f := false
	r.Probes[0].After.VerdictMatches = &f
	r.Rehash()
	if err := evidence.Verify(&r); err == nil || !strings.Contains(err.Error(), "verdict_matches_event") {
		t.Errorf("verdict_matches_event false over a matching verdict: %v", err)
	}

	b := previousRecord(t)
	if err := json.Unmarshal(b, &r); err != nil || r.Format != evidence.FormatV1 {
		t.Fatalf("%v %q", err, r.Format)
	}
	r.Event.Probes[0].After = diff.Verdict{Class: "allowed", Categories: []string{}}
	r.Rehash()
	var ue *evidence.UnverifiedError
	if err := evidence.Verify(&r); !errors.As(err, &ue) || !ue.Format1 || !strings.Contains(err.Error(), "but the event claims after allowed") ||
		!strings.Contains(err.Error(), evidence.FormatV1) {
		t.Errorf("format 1 record whose observation contradicts its event: %v", err)
	}
	// A format 1 writer showed sample 0 for a nondeterminism event, which
	// often carries the other answer: such a record, untouched, verifies.
	r.Event.Kind = diff.KindNondeterminism
	r.Rehash()
	if err := evidence.Verify(&r); err != nil {
		t.Errorf("format 1 nondeterminism record showing the other answer: %v", err)
	}

	// A format 1 writer called an observation the event cites that the
	// database lacked absent; one the event cites none for is absent.
	for _, cites := range []bool{true, false} {
		r = evidence.Record{}
		json.Unmarshal(b, &r)
		ep := &r.Event.Probes[0]
		var p *evidence.Probe
		for i := range r.Probes {
			if r.Probes[i].Target == ep.Target && r.Probes[i].ProbeID == ep.ProbeID {
				p = &r.Probes[i]
			}
		}
		p.After, p.SameBytes = nil, false
		p.AfterAbsent = fmt.Sprintf("observation %d is no longer in the database", ep.AfterObs)
		if !cites {
			ep.AfterObs = 0
			p.AfterAbsent = "the event recorded no after observation for this probe"
		}
		r.Rehash()
		err := evidence.Verify(&r)
		if cites && (!errors.As(err, &ue) || !ue.Format1 || !strings.Contains(err.Error(), "was not in the database when the record was written")) {
			t.Errorf("format 1 record missing a cited observation: %v", err)
		}
		if !cites && err != nil {
			t.Errorf("format 1 record with a side the event cites none for: %v", err)
		}
	}
}

// A score drift's record shows the scores it claims: the before answer
// carries the scores it moved from, the after answer those it moved to. A
// before side citing an answer that already carries the new score (what
// detection cited when the scores moved with a model change) does not
// verify.
func TestScoreDriftClaimsAreTheCitedScores(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    sim: {policies: [{from_run: 4, score_shift: {privacy: -0.2}}]}
`)
	e.Runs(6)
	ev := eventOfKind(t, e, diff.KindScoreDrift)
	if rec := build(t, e, ev.ID); !rec.AllVerified {
		t.Fatalf("untouched score drift does not verify: %q", rec.Problems())
	}
	ep := ev.Probes[0]
	if len(ep.ScoreMoves) == 0 {
		t.Fatalf("score drift without moves: %+v", ep)
	}
	exec(t, e, `UPDATE event_probes SET before_obs = after_obs WHERE event_id = ? AND probe_id = ?`, ev.ID, ep.ProbeID)
	rec := build(t, e, ev.ID)
	want := fmt.Sprintf("%s/%s: before observation %d (run %d) carries %q score", ep.Target, ep.ProbeID, ep.AfterObs, ep.ConfirmedRun, ep.ScoreMoves[0].Key)
	if ps := rec.Problems(); rec.AllVerified || len(ps) == 0 || !strings.HasPrefix(ps[0], want) || !strings.Contains(ps[0], "but the event claims it moved from") {
		t.Fatalf("before side citing the after answer: all_verified %v, problems %q (want one starting %q)", rec.AllVerified, ps, want)
	}
}

// A format-3 record (written before scores were checked) of a score drift
// whose before side already carried the new score still verifies: its
// writer did not check scores, and the file is what it was.
func TestFormat3ScoreDriftStillVerifies(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    sim: {policies: [{from_run: 4, score_shift: {privacy: -0.2}}]}
`)
	e.Runs(6)
	ev := eventOfKind(t, e, diff.KindScoreDrift)
	ep := ev.Probes[0]
	exec(t, e, `UPDATE event_probes SET before_obs = after_obs WHERE event_id = ? AND probe_id = ?`, ev.ID, ep.ProbeID)
	rec := build(t, e, ev.ID)
	if rec.AllVerified {
		t.Fatal("format 4: a before side carrying the after score verifies")
	}
	rec.Format = evidence.FormatV3
	rec.AllVerified = len(rec.Problems()) == 0
	if err := rec.Rehash(); err != nil {
		t.Fatal(err)
	}
	if !rec.AllVerified {
		t.Fatalf("format 3 problems: %q", rec.Problems())
	}
	if _, err := evidence.VerifyJSON(writeLikeTheCLI(t, rec)); err != nil {
		t.Errorf("format 3 record: %v", err)
	}
}
