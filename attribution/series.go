package attribution

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

// Segment identifies a production series: a configured target and a
// normalized category ("" means every block on the target).
type Segment struct {
	Target   string `json:"target"`
	Category string `json:"category"`
}

// Point is one interval of production counts.
type Point struct {
	Time     time.Time // start of the interval the counts cover
	Blocked  float64   // blocked requests in the interval (>= 0)
	Total    float64   // requests in the interval; meaningful only when HasTotal
	HasTotal bool
}

// Series is the production history of one segment.
type Series struct {
	Segment
	// Points are in ascending Time order, one per time.
	Points []Point
	// Step is the nominal interval of a point: the Prometheus query step,
	// or the median spacing of the series' JSONL points (0 with one point).
	Step time.Duration
}

// HasTotals reports whether the series carries request totals (every
// point has one).
func (s *Series) HasTotals() bool {
	return len(s.Points) > 0 && s.Points[0].HasTotal
}

// Blocked returns the series' blocked count over all its points.
func (s *Series) Blocked() float64 {
	var b float64
	for _, p := range s.Points {
		b += p.Blocked
	}
	return b
}

// Span returns the time the series covers: from its first point's start
// to the end of its last interval.
func (s *Series) Span() (start, end time.Time) {
	if len(s.Points) == 0 {
		return time.Time{}, time.Time{}
	}
	return s.Points[0].Time, s.Points[len(s.Points)-1].Time.Add(s.Step)
}

// SkippedSeries is a Prometheus series that could not be mapped to a
// segment. Labels are the server's, untrusted, and Reason may quote them
// raw: escape both before printing (Clean), once.
type SkippedSeries struct {
	Query  string            `json:"query"` // "blocked" or "total"
	Labels map[string]string `json:"labels"`
	Reason string            `json:"reason"`
}

// Production is what a Source read.
type Production struct {
	Series   []*Series       // sorted by target, then category
	Skipped  []SkippedSeries // series left out, with why
	Warnings []string        // points left out and other notes, for stderr
}

// Source reads production block counts. targets are the configured target
// names; a source rejects (JSONL) or skips (Prometheus) any other.
//
// Errors in the user's input are *yamlx.Error / yamlx.List values
// ("FILE:LINE: field: problem") or an *APIError whose BadRequest is true;
// anything else is a runtime failure.
type Source interface {
	Load(ctx context.Context, targets []string) (*Production, error)
}

// NormalizeCategory maps a production category name to driftprobe's
// normalized vocabulary: case-insensitive, surrounding space ignored, and
// '-' or ' ' read as '_' ("Self-Harm" is self_harm, "sexual-minors" is
// sexual_minors; "selfharm" is also self_harm). "" stays "" (all blocks).
// Any other name is an error: there is no catch-all, so a typo never hides
// in "other".
func NormalizeCategory(s string) (string, error) {
	if k, ok := normalizeCategory(s); ok {
		return k, nil
	}
	return "", errors.New(unknownCategory(strconv.Quote(s)))
}

func normalizeCategory(s string) (string, bool) {
	k := strings.ToLower(strings.TrimSpace(s))
	if k == "" {
		return "", true
	}
	k = strings.NewReplacer("-", "_", " ", "_").Replace(k)
	if k == "selfharm" {
		k = probes.CatSelfHarm
	}
	if probes.ValidCategory(k) {
		return k, true
	}
	return "", false
}

// unknownCategory is the problem with a category name, given quoted.
func unknownCategory(quoted string) string {
	return fmt.Sprintf("unknown category %s (want one of %s, or empty for all blocks)", quoted, strings.Join(probes.Categories, ", "))
}

// medianStep is the median spacing of points (0 with fewer than two).
func medianStep(pts []Point) time.Duration {
	if len(pts) < 2 {
		return 0
	}
	gaps := make([]time.Duration, 0, len(pts)-1)
	for i := 1; i < len(pts); i++ {
		gaps = append(gaps, pts[i].Time.Sub(pts[i-1].Time))
	}
	sort.Slice(gaps, func(a, b int) bool { return gaps[a] < gaps[b] })
	return gaps[(len(gaps)-1)/2]
}

func sortSeries(ss []*Series) {
	sort.Slice(ss, func(i, j int) bool {
		if ss[i].Target != ss[j].Target {
			return ss[i].Target < ss[j].Target
		}
		return ss[i].Category < ss[j].Category
	})
}

func targetSet(targets []string) map[string]bool {
	m := make(map[string]bool, len(targets))
	for _, t := range targets {
		m[t] = true
	}
	return m
}
