package attribution

import (
	"math"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
)

// series builds an hourly series from promT0; totals < 0 means none.
func series(blocked []float64, total float64) *Series {
	s := &Series{Segment: Segment{Target: "sim-a", Category: "violence"}, Step: time.Hour}
	for i, b := range blocked {
		p := Point{Time: promT0.Add(time.Duration(i) * time.Hour), Blocked: b}
		if total >= 0 {
			p.Total, p.HasTotal = total, true
		}
		s.Points = append(s.Points, p)
	}
	return s
}

func TestDetectWithTotals(t *testing.T) {
	cases := []struct {
		name    string
		blocked []float64
		total   float64
		o       DetectOptions
		change  bool
		dir     string
		split   int
	}{
		{"clear step up", []float64{10, 12, 9, 11, 30, 28, 33, 31}, 1000, DetectOptions{}, true, Up, 4},
		{"clear step down", []float64{30, 28, 33, 31, 29, 10, 12, 9}, 1000, DetectOptions{}, true, Down, 5},
		{"no change", []float64{10, 10, 10, 10, 10, 10, 10, 10}, 1000, DetectOptions{}, false, "", 0},
		{"no blocks at all", []float64{0, 0, 0, 0, 0, 0}, 1000, DetectOptions{}, false, "", 0},
		{"every request blocked", []float64{50, 50, 50, 50, 50, 50}, 50, DetectOptions{}, false, "", 0},
		// Binomial noise around 1%: z stays under 3.
		{"noise below threshold", []float64{10, 12, 8, 11, 9, 13, 10, 12}, 1000, DetectOptions{}, false, "", 0},
		// A real but small move on few requests: |z| < 3.
		{"small sample", []float64{1, 2, 1, 3, 4, 3}, 100, DetectOptions{}, false, "", 0},
		{"too few points", []float64{10, 10, 30, 30, 30}, 1000, DetectOptions{}, false, "", 0},
		{"enough with --min-points 2", []float64{10, 11, 30, 31}, 1000, DetectOptions{MinPoints: 2}, true, Up, 2},
		// The jump is two points from the end: no split has three after it
		// that sit consistently higher.
		{"change too recent", []float64{10, 10, 10, 10, 10, 30, 30}, 1000, DetectOptions{}, false, "", 0},
		// One hour of 5% among 1%: overwhelming z, but the intervals after the
		// split do not sit consistently higher: not a change.
		{"single spike", []float64{10, 11, 10, 9, 50, 10, 11, 10}, 1000, DetectOptions{}, false, "", 0},
		// At high volume a 1% → 1.05% move is significant but tiny.
		{"tiny move at volume", []float64{10000, 10010, 9990, 10005, 10500, 10490, 10510, 10505}, 1e6, DetectOptions{}, true, Up, 4},
		{"tiny move, --min-rate-change 0.2", []float64{10000, 10010, 9990, 10005, 10500, 10490, 10510, 10505}, 1e6, DetectOptions{MinRateChange: 0.2}, false, "", 0},
		{"stricter --min-z", []float64{10, 12, 9, 11, 20, 19, 21, 20}, 1000, DetectOptions{MinZ: 10}, false, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := series(c.blocked, c.total)
			ch, ok := Detect(s, c.o)
			if ok != c.change {
				t.Fatalf("change %v (%+v), want %v", ok, ch, c.change)
			}
			if !ok {
				return
			}
			if ch.Direction != c.dir || ch.Split != c.split || !ch.At.Equal(s.Points[c.split].Time) || !ch.HasTotal || ch.Segment != s.Segment {
				t.Fatalf("%+v, want %s at %d", ch, c.dir, c.split)
			}
			if (c.dir == Up) != (ch.Z > 0) || math.Abs(ch.Z) < DefaultMinZ {
				t.Fatalf("z %v", ch.Z)
			}
		})
	}
	// Before and after are the pooled rates on each side.
	ch, _ := Detect(series([]float64{10, 12, 9, 11, 30, 28, 33, 31}, 1000), DetectOptions{})
	if ch.Before != 42.0/4000 || ch.After != 122.0/4000 {
		t.Fatalf("rates %v %v", ch.Before, ch.After)
	}
	// z is the two-proportion statistic: (p2-p1)/sqrt(p(1-p)(1/n1+1/n2)).
	p := 164.0 / 8000
	if want := (ch.After - ch.Before) / math.Sqrt(p*(1-p)*(2.0/4000)); math.Abs(ch.Z-want) > 1e-9 {
		t.Fatalf("z %v, want %v", ch.Z, want)
	}
}

