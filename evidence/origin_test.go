package evidence_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// Each side of a flip names the endpoint its run answered at, and a record
// whose before and after were answered at different endpoints does not
// verify: that is no evidence of a provider change (detection never
// confirms a flip across an endpoint move; such a record comes from an
// older driftprobe or an edited database).
func TestEvidenceNamesEndpoints(t *testing.T) {
	ctx := context.Background()
	e := testenv.New(t, violence)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindPolicy)
	rec, err := evidence.Build(ctx, e.Store, ev.ID, time.Unix(0, 0))
	if err != nil || !rec.AllVerified {
		t.Fatalf("record: %v %v", err, rec.Problems())
	}
	p := rec.Probes[0]
	if p.Before == nil || p.After == nil || p.Before.Origin != sim.EmbeddedOrigin || p.After.Origin != sim.EmbeddedOrigin {
		t.Fatalf("sides' origins: %+v %+v", p.Before, p.After)
	}
	if md := markdown(rec); !strings.Contains(md, `endpoint sim\:embedded`) { // (the colon escaped: no emoji shortcode)
		t.Errorf("markdown names no endpoint:\n%s", md[strings.Index(md, "- before:"):])
	}
	exec(t, e, `UPDATE run_targets SET origin = 'https://elsewhere.example' WHERE run_id = ?`, p.After.RunID)
	rec, err = evidence.Build(ctx, e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if rec.AllVerified || !strings.Contains(strings.Join(rec.Problems(), "\n"), "answered at different endpoints (sim:embedded, https://elsewhere.example)") {
		t.Errorf("a flip across endpoints verified: %v", rec.Problems())
	}
}

// A format-2 record (written before origins were kept) still verifies.
func TestFormat2StillVerifies(t *testing.T) {
	ctx := context.Background()
	e := testenv.New(t, violence)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindPolicy)
	rec, err := evidence.Build(ctx, e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	rec.Format = evidence.FormatV2
	for i := range rec.Event.Probes {
		rec.Event.Probes[i].Origin, rec.Event.Probes[i].BeforeRun = "", 0
	}
	for i := range rec.Probes {
		for _, o := range []*evidence.Observation{rec.Probes[i].Before, rec.Probes[i].After} {
			if o != nil {
				o.Origin = ""
			}
		}
	}
	if err := rec.Rehash(); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rec)
	if strings.Contains(string(b), `"origin"`) {
		t.Fatal("a format-2 record names origins")
	}
	if _, err := evidence.VerifyJSON(b); err != nil {
		t.Errorf("format 2: %v", err)
	}
}
