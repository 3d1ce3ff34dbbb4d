package attribution

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// benchJSONL is 30 days of hourly counts for 10 targets × 11 categories
// (79,200 lines), with a step up in one category per target halfway.
func benchJSONL() ([]byte, []string) {
	var b bytes.Buffer
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cats := []string{"hate", "harassment", "self_harm", "sexual", "sexual_minors", "violence", "illicit", "weapons", "privacy", "jailbreak", "other"}
	var targets []string
	for t := 0; t < 10; t++ {
		targets = append(targets, fmt.Sprintf("prod-%d", t))
	}
	for h := 0; h < 30*24; h++ {
		at := t0.Add(time.Duration(h) * time.Hour).Format(time.RFC3339)
		for t, tgt := range targets {
			for c, cat := range cats {
				blocked := 20 + (h*7+c*3)%9
				if c == t%len(cats) && h >= 15*24 {
					blocked += 40
				}
				fmt.Fprintf(&b, `{"time":%q,"target":%q,"category":%q,"blocked":%d,"total":10000}`+"\n", at, tgt, cat, blocked)
			}
		}
	}
	return b.Bytes(), targets
}

// BenchmarkReadJSONL reads and validates the file; BenchmarkAttribute30d
// detects the change of every series and attributes it against a history
// of 720 hourly runs per target.
func BenchmarkReadJSONL(b *testing.B) {
	data, targets := benchJSONL()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ReadJSONL("bench.jsonl", bytes.NewReader(data), targets); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAttribute30d(b *testing.B) {
	data, targets := benchJSONL()
	prod, err := ReadJSONL("bench.jsonl", bytes.NewReader(data), targets)
	if err != nil {
		b.Fatal(err)
	}
	h := &History{Coverage: map[string]int{"hate": 5, "violence": 5, "privacy": 3}, CorpusProbes: 62, ConfirmRuns: 2}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for r := 0; r < 30*24; r++ {
		st := map[string]string{}
		for _, t := range targets {
			st[t] = StatusComplete
		}
		h.Runs = append(h.Runs, Run{ID: int64(r + 1), StartedAt: t0.Add(time.Duration(r) * time.Hour), Targets: st})
	}
	b.ReportAllocs()
	b.ResetTimer()
	var rep *Report
	for i := 0; i < b.N; i++ {
		rep = Attribute(prod, h, Options{})
	}
	if len(rep.Changes) < len(targets) {
		b.Fatalf("%d changes, want at least %d", len(rep.Changes), len(targets))
	}
}