func TestDetectWithoutTotals(t *testing.T) {
	cases := []struct {
		name    string
		blocked []float64
		o       DetectOptions
		change  bool
		dir     string
		split   int
	}{
		{"clear step up", []float64{100, 104, 98, 101, 160, 158, 163, 161}, DetectOptions{}, true, Up, 4},
		{"clear step down", []float64{200, 210, 190, 90, 95, 100}, DetectOptions{}, true, Down, 3},
		{"from zero", []float64{0, 0, 0, 5, 6, 5}, DetectOptions{}, true, Up, 3},
		{"no change", []float64{50, 50, 50, 50, 50, 50}, DetectOptions{}, false, "", 0},
		// +30% is under the default 50%.
		{"below --min-change", []float64{100, 101, 99, 130, 131, 129}, DetectOptions{}, false, "", 0},
		{"--min-change 0.2", []float64{100, 101, 99, 130, 131, 129}, DetectOptions{MinChange: 0.2}, true, Up, 3},
		// Large swings both ways: the means differ by 60% but the intervals overlap.
		{"noise", []float64{100, 20, 180, 60, 200, 150, 250, 140}, DetectOptions{}, false, "", 0},
		{"single spike", []float64{10, 10, 10, 10, 10, 100, 10, 10, 10}, DetectOptions{}, false, "", 0},
		{"too few points", []float64{1, 1, 9, 9}, DetectOptions{}, false, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := series(c.blocked, -1)
			ch, ok := Detect(s, c.o)
			if ok != c.change {
				t.Fatalf("change %v (%+v), want %v", ok, ch, c.change)
			}
			if ok && (ch.Direction != c.dir || ch.Split != c.split || ch.HasTotal || ch.Z != 0) {
				t.Fatalf("%+v, want %s at %d", ch, c.dir, c.split)
			}
		})
	}
	ch, _ := Detect(series([]float64{100, 104, 98, 101, 160, 158, 163, 161}, -1), DetectOptions{})
	if ch.Before != 100.75 || ch.After != 160.5 {
		t.Fatalf("means %v %v", ch.Before, ch.After)
	}
}

// Ties go to the earliest split, whatever the order of evaluation.
func TestDetectDeterministic(t *testing.T) {
	s := series([]float64{10, 10, 10, 40, 40, 40, 40, 40, 40, 10, 10, 10}, 1000)
	first, ok := Detect(s, DetectOptions{})
	if !ok {
		t.Fatal("no change")
	}
	for i := 0; i < 20; i++ {
		if ch, _ := Detect(s, DetectOptions{}); ch != first {
			t.Fatalf("run %d: %+v vs %+v", i, ch, first)
		}
	}
}

// One spiky hour is not a change, whatever --min-points: a side needs two
// values for the Welch check, and MinPoints is at least 2.
func TestDetectWelchGuard(t *testing.T) {
	spike := []float64{10, 10, 10, 10, 10, 100}
	if ch, ok := Detect(series(spike, -1), DetectOptions{MinPoints: 1}); ok {
		t.Fatalf("--min-points 1: a single spiky hour is a change: %+v", ch)
	}
	if ch, ok := Detect(series(spike, 1000), DetectOptions{MinPoints: 1}); ok {
		t.Fatalf("--min-points 1, totals: a single spiky hour is a change: %+v", ch)
	}
	// With totals, intervals without requests carry no rate: they count
	// neither toward --min-points nor toward the Welch check. Here only one
	// interval with requests follows the jump.
	s := series([]float64{10, 11, 9, 10, 12, 0, 0, 30}, 1000)
	s.Points[5].Total, s.Points[6].Total = 0, 0
	if ch, ok := Detect(s, DetectOptions{}); ok {
		t.Fatalf("one interval with requests after the split: %+v", ch)
	}
	// ... and they do not help a short series reach 2 × --min-points.
	s = series([]float64{10, 10, 0, 0, 0, 0, 30, 31}, 1000)
	for i := 2; i < 6; i++ {
		s.Points[i].Total = 0
	}
	if ch, ok := Detect(s, DetectOptions{MinPoints: 2}); !ok || ch.Split != 2 || ch.Direction != Up {
		t.Fatalf("two intervals with requests on each side, --min-points 2: %+v %v", ch, ok)
	}
	if ch, ok := Detect(s, DetectOptions{MinPoints: 3}); ok {
		t.Fatalf("four intervals with requests, --min-points 3: %+v", ch)
	}
	if consistent([]float64{1, 1.1}, []float64{5}, true, 3) || consistent([]float64{1}, []float64{5, 5.1}, true, 3) {
		t.Fatal("consistent holds with a single value on a side")
	}
}

func TestDetectOptionsValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, o := range []DetectOptions{{MinPoints: 1}, {MinPoints: -1}, {MinZ: nan}, {MinZ: inf}, {MinZ: -1}, {MinChange: nan}, {MinChange: inf},
		{MinRateChange: nan}, {MinRateChange: inf}, {MinRateChange: -0.1}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	for _, o := range []DetectOptions{{}, {MinPoints: 2, MinZ: 2, MinChange: 0.1, MinRateChange: 0.2}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	// Without validation, non-finite thresholds still never let a change through.
	s := series([]float64{10, 10, 10, 10, 11, 11, 11, 11}, 1000) // |z| < 1
	if ch, ok := Detect(s, DetectOptions{MinZ: nan, MinRateChange: nan}); ok {
		t.Fatalf("NaN thresholds: %+v", ch)
	}
}

// config validates attribution ranges with its own copy of these limits
// (so that config does not import this package).
func TestConfigLimitsMatch(t *testing.T) {
	if DefaultMinPoints != config.AttributionMinPoints || MaxPoints != config.AttributionMaxSteps {
		t.Errorf("config's limits %d/%d differ from attribution's %d/%d", config.AttributionMinPoints, config.AttributionMaxSteps, DefaultMinPoints, MaxPoints)
	}
	if DefaultMinZ != config.DefaultAttributionMinZ || DefaultMinChange != config.DefaultAttributionMinChange {
		t.Errorf("config's defaults min_z %v, min_change %v differ from attribution's %v, %v",
			config.DefaultAttributionMinZ, config.DefaultAttributionMinChange, float64(DefaultMinZ), DefaultMinChange)
	}
}

// A change is placed to the span production leaves open: from the end of
// the last interval before the split that carries a value to the start of
// the first one after it. Intervals without requests carry no rate.
func TestChangeInterval(t *testing.T) {
	at := func(h int) time.Time { return promT0.Add(time.Duration(h) * time.Hour) }
	// Contiguous: one instant.
	ch, ok := Detect(series([]float64{10, 12, 9, 11, 30, 28, 33, 31}, 1000), DetectOptions{})
	if !ok || !ch.From.Equal(at(4)) || !ch.At.Equal(at(4)) {
		t.Fatalf("contiguous: %+v", ch)
	}
	// Hours 4 to 6 missing: the change happened between 04:00 and 07:00.
	s := series([]float64{10, 12, 9, 11, 30, 28, 33, 31}, 1000)
	for i := 4; i < len(s.Points); i++ {
		s.Points[i].Time = s.Points[i].Time.Add(3 * time.Hour)
	}
	if ch, ok := Detect(s, DetectOptions{}); !ok || !ch.From.Equal(at(4)) || !ch.At.Equal(at(7)) {
		t.Fatalf("gap: %+v", ch)
	}
	// With totals, hours without requests around the split widen it too.
	s = series([]float64{10, 12, 9, 11, 0, 0, 30, 28, 33, 31}, 1000)
	s.Points[4].Total, s.Points[5].Total = 0, 0
	if ch, ok := Detect(s, DetectOptions{}); !ok || !ch.From.Equal(at(4)) || !ch.At.Equal(at(6)) {
		t.Fatalf("hours without requests: %+v", ch)
	}
	// Without totals the same hours count as 0 blocked.
	s = series([]float64{10, 12, 9, 11, 30, 28, 33, 31}, -1)
	if ch, ok := Detect(s, DetectOptions{}); !ok || !ch.From.Equal(ch.At) {
		t.Fatalf("without totals: %+v", ch)
	}
	// JSONL points closer than their median spacing: From never passes At.
	s = series([]float64{10, 12, 9, 11, 30, 28, 33, 31}, 1000)
	s.Points[4].Time = s.Points[3].Time.Add(10 * time.Minute)
	if ch, ok := Detect(s, DetectOptions{}); !ok || !ch.From.Equal(ch.At) || !ch.At.Equal(s.Points[4].Time) {
		t.Fatalf("close points: %+v", ch)
	}
}
