package evidence_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

const twoTargets = `
targets:
  - name: a
    provider: sim
    model: m
    sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}
  - name: b
    provider: sim
    model: m
    sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}
`

// readBack is rec as --verify reads it from a file the CLI wrote.
func readBack(t *testing.T, rec *evidence.Record) *evidence.Record {
	t.Helper()
	var r evidence.Record
	if err := json.Unmarshal(writeLikeTheCLI(t, rec), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// rewritten is r written again after an edit, its record_sha256 recomputed
// the way the record's own hashing does (what a forger or a careless
// hand edit that re-hashes produces).
func rewritten(t *testing.T, r *evidence.Record) []byte {
	t.Helper()
	if err := r.Rehash(); err != nil {
		t.Fatal(err)
	}
	return writeLikeTheCLI(t, r)
}

// A format 5 record names, for every observation shown, the target and
// probe it is an observation of, and an untouched one verifies.
func TestFormat5NamesEveryObservationsTargetAndProbe(t *testing.T) {
	e := testenv.New(t, twoTargets)
	e.Runs(4)
	rec := build(t, e, eventOfKind(t, e, diff.KindPolicy).ID)
	if rec.Format != "driftprobe-evidence/5" || !rec.AllVerified {
		t.Fatalf("format %q, all_verified %v: %q", rec.Format, rec.AllVerified, rec.Problems())
	}
	if len(rec.Event.Targets) < 2 {
		t.Fatalf("the event spans %q: want both targets", rec.Event.Targets)
	}
	shown := 0
	for _, p := range rec.Probes {
		for _, o := range []*evidence.Observation{p.Before, p.After} {
			if o == nil {
				continue
			}
			shown++
			if o.Target != p.Target || o.ProbeID != p.ProbeID {
				t.Errorf("%s/%s: observation %d names %q/%q", p.Target, p.ProbeID, o.ID, o.Target, o.ProbeID)
			}
		}
	}
	if shown == 0 {
		t.Fatal("no observation shown")
	}
	b := writeLikeTheCLI(t, rec)
	if !strings.Contains(string(b), `"observation_id": `+fmt.Sprint(rec.Probes[0].Before.ID)+`,
        "target": "`+rec.Probes[0].Target+`",
        "probe_id": "`+rec.Probes[0].ProbeID+`",`) {
		t.Errorf("the written record does not name the observation's target and probe beside its id:\n%.3000s", b)
	}
	if _, err := evidence.VerifyJSON(b); err != nil {
		t.Errorf("an untouched format 5 record: %v", err)
	}
	if md := markdown(rec); !strings.Contains(md, "\n- every observation shown is of its flip's target and probe: true\n") {
		t.Errorf("text:\n%s", md)
	}
}

// A format 5 record one of whose observations is, by its target or
// probe_id, of another target or probe than its flip's does not verify,
// although its writer named no problem and every hash (the record's own
// recomputed) verifies: only the check of whose observation it is
// catches it.
func TestFormat5ObservationOfAnotherTargetOrProbeDoesNotVerify(t *testing.T) {
	e := testenv.New(t, twoTargets)
	e.Runs(4)
	rec := build(t, e, eventOfKind(t, e, diff.KindPolicy).ID)
	if !rec.AllVerified {
		t.Fatalf("untouched: %q", rec.Problems())
	}
	for _, tc := range []struct {
		name string
		edit func(p *evidence.Probe) string // edits p's before observation; returns what the failure must say
	}{
		{"another target", func(p *evidence.Probe) string {
			other := "b"
			if p.Target == "b" {
				other = "a"
			}
			p.Before.Target = other
			return fmt.Sprintf("%s/%s: before observation %d: it is an observation of target %s, probe %s, not of the event's %s/%s",
				p.Target, p.ProbeID, p.Before.ID, other, p.ProbeID, p.Target, p.ProbeID)
		}},
		{"another probe", func(p *evidence.Probe) string {
			p.Before.ProbeID = "someone-else"
			return fmt.Sprintf("%s/%s: before observation %d: it is an observation of target %s, probe someone-else, not of the event's %s/%s",
				p.Target, p.ProbeID, p.Before.ID, p.Target, p.Target, p.ProbeID)
		}},
		{"no target named", func(p *evidence.Probe) string {
			p.Before.Target = ""
			return fmt.Sprintf("%s/%s: before observation %d: it does not name the target and probe it is an observation of", p.Target, p.ProbeID, p.Before.ID)
		}},
	} {
		for _, claim := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, all_verified %v", tc.name, claim), func(t *testing.T) {
				r := readBack(t, rec)
				p := &r.Probes[0]
				if p.Before == nil || p.Before.Problem != "" {
					t.Fatalf("before: %+v", p.Before)
				}
				want := tc.edit(p)
				r.AllVerified = claim
				b := rewritten(t, r)
				_, err := evidence.VerifyJSON(b)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("verify: %v\nwant it to say %q", err, want)
				}
				var ue *evidence.UnverifiedError
				if !claim && !errors.As(err, &ue) {
					t.Errorf("a record saying it does not verify is intact: %v", err)
				}
				if md := markdown(r); !strings.Contains(md, "all request and response hashes verified: true\n") ||
					!strings.Contains(md, "\n- every observation shown is of its flip's target and probe: false (1 of another target or probe") ||
					!strings.Contains(md, "- does not verify: `"+want) {
					t.Errorf("text:\n%s", md)
				}
			})
		}
	}
}

