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
