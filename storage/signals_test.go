package storage

import (
	"encoding/json"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
)

func TestSignalsJSONMatchesEncodingJSON(t *testing.T) {
	cases := [][]probes.Signal{
		nil,
		{{Category: "hate", Raw: "hate", Score: 0.1234, HasScore: true, Severity: "low", Fired: true}},
		{{Category: "other", Raw: "weird \"key\" <b>&\n\t\x01\b\f \u2028 é こ \xff", Score: 1e-9, HasScore: true}, {Category: "violence", Raw: "v", Score: 123456789012345678901234.0}},
		{{Category: "x", Raw: "y", Score: -0.5}},
	}
	for _, c := range cases {
		want, _ := json.Marshal(c)
		if c == nil {
			want = []byte("[]")
		}
		got := appendSignalsJSON(nil, c)
		if string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

func FuzzSignalsJSON(f *testing.F) {
	f.Add("hate", "raw\"<>&", 0.5, "low", true)
	f.Fuzz(func(t *testing.T, cat, raw string, score float64, sev string, fired bool) {
		s := []probes.Signal{{Category: cat, Raw: raw, Score: score, HasScore: score != 0, Severity: sev, Fired: fired}}
		want, err := json.Marshal(s)
		if err != nil {
			return // NaN/Inf are not encodable
		}
		if got := appendSignalsJSON(nil, s); string(got) != string(want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}
