package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// AttributionReportsKept is how many attribution reports the store keeps
// (the latest ones; SaveAttributionReport prunes the rest).
const AttributionReportsKept = 50

// AttributionReport is one stored attribution attempt: exactly one of
// Report (the report's JSON) and Error is set.
type AttributionReport struct {
	ID        int64
	RunID     int64
	CreatedAt time.Time
	Report    []byte // JSON (attribution.Report); nil when the attempt failed
	Error     string // why the attempt failed; "" when it succeeded
}

// OK reports whether the attempt produced a report.
func (r *AttributionReport) OK() bool { return r.Report != nil }

// SaveAttributionReport stores r (its ID and CreatedAt are assigned: the
// store's clock) and, in the same transaction, deletes all but the latest
// keep reports (keep < 1 keeps one) and the latest successful one, which
// the metrics keep exporting however long attribution then fails. It
// returns the new row's id.
func (d *DB) SaveAttributionReport(ctx context.Context, r AttributionReport, keep int) (int64, error) {
	if (r.Report == nil) == (r.Error == "") {
		return 0, errors.New("attribution report: want exactly one of a report and an error")
	}
	keep = max(keep, 1)
	var report any // NULL for a failed attempt
	if r.Report != nil {
		report = string(r.Report)
	}
	var id int64
	err := d.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO attribution_reports (run_id, created_at, report, error) VALUES (?, ?, ?, ?)`,
			r.RunID, ts(d.now()), report, r.Error)
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM attribution_reports WHERE id <= (SELECT id FROM attribution_reports ORDER BY id DESC LIMIT 1 OFFSET ?)
			AND id IS NOT (SELECT MAX(id) FROM attribution_reports WHERE report IS NOT NULL)`, keep)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store attribution report: %w", err)
	}
	return id, nil
}

// ClearAttributionReports deletes every stored attribution report: the
// config no longer has an attribution block, so its metrics must go too.
func (d *DB) ClearAttributionReports(ctx context.Context) error {
	if _, err := d.db.ExecContext(ctx, `DELETE FROM attribution_reports`); err != nil {
		return fmt.Errorf("clear attribution reports: %w", err)
	}
	return nil
}

// LatestAttributionReports returns the latest attribution attempt and the
// latest successful one (the same row when the latest succeeded); either
// is nil when there is none. It takes the raw handle so that the metrics
// collector can read it at scrape time.
func LatestAttributionReports(ctx context.Context, db *sql.DB) (latest, latestOK *AttributionReport, err error) {
	read := func(where string) (*AttributionReport, error) {
		var r AttributionReport
		var created string
		var report sql.NullString
		err := db.QueryRowContext(ctx, `SELECT id, run_id, created_at, report, error FROM attribution_reports `+where+` ORDER BY id DESC LIMIT 1`).
			Scan(&r.ID, &r.RunID, &created, &report, &r.Error)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read attribution reports: %w", err)
		}
		r.CreatedAt = ParseTime(created)
		if report.Valid {
			r.Report = []byte(report.String)
		}
		return &r, nil
	}
	if latest, err = read(""); err != nil || latest == nil || latest.OK() {
		return latest, latest, err
	}
	latestOK, err = read("WHERE report IS NOT NULL")
	return latest, latestOK, err
}
