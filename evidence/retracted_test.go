package evidence_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// retracting: on a noisy sim (seed 1) a coin-flip probe is confirmed as a
// policy_change in run 5, then marked nondeterministic in run 8: its only
// flip is withdrawn and the event retracted (status reverted).
const retracting = `
targets:
  - {name: prod, provider: sim, model: sim-large, sim: {noise: 0.5, noise_band: 0.2, seed: 1}}
`

// retractedEvent runs the retracting scenario and returns its retracted
// policy event.
func retractedEvent(t *testing.T, e *testenv.Env) *diff.Event {
	t.Helper()
	e.Runs(8)
	evs, err := diff.ListEvents(context.Background(), e.Store, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == diff.KindPolicy && len(ev.Updates) > 0 && ev.Updates[len(ev.Updates)-1].Change == diff.ChangeRetracted {
			return ev
		}
	}
	for _, ev := range evs {
		t.Logf("event %d %s %s %+v", ev.ID, ev.Kind, ev.Status, ev.Updates)
	}
	t.Fatalf("no retracted policy event among %d", len(evs))
	return nil
}

// An event retracted because its probes proved nondeterministic is never
// worded as reverted ("every flip of the event went back"): the provider
// did not necessarily change anything. The JSON record keeps the status
// the events contract gives it (reverted) with the retracted update and
// withdrawn probes, and verifies.
func TestRetractedEventIsNotCalledReverted(t *testing.T) {
	e := testenv.New(t, retracting)
	ev := retractedEvent(t, e)
	rec, err := evidence.Build(context.Background(), e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	out := markdown(rec)
	if strings.Contains(out, "every flip of the event went back") || strings.Contains(out, "- reverted in run") {
		t.Errorf("a retracted event worded as reverted:\n%s", out)
	}
	want := "- retracted in run " + strconv.FormatInt(ev.RevertedRun, 10) + ": every flip of the event was withdrawn"
	if !strings.Contains(out, want) || !strings.Contains(out, "the provider did not necessarily change anything") {
		t.Errorf("evidence text lacks %q and the retracted wording:\n%s", want, out)
	}
	if !strings.Contains(out, "status: `reverted` (retracted)") {
		t.Errorf("the status line does not say retracted beside the stored status:\n%s", out)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	back, err := evidence.VerifyJSON(b)
	if err != nil {
		t.Fatalf("the record does not verify: %v", err)
	}
	if back.Event.Status != diff.StatusReverted || back.Event.RevertedRun != ev.RevertedRun || back.Event.Updates[len(back.Event.Updates)-1].Change != diff.ChangeRetracted {
		t.Errorf("JSON event: status %q reverted_run %d updates %+v", back.Event.Status, back.Event.RevertedRun, back.Event.Updates)
	}
	for _, p := range back.Probes {
		if !p.Withdrawn || !p.Reverted || p.RevertedRun != ev.RevertedRun {
			t.Errorf("JSON probe %s: withdrawn %v reverted %v run %d", p.ProbeID, p.Withdrawn, p.Reverted, p.RevertedRun)
		}
	}
}

// An event that ended with some flips back and others withdrawn is
// reverted, but the withdrawn ones did not go back: the wording counts
// them apart.
func TestRevertedWithWithdrawnProbesCountsThem(t *testing.T) {
	r := &evidence.Record{
		Event: &diff.Event{ID: 3, Kind: diff.KindPolicy, Status: diff.StatusReverted, RevertedRun: 9},
		Probes: []evidence.Probe{
			{Target: "a", ProbeID: "back", Reverted: true, RevertedRun: 9},
			{Target: "a", ProbeID: "noisy", Reverted: true, Withdrawn: true, RevertedRun: 7},
		},
	}
	out := markdown(r)
	if !strings.Contains(out, "- reverted in run 9: every flip of the event went back or was withdrawn (1 withdrawn as nondeterministic") ||
		strings.Contains(out, "every flip of the event went back\n") || strings.Contains(out, "retracted") {
		t.Errorf("evidence text of an event reverted with a withdrawn probe:\n%s", out)
	}
}
