package app

import (
	"time"

	"github.com/robfig/cron/v3"
)

// cronSpec parses a standard cron expression (with optional CRON_TZ=).
func cronSpec(s string) (cron.Schedule, error) { return cron.ParseStandard(s) }

// longestGap is the longest wait between two firings of a cron schedule
// (the staleness alert allows twice the interval, and a weekday schedule's
// weekend, a monthly one's 31-day month or a quarterly one's 92 days must
// not look stale). It walks every firing from the first after now to the
// first at least a year after that one, so a schedule whose pattern only
// repeats yearly (some months, the 29th to 31st of a month, once a year)
// is measured whatever month it is loaded in, and one whose next firing
// is months away is no 0. The walk is on the schedule's wall clock
// without daylight saving (cronWallClock): a daily schedule at 02:30 in a
// zone that skips that hour once a year does not wait 47 hours all year,
// and a gap across a switch may be an hour off. Bounded work: at most
// cronSamples firings (a minutely schedule fires 525,600 times a year;
// its longest gap usually shows long before — not for one dense for weeks
// and then idle, such as every minute of the 1st to 14th: its interval
// then reads as its dense spacing, and the staleness alert allows two of
// those only).
func longestGap(sch cron.Schedule, now time.Time) time.Duration {
	sch, now = cronWallClock(sch, now)
	var longest time.Duration
	prev := sch.Next(now)
	if prev.IsZero() {
		return 0
	}
	end := prev.AddDate(1, 0, 0)
	for i := 0; i < cronSamples && prev.Before(end); i++ {
		next := sch.Next(prev)
		if next.IsZero() {
			break
		}
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	return longest
}

// cronSamples bounds longestGap's walk.
const cronSamples = 20000

// cronWallClock returns sch evaluated in UTC, a zone without daylight
// saving, and now's wall-clock time in sch's zone as a UTC time: the
// schedule's firings as its wall clock has them, none skipped or repeated
// by a daylight-saving switch. A schedule that is not a parsed cron
// expression (a CRON_TZ= @every) is returned as it is.
func cronWallClock(sch cron.Schedule, now time.Time) (cron.Schedule, time.Time) {
	spec, ok := sch.(*cron.SpecSchedule)
	if !ok || spec == nil {
		return sch, now
	}
	if spec.Location != nil && spec.Location != time.Local {
		// CRON_TZ's zone. Without CRON_TZ (time.Local) robfig evaluates
		// in the zone of the time it is given: now's, as it is.
		now = now.In(spec.Location)
	}
	c := *spec
	c.Location = time.UTC
	y, mo, d := now.Date()
	h, mi, s := now.Clock()
	return &c, time.Date(y, mo, d, h, mi, s, now.Nanosecond(), time.UTC)
}

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
