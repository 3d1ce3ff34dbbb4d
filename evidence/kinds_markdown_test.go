package evidence_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

const scoreDrift = `
targets:
  - name: a
    provider: sim
    model: m
    sim: {policies: [{from_run: 4, score_shift: {privacy: -0.2}}]}
`

// A score drift's text says which scores moved, from what to what, per
// probe, and checks the observations shown against them in a line of its
// own, as it checks their verdicts.
func TestScoreDriftMarkdownStatesTheMovesAndTheirCheck(t *testing.T) {
	e := testenv.New(t, scoreDrift)
	e.Runs(6)
	ev := eventOfKind(t, e, diff.KindScoreDrift)
	rec := build(t, e, ev.ID)
	md := markdown(rec)
	if !strings.Contains(md, "\n- every observation shown carries the scores the event claims moved: true\n") {
		t.Errorf("no score check line:\n%s", md)
	}
	for _, ep := range ev.Probes {
		if len(ep.ScoreMoves) == 0 {
			t.Fatalf("%s: score drift without moves", ep.ProbeID)
		}
		var moves []string
		for _, m := range ep.ScoreMoves {
			moves = append(moves, fmt.Sprintf("`%s` %s → %s", m.Key, strconv.FormatFloat(m.Before, 'f', -1, 64), strconv.FormatFloat(m.After, 'f', -1, 64)))
		}
		want := "- scores moved (the verdict held): " + strings.Join(moves, ", ") + "\n"
		sec := section(md, ep.Target, ep.ProbeID)
		if !strings.Contains(sec, want) {
			t.Errorf("%s: want %q in its section:\n%s", ep.ProbeID, want, sec)
		}
	}
	// A before side carrying the new scores: the line counts it.
	ep := ev.Probes[0]
	exec(t, e, `UPDATE event_probes SET before_obs = after_obs WHERE event_id = ? AND probe_id = ?`, ev.ID, ep.ProbeID)
	if md := markdown(build(t, e, ev.ID)); !strings.Contains(md, "\n- every observation shown carries the scores the event claims moved: false (1 do not)\n") {
		t.Errorf("a side carrying the wrong score is not counted:\n%s", md)
	}
	// A format 3 record was written without the check: not claimed.
	rec.Format = evidence.FormatV3
	if md := markdown(rec); !strings.Contains(md, "carries the scores the event claims moved: not checked (a `driftprobe-evidence/3` record") {
		t.Errorf("format 3:\n%s", md)
	}
	// Other kinds have no score lines.
	e2 := testenv.New(t, violence)
	e2.Runs(4)
	if md := markdown(build(t, e2, eventOfKind(t, e2, diff.KindPolicy).ID)); strings.Contains(md, "scores") {
		t.Errorf("a policy change speaks of scores:\n%s", md)
	}
}

// A model change's text counts the observations shown before and after on
// the target the model change is about, and how many reported the event's
// models, and says what the hashes do not cover.
func TestModelChangeMarkdownCountsAndSaysWhatNoHashCovers(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: cur, provider: sim, model: sim-large, sim: {policies: [{from_run: 1, thresholds: {violence: 0.5}, fingerprint: fp-a}, {from_run: 3, thresholds: {violence: 0.2, hate: 0.2}, fingerprint: fp-b}]}}
`)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindModel)
	rec := build(t, e, ev.ID)
	before, after, sameBefore, sameAfter, noneBefore, noneAfter := 0, 0, 0, 0, 0, 0
	for _, p := range rec.Probes {
		if p.Before != nil {
			before++
			switch {
			case p.Before.ModelFP == "fp-a":
				sameBefore++
			case p.Before.ModelID == "" && p.Before.ModelFP == "":
				noneBefore++
			}
		}
		if p.After != nil {
			after++
			switch {
			case p.After.ModelFP == "fp-b":
				sameAfter++
			case p.After.ModelID == "" && p.After.ModelFP == "":
				noneAfter++
			}
		}
	}
	if before == 0 || after == 0 || sameAfter == 0 || noneAfter == 0 {
		t.Fatalf("scenario: %d before (%d on fp-a), %d after (%d on fp-b, %d without a model)", before, sameBefore, after, sameAfter, noneAfter)
	}
	md := markdown(rec)
	id, _ := diff.SplitModel(ev.ModelBefore)
	none := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf(" (%d reporting no model)", n)
	}
	want := fmt.Sprintf("\n- observations shown on `cur`, the target the model change is about: %d before, %d of them reporting `%s` `fp-a`%s; %d after, %d of them reporting `%s` `fp-b`%s\n",
		before, sameBefore, id, none(noneBefore), after, sameAfter, id, none(noneAfter))
	if !strings.Contains(md, want) {
		t.Errorf("want %q in:\n%s", want, md)
	}
	if !strings.Contains(md, "\n- what no hash covers: the hashes prove the request bytes sent and the response bytes stored") ||
		!strings.Contains(md, "they do not prove which model served a request") {
		t.Errorf("no note of what no hash covers:\n%s", md)
	}
	// Other kinds have neither line.
	e2 := testenv.New(t, violence)
	e2.Runs(4)
	if md := markdown(build(t, e2, eventOfKind(t, e2, diff.KindPolicy).ID)); strings.Contains(md, "what no hash covers") || strings.Contains(md, "observations shown on") {
		t.Errorf("a policy change has model change lines:\n%s", md)
	}
}

// section is the Markdown of one probe: from its heading to the next.
func section(md, target, probe string) string {
	head := fmt.Sprintf("## `%s` / `%s`\n", target, probe)
	i := strings.Index(md, head)
	if i < 0 {
		return ""
	}
	rest := md[i+len(head):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
