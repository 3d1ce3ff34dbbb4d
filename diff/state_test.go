package diff

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
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

// Score keys are the provider's: '=' and ';' in one cannot split it, so
// its moves are compared and reported under the key it has.
func TestScoreKeysWithSeparators(t *testing.T) {
	res := func(v float64) probes.Result {
		return probes.Result{Signals: []probes.Signal{
			{Raw: "a=b", Score: v, HasScore: true}, {Raw: "x;y", Score: 0.1, HasScore: true}, {Raw: "y", Score: 0.2, HasScore: true}, {Raw: "p%3D", Score: 0.3, HasScore: true}}}
	}
	before, after := scoreString(res(0.1)), scoreString(res(0.9))
	if got := maxScoreDelta(before, after); got < 0.79 || got > 0.81 {
		t.Fatalf("max delta %v, want 0.8 (a=b moved)", got)
	}
	if m := parseScores(before); len(m) != 4 || m["y"] != 0.2 {
		t.Errorf("parsed %v: x;y and y must stay apart", m)
	}
	moves := parseScoreMoves(scoreMoves(before, after, 0.15))
	if len(moves) != 1 || moves[0].Key != "a=b" || moves[0].Before != 0.1 || moves[0].After != 0.9 {
		t.Errorf("moves %+v", moves)
	}
}
