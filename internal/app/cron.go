package app

import (
	"time"

	"github.com/robfig/cron/v3"
)

// cronSpec parses a standard cron expression (with optional CRON_TZ=).
func cronSpec(s string) (cron.Schedule, error) { return cron.ParseStandard(s) }

// longestGap is the longest wait between two firings of a cron schedule
// over the coming five weeks (at most cronSamples firings): the staleness
// alert allows twice the interval, and a weekday schedule's weekend, or a
// monthly one's 31-day month, must not look stale. Five weeks, not a
// year: a daily schedule at 02:30 in a zone that skips that hour once a
// year would otherwise wait 47 hours all year.
func longestGap(sch cron.Schedule, now time.Time) time.Duration {
	var longest time.Duration
	prev := sch.Next(now)
	end := now.AddDate(0, 0, 35)
	for i := 0; i < cronSamples && !prev.IsZero() && prev.Before(end); i++ {
		next := sch.Next(prev)
		if next.IsZero() {
			break
		}
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	return longest
}

// cronSamples bounds longestGap's walk (a minutely schedule fires 50,400
// times in five weeks; its longest gap shows long before that).
const cronSamples = 20000

// every is an @every schedule, at its latest: each run is due at most its
// interval (plus jitter) after the one before.
type every time.Duration

func (e every) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }

// delayed is a cron schedule whose runs start up to delay late (serve's
// jitter for cron schedules).
type delayed struct {
	sch   cron.Schedule
	delay time.Duration
}

func (d delayed) Next(t time.Time) time.Time {
	// In the scheduler's zone (gocron's default, time.Local): robfig
	// evaluates a schedule without CRON_TZ in the zone of the time it is
	// given, and stored times are UTC.
	n := d.sch.Next(t.In(time.Local))
	if n.IsZero() {
		return n
	}
	if repeated(d.sch, n) {
		// The second 01:30 of a daylight-saving fall-back: gocron runs
		// the first only (cronJob.next), so this slot is no run.
		n = d.sch.Next(n)
		if n.IsZero() {
			return n
		}
	}
	return n.Add(d.delay)
}

// repeated reports whether firing n of sch repeats the wall-clock time of
// an earlier firing an hour or so before it (a daylight-saving fall-back
// turns the clock back up to two hours; some zones by 30 minutes).
func repeated(sch cron.Schedule, n time.Time) bool {
	for back := 30 * time.Minute; back <= 2*time.Hour; back += 30 * time.Minute {
		p := n.Add(-back)
		if p.Year() == n.Year() && p.YearDay() == n.YearDay() && p.Hour() == n.Hour() && p.Minute() == n.Minute() && p.Second() == n.Second() &&
			sch.Next(p.Add(-time.Second)).Equal(p) {
			return true
		}
	}
	return false
}
