package ghissue

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// hostile is untrusted text trying everything an issue body must not do.
var hostile = []string{
	"```\n# pwned\n```",
	"````````` nested ``` fences ````",
	"@octocat please look, cc @acme/security-team",
	"fixes #123 and acme/other#45 and GH-77",
	"<script>alert(1)</script><img src=x onerror=alert(2)>",
	"[click me](https://evil.example/phish) ![img](http://evil.example/x.png)",
	"<https://evil.example/auto> www.evil.example http://evil.example/bare",
	"| broken | table |\n---",
	"</details><details open><summary>x</summary>",
	"<!-- driftprobe:event=ffffffffffffffffffff -->",
	"line1\r\nline2\u202Eevil\u0000nul",
}

func hostileEvent(probesN int, msg string) (*diff.Event, *Evidence) {
	ev := &diff.Event{
		ID: 7, Fingerprint: "0123456789abcdef0123", Target: "azure-gpt4o-eastus", Targets: []string{"azure-gpt4o-eastus"},
		Provider: "azure", Kind: diff.KindPolicy, Direction: diff.Tightened, Status: "open",
		NewCategories: []string{"self_harm"}, FirstRun: 11, ConfirmedRun: 12, LastRun: 12,
		ModelBefore: "gpt-4o-2024-08-06|fp_" + hostile[2], ModelAfter: "gpt-4o-2024-08-06|" + hostile[4],
		CorpusVersion: "2026.11.1 " + hostile[3], CorpusHash: strings.Repeat("ab", 32),
	}
	e := &Evidence{Runs: map[int64]storage.Run{
		11: {ID: 11, StartedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		12: {ID: 12, StartedAt: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)},
	}, Obs: map[int64]Obs{}}
	for i := 0; i < probesN; i++ {
		h := hostile[i%len(hostile)]
		p := diff.EventProbe{
			Target: "azure-gpt4o-eastus", ProbeID: fmt.Sprintf("p%03d %s", i, h), RequestSHA256: strings.Repeat("cd", 32),
			Before:    diff.Verdict{Class: probes.Allowed, Categories: []string{}},
			After:     diff.Verdict{Class: probes.BlockedInput, Categories: []string{"violence", h}},
			BeforeObs: int64(2*i + 1), AfterObs: int64(2*i + 2), FirstRun: 11, ConfirmedRun: 12,
			ScoreMoves: []diff.ScoreMove{{Key: "violence", Before: 0.1, After: 0.4}, {Key: h, Before: 0, After: 1}},
		}
		ev.Probes = append(ev.Probes, p)
		e.Obs[p.BeforeObs] = Obs{ID: p.BeforeObs, RunID: 10, RequestID: "req-" + h, Reason: "stop"}
		m := h
		if i == 0 {
			m = msg
		}
		e.Obs[p.AfterObs] = Obs{ID: p.AfterObs, RunID: 12, RequestID: "chatcmpl-" + h, Reason: "content_filter " + h, Message: m}
	}
	ev.Updates = []diff.EventUpdate{{ID: 31, RunID: 12, Change: diff.ChangeOpened, Detail: hostile[2]},
		{ID: 32, RunID: 12, Change: diff.ChangeProbesAdded, Detail: strings.Repeat(hostile[5], 200)}}
	return ev, e
}

var (
	fenceOpenRe = regexp.MustCompile("^(`{3,})")
	rawMention  = regexp.MustCompile(`@[A-Za-z0-9]`)
	rawRef      = regexp.MustCompile(`#[0-9]|(?i)\bgh-[0-9]`)
	rawScheme   = regexp.MustCompile(`(?i)[a-z]://|www\.`)
	rawLink     = regexp.MustCompile(`\]\(|<[a-zA-Z/!]`)
)

