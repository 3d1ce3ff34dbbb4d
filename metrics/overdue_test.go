package metrics_test

import (
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/metrics"
)

// every is an @every-like schedule for tests.
type every time.Duration

func (e every) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }

// slots is a cron-like schedule firing on every multiple of d.
type slots time.Duration

func (s slots) Next(t time.Time) time.Time {
	d := time.Duration(s)
	return t.Truncate(d).Add(d)
}

// Runs never overlap, so a run longer than the interval skips slots: the
// next run after it starts at the first slot after it ends, and the one
// after that at the first slot after that one ends. Overdue gives the
// second attempt as long to finish; with short runs it is the second slot
// after the end plus the duration.
func TestOverdueCountsSlotsRunsCanTake(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		s    metrics.Schedule
		end  time.Time
		took time.Duration
		want time.Time
	}{
		// */5: a 2-minute run of 10:00 ends 10:02; 10:05 fails; 10:10 is due by 10:12.
		{"short runs", slots(5 * time.Minute), t0.Add(2 * time.Minute), 2 * time.Minute, t0.Add(12 * time.Minute)},
		// */5: a 7-minute run of 10:00 ends 10:07; the next starts 10:10, ends
		// 10:17; the one after starts 10:20 and is due by 10:27 (not 10:22).
		{"runs longer than the interval", slots(5 * time.Minute), t0.Add(7 * time.Minute), 7 * time.Minute, t0.Add(27 * time.Minute)},
		{"@every", every(time.Hour), t0.Add(time.Minute), time.Minute, t0.Add(2*time.Hour + 3*time.Minute)},
	} {
		got, ok := metrics.Overdue(c.s, c.end, c.took)
		if !ok || !got.Equal(c.want) {
			t.Errorf("%s: overdue %s (%v), want %s", c.name, got.Format(time.TimeOnly), ok, c.want.Format(time.TimeOnly))
		}
	}
}
