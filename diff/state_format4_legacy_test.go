package diff

import (
	"os"
	"reflect"
	"testing"
)

// A detection state written in format 4 by main between b33ff0d and
// d50c1e8 (an extra per-probe reference, the model a score drift began
// under, that 778db11 took out without a new format number) reads as the
// same runs written by 778db11 read: every probe's baseline, candidate,
// verdicts, models, scores and counters alike. The blobs are real: five
// runs of the same two simulated targets (sim-a's policy change
// confirmed, sim-b's pending at run 5) by binaries built at b33ff0d and
// 778db11. Observation ids are left out of the comparison: the two
// targets' answers interleave differently in each database, and b33ff0d
// cited another answer for the baseline's scores.
func TestDecodeStatesFormat4AsB33ff0dWroteIt(t *testing.T) {
	for _, target := range []string{"1", "2"} {
		legacy, err := os.ReadFile("testdata/state_format4_b33ff0d_target" + target + ".bin")
		if err != nil {
			t.Fatal(err)
		}
		current, err := os.ReadFile("testdata/state_format4_778db11_target" + target + ".bin")
		if err != nil {
			t.Fatal(err)
		}
		if legacy[0] != 4 || current[0] != 4 || len(legacy) <= len(current) {
			t.Fatalf("target %s: testdata not two format-4 blobs with the legacy one longer", target)
		}
		want, err := decodeStates(current)
		if err != nil {
			t.Fatalf("target %s: 778db11's blob: %v", target, err)
		}
		got, err := decodeStates(legacy)
		if err != nil {
			t.Fatalf("target %s: b33ff0d's blob: %v", target, err)
		}
		for _, m := range []map[string]*state{got, want} {
			for _, st := range m {
				st.baselineObs, st.candidateObs, st.scoresObs = 0, 0, 0
			}
		}
		if len(got) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("target %s: b33ff0d's blob read %d states, not as 778db11's (%d)", target, len(got), len(want))
			for id, st := range want {
				if !reflect.DeepEqual(got[id], st) {
					t.Errorf("probe %s:\n got %+v\nwant %+v", id, got[id], st)
					break
				}
			}
		}
		var candidates int
		for _, st := range got {
			if st.candidate != "" {
				candidates++
			}
		}
		if target == "2" && candidates == 0 {
			t.Errorf("target 2: no pending candidate read: the change in progress would be lost")
		}
		// Damaged is still damaged: the legacy reading is all or nothing.
		legacy, _ = os.ReadFile("testdata/state_format4_b33ff0d_target" + target + ".bin")
		if _, err := decodeStates(legacy[:len(legacy)-1]); err == nil {
			t.Errorf("target %s: a truncated legacy blob decoded", target)
		}
	}
}