// outsideFences splits a body into the text outside fenced code blocks
// (as CommonMark parses it) and checks every block's fence is longer than
// any backtick run inside it and is closed.
func outsideFences(t *testing.T, body string) string {
	t.Helper()
	var out strings.Builder
	fence := ""
	var inner strings.Builder
	for _, line := range strings.Split(body, "\n") {
		if fence == "" {
			if m := fenceOpenRe.FindString(line); m != "" {
				fence = m
				inner.Reset()
				continue
			}
			out.WriteString(line + "\n")
			continue
		}
		if strings.TrimRight(line, " ") != "" && strings.Trim(strings.TrimRight(line, " "), "`") == "" && len(strings.TrimRight(line, " ")) >= len(fence) {
			if longestRun(inner.String(), '`') >= len(fence) {
				t.Errorf("fence %d long around a run of %d backticks", len(fence), longestRun(inner.String(), '`'))
			}
			fence = ""
			continue
		}
		inner.WriteString(line + "\n")
	}
	if fence != "" {
		t.Errorf("unclosed fence")
	}
	return out.String()
}

func checkInert(t *testing.T, what, body string) {
	t.Helper()
	if len(body) > MaxBodyBytes || utf8.RuneCountInString(body) > 65536 {
		t.Errorf("%s: %d bytes, over the limit", what, len(body))
	}
	if !utf8.ValidString(body) {
		t.Errorf("%s: invalid UTF-8", what)
	}
	text := outsideFences(t, body)
	// Our own markers are the only HTML comments; drop them and the
	// <details>/<summary>/<sub> tags we emit before looking for raw HTML.
	text = regexp.MustCompile(`<!-- driftprobe:(event|update|key)=[0-9a-f]+ -->`).ReplaceAllString(text, "")
	for _, tag := range []string{"<details>", "<summary>", "</summary>", "</details>", "<sub>", "</sub>"} {
		text = strings.ReplaceAll(text, tag, "")
	}
	for name, re := range map[string]*regexp.Regexp{"mention": rawMention, "reference": rawRef, "autolink": rawScheme, "link/html": rawLink} {
		if m := re.FindAllString(text, 3); m != nil {
			i := re.FindStringIndex(text)
			t.Errorf("%s: live %s %q near %q", what, name, m, text[max(0, i[0]-60):min(len(text), i[1]+60)])
		}
	}
	if strings.Contains(text, "<script") || strings.Contains(text, "\u202E") || strings.Contains(text, "\x00") {
		t.Errorf("%s: raw script, bidi override or NUL outside code", what)
	}
	if n := strings.Count(body, "<!-- driftprobe:event="); n > 1 {
		t.Errorf("%s: %d event markers (an injected one survived)", what, n)
	}
}

func TestRenderInertAndBounded(t *testing.T) {
	long := strings.Repeat("`", 40) + "\n" + strings.Repeat("A@b #1 <script>x</script> [l](http://e) ", 2000) // ~70,000 chars
	if len(long) < 70000 {
		t.Fatalf("long text only %d", len(long))
	}
	for _, n := range []int{1, 11, 400} {
		ev, e := hostileEvent(n, long)
		body := IssueBody(ev, e)
		checkInert(t, fmt.Sprintf("issue body with %d probes", n), body)
		if !strings.Contains(body, EventMarker(ev.Fingerprint)) || !strings.Contains(body, "`"+ev.Fingerprint+"`") {
			t.Errorf("marker or visible fingerprint missing")
		}
		for _, want := range []string{"run 11, started 2026-03-01T10:00:00Z", "run 12, started 2026-03-01T11:00:00Z",
			"driftprobe diff --target azure-gpt4o-eastus --from 10 --to 12", "driftprobe events --json", strings.Repeat("ab", 32), strings.Repeat("cd", 32),
			"; scores moved: `violence` 0.1 → 0.4, "} {
			if !strings.Contains(body, want) {
				t.Errorf("%d probes: body lacks %q", n, want)
			}
		}
		if n == 400 && !strings.Contains(body, "more flipped probe(s) not shown") {
			t.Errorf("400 probes: no truncation note")
		}
		for _, u := range ev.Updates[1:] {
			c := CommentBody(ev, u, e, true)
			checkInert(t, fmt.Sprintf("comment with %d probes", n), c)
			if !strings.HasPrefix(c, UpdateMarker(ev, u)+"\n") {
				t.Errorf("comment lacks its update marker")
			}
		}
		title := Title(ev)
		if utf8.RuneCountInString(title) > 256 || strings.ContainsAny(title, "\n\r<`") || rawMention.MatchString(title) || rawRef.MatchString(title) {
			t.Errorf("title %q", title)
		}
	}
	// The 70,000-character message is cut, inside its fence.
	ev, e := hostileEvent(1, long)
	body := IssueBody(ev, e)
	if !strings.Contains(body, "[truncated: ") {
		t.Errorf("long message not truncated")
	}
	if !strings.Contains(body, strings.Repeat("`", 41)+"text\n") {
		t.Errorf("message fence is not longer than the 40-backtick run inside")
	}
}

