package evidence_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
)

// A probe that left its event because its verdict moved on is never
// worded as one that flipped back, nor is an event that ended with one.
func TestMovedOnIsNotCalledReverted(t *testing.T) {
	r := &evidence.Record{
		Event: &diff.Event{ID: 2, Kind: diff.KindPolicy, Status: diff.StatusReverted, RevertedRun: 13},
		Probes: []evidence.Probe{
			{Target: "a", ProbeID: "back", Reverted: true, RevertedRun: 13},
			{Target: "a", ProbeID: "on", Reverted: true, MovedOn: true, RevertedRun: 13},
		},
	}
	var b bytes.Buffer
	evidence.WriteMarkdown(&b, r)
	out := b.String()
	for _, want := range []string{"ended in run 13: every flip of the event left it, not all by going back (1 moved on", "**moved on in run 13**", "**reverted in run 13**: the probe flipped back"} {
		if !strings.Contains(out, want) {
			t.Errorf("evidence text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "every flip of the event went back") || strings.Count(out, "flipped back to its before verdict") != 1 {
		t.Errorf("moved-on probe worded as flipped back:\n%s", out)
	}
}
