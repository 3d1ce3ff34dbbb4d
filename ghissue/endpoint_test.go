package ghissue_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// excursionYAML: one sim target at a standalone sim's base URL ({URL});
// the database and GitHub base URL as in newSysFrom.
const excursionYAML = `database: %s
confirm_runs: 2
targets:
  - {name: gw, provider: sim, model: m, base_url: "{URL}"}
github:
  repo: acme/llm-drift
  token_env: DRIFTPROBE_TEST_GH_TOKEN
  base_url: %s
`

// TestIssueAfterEndpointExcursion: gw answers at endpoint a in runs 1-3,
// is moved to b for runs 4-5 (same policy: new baselines there, no
// event), and back at a in runs 6-7, where a's provider tightened
// violence from run 6 (first seen in run 6, confirmed in run 7). The run
// before the flip, run 5, is one at b: the issue's commands and "Last run
// before" name run 3, the last run before it at a, and the diff the
// issue tells on-call to run shows the flips, not an endpoint move. The
// issue names the endpoint, inert.
func TestIssueAfterEndpointExcursion(t *testing.T) {
	a := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 6, Thresholds: map[string]float64{"violence": 0.3}}}}))
	defer a.Close()
	b := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer b.Close()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	db := filepath.Join(t.TempDir(), "test.db")
	c := newClock()
	for run, url := range []string{a.URL, a.URL, a.URL, b.URL, b.URL, a.URL, a.URL} {
		s := newSysFrom(t, strings.Replace(excursionYAML, "{URL}", url, 1), db, f.BaseURL())
		s.run()
		if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 0 {
			t.Fatalf("run %d: %+v", run+1, res)
		}
		if run < 6 {
			s.close()
			continue
		}
		evs := events(t, s)
		if len(evs) != 1 || evs[0].FirstRun != 6 || evs[0].ConfirmedRun != 7 || evs[0].Kind != diff.KindPolicy {
			t.Fatalf("scenario changed: events %+v", evs)
		}
		ev := evs[0]
		origin := probes.URLOrigin(a.URL)
		for _, p := range ev.Probes {
			if p.Origin != origin || p.BeforeRun < 1 || p.BeforeRun > 3 {
				t.Fatalf("scenario changed: probe %s origin %q (want %q), before run %d", p.ProbeID, p.Origin, origin, p.BeforeRun)
			}
		}
		// The trap the issue must not set: run 5 (at b) against run 7.
		if d, err := diff.DiffRuns(context.Background(), s.st, "gw", 5, 7); err != nil || !d.OriginMoved {
			t.Fatalf("scenario changed: diff 5..7 %+v %v", d, err)
		}
		iss := f.issueList()
		if len(iss) != 1 {
			t.Fatalf("issues %+v", iss)
		}
		body := iss[0].Body
		for _, want := range []string{
			"driftprobe diff --target gw --from 3 --to 7\n",
			"| Last run before | run 3, started ",
			// inert: the colons escaped, the autolink broken
			"| Endpoint of `gw` | " + strings.Replace(strings.ReplaceAll(origin, ":", `\:`), "//", "\u200d//", 1) + " |\n",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("issue body lacks %q:\n%s", want, body)
			}
		}
		if strings.Contains(body, "--from 5 ") || strings.Contains(body, "| Last run before | run 5") {
			t.Errorf("the issue cites run 5, at the other endpoint:\n%s", body)
		}
		if n := strings.Count(body, "| Endpoint of "); n != 1 {
			t.Errorf("%d endpoint rows, want 1", n)
		}
		// The command the issue gives shows the flips it lists, at one
		// endpoint.
		m := regexp.MustCompile(`driftprobe diff --target gw --from (\d+) --to (\d+)\n`).FindStringSubmatch(body)
		if m == nil || m[1] != "3" {
			t.Fatalf("no diff command from run 3: %v", m)
		}
		d, err := diff.DiffRuns(context.Background(), s.st, "gw", 3, 7)
		if err != nil || d.OriginMoved || d.FromOrigin != origin || d.ToOrigin != origin {
			t.Fatalf("diff 3..7: %+v %v", d, err)
		}
		var shown, listed []string
		for _, p := range d.Probes {
			shown = append(shown, p.ProbeID)
		}
		for _, p := range ev.Probes {
			listed = append(listed, p.ProbeID)
		}
		slices.Sort(shown)
		slices.Sort(listed)
		if len(listed) == 0 || !slices.Equal(shown, listed) {
			t.Errorf("diff --from 3 --to 7 shows %v, the issue lists %v", shown, listed)
		}
	}
}
