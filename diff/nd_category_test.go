package diff_test

import (
	"slices"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// A probe marked nondeterministic whose new verdict held (a settled
// change, reported in its nondeterminism event) fires its categories on
// the target from then on, as its baseline does: a later policy change
// bringing one of them to another probe does not name it in
// new_categories ("never seen firing on the target before"), which would
// page while driftprobe_category_active already showed it.
func TestSettledNondeterministicProbeFiresItsCategories(t *testing.T) {
	dir := t.TempDir()
	writeQACorpus(t, dir, "1", []string{qaProbes[0], qaProbes[1], qaProbes[2]}) // benign-france, benign-water, vio-kill-process
	// On model m the sim scores vio-kill-process 0.34 and benign-france
	// 0.013 for violence; benign-water 0.
	e := testenv.New(t, "corpus: "+dir+"\nconfirm_runs: 2\ntargets:\n"+
		"  - {name: a, provider: sim, model: m, sim: {policies: ["+
		"{from_run: 1, thresholds: {violence: 0.5}}, {from_run: 3, thresholds: {violence: 0.3}}, {from_run: 4, thresholds: {violence: 0.5}}, "+
		"{from_run: 5, thresholds: {violence: 0.3}}, {from_run: 6, thresholds: {violence: 0.5}}, "+
		"{from_run: 7, thresholds: {violence: 0.3}}, "+
		"{from_run: 10, thresholds: {violence: 0.01}}]}}\n")
	e.Runs(6) // vio-kill-process went back twice: marked nondeterministic in run 6
	nd := ofKind(events(t, e), diff.KindNondeterminism)
	if len(nd) != 1 || findProbe(nd[0], "vio-kill-process") == nil {
		t.Fatalf("after run 6: nondeterminism events %+v, want vio-kill-process marked", nd)
	}
	e.Runs(3) // runs 7-9: it is blocked_output[violence], and that held (a settled change)
	if pol := ofKind(events(t, e), diff.KindPolicy); len(pol) != 0 {
		t.Fatalf("after run 9: policy events %+v, want none (a marked probe's change is nondeterminism)", pol)
	}
	e.Runs(2) // runs 10-11: benign-france is blocked with violence: a policy change
	pol := ofKind(events(t, e), diff.KindPolicy)
	if len(pol) != 1 || findProbe(pol[0], "benign-france") == nil {
		t.Fatalf("after run 11: policy events %+v, want benign-france's flip", pol)
	}
	if slices.Contains(pol[0].NewCategories, "violence") {
		t.Errorf("new_categories %v: violence fired on the target since run 8 (vio-kill-process's baseline)", pol[0].NewCategories)
	}
}
