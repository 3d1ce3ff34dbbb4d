package diff

import (
	"fmt"
	"testing"
)

// README (Upgrading, schema 19): "reverts an older state counted while a
// baseline formed, or before its baseline was confirmed, start over".
//
// The previous release (format 4) counted a new verdict replacing the
// candidate while a first baseline formed as a revert. With
// detection.nondeterministic_flips: 3 this history leaves an unmarked
// format-4 state holding two reverts, one of each kind:
//
//	run 1 allowed (candidate), run 2 blocked (old rule: revert 1, at run 2),
//	run 3 blocked (baseline blocked, baselineRun 3), run 4 allowed
//	(candidate), run 5 blocked (back to the baseline: revert 2, run 5).
//
// upgradeReverts resets only when lastRevertRun <= baselineRun, i.e. when
// the LATEST revert predates the baseline; here the latest (run 5) is
// after it, so both are kept, the run-2 one included. One more genuine
// back-and-forth then marks the probe nondeterministic after two reverts
// the format-5 rule counts, one fewer than configured. A counter's
// history is not in the blob: only the latest revert is known to postdate
// baselineRun, so at most one revert can be kept (min(reverts, 1)), or
// all of a format-4 state's reverts should start over.
func TestReview2UpgradeKeepsARevertCountedWhileTheBaselineFormed(t *testing.T) {
	st := &state{probeID: "p", sha: fmt.Sprintf("%064x", 1), sinceRun: 1, baseline: "blocked_output|violence", baselineRun: 3,
		baselineModel: "m|fp", baselineObs: 30, lastVerdict: "blocked_output|violence", changes: 4, reverts: 2, lastRevertRun: 5}
	b := encodeStates(map[string]*state{"p": st})
	b[0] = 4 // the same fields, written by the previous release
	got, err := decodeStates(b)
	if err != nil {
		t.Fatal(err)
	}
	if r := got["p"].reverts; r > 1 {
		t.Errorf("format 4 state with reverts at runs 2 (while the baseline formed, baselineRun 3) and 5 reads with %d reverts: the one counted while the baseline formed did not start over", r)
	}
}
