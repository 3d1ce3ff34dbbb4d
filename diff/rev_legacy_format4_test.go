package diff

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"reflect"
	"sort"
	"testing"
)

// encodeLegacy4 writes states as b33ff0d did: format 4 with one more
// reference per probe (the model a pending score drift began under).
func encodeLegacy4(states map[string]*state, drift map[string]string) []byte {
	var ids, gone []string
	for id, st := range states {
		if st.absentSince > 0 {
			gone = append(gone, id)
		} else {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	sort.Strings(gone)
	index := map[string]uint64{}
	var table []string
	intern := func(s string) uint64 {
		if i, ok := index[s]; ok {
			return i
		}
		i := uint64(len(table))
		index[s] = i
		table = append(table, s)
		return i
	}
	var body []byte
	str := func(s string) { body = binary.AppendUvarint(body, uint64(len(s))); body = append(body, s...) }
	ref := func(s string) { body = binary.AppendUvarint(body, intern(s)) }
	num := func(n int64) { body = binary.AppendVarint(body, n) }
	probe := func(st *state) {
		str(st.probeID)
		if raw, err := hex.DecodeString(st.sha); err == nil && len(raw) == 32 {
			body = append(body, 1)
			body = append(body, raw...)
		} else {
			body = append(body, 0)
			str(st.sha)
		}
		num(st.sinceRun)
		ref(st.baseline)
		num(st.baselineRun)
		ref(st.baselineModel)
		num(st.baselineObs)
		ref(st.baselineScores)
		ref(st.candidate)
		num(st.candidateRun)
		num(int64(st.candidateRuns))
		ref(st.candidateModel)
		num(st.candidateObs)
		ref(st.driftScores)
		num(int64(st.driftRuns))
		num(st.driftRun)
		ref(st.lastVerdict)
		num(int64(st.changes))
		num(int64(st.reverts))
		nd := int64(0)
		if st.nondeterministic {
			nd = 1
		}
		num(nd)
		num(st.lastRevertRun)
		ref(st.prevCandidate)
		num(st.scoresObs)
		ref(st.scoresModel)
		ref(drift[st.probeID])
	}
	body = binary.AppendUvarint(body, uint64(len(ids)))
	for _, id := range ids {
		probe(states[id])
	}
	if len(gone) > 0 {
		body = binary.AppendUvarint(body, uint64(len(gone)))
		for _, id := range gone {
			probe(states[id])
			num(states[id].absentSince)
		}
	}
	b := []byte{4}
	b = binary.AppendUvarint(b, uint64(len(table)))
	for _, t := range table {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
	}
	return append(b, body...)
}

// Review: decodeStatesAs tries the legacy (b33ff0d) reading only when the
// current one fails, on the premise that a legacy blob never reads as a
// current one. It can: here the first probe's extra reference (the drift
// model, table index 3) reads as the length of the next probe's id, which
// swallows that id's own length byte ("\x02p1") and realigns exactly, and
// the last probe's extra reference (index 0) reads as "no absent probes".
// The blob decodes without error, with probe "p1" replaced by "\x02p1":
// p1's baseline, candidate and counters are lost (it starts over), and a
// state under an id no corpus can have is kept for good as an absent probe.
// A seeded random sweep of 2-6 probe blobs misreads about 0.2% of them.
func TestRevLegacyFormat4ReadAsCurrent(t *testing.T) {
	sha := func(b byte) string { return hex.EncodeToString(bytes.Repeat([]byte{b}, 32)) }
	states := map[string]*state{
		"p0": {probeID: "p0", sha: sha(0xa1), sinceRun: 15, baselineRun: 1, baselineModel: "m-2", baselineObs: 611,
			scoresObs: 344, scoresModel: "m-2", candidate: "allowed", candidateRun: 30, candidateRuns: 1},
		"p1": {probeID: "p1", sha: sha(0xb2), sinceRun: 46, baselineModel: "m-1", baselineObs: 175, scoresObs: 189,
			candidate: "model_refusal", candidateRun: 10, candidateRuns: 2, candidateModel: "m-1"},
	}
	drift := map[string]string{"p0": "m-1", "p1": ""}
	cur := encodeStates(states)
	cur[0] = 4 // as 778db11 wrote the same states
	want, err := decodeStates(cur)
	if err != nil {
		t.Fatal(err)
	}
	blob := encodeLegacy4(states, drift)
	if l, err := decodeStatesVariant(blob, true, true); err != nil || !reflect.DeepEqual(l, want) {
		t.Fatalf("the legacy reading itself: %v", err) // it reads the blob right
	}
	got, err := decodeStates(blob)
	if err != nil {
		t.Fatalf("legacy blob refused: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		var ids []string
		for id := range got {
			ids = append(ids, fmt.Sprintf("%q", id))
		}
		sort.Strings(ids)
		t.Errorf("b33ff0d's blob read without error as other states: probe ids %v, want \"p0\" \"p1\"", ids)
	}
}
