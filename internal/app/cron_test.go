package app

import (
	"testing"
	"time"
)

// The staleness alert's interval for a cron schedule is its longest gap,
// not the one after the next firing: a weekday schedule's weekend and a
// monthly schedule's 31-day months.
func TestLongestCronGap(t *testing.T) {
	monday := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for spec, want := range map[string]time.Duration{
		"0 * * * *":                          time.Hour,
		"CRON_TZ=Europe/Berlin 30 2 * * 1-5": 72 * time.Hour, // Friday → Monday (checked as a range below)
		"0 0 1 * *":                          31 * 24 * time.Hour,
		"*/5 * * * *":                        5 * time.Minute,
	} {
		sch, err := cronSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		got := longestGap(sch, monday)
		if spec == "CRON_TZ=Europe/Berlin 30 2 * * 1-5" {
			if got < 72*time.Hour || got > 73*time.Hour {
				t.Errorf("%s: longest gap %s, want the weekend (72h, 73h across a DST switch)", spec, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: longest gap %s, want %s", spec, got, want)
		}
	}
}

// Overdue times follow a cron schedule in the scheduler's zone (local
// time, as gocron fires it), though stored run times are UTC: in New York
// a daily 09:00 run ending Monday 14:05Z (09:05 EST) is next due Tuesday
// 09:00 EST (14:00Z), not at 09:00Z.
func TestDelayedScheduleUsesLocalZone(t *testing.T) {
	inLocalZone(t, "America/New_York")
	sch, err := cronSpec("0 9 * * *")
	if err != nil {
		t.Fatal(err)
	}
	end := time.Date(2026, 11, 30, 14, 5, 0, 0, time.UTC)
	got := delayed{sch: sch}.Next(end)
	if want := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("next after %s: %s, want %s", end, got.UTC(), want)
	}
}

// On a daylight-saving fall-back night 01:30 happens twice; gocron runs
// the first only, so the second is no slot for the overdue time either:
// a daily 01:30 run in New York ending 01:31 EDT on Oct 31 is next due on
// Nov 1 at 01:30 EDT (05:30Z), then Nov 2 at 01:30 EST (06:30Z) — never
// Nov 1 at 01:30 EST.
func TestDelayedScheduleSkipsRepeatedWallClock(t *testing.T) {
	inLocalZone(t, "America/New_York")
	for spec, want := range map[string][2]time.Time{
		"30 1 * * *": {time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC)},
		"30 * * * *": {time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), time.Date(2026, 11, 1, 7, 30, 0, 0, time.UTC)},
	} {
		sch, err := cronSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		d := delayed{sch: sch}
		start := want[0].Add(-time.Minute)
		if spec == "30 1 * * *" {
			start = time.Date(2026, 10, 31, 5, 31, 0, 0, time.UTC)
		}
		first := d.Next(start)
		second := d.Next(first)
		if !first.Equal(want[0]) || !second.Equal(want[1]) {
			t.Errorf("%s after %s: %s, %s; want %s, %s", spec, start, first.UTC(), second.UTC(), want[0], want[1])
		}
	}
}

// inLocalZone makes name the process's local zone (the scheduler's) for
// the test; tests using it must not run in parallel.
func inLocalZone(t *testing.T, name string) {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no zone data: %v", err)
	}
	old := time.Local
	time.Local = loc
	t.Cleanup(func() { time.Local = old })
}

// A schedule whose next firing is more than five weeks away (quarterly,
// yearly, only some months) still has its longest gap, whatever month it
// is loaded in; a daylight-saving switch that skips a daily firing once a
// year does not double a daily schedule's gap all year; the walk is
// bounded for a schedule firing every minute, and for one firing every
// four years.
func TestLongestCronGapBeyondFiveWeeks(t *testing.T) {
	feb := time.Date(2027, 2, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, c := range []struct {
		spec     string
		now      time.Time
		min, max time.Duration
	}{
		{"CRON_TZ=UTC 0 6 1 1,4,7,10 *", feb, 92 * day, 92 * day},                                    // Jul → Oct, Oct → Jan
		{"0 6 1 1 *", feb, 365 * day, 366 * day},                                                     // yearly
		{"0 0 29 * *", time.Date(2026, 1, 30, 0, 0, 0, 0, time.UTC), 59 * day, 59 * day},             // Jan 29 → Mar 29 2027 (no Feb 29)
		{"0 0 * 1 *", time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC), 335 * day, 336 * day},             // January only: Jan 31 → Jan 1
		{"CRON_TZ=Europe/Berlin 30 2 * * *", time.Date(2027, 3, 20, 0, 0, 0, 0, time.UTC), day, day}, // spring forward skips 02:30 on Mar 28
		{"CRON_TZ=America/New_York 30 1 * * *", time.Date(2027, 10, 30, 0, 0, 0, 0, time.UTC), day, day},
		{"0 0 29 2 *", feb, 4 * 365 * day, 4*365*day + day}, // Feb 29 2028 → 2032
		{"* * * * *", feb, time.Minute, time.Minute},
		{"0 0 31 2 *", feb, 0, 0}, // never fires
	} {
		sch, err := cronSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got := longestGap(sch, c.now)
		if got < c.min || got > c.max {
			t.Errorf("%s loaded %s: longest gap %s, want %s to %s", c.spec, c.now.Format(time.DateOnly), got, c.min, c.max)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: longestGap took %s", c.spec, took)
		}
	}
}
