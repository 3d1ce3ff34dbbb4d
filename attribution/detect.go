package attribution

import (
	"errors"
	"math"
	"time"
)

// DetectOptions tune change detection. Zero values take the defaults.
type DetectOptions struct {
	// MinZ: with totals, the two-proportion z-test's |z| a change needs
	// (default 3). It is also the Welch t the per-interval values must
	// reach, with or without totals, so a single spike or overdispersed
	// noise is not a change.
	MinZ float64
	// MinPoints: points a change needs on each side (default 3, at least
	// 2: the Welch check needs a variance on each side). With totals only
	// intervals with requests (total > 0) count: the others carry no rate.
	MinPoints int
	// MinChange: without totals, the relative change of the mean blocked
	// count per interval a change needs (default 0.5: ±50%).
	MinChange float64
	// MinRateChange: with totals, the relative change of the block rate a
	// change also needs (default 0: off). At high volumes |z| >= 3 flags
	// moves too small to matter; 0.2 asks for ±20% as well.
	MinRateChange float64
}

// Defaults.
const (
	DefaultMinZ      = 3
	DefaultMinPoints = 3
	DefaultMinChange = 0.5
)

// Validate rejects options no detection can honour: non-finite or
// negative thresholds and MinPoints 1 or negative (zero values take the
// defaults).
func (o DetectOptions) Validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(o.MinZ) || !finite(o.MinChange) || !finite(o.MinRateChange):
		return errors.New("--min-z, --min-change and --min-rate-change must be finite numbers")
	case o.MinZ < 0 || o.MinChange < 0 || o.MinRateChange < 0:
		return errors.New("--min-z, --min-change and --min-rate-change must not be negative")
	case o.MinPoints < 0 || o.MinPoints == 1:
		return errors.New("--min-points must be at least 2: the Welch check needs two values on each side")
	}
	return nil
}

// withDefaults fills in zero values and replaces what Validate rejects,
// so that no option lets a change through unchecked.
func (o DetectOptions) withDefaults() DetectOptions {
	if !(o.MinZ > 0) || math.IsInf(o.MinZ, 0) {
		o.MinZ = DefaultMinZ
	}
	if o.MinPoints <= 0 {
		o.MinPoints = DefaultMinPoints
	}
	if o.MinPoints < 2 {
		o.MinPoints = 2
	}
	if !(o.MinChange > 0) || math.IsInf(o.MinChange, 0) {
		o.MinChange = DefaultMinChange
	}
	if !(o.MinRateChange >= 0) || math.IsInf(o.MinRateChange, 0) {
		o.MinRateChange = 0
	}
	return o
}

// Directions of a production change.
const (
	Up   = "up"   // more blocking
	Down = "down" // less blocking
)

// Change is a significant shift in one series.
type Change struct {
	Segment
	// At is the start of the first interval after the split (with
	// totals, the first with requests): the latest time the change can
	// have happened.
	At time.Time
	// From is the end of the last interval before the split (with totals,
	// the last with requests): the earliest time the change can have
	// happened. It equals At when the series has no gap there; when
	// production data is missing around the split, the change happened
	// somewhere in [From, At] and nothing finer can be said.
	From time.Time
	// Before and After are blocked/total over each side with totals, else
	// the mean blocked count per interval.
	Before, After float64
	Direction     string // Up or Down
	// Z is the two-proportion z statistic (with totals only).
	Z        float64
	HasTotal bool
	// Split is the index of the first point after the change.
	Split int
}