// A citation of another target or probe is not a hash problem: the text
// says the hashes verified and, apart, that an observation is of another
// target or probe; all_verified stays false. Stored bytes that do not
// verify beside it still turn the hash line false.
func TestForeignCitationIsNotAHashProblem(t *testing.T) {
	e := testenv.New(t, twoTargets)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindPolicy)
	ep := ev.Probes[0]
	exec(t, e, `UPDATE observations SET probe_id = 'someone-else' WHERE id = ?`, ep.BeforeObs)
	rec := build(t, e, ev.ID)
	if rec.AllVerified {
		t.Fatal("a foreign citation verifies")
	}
	md := markdown(rec)
	for _, want := range []string{
		"\n- record verifies (all_verified): false\n",
		"\n- all request and response hashes verified: true\n",
		"\n- every observation shown is of its flip's target and probe: false (1 of another target or probe, or not naming theirs: no evidence of the flip)\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("want %q in:\n%s", want, md)
		}
	}
	// The record still says it in the observation's problem (JSON is
	// unchanged there), and once only among the record's problems.
	p := byProbe(rec)[ep.Target+"/"+ep.ProbeID]
	if !strings.HasPrefix(p.Before.Problem, "it is an observation of target ") || p.Before.ProbeID != "someone-else" {
		t.Errorf("before: %+v", p.Before)
	}
	if ps := rec.Problems(); len(ps) != 1 {
		t.Errorf("problems: %q", ps)
	}

	// A hash problem beside it: the hash line is false.
	exec(t, e, `UPDATE observations SET body_sha256 = ? WHERE id = ?`, strings.Repeat("0", 64), ep.BeforeObs)
	rec = build(t, e, ev.ID)
	md = markdown(rec)
	if !strings.Contains(md, "\n- all request and response hashes verified: false\n") ||
		!strings.Contains(md, "\n- every observation shown is of its flip's target and probe: false (1 ") {
		t.Errorf("foreign and a hash problem:\n%s", md)
	}
}

// Format 4 records (which do not name each observation's target and
// probe) still verify as their writer checked them: an untouched one
// verifies, one whose writer named a foreign citation does not, and the
// text says the hashes verified but that it cannot re-check whose
// observations it shows. A format 4 score drift keeps its score check.
func TestFormat4RecordsVerifyAsTheirWriterChecked(t *testing.T) {
	asV4 := func(t *testing.T, rec *evidence.Record) *evidence.Record {
		t.Helper()
		r := readBack(t, rec)
		r.Format = evidence.FormatV4
		for i := range r.Probes {
			for _, o := range []*evidence.Observation{r.Probes[i].Before, r.Probes[i].After} {
				if o != nil {
					o.Target, o.ProbeID = "", ""
				}
			}
		}
		r.AllVerified = len(r.Problems()) == 0
		if err := r.Rehash(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	e := testenv.New(t, twoTargets)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindPolicy)
	r := asV4(t, build(t, e, ev.ID))
	b := writeLikeTheCLI(t, r)
	if strings.Contains(string(b), `"probe_id": "`+r.Probes[0].ProbeID+`",
        "run_id"`) {
		t.Fatal("a format 4 record names its observations' probes")
	}
	if _, err := evidence.VerifyJSON(b); err != nil {
		t.Fatalf("an untouched format 4 record: %v", err)
	}
	if md := markdown(r); !strings.Contains(md, "\n- every observation shown is of its flip's target and probe: true (as its writer checked: a `driftprobe-evidence/4` record does not name") {
		t.Errorf("text:\n%s", md)
	}

	// Its writer named a foreign citation: it does not verify; the text
	// tells the hashes from whose observation it is.
	ep := ev.Probes[0]
	exec(t, e, `UPDATE observations SET probe_id = 'someone-else' WHERE id = ?`, ep.BeforeObs)
	r = asV4(t, build(t, e, ev.ID))
	var ue *evidence.UnverifiedError
	if _, err := evidence.VerifyJSON(writeLikeTheCLI(t, r)); !errors.As(err, &ue) || !strings.Contains(err.Error(), "it is an observation of target "+ep.Target+", probe someone-else") {
		t.Errorf("a format 4 record naming a foreign citation: %v", err)
	}
	if md := markdown(r); !strings.Contains(md, "\n- all request and response hashes verified: true\n") ||
		!strings.Contains(md, "\n- every observation shown is of its flip's target and probe: false (1 of another target or probe") {
		t.Errorf("text:\n%s", md)
	}

	// A format 4 score drift is held to the score check its writer made.
	e2 := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    sim: {policies: [{from_run: 4, score_shift: {privacy: -0.2}}]}
`)
	e2.Runs(6)
	sd := eventOfKind(t, e2, diff.KindScoreDrift)
	exec(t, e2, `UPDATE event_probes SET before_obs = after_obs WHERE event_id = ? AND probe_id = ?`, sd.ID, sd.Probes[0].ProbeID)
	r = asV4(t, build(t, e2, sd.ID))
	if r.AllVerified {
		t.Fatal("format 4: a before side carrying the after score verifies")
	}
	if _, err := evidence.VerifyJSON(writeLikeTheCLI(t, r)); !errors.As(err, &ue) || !strings.Contains(err.Error(), "but the event claims it moved from") {
		t.Errorf("format 4 score drift: %v", err)
	}
	if md := markdown(r); !strings.Contains(md, "\n- every observation shown carries the scores the event claims moved: false (1 do not)\n") {
		t.Errorf("format 4 score line:\n%s", md)
	}
}
