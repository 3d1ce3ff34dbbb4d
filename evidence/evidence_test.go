package evidence_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

func TestEvidenceIsVerifiable(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}
`)
	e.Runs(4)
	evs, err := diff.ListEvents(context.Background(), e.Store, diff.Filter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %v %v", evs, err)
	}
	rec, err := evidence.Build(context.Background(), e.Store, evs[0].ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.AllVerified || len(rec.Probes) != len(evs[0].Probes) {
		t.Fatalf("verified %v, %d probes", rec.AllVerified, len(rec.Probes))
	}
	for _, p := range rec.Probes {
		if !p.Request.Verified || !p.SameBytes || p.Before == nil || p.After == nil {
			t.Errorf("%s: %+v", p.ProbeID, p)
		}
		if p.Before.RequestID == "" || p.After.RequestID == "" || p.Before.RunID >= p.After.RunID || p.ProbeCanonical == "" {
			t.Errorf("%s: missing provider ids, runs or canonical probe", p.ProbeID)
		}
		if !strings.Contains(p.Request.Body, `"messages"`) || p.Before.Verdict.Key() == p.After.Verdict.Key() {
			t.Errorf("%s: request body %q, %v -> %v", p.ProbeID, p.Request.Body, p.Before.Verdict, p.After.Verdict)
		}
	}
	if err := evidence.Verify(rec); err != nil {
		t.Fatal(err)
	}
	// Tampering with the bytes is detected.
	rec.Probes[0].Request.Body = strings.Replace(rec.Probes[0].Request.Body, "m", "M", 1)
	if err := evidence.Verify(rec); err == nil {
		t.Fatal("tampered record verified")
	}
}
