package storage

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
)

var signalCases = [][]probes.Signal{
	{{Category: "hate", Raw: "hate", Score: 0.1234, HasScore: true, Severity: "low", Fired: true}},
	{{Category: "self-harm", Raw: "prompt.self-harm", HasScore: true, Severity: "safe"}, {Category: "self-harm", Raw: "self_harm", Score: 0.0068, HasScore: true}},
	{{Category: "other", Raw: "weird \"key\" <b>&\n\t\x01\b\f \u2028 é こ \xff", Score: 1e-9, HasScore: true}, {Category: "violence", Raw: "v", Score: 123456789012345678901234.0}},
	{{Category: "x", Raw: "y", Score: -0.5}, {Category: "", Raw: ""}, {Category: "prompt.", Raw: "prompt.prompt."}},
	{{Category: "hate", Raw: "prompt.hatex"}, {Category: "hate", Raw: "prompt.hat"}},
}

func TestSignalsRoundTrip(t *testing.T) {
	for i, c := range signalCases {
		b := appendSignals(nil, c)
		got, err := decodeSignals(b)
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("case %d: %v\n got %#v\nwant %#v", i, err, got, c)
		}
		// The legacy JSON column reads the same (JSON cannot carry the
		// invalid UTF-8 of case 2).
		if i == 2 {
			continue
		}
		js, _ := json.Marshal(c)
		if got, err := decodeSignals(js); err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("case %d legacy: %v %#v", i, err, got)
		}
	}
	if b := appendSignals(nil, nil); len(b) != 0 {
		t.Errorf("no signals encode as %q", b)
	}
	if got, err := decodeSignals(nil); got != nil || err != nil {
		t.Errorf("empty column: %v %v", got, err)
	}
}

// TestSignalsPackedIsSmall pins why the format exists: an Azure-style
// answer's 18 signals pack to a fraction of their JSON.
func TestSignalsPackedIsSmall(t *testing.T) {
	var sigs []probes.Signal
	for _, c := range []string{"harassment", "hate", "illicit", "jailbreak", "privacy", "self-harm", "sexual", "violence", "weapons"} {
		sigs = append(sigs, probes.Signal{Category: c, Raw: "prompt." + c, Score: 0.0151, HasScore: true, Severity: "safe"})
		sigs = append(sigs, probes.Signal{Category: c, Raw: c, HasScore: true, Severity: "safe"})
	}
	js, _ := json.Marshal(sigs)
	packed := appendSignals(nil, sigs)
	if len(packed)*3 > len(js) {
		t.Errorf("packed %d bytes, JSON %d: want under a third", len(packed), len(js))
	}
}

func TestSignalsCorrupt(t *testing.T) {
	// Every cut of a one-signal encoding is corrupt.
	good := appendSignals(nil, signalCases[0])
	for i := 2; i < len(good); i++ {
		if got, err := decodeSignals(good[:i]); err == nil {
			t.Errorf("cut at %d decoded to %#v", i, got)
		}
	}
	for _, bad := range [][]byte{{1, 0x80}, {1, 0, 0xff}, {1, sigRawSame | sigRawPrompt, 0}, {1, sigScore, 0, 1, 2}, {1, 0, 5, 'a'}, []byte("[{"), {1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}} {
		if got, err := decodeSignals(bad); err == nil {
			t.Errorf("%q decoded to %#v", bad, got)
		}
		if checkSignals(bad) == nil {
			t.Errorf("checkSignals passed %q", bad)
		}
	}
	for _, c := range signalCases {
		if err := checkSignals(appendSignals(nil, c)); err != nil {
			t.Errorf("checkSignals refused a sound encoding of %v: %v", c, err)
		}
	}
}

func FuzzSignals(f *testing.F) {
	f.Add("hate", "prompt.hate", 0.5, "low", true, true)
	f.Add("self-harm", "self_harm", 0.0, "", false, false)
	f.Fuzz(func(t *testing.T, cat, raw string, score float64, sev string, fired, has bool) {
		in := []probes.Signal{{Category: cat, Raw: raw, Score: score, HasScore: has, Severity: sev, Fired: fired}, {Category: raw, Raw: cat}}
		got, err := decodeSignals(appendSignals(nil, in))
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(score) {
			if !math.IsNaN(got[0].Score) {
				t.Fatalf("NaN lost: %v", got[0].Score)
			}
			got[0].Score, in[0].Score = 0, 0
		}
		if !reflect.DeepEqual(got, in) {
			t.Fatalf("got %#v\nwant %#v", got, in)
		}
	})
}

func FuzzDecodeSignals(f *testing.F) {
	for _, c := range signalCases {
		f.Add(appendSignals(nil, c))
	}
	f.Add([]byte(`[{"category":"hate","raw":"hate","fired":true}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sigs, err := decodeSignals(b)
		// db check's checkSignals agrees with decoding on every input.
		if cerr := checkSignals(b); (cerr == nil) != (err == nil) {
			t.Fatalf("checkSignals %v, decodeSignals %v", cerr, err)
		}
		if err == nil && len(b) > 0 && b[0] == signalsPacked && cap(sigs) != len(sigs) {
			t.Fatalf("decoded %d signals into a slice of capacity %d: the count pass is off", len(sigs), cap(sigs))
		}
		if err != nil || len(b) == 0 || b[0] != signalsPacked {
			return
		}
		// What decodes re-encodes to something that decodes the same.
		again, err := decodeSignals(appendSignals(nil, sigs))
		if err != nil || len(again) != len(sigs) {
			t.Fatalf("re-encode: %v %d/%d", err, len(again), len(sigs))
		}
	})
}
