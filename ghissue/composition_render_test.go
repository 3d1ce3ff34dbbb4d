package ghissue

import (
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/probes"
)

// extendedEvent is a provider-wide policy change opened on t-a in run 4
// (violence; weapons probe gaining violence), extended in run 7 on t-a
// (hate, which fired on t-a before; self_harm and sexual, which never
// did; a probe no longer blocked for harassment) and joined in run 7 by
// t-b (violence, never fired on t-b before), partly reverted on t-a in
// run 9.
func extendedEvent() (*diff.Event, *Evidence) {
	v := func(c probes.Class, cats ...string) diff.Verdict { return diff.Verdict{Class: c, Categories: cats} }
	allowed := v(probes.Allowed)
	p := func(target, id string, before, after diff.Verdict, first, confirmed, reverted int64) diff.EventProbe {
		return diff.EventProbe{Target: target, ProbeID: id, RequestSHA256: "ab", Before: before, After: after,
			FirstRun: first, ConfirmedRun: confirmed, Reverted: reverted > 0, RevertedRun: reverted}
	}
	ev := &diff.Event{ID: 5, Fingerprint: "00ff00ff", Target: "t-a", Targets: []string{"t-a", "t-b"}, Provider: "sim",
		Kind: diff.KindPolicy, Direction: diff.Mixed, Status: "open", NewCategories: []string{"self_harm", "sexual", "violence"},
		FirstRun: 3, ConfirmedRun: 4, LastRun: 9,
		Probes: []diff.EventProbe{
			p("t-a", "v1", allowed, v(probes.BlockedInput, "violence"), 3, 4, 9),
			p("t-a", "w1", v(probes.BlockedInput, "weapons"), v(probes.BlockedInput, "violence", "weapons"), 3, 4, 0),
			p("t-a", "h1", allowed, v(probes.BlockedOutput, "hate"), 6, 7, 9),
			p("t-a", "s1", allowed, v(probes.BlockedOutput, "self_harm", "sexual"), 6, 7, 0),
			p("t-a", "r1", v(probes.BlockedOutput, "harassment"), allowed, 6, 7, 0),
			p("t-b", "v2", allowed, v(probes.BlockedInput, "violence"), 6, 7, 0),
		},
		Updates: []diff.EventUpdate{
			{ID: 1, RunID: 4, Change: diff.ChangeOpened, Target: "t-a"},
			{ID: 2, RunID: 7, Change: diff.ChangeProbesAdded, Target: "t-a", Detail: "3 more probe(s) on t-a: h1, r1, s1"},
			{ID: 3, RunID: 7, Change: diff.ChangeTargetJoined, Target: "t-b", Detail: "target t-b changed the same way (1 probes, 1 of them moved as the event's did): provider-wide change"},
			{ID: 4, RunID: 9, Change: diff.ChangePartialRevert, Target: "t-a", Detail: "2 probe(s) on t-a flipped back: h1, v1"},
		},
	}
	e := &Evidence{FirstFired: map[string]map[string]int64{
		"t-a": {"violence": 1, "hate": 1, "weapons": 1, "harassment": 1, "self_harm": 7, "sexual": 7},
		"t-b": {"violence": 7},
	}}
	return ev, e
}

// TestCommentNamesTheCategoriesItsUpdateBrings: each update that extends
// an event names, before anything else, the categories new to the
// target (as the composition history says) and those new only to the
// event, and says nothing of categories the event had already; updates
// that take probes out name none.
func TestCommentNamesTheCategoriesItsUpdateBrings(t *testing.T) {
	ev, e := extendedEvent()
	for _, tc := range []struct {
		u       int
		e       *Evidence
		want    []string
		notWant []string
	}{
		{1, e, []string{
			"### driftprobe update: more probes flipped (run 7)\n\n**New categories on `t-a`, never fired on this target before run 7: `self_harm`, `sexual`.** A category that never fired on a target and now fires is the strongest signal",
			"**New to this event: `hate`.** This update's probes are the first of the event newly blocked for it. It fired on `t-a` before this run",
			"**No longer blocked, new to this event: `harassment`.**",
			"driftprobe diff --target t-a --from 5 --to 7\n",
			"driftprobe evidence 5 --json",
		}, []string{"`violence`", "`weapons`", "t-b"}},
		{2, e, []string{
			"**New category on `t-b`, never fired on this target before run 7: `violence`.**",
			"driftprobe diff --target t-b --from 5 --to 7\n",
		}, []string{"New to this event", "`t-a`"}},
		{3, e, []string{"driftprobe diff --target t-a --from 7 --to 9\n", "driftprobe evidence 5 --json"},
			[]string{"New category", "New to this event", "No longer blocked"}},
		// Without the composition history: the event's new categories
		// that are new to it are new to the target; t-b's violence (the
		// event had it already) cannot be told new to t-b.
		{1, nil, []string{"**New categories on `t-a`, never fired on this target before run 7: `self_harm`, `sexual`.**", "**New to this event: `hate`.**"}, nil},
		{2, nil, nil, []string{"New category", "New to this event"}},
	} {
		u := ev.Updates[tc.u]
		body := CommentBody(ev, u, tc.e, false)
		checkInert(t, "comment", body)
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("update %d (history %v): comment lacks %q:\n%s", u.ID, tc.e != nil, w, body)
			}
		}
		head, _, _ := strings.Cut(body, "#### Probes in this update")
		for _, w := range tc.notWant {
			if strings.Contains(head, w) {
				t.Errorf("update %d (history %v): comment says %q:\n%s", u.ID, tc.e != nil, w, head)
			}
		}
	}
	// The issue body's commands cover every probe it lists, the later
	// ones and the joined target's included.
	body := IssueBody(ev, e)
	for _, w := range []string{"driftprobe diff --target t-a --from 2 --to 4\n", "driftprobe diff --target t-a --from 2 --to 7   # every probe",
		"driftprobe diff --target t-b --from 5 --to 7   # every probe"} {
		if !strings.Contains(body, w) {
			t.Errorf("issue body lacks %q", w)
		}
	}
}

// TestCommentNewCategoriesInert: categories are provider text; a comment
// naming them as new keeps them inert, bounded in number and length.
func TestCommentNewCategoriesInert(t *testing.T) {
	ev, e := extendedEvent()
	var cats []string
	for i := 0; i < 30; i++ {
		cats = append(cats, hostile[i%len(hostile)]+strings.Repeat("x", i))
	}
	ev.Probes[2].After.Categories = append(cats, "@octocat $x$ "+strings.Repeat("y", 300))
	body := CommentBody(ev, ev.Updates[1], e, false)
	checkInert(t, "comment", body)
	if !strings.Contains(body, "@\u200doctocat \\$x\\$ ") || !strings.Contains(body, "and 11 more") {
		t.Errorf("hostile categories not named inert and bounded:\n%s", body)
	}
	if strings.Contains(body, strings.Repeat("y", 100)) {
		t.Errorf("a category is not cut")
	}
}