// The probe table's heading says what the probes did, by kind.
func TestProbeTableHeadingByKind(t *testing.T) {
	for kind, want := range map[string]string{
		diff.KindPolicy:         "### Flipped probes (1)",
		diff.KindScoreDrift:     "### Probes whose scores moved (verdicts held) (1)",
		diff.KindNondeterminism: "### Probes that flip on identical bytes (1)",
	} {
		ev, e := hostileEvent(1, "m")
		ev.Kind = kind
		if body := IssueBody(ev, e); !strings.Contains(body, want) {
			t.Errorf("%s: body lacks %q", kind, want)
		}
	}
}

func TestTitle(t *testing.T) {
	ev := &diff.Event{Target: "azure-gpt4o-eastus", Targets: []string{"azure-gpt4o-eastus"}, Provider: "azure", Kind: diff.KindPolicy,
		Direction: diff.Tightened, NewCategories: []string{"self_harm"}}
	for i := 0; i < 7; i++ {
		ev.Probes = append(ev.Probes, diff.EventProbe{Before: diff.Verdict{Class: probes.Allowed},
			After: diff.Verdict{Class: probes.BlockedOutput, Categories: []string{"violence"}}})
	}
	ev.Probes[0].After.Categories = []string{"self_harm"}
	want := "Provider policy change on azure-gpt4o-eastus: 7 probes now blocked (violence, new: self_harm)"
	if got := Title(ev); got != want {
		t.Errorf("title\n got %q\nwant %q", got, want)
	}
	// Probes blocked before and after (a category gained) are stricter,
	// not "now blocked", and name only the category that changed.
	for i := 0; i < 2; i++ {
		ev.Probes = append(ev.Probes, diff.EventProbe{Before: diff.Verdict{Class: probes.BlockedInput, Categories: []string{"hate"}},
			After: diff.Verdict{Class: probes.BlockedInput, Categories: []string{"hate", "weapons"}}})
	}
	want = "Provider policy change on azure-gpt4o-eastus: 9 probes stricter, 7 now blocked (violence, weapons, new: self_harm)"
	if got := Title(ev); got != want {
		t.Errorf("title\n got %q\nwant %q", got, want)
	}
	ev.Probes = ev.Probes[:7]
	ev.Targets = []string{"a", "b", "c"}
	ev.Direction = diff.Loosened
	for i := range ev.Probes {
		ev.Probes[i].Before, ev.Probes[i].After = ev.Probes[i].After, ev.Probes[i].Before
	}
	ev.NewCategories = nil
	if got := Title(ev); got != "Provider policy change on azure (3 targets: a, b, c): 7 probes now allowed (self_harm, violence)" {
		t.Errorf("provider-wide title %q", got)
	}
	ev.Probes[0].After = diff.Verdict{Class: probes.BlockedOutput, Categories: []string{"violence"}}
	if got := Title(ev); got != "Provider policy change on azure (3 targets: a, b, c): 7 probes looser, 6 now allowed (self_harm, violence)" {
		t.Errorf("looser title %q", got)
	}
	ev.Targets = []string{strings.Repeat("t", 300)}
	if got := Title(ev); utf8.RuneCountInString(got) > MaxTitle {
		t.Errorf("title not bounded: %d", utf8.RuneCountInString(got))
	}
	if got := Labels(ev, []string{"LLM", "driftprobe", "x"}); strings.Join(got, ",") != "driftprobe,policy_change,azure,LLM,x" {
		t.Errorf("labels %v", got)
	}
}

