package attribution

import "testing"

// A move exactly at --min-change or --min-rate-change is a change: the
// thresholds are "at least", and a ratio like 7/3 → 3.5 (+50%) or 3% →
// 3.6% (+20%) must not fall short by the last bit of floating point.
func TestDetectThresholdsAreInclusive(t *testing.T) {
	cases := []struct {
		name    string
		blocked []float64
		total   float64
		o       DetectOptions
		change  bool
	}{
		// Mean 7/3 before, 3.5 after: exactly +50%.
		{"min-change exactly met", []float64{2, 2, 3, 3.5, 3.5, 3.5}, -1, DetectOptions{MinChange: 0.5}, true},
		{"min-change just missed", []float64{2, 2, 3, 3.5, 3.5, 3.5}, -1, DetectOptions{MinChange: 0.5000001}, false},
		// Mean 10/3 before, 5 after: exactly +50%.
		{"min-change exactly met, 10/3 to 5", []float64{3, 3, 4, 5, 5, 5}, -1, DetectOptions{MinChange: 0.5, MinZ: 1}, true},
		// 30/1000 before, 36/1000 after: exactly +20%.
		{"min-rate-change exactly met", []float64{30, 30, 30, 36, 36, 36}, 1000, DetectOptions{MinRateChange: 0.2, MinZ: 0.1}, true},
		{"min-rate-change just missed", []float64{30, 30, 30, 36, 36, 36}, 1000, DetectOptions{MinRateChange: 0.2000001, MinZ: 0.1}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch, ok := Detect(series(c.blocked, c.total), c.o)
			if ok != c.change {
				t.Fatalf("change %v (%+v), want %v", ok, ch, c.change)
			}
			if ok && (ch.Split != 3 || ch.Direction != Up) {
				t.Fatalf("%+v, want up at 3", ch)
			}
		})
	}
	if !atLeast(3, 3) || atLeast(2.99, 3) || !atLeast(0, 0) || !atLeast(0.4999999999999999, 0.5) {
		t.Fatal("atLeast")
	}
}
