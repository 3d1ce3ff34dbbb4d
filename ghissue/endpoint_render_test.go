package ghissue

import (
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// withBefore sets every probe's before run and origin, and records run
// before in e.
func withBefore(ev *diff.Event, e *Evidence, before int64, origin string) {
	for i := range ev.Probes {
		ev.Probes[i].BeforeRun, ev.Probes[i].Origin = before, origin
	}
	e.Runs[before] = storage.Run{ID: before, StartedAt: time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC)}
}

// TestIssueCitesTheRunBeforeAtTheSameEndpoint: after an excursion to
// another endpoint, the run before the event was first seen (10) is one
// at the other endpoint; the issue's commands, its "Last run before" row
// and its truncation hint cite the probes' before run (8) instead. When
// the before run is the run before (the usual case), or none is known
// (rows recorded before it was kept; a nondeterministic probe citing an
// answer of its own first run; a score drift whose baseline answer moved
// with a model change), the issue is as it always was.
func TestIssueCitesTheRunBeforeAtTheSameEndpoint(t *testing.T) {
	for _, n := range []int{1, 400} {
		ev, e := hostileEvent(n, "m")
		withBefore(ev, e, 8, "https://myres.openai.azure.com")
		body := IssueBody(ev, e)
		checkInert(t, "issue body", body)
		for _, want := range []string{"driftprobe diff --target azure-gpt4o-eastus --from 8 --to 12\n", "| Last run before | run 8, started 2026-03-01T07:00:00Z |\n"} {
			if !strings.Contains(body, want) {
				t.Errorf("%d probes: body lacks %q", n, want)
			}
		}
		if n == 400 && !strings.Contains(body, "`driftprobe diff --target azure-gpt4o-eastus --from 8 --to 12`") {
			t.Errorf("the truncation hint does not start at run 8")
		}
		if strings.Contains(body, "--from 10") || strings.Contains(body, "run 10") {
			t.Errorf("%d probes: the body cites run 10, at the other endpoint", n)
		}
	}
	// What the database says of the last run there wins (LastRunBefore).
	ev, e := hostileEvent(1, "m")
	withBefore(ev, e, 6, "https://myres.openai.azure.com")
	ev.Probes[0].LastRunBefore = 8
	e.Runs[8] = storage.Run{ID: 8}
	if body := IssueBody(ev, e); !strings.Contains(body, "--from 8 --to 12\n") || !strings.Contains(body, "| Last run before | run 8, ") {
		t.Errorf("the database's last run before is not cited:\n%s", body)
	}
	for _, tc := range []struct {
		name   string
		kind   string
		before int64
	}{
		{"usual", diff.KindPolicy, 10},
		{"unknown", diff.KindPolicy, 0},
		{"nondeterministic without a baseline", diff.KindNondeterminism, 11},
		{"score drift", diff.KindScoreDrift, 12},
	} {
		ev, e := hostileEvent(3, "m")
		ev.Kind = tc.kind
		base := IssueBody(ev, e)
		for i := range ev.Probes {
			ev.Probes[i].BeforeRun = tc.before
		}
		if got := IssueBody(ev, e); got != base {
			t.Errorf("%s (before run %d): the body changed", tc.name, tc.before)
		}
		if !strings.Contains(base, "--from 10 --to 12\n") || !strings.Contains(base, "| Last run before | run 10 (not in the database) |") {
			t.Errorf("%s: the run before the event is not cited:\n%s", tc.name, base)
		}
	}
}