func TestInert(t *testing.T) {
	for in, want := range map[string]string{
		"@octocat":           "@\u200doctocat",
		"#12":                `\#` + "\u200d12",
		"<b>":                "&lt;b&gt;",
		"[x](y)":             `\[x\]\(y\)`,
		"https://e.x":        "https\\:\u200d//e.x",
		"plain text 1.2":     "plain text 1.2",
		"a\nb":               "a b",
		"gh-5":               "gh\\-\u200d5",
		"x" + "\u202e" + "y": "xy",
		"$x^2$ costs $5":     `\$x^2\$ costs \$5`,  // no GitHub math
		"gpt\u200b4\u00ad":   `gpt\\u200b4\\u00ad`, // invisible characters shown
		"id\U000E0041":       `id\\U000e0041`,      // a tag character ("ASCII smuggling")
		"a\u200eb\u061c":     "ab",                 // bidi marks dropped
	} {
		if got := inert(in, 100); got != want {
			t.Errorf("inert(%q) = %q, want %q", in, got, want)
		}
	}
	if got := fenced("a ``` b ````` c", 100); !strings.HasPrefix(got, "``````text\n") {
		t.Errorf("fence: %q", got)
	}
}

// TestCommentBodyListsTheUpdatesTarget: in a provider-wide event, an
// update's comment lists the probes of the target the update is about
// (as diff names it in the detail), flipped (or, for reverts, flipped
// back) in its run; a target whose name extends another's is not
// confused with it; a detail naming no target of the event falls back to
// every probe of the run.
func TestCommentBodyListsTheUpdatesTarget(t *testing.T) {
	ev := &diff.Event{ID: 3, Fingerprint: "00ff", Target: "t-a", Targets: []string{"t-a", "t-a2", "t-b"}, Provider: "sim",
		Kind: diff.KindPolicy, Direction: diff.Tightened, Status: "reverted", FirstRun: 11, ConfirmedRun: 12, RevertedRun: 15}
	add := func(target, id string, confirmed, reverted int64) {
		ev.Probes = append(ev.Probes, diff.EventProbe{Target: target, ProbeID: id, RequestSHA256: "ab",
			Before: diff.Verdict{Class: probes.Allowed}, After: diff.Verdict{Class: probes.BlockedInput, Categories: []string{"violence"}},
			FirstRun: confirmed - 1, ConfirmedRun: confirmed, Reverted: reverted > 0, RevertedRun: reverted})
	}
	add("t-a", "pa1", 12, 15)
	add("t-a", "pa2", 12, 15)
	add("t-a", "pa3", 14, 15)
	add("t-a2", "pa1", 12, 15)
	add("t-a2", "pa2", 12, 15)
	add("t-b", "pb1", 12, 14)
	add("t-b", "pb2", 12, 14)
	for _, tc := range []struct {
		u    diff.EventUpdate
		want string
	}{
		{diff.EventUpdate{ID: 2, RunID: 12, Change: diff.ChangeTargetJoined, Detail: "target t-a2 changed the same way (2 probes): provider-wide change"},
			"t-a2/pa1 t-a2/pa2"},
		{diff.EventUpdate{ID: 3, RunID: 12, Change: diff.ChangeTargetJoined, Detail: "target t-b changed the same way (2 probes): provider-wide change; kind is now model_change"},
			"t-b/pb1 t-b/pb2"},
		{diff.EventUpdate{ID: 4, RunID: 14, Change: diff.ChangeProbesAdded, Detail: "1 more probe(s) on t-a: pa3"},
			"t-a/pa3"},
		{diff.EventUpdate{ID: 5, RunID: 14, Change: diff.ChangePartialRevert, Detail: "2 probe(s) on t-b flipped back: pb1, pb2"},
			"t-b/pb1 t-b/pb2"},
		{diff.EventUpdate{ID: 6, RunID: 15, Change: diff.ChangePartialRevert, Detail: "2 probe(s) on t-a2 flipped back: pa1, pa2"},
			"t-a2/pa1 t-a2/pa2"},
		{diff.EventUpdate{ID: 7, RunID: 15, Change: diff.ChangeReverted, Detail: "3 probe(s) on t-a flipped back: pa1, pa2, pa3"},
			"t-a/pa1 t-a/pa2 t-a/pa3"},
		// No target of the event named: every probe flipped in the run.
		{diff.EventUpdate{ID: 8, RunID: 12, Change: diff.ChangeTargetJoined, Detail: "target t-z changed the same way (2 probes)"},
			"t-a/pa1 t-a/pa2 t-a2/pa1 t-a2/pa2 t-b/pb1 t-b/pb2"},
		// The recorded target wins over whatever the detail says.
		{diff.EventUpdate{ID: 9, RunID: 12, Change: diff.ChangeTargetJoined, Detail: "a detail in a form of some later version", Target: "t-b"},
			"t-b/pb1 t-b/pb2"},
		{diff.EventUpdate{ID: 10, RunID: 14, Change: diff.ChangeProbesAdded, Detail: "1 more probe(s) on t-b: pa3", Target: "t-a"},
			"t-a/pa3"},
	} {
		body := CommentBody(ev, tc.u, &Evidence{}, false)
		var got []string
		for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `([^`]+)` \\|").FindAllStringSubmatch(body, -1) {
			got = append(got, m[1]+"/"+m[2])
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("update %d (%s): rows %q, want %q", tc.u.ID, tc.u.Detail, g, tc.want)
		}
		if n := len(strings.Fields(tc.want)); !strings.Contains(body, fmt.Sprintf("#### Probes in this update (%d)", n)) {
			t.Errorf("update %d: heading does not count %d probes", tc.u.ID, n)
		}
	}
}

// The issue says how to get the hash-verifiable record of its event.
func TestIssueBodyNamesEvidenceCommand(t *testing.T) {
	ev := &diff.Event{ID: 7, Target: "a", Kind: diff.KindPolicy, FirstRun: 3, ConfirmedRun: 4, Fingerprint: "abc"}
	if body := IssueBody(ev, nil); !strings.Contains(body, "driftprobe evidence 7 --json") {
		t.Fatalf("no evidence command in:\n%s", body)
	}
}

// TestTitleDescribesWhatStillHolds (QA D4): once some probes left an open
// event, the title counts and names only the probes still flipped (a new
// category only they brought is left out too) and says how many left and
// how; once none holds, it names the change and ends [reverted].
func TestTitleDescribesWhatStillHolds(t *testing.T) {
	vio := diff.Verdict{Class: probes.BlockedOutput, Categories: []string{"violence"}}
	hate := diff.Verdict{Class: probes.BlockedOutput, Categories: []string{"hate"}}
	allowed := diff.Verdict{Class: probes.Allowed}
	ev := &diff.Event{Target: "sim-a", Targets: []string{"sim-a"}, Provider: "sim", Kind: diff.KindPolicy, Direction: diff.Tightened,
		Status: diff.StatusOpen, NewCategories: []string{"violence"}}
	for i := 0; i < 4; i++ {
		ev.Probes = append(ev.Probes, diff.EventProbe{Before: allowed, After: vio})
	}
	ev.Probes = append(ev.Probes, diff.EventProbe{Before: allowed, After: hate}, diff.EventProbe{Before: allowed, After: hate})
	if got, want := Title(ev), "Provider policy change on sim-a: 6 probes now blocked (hate, new: violence)"; got != want {
		t.Errorf("nothing left\n got %q\nwant %q", got, want)
	}
	for i := 0; i < 4; i++ {
		ev.Probes[i].Reverted = true
	}
	if got, want := Title(ev), "Provider policy change on sim-a: 2 probes now blocked (hate) [4 of 6 reverted]"; got != want {
		t.Errorf("violence reverted\n got %q\nwant %q", got, want)
	}
	ev.Probes[1].MovedOn = true
	ev.Probes[2].Withdrawn = true
	if got, want := Title(ev), "Provider policy change on sim-a: 2 probes now blocked (hate) [4 of 6 no longer hold: 2 reverted, 1 moved on, 1 withdrawn]"; got != want {
		t.Errorf("left in three ways\n got %q\nwant %q", got, want)
	}
	ev.Probes[1].MovedOn, ev.Probes[2].Withdrawn = false, false
	ev.Probes[4].Reverted, ev.Probes[5].Reverted = true, true
	ev.Status = diff.StatusReverted
	if got, want := Title(ev), "Provider policy change on sim-a: 6 probes now blocked (hate, new: violence) [reverted]"; got != want {
		t.Errorf("all reverted\n got %q\nwant %q", got, want)
	}
}

// TestModelIDWithPipeKeepsItsFingerprint: model fields are stored as
// "model id|fingerprint" (diff.JoinModel). A provider whose model id
// holds "|" must not make the issue name another model id and a
// fingerprint the provider never reported: the id "gpt-4o|fp_spoofed"
// with the fingerprint "fp_real" shows fp_real as the fingerprint.
func TestModelIDWithPipeKeepsItsFingerprint(t *testing.T) {
	ev := &diff.Event{ID: 1, Target: "t", Targets: []string{"t"}, Kind: diff.KindModel, Direction: "tightened",
		Status: "open", Provider: "openai", Fingerprint: "0123456789abcdef0123",
		// model id "gpt-4o|fp_spoofed", fingerprint "fp_real"
		ModelBefore: "gpt-4o|fp_spoofed|fp_real", ModelAfter: "gpt-4o|fp_new", FirstRun: 2, ConfirmedRun: 3}
	if ev.ModelBefore != diff.JoinModel("gpt-4o|fp_spoofed", "fp_real") {
		t.Fatalf("JoinModel composes %q, not what this test renders", diff.JoinModel("gpt-4o|fp_spoofed", "fp_real"))
	}
	body := IssueBody(ev, &Evidence{})
	if !strings.Contains(body, "fingerprint `fp_real`") {
		i := strings.Index(body, "| Model before |")
		t.Fatalf("the fingerprint the provider reported (fp_real) is not the one shown: %q", body[i:i+strings.IndexByte(body[i:], '\n')])
	}
	// A fingerprint holding "|" keeps it (rendered escaped, not as code),
	// and the id keeps its own.
	ev.ModelBefore = diff.JoinModel("gpt-4o", "fp_a|fp_b")
	body = IssueBody(ev, &Evidence{})
	if want := "| Model before | model `gpt-4o`, fingerprint " + Code("fp_a|fp_b") + " |"; !strings.Contains(body, want) {
		i := strings.Index(body, "| Model before |")
		t.Fatalf("fingerprint with a pipe: %q, want %q", body[i:i+strings.IndexByte(body[i:], '\n')], want)
	}
}

// A mixed event whose loosened probes flipped back says what still holds:
// the probes still flipped are all newly blocked, so the title says so
// instead of "(N now blocked, 0 now allowed)"; the event's direction
// (mixed) is unchanged, and once every probe reverted the title names the
// mixed change it recorded.
func TestTitleOfMixedEventWithOneSideReverted(t *testing.T) {
	vio := diff.Verdict{Class: probes.BlockedOutput, Categories: []string{"violence"}}
	allowed := diff.Verdict{Class: probes.Allowed}
	ev := &diff.Event{Target: "sim-a", Targets: []string{"sim-a"}, Provider: "sim", Kind: diff.KindPolicy, Direction: diff.Mixed,
		Status: diff.StatusOpen, Probes: []diff.EventProbe{
			{Before: allowed, After: vio}, {Before: allowed, After: vio}, {Before: vio, After: allowed},
		}}
	if got, want := Title(ev), "Provider policy change on sim-a: 3 probes changed (2 now blocked, 1 now allowed) (violence)"; got != want {
		t.Errorf("mixed\n got %q\nwant %q", got, want)
	}
	ev.Probes[2].Reverted = true
	if got, want := Title(ev), "Provider policy change on sim-a: 2 probes now blocked (violence) [1 of 3 reverted]"; got != want {
		t.Errorf("loosened side reverted\n got %q\nwant %q", got, want)
	}
	ev.Probes[2].Reverted = false
	ev.Probes[0].Reverted, ev.Probes[1].Reverted = true, true
	if got, want := Title(ev), "Provider policy change on sim-a: 1 probe now allowed (violence) [2 of 3 reverted]"; got != want {
		t.Errorf("tightened side reverted\n got %q\nwant %q", got, want)
	}
}
