package storage

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Only the latest AttributionReportsKept reports are kept; the latest
// attempt and the latest successful one are read back, and a failed
// attempt stores its error with a NULL report.
func TestAttributionReportsKeptAndLatest(t *testing.T) {
	d := openTestDB(t)
	ctx := context.Background()
	runID, _ := setupRun(t, d)
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	d.SetClock(func() time.Time { return now })
	if l, ok, err := LatestAttributionReports(ctx, d.SQL()); l != nil || ok != nil || err != nil {
		t.Fatalf("empty store: %v %v %v", l, ok, err)
	}
	var last int64
	for i := 0; i < AttributionReportsKept+5; i++ {
		now = now.Add(time.Hour)
		id, err := d.SaveAttributionReport(ctx, AttributionReport{RunID: runID, Report: []byte(fmt.Sprintf(`{"series":%d}`, i))}, AttributionReportsKept)
		if err != nil {
			t.Fatal(err)
		}
		last = id
	}
	var n, minID int64
	if err := d.SQL().QueryRowContext(ctx, `SELECT COUNT(*), MIN(id) FROM attribution_reports`).Scan(&n, &minID); err != nil {
		t.Fatal(err)
	}
	if n != AttributionReportsKept || minID != last-AttributionReportsKept+1 {
		t.Fatalf("kept %d rows from id %d, want the latest %d (last id %d)", n, minID, AttributionReportsKept, last)
	}
	okAt := now
	now = now.Add(time.Hour)
	if _, err := d.SaveAttributionReport(ctx, AttributionReport{RunID: runID, Error: "prometheus down"}, AttributionReportsKept); err != nil {
		t.Fatal(err)
	}
	latest, latestOK, err := LatestAttributionReports(ctx, d.SQL())
	if err != nil {
		t.Fatal(err)
	}
	if latest == nil || latest.OK() || latest.Error != "prometheus down" || latest.Report != nil || !latest.CreatedAt.Equal(now) {
		t.Errorf("latest = %+v", latest)
	}
	if latestOK == nil || string(latestOK.Report) != fmt.Sprintf(`{"series":%d}`, AttributionReportsKept+4) || !latestOK.CreatedAt.Equal(okAt) || latestOK.RunID != runID {
		t.Errorf("latest successful = %+v", latestOK)
	}
	if _, err := d.SaveAttributionReport(ctx, AttributionReport{RunID: runID}, 1); err == nil {
		t.Error("a row with neither a report nor an error was stored")
	}
	if _, err := d.SaveAttributionReport(ctx, AttributionReport{RunID: runID, Error: "x"}, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM attribution_reports`).Scan(&n); err != nil || n != 2 {
		t.Errorf("keep 1: %d rows (%v), want the latest attempt and the latest successful report", n, err)
	}
	// However long attribution fails, the last good report stays: the
	// metrics keep exporting it.
	for i := 0; i < AttributionReportsKept+3; i++ {
		if _, err := d.SaveAttributionReport(ctx, AttributionReport{RunID: runID, Error: "still down"}, AttributionReportsKept); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := LatestAttributionReports(ctx, d.SQL()); err != nil || ok == nil || string(ok.Report) != fmt.Sprintf(`{"series":%d}`, AttributionReportsKept+4) {
		t.Errorf("after %d failures the last good report is %+v (%v)", AttributionReportsKept+3, ok, err)
	}
	if err := d.ClearAttributionReports(ctx); err != nil {
		t.Fatal(err)
	}
	if l, ok, err := LatestAttributionReports(ctx, d.SQL()); l != nil || ok != nil || err != nil {
		t.Errorf("after clearing: %v %v %v", l, ok, err)
	}
}