// Detect finds the single best change point of s and reports it when it
// is significant.
//
// With totals the split maximizes the binomial log-likelihood ratio of
// "two rates" against "one rate"; it is a change when the two-proportion
// z-test gives |z| >= MinZ, the rate moved by at least MinRateChange of
// its before value, and the per-interval rates separate by a Welch t of at
// least MinZ. Without totals the split maximizes the reduction in squared
// error of a mean shift (the Gaussian likelihood ratio); it is a change
// when the mean moved by at least MinChange of its before value (any move
// from zero counts) and by a Welch t of at least MinZ. Either way each
// side needs MinPoints usable points (with totals, intervals with
// requests). Ties go to the earliest split, so the result is
// deterministic. Before, After and Z of a change are finite.
func Detect(s *Series, o DetectOptions) (Change, bool) {
	o = o.withDefaults()
	if s.usablePoints() < 2*o.MinPoints {
		return Change{}, false
	}
	var c Change
	var ok bool
	if s.HasTotals() {
		c, ok = detectRate(s, o)
	} else {
		c, ok = detectMean(s, o)
	}
	if !ok || !finite(c.Before) || !finite(c.After) || !finite(c.Z) {
		return Change{}, false
	}
	return c, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// usablePoints counts the points that carry a value: with totals, the
// intervals with requests; without, every point.
func (s *Series) usablePoints() int {
	if !s.HasTotals() {
		return len(s.Points)
	}
	n := 0
	for _, p := range s.Points {
		if p.Total > 0 {
			n++
		}
	}
	return n
}

// xlogy is x·ln(y) with 0·ln(0) = 0.
func xlogy(x, y float64) float64 {
	if x == 0 {
		return 0
	}
	return x * math.Log(y)
}

// binomLL is the maximized binomial log-likelihood of b successes in t.
func binomLL(b, t float64) float64 {
	if t <= 0 {
		return 0
	}
	p := b / t
	return xlogy(b, p) + xlogy(t-b, 1-p)
}

func detectRate(s *Series, o DetectOptions) (Change, bool) {
	pts := s.Points
	n, m := len(pts), o.MinPoints
	cb, ct := make([]float64, n+1), make([]float64, n+1)
	cu := make([]int, n+1) // intervals with requests
	for i, p := range pts {
		cb[i+1], ct[i+1], cu[i+1] = cb[i]+p.Blocked, ct[i]+p.Total, cu[i]
		if p.Total > 0 {
			cu[i+1]++
		}
	}
	all := binomLL(cb[n], ct[n])
	best, bestLLR := -1, 0.0
	for k := 1; k < n; k++ {
		if cu[k] < m || cu[n]-cu[k] < m {
			continue
		}
		llr := binomLL(cb[k], ct[k]) + binomLL(cb[n]-cb[k], ct[n]-ct[k]) - all
		if llr > bestLLR*(1+1e-12)+1e-12 {
			best, bestLLR = k, llr
		}
	}
	if best < 0 {
		return Change{}, false
	}
	b1, t1 := cb[best], ct[best]
	b2, t2 := cb[n]-b1, ct[n]-t1
	if t1 <= 0 || t2 <= 0 {
		return Change{}, false
	}
	p1, p2 := b1/t1, b2/t2
	pool := (b1 + b2) / (t1 + t2)
	se := math.Sqrt(pool * (1 - pool) * (1/t1 + 1/t2))
	if se == 0 || math.IsNaN(se) {
		return Change{}, false
	}
	z := (p2 - p1) / se
	if !atLeast(math.Abs(z), o.MinZ) || !atLeast(relChange(p1, p2), o.MinRateChange) {
		return Change{}, false
	}
	var r1, r2 []float64
	for i, p := range pts {
		if p.Total <= 0 {
			continue
		}
		if i < best {
			r1 = append(r1, p.Blocked/p.Total)
		} else {
			r2 = append(r2, p.Blocked/p.Total)
		}
	}
	if !consistent(r1, r2, z > 0, o.MinZ) {
		return Change{}, false
	}
	return newChange(s, best, p1, p2, z, true), true
}

func detectMean(s *Series, o DetectOptions) (Change, bool) {
	pts := s.Points
	n, m := len(pts), o.MinPoints
	cs := make([]float64, n+1)
	for i, p := range pts {
		cs[i+1] = cs[i] + p.Blocked
	}
	best, bestGain := -1, 0.0
	for k := m; k <= n-m; k++ {
		m1, m2 := cs[k]/float64(k), (cs[n]-cs[k])/float64(n-k)
		gain := float64(k) * float64(n-k) / float64(n) * (m1 - m2) * (m1 - m2)
		if gain > bestGain*(1+1e-12)+1e-12 {
			best, bestGain = k, gain
		}
	}
	if best < 0 {
		return Change{}, false
	}
	m1, m2 := cs[best]/float64(best), (cs[n]-cs[best])/float64(n-best)
	if !atLeast(relChange(m1, m2), o.MinChange) {
		return Change{}, false
	}
	v1, v2 := make([]float64, 0, best), make([]float64, 0, n-best)
	for i, p := range pts {
		if i < best {
			v1 = append(v1, p.Blocked)
		} else {
			v2 = append(v2, p.Blocked)
		}
	}
	if !consistent(v1, v2, m2 > m1, o.MinZ) {
		return Change{}, false
	}
	return newChange(s, best, m1, m2, 0, false), true
}

func newChange(s *Series, k int, before, after, z float64, totals bool) Change {
	dir := Up
	if after < before {
		dir = Down
	}
	from, at := changeInterval(s, k)
	return Change{Segment: s.Segment, At: at, From: from, Before: before, After: after, Direction: dir, Z: z, HasTotal: totals, Split: k}
}

// changeInterval is the span of time in which a change split at k can
// have happened: from the end of the last interval before k that carries
// a value (with totals, one with requests) to the start of the first one
// from k on that does. Intervals are Step long; From never passes At
// (JSONL points may lie closer than their median spacing).
func changeInterval(s *Series, k int) (from, at time.Time) {
	usable := func(i int) bool { return !s.HasTotals() || s.Points[i].Total > 0 }
	j := k
	for j < len(s.Points)-1 && !usable(j) {
		j++
	}
	i := k - 1
	for i > 0 && !usable(i) {
		i--
	}
	at = s.Points[j].Time
	from = s.Points[i].Time.Add(s.Step)
	if from.After(at) {
		from = at
	}
	return from, at
}

// relChange is |b−a|/a, +Inf when a is 0 and b is not.
func relChange(a, b float64) float64 {
	if a == 0 {
		if b == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(b-a) / a
}

// consistent reports whether the values after the split sit on the
// expected side of those before by a Welch t of at least minT. With fewer
// than two values on a side there is no variance to test: it fails, so a
// single spiky interval is never a change.
func consistent(before, after []float64, up bool, minT float64) bool {
	if len(before) < 2 || len(after) < 2 {
		return false
	}
	m1, v1 := meanVar(before)
	m2, v2 := meanVar(after)
	d := m2 - m1
	if !up {
		d = -d
	}
	if d <= 0 {
		return false
	}
	se := math.Sqrt(v1/float64(len(before)) + v2/float64(len(after)))
	if se == 0 {
		return true
	}
	return atLeast(d/se, minT)
}

// thresholdSlack is the relative rounding a statistic may carry and still
// count as reaching its threshold: a move from 7/3 to 3.5 blocked per
// interval is +50% exactly, but floating point makes it 0.4999999999999999,
// and a documented "at least" must not turn on the last bit.
const thresholdSlack = 1e-9

// atLeast reports whether v reaches the threshold min, to within rounding
// (thresholdSlack, relative).
func atLeast(v, min float64) bool {
	return v >= min*(1-thresholdSlack)
}

func meanVar(v []float64) (float64, float64) {
	var s float64
	for _, x := range v {
		s += x
	}
	m := s / float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return m, ss / float64(len(v)-1)
}
