package diff

import (
	"strings"
	"testing"
)

// runSpans names a few runs one by one, runs that follow one another
// (with the same label) as a range, and past maxRunItems items counts them
// and names the latest: a warning's length does not grow with the runs.
func TestRunSpans(t *testing.T) {
	seq := func(from, to, by int64) []int64 {
		var out []int64
		for id := from; id <= to; id += by {
			out = append(out, id)
		}
		return out
	}
	rep := func(l string, n int) []string { return strings.Split(strings.Repeat(l+"\x00", n-1)+l, "\x00") }
	for _, c := range []struct {
		ids    []int64
		labels []string
		want   string
		summed bool
	}{
		{[]int64{3}, nil, "3", false},
		{[]int64{3, 4}, nil, "3, 4", false},
		{[]int64{3, 4, 5}, nil, "3–5", false},
		{[]int64{3, 4, 5, 7, 9, 10}, nil, "3–5, 7, 9, 10", false},
		{seq(101, 8860, 1), nil, "101–8860", false},
		{[]int64{5}, []string{"degraded"}, "5 (degraded)", false},
		{[]int64{5, 6, 7, 8}, []string{"degraded", "degraded", "aborted", "aborted"}, "5 (degraded), 6 (degraded), 7 (aborted), 8 (aborted)", false},
		{[]int64{5, 6, 7}, []string{"degraded", "degraded", "degraded"}, "5–7 (degraded)", false},
		{seq(1, 19, 2), nil, "1, 3, 5, 7, 9, 11, 13, 15, 17, 19", false}, // maxRunItems items
		{seq(1, 21, 2), nil, "11 runs between 1 and 21 (the latest: 13, 15, 17, 19, 21)", true},
		{seq(2, 17520, 2), nil, "8760 runs between 2 and 17520 (the latest: 17512, 17514, 17516, 17518, 17520)", true},
		{seq(1, 23, 2), append(rep("degraded", 8), rep("aborted", 4)...), "12 runs between 1 and 23 (4 aborted, 8 degraded; the latest: 15 (degraded), 17 (aborted), 19 (aborted), 21 (aborted), 23 (aborted))", true},
	} {
		got, summed := runSpans(c.ids, c.labels, "runs")
		if got != c.want || summed != c.summed {
			t.Errorf("runSpans(%v…, %v):\n%s (summarized %v)\nwant\n%s (%v)", c.ids[:min(len(c.ids), 12)], c.labels, got, summed, c.want, c.summed)
		}
	}
}
