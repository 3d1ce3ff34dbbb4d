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
