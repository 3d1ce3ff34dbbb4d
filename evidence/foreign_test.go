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

// An event citing, as a flip's side, an observation of another target or
// another probe than the flip's own does not verify, even when that
// observation sent the same bytes and carries the claimed verdict: it is no
// evidence of this flip. The record shows it as it is, names the problem,
// and stays unverified once written and read back.
func TestCitedObservationOfAnotherTargetOrProbeDoesNotVerify(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cite makes the event cite, for ep's before side, an observation
		// of another target or probe, and returns the text the problem
		// must name.
		cite func(t *testing.T, e *testenv.Env, ev *diff.Event, ep diff.EventProbe) string
	}{
		{"another target", func(t *testing.T, e *testenv.Env, ev *diff.Event, ep diff.EventProbe) string {
			other := "b"
			if ep.Target == "b" {
				other = "a"
			}
			// The other target's answer to the same probe in the same run:
			// same bytes, same verdict, another target.
			var id int64
			if err := e.Store.SQL().QueryRowContext(context.Background(), `SELECT o.id FROM observations o JOIN targets t ON t.id = o.target_id
				WHERE t.name = ? AND o.probe_id = ? AND o.sample = 0 AND o.run_id = (SELECT run_id FROM observations WHERE id = ?)`,
				other, ep.ProbeID, ep.BeforeObs).Scan(&id); err != nil {
				t.Fatal(err)
			}
			exec(t, e, `UPDATE event_probes SET before_obs = ? WHERE event_id = ? AND probe_id = ? AND target_id = (SELECT id FROM targets WHERE name = ?)`,
				id, ev.ID, ep.ProbeID, ep.Target)
			return fmt.Sprintf("it is an observation of target %s, probe %s, not of the event's %s/%s", other, ep.ProbeID, ep.Target, ep.ProbeID)
		}},
		{"another probe", func(t *testing.T, e *testenv.Env, ev *diff.Event, ep diff.EventProbe) string {
			// The cited row itself moved to another probe id: same bytes,
			// same verdict, another probe.
			exec(t, e, `UPDATE observations SET probe_id = 'someone-else' WHERE id = ?`, ep.BeforeObs)
			return fmt.Sprintf("it is an observation of target %s, probe someone-else, not of the event's %s/%s", ep.Target, ep.Target, ep.ProbeID)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testenv.New(t, twoTargets)
			e.Runs(4)
			ev := eventOfKind(t, e, diff.KindPolicy)
			if rec := build(t, e, ev.ID); !rec.AllVerified {
				t.Fatalf("untouched event does not verify: %q", rec.Problems())
			}
			ep := ev.Probes[0]
			want := tc.cite(t, e, ev, ep)
			rec := build(t, e, ev.ID)
			if rec.AllVerified {
				t.Fatalf("an event citing an observation of %s verifies", tc.name)
			}
			found := false
			for _, p := range rec.Problems() {
				if strings.HasPrefix(p, ep.Target+"/"+ep.ProbeID+": before observation ") && strings.Contains(p, want) {
					found = true
				}
			}
			if !found {
				t.Fatalf("problems %q name no %q", rec.Problems(), want)
			}
			p := byProbe(rec)[ep.Target+"/"+ep.ProbeID]
			if p.Before == nil || p.Before.CitedID != 0 || p.Request.ObservationID == p.Before.ID {
				t.Errorf("the foreign observation is not shown as cited, or its bytes stand for the probe's request: %+v", p)
			}
			var ue *evidence.UnverifiedError
			if err := evidence.Verify(rec); !errors.As(err, &ue) {
				t.Fatalf("verify: %v", err)
			}
			if _, err := evidence.VerifyJSON(writeLikeTheCLI(t, rec)); !errors.As(err, &ue) {
				t.Fatalf("verify the written record: %v", err)
			}
			if md := markdown(rec); !strings.Contains(md, "record verifies (all_verified): false") || !strings.Contains(md, want) {
				t.Errorf("text:\n%s", md)
			}
		})
	}
}
