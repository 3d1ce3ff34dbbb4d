package diff

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
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
			lastVerdict: "blocked_output|hate", changes: i, reverts: i / 2, nondeterministic: i%3 == 0,
			lastRevertRun: int64(i % 4), prevCandidate: []string{"", "allowed|"}[i%2],
			scoresObs: int64(i*100 - 7), scoresModel: []string{"m|fp", "m0|fp0"}[i%2]}
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

// A format 3 blob (written before the score baseline's answer was kept)
// reads with none: its fields are the format 4 ones less the two at the
// end of each probe.
func TestFormat3StatesRead(t *testing.T) {
	st := &state{probeID: "p", sha: fmt.Sprintf("%064x", 1), baseline: "allowed|", baselineModel: "m|fp", baselineObs: 5, baselineScores: "a=0.1",
		lastVerdict: "allowed|", lastRevertRun: 2, prevCandidate: "x|"}
	b := encodeStates(map[string]*state{"p": st})
	// The same blob in format 3: the format byte, and each probe without
	// the last two fields (here 0 and "": one byte each, a varint and an
	// index into the small string table).
	three := append([]byte(nil), b[:len(b)-2]...)
	three[0] = 3
	if b[0] != 5 {
		t.Fatalf("format byte %d, want 5", b[0])
	}
	got, err := decodeStates(three)
	if err != nil {
		t.Fatal(err)
	}
	want := *st
	if g := got["p"]; g == nil || !reflect.DeepEqual(*g, want) {
		t.Fatalf("format 3 blob read as %+v, want %+v", got["p"], want)
	}
}

// Probes absent from the corpus round-trip with the run they went
// absent in, and travel after the probe list: the blob's first part is
// byte for byte the blob of the present probes alone, so a reader that
// stops after the probe list (an older driftprobe) reads the present
// probes exactly as before and drops the absent ones, as it always did.
func TestAbsentStatesTrailTheProbeList(t *testing.T) {
	present := map[string]*state{
		"p": {probeID: "p", sha: fmt.Sprintf("%064x", 1), sinceRun: 1, baseline: "allowed|", baselineModel: "m|fp", lastVerdict: "allowed|"},
		"q": {probeID: "q", sha: fmt.Sprintf("%064x", 2), sinceRun: 1, baseline: "blocked_input|violence", lastVerdict: "blocked_input|violence", lastRevertRun: 3},
	}
	all := map[string]*state{
		"gone": {probeID: "gone", sha: fmt.Sprintf("%064x", 3), sinceRun: 1, baseline: "allowed|", baselineModel: "m|fp", lastVerdict: "allowed|", absentSince: 7},
		"odd":  {probeID: "odd", sha: "render-error", sinceRun: 2, candidate: "blocked_output|hate", lastVerdict: "blocked_output|hate", absentSince: 9},
	}
	for id, st := range present {
		all[id] = st
	}
	out, err := decodeStates(encodeStates(all))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, all) {
		t.Fatalf("round trip: got %+v\nwant %+v", out, all)
	}
	with := encodeStates(all)
	old, err := decodeStatesAs(with, false)
	if err != nil {
		t.Fatalf("read as an older driftprobe reads it: %v", err)
	}
	if !reflect.DeepEqual(old, present) {
		t.Errorf("read as an older driftprobe reads it: %+v, want the present probes %+v", old, present)
	}
	if got, err := decodeStates(append(slices.Clone(with), 0)); err == nil {
		t.Errorf("trailing byte after the absent probes accepted: %+v", got)
	}
}

func FuzzDecodeStates(f *testing.F) {
	f.Add(encodeStates(map[string]*state{"p": {probeID: "p", sha: fmt.Sprintf("%064d", 1), baseline: "allowed|"}}))
	f.Add(encodeStates(map[string]*state{"p": {probeID: "p", sha: fmt.Sprintf("%064d", 1), baseline: "allowed|"},
		"gone": {probeID: "gone", sha: fmt.Sprintf("%064d", 2), baseline: "blocked_input|violence", absentSince: 4}}))
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
