package diff

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestStateRoundTrip(t *testing.T) {
	in := map[string]*state{}
	for i := 0; i < 50; i++ {
		id := fmt.Sprintf("p%02d", i)
		sha := fmt.Sprintf("%064x", i*7919)
		if i%10 == 0 {
			sha = "render-error"
		}
		in[id] = &state{probeID: id, sha: sha, sinceRun: int64(i), baseline: "allowed|", baselineRun: 3, baselineModel: "m|fp",
			baselineObs: int64(i * 100), baselineScores: "a=0.1;b=0.2", candidate: []string{"", "blocked_input|hate,violence"}[i%2],
			candidateRun: 9, candidateRuns: i % 3, candidateModel: "m|fp2", candidateObs: -1, driftScores: "", driftRuns: 1, driftRun: 8,
			lastVerdict: "blocked_output|hate", changes: i, reverts: i / 2, nondeterministic: i%3 == 0}
	}
	out, err := decodeStates(encodeStates(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d states, want %d", len(out), len(in))
	}
	for id, st := range in {
		if !reflect.DeepEqual(out[id], st) {
			t.Fatalf("%s: got %+v\nwant %+v", id, out[id], st)
		}
	}
}

func FuzzDecodeStates(f *testing.F) {
	f.Add(encodeStates(map[string]*state{"p": {probeID: "p", sha: fmt.Sprintf("%064d", 1), baseline: "allowed|"}}))
	f.Add([]byte{2, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeStates(b)
		if err != nil && !errors.Is(err, errCorruptState) {
			t.Fatalf("unexpected error kind: %v", err)
		}
		if err == nil {
			if _, err := decodeStates(encodeStates(m)); err != nil {
				t.Fatalf("re-encode: %v", err)
			}
		}
	})
}