// TestCommandsPerTargetAndUpdate: each target's command starts at its own
// probes' earliest before run; a target every probe of which flipped after
// the event was confirmed gets only the command over its probes; an
// update's comment starts at its own probes' before run.
func TestCommandsPerTargetAndUpdate(t *testing.T) {
	ev, e := extendedEvent()
	before := map[string]int64{"v1": 1, "w1": 2, "h1": 4, "s1": 5, "r1": 5, "v2": 5}
	for i, p := range ev.Probes {
		ev.Probes[i].BeforeRun = before[p.ProbeID]
	}
	body := IssueBody(ev, e)
	for _, w := range []string{"driftprobe diff --target t-a --from 1 --to 4\n", "driftprobe diff --target t-a --from 1 --to 7   # every probe",
		"driftprobe diff --target t-b --from 5 --to 7   # every probe"} {
		if !strings.Contains(body, w) {
			t.Errorf("issue body lacks %q", w)
		}
	}
	if strings.Contains(body, "--target t-b --from 5 --to 4") || strings.Contains(body, "--target t-b --from 2 ") {
		t.Errorf("t-b's command does not start at its own before run:\n%s", body)
	}
	// Run 6 was at another endpoint for t-a: h1, s1 and r1's comment
	// starts at run 4.
	for i, p := range ev.Probes {
		if p.Target == "t-a" && p.FirstRun == 6 {
			ev.Probes[i].BeforeRun = 4
		}
	}
	if c := CommentBody(ev, ev.Updates[1], e, false); !strings.Contains(c, "driftprobe diff --target t-a --from 4 --to 7\n") {
		t.Errorf("the update's command does not start at run 4:\n%s", c)
	}
}

// TestIssueNamesTheEndpoint: the issue names, once per target, the
// endpoint its probes flipped at, inert; nothing for probes recorded
// without one.
func TestIssueNamesTheEndpoint(t *testing.T) {
	ev, e := hostileEvent(3, "m")
	if body := IssueBody(ev, e); strings.Contains(body, "Endpoint") {
		t.Errorf("an endpoint named for probes without one:\n%s", body)
	}
	withBefore(ev, e, 10, "https://myres.openai.azure.com")
	body := IssueBody(ev, e)
	if want := "| Targets | azure\\-gpt4o\\-eastus |\n| Endpoint of `azure-gpt4o-eastus` | https\\:\u200d//myres.openai.azure.com |\n"; !strings.Contains(body, want) {
		t.Errorf("body lacks %q:\n%s", want, body)
	}
	if n := strings.Count(body, "Endpoint of"); n != 1 {
		t.Errorf("endpoint named %d times, want once", n)
	}
	// sim:embedded, as the evidence record writes it.
	withBefore(ev, e, 10, "sim:embedded")
	if body := IssueBody(ev, e); !strings.Contains(body, "| Endpoint of `azure-gpt4o-eastus` | sim\\:embedded |\n") {
		t.Errorf("sim endpoint:\n%s", body)
	}
	// Hostile origins (a base_url's path, say, or a prober's own name).
	for _, h := range append(hostile, "https://evil.example/@octocat/#1/[x](http://e)/`x`|y|\n| z |", strings.Repeat("o", 500)) {
		ev, e := hostileEvent(2, "m")
		withBefore(ev, e, 10, h)
		body := IssueBody(ev, e)
		checkInert(t, "issue body, origin "+h, body)
		row := ""
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "| Endpoint of ") {
				row = l
			}
		}
		if row == "" || strings.Count(row, "|")-strings.Count(row, `\|`) != 3 {
			t.Errorf("origin %q: endpoint row %q (one table row of two cells)", h, row)
		}
		if strings.Contains(row, strings.Repeat("o", maxCell+1)) {
			t.Errorf("origin not cut: %q", row)
		}
	}
	// Several targets: each names its own, once; one without none.
	ev, e = extendedEvent()
	for i, p := range ev.Probes {
		if p.Target == "t-a" {
			ev.Probes[i].Origin = "https://a.example"
		}
	}
	ev.Probes = append(ev.Probes, diff.EventProbe{Target: "t-c", ProbeID: "c1", RequestSHA256: "ab", FirstRun: 6, ConfirmedRun: 7,
		Before: diff.Verdict{Class: probes.Allowed}, After: diff.Verdict{Class: probes.BlockedInput, Categories: []string{"violence"}},
		Origin: "https://c.example"})
	body = IssueBody(ev, e)
	for _, w := range []string{"| Endpoint of `t-a` | https\\:\u200d//a.example |\n", "| Endpoint of `t-c` | https\\:\u200d//c.example |\n"} {
		if strings.Count(body, w) != 1 {
			t.Errorf("body names %q %d times:\n%s", w, strings.Count(body, w), body)
		}
	}
	if strings.Contains(body, "Endpoint of `t-b`") {
		t.Errorf("t-b has no endpoint recorded")
	}
}
