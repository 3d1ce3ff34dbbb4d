package app_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
)

// Review 181cdbb: ghissue and evidence now render model_before/after
// through diff.SplitModel, but `run`/`events` (WriteEvents, run.go:660)
// and the detail lines detection writes (detect.go:1544, :1619) still
// print the raw JoinModel string: a fingerprint holding "|" shows as
// "fp_a%7Cfp_b", and an id holding "|" is as ambiguous as before the
// fix ("gpt-4o|fp_spoofed|fp_real").
func TestReviewWriteEventsRendersJoinedModel(t *testing.T) {
	ev := &diff.Event{ID: 1, Target: "t", Targets: []string{"t"}, Kind: diff.KindModel, Direction: "tightened", Status: "open",
		ModelBefore: diff.JoinModel("gpt-4o", "fp_a|fp_b"), ModelAfter: diff.JoinModel("gpt-4o", "fp_c")}
	var out bytes.Buffer
	app.WriteEvents(&out, []*diff.Event{ev}, nil)
	if strings.Contains(out.String(), "%7C") {
		t.Errorf("events output shows the stored escaping of the fingerprint:\n%s", out.String())
	}
}
