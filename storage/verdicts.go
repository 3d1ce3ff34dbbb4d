package storage

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

// VerdictRow is what a reader of per-run verdicts needs of one sound
// observation: its run, probe, request fingerprint and stored verdict.
type VerdictRow struct {
	RunID         int64
	ProbeID       string
	RequestSHA256 string
	Class         probes.Class
	// Categories is the column as stored: comma-separated, "" for none
	// (Observation.Result.Categories split).
	Categories string
}

// verdictRunChunk is how many run ids one VerdictRows query binds.
const verdictRunChunk = 500

// soundRow is an SQL condition true of the observation rows obsScanner
// reads as observations, but for the checks SQL cannot make (observed_at
// parsing as a time, signals decoding), which VerdictRows makes in Go.
var soundRow = func() string {
	var bad []string
	for _, c := range obsColumns {
		bad = append(bad, "("+c.kind.typeFilter(c.name)+")")
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	classes := []string{quote("")} // an Observation with no Result: no verdict, not damage
	for _, c := range probes.Classes {
		classes = append(classes, quote(string(c)))
	}
	var stages []string
	for _, s := range []probes.Stage{probes.StageNone, probes.StageInput, probes.StageOutput, probes.StageAccount} {
		stages = append(stages, quote(string(s)))
	}
	return "NOT (" + strings.Join(bad, " OR ") + ")" +
		" AND class IN (" + strings.Join(classes, ", ") + ")" +
		" AND stage IN (" + strings.Join(stages, ", ") + ")"
}()

// VerdictRows calls fn with every sound observation of target targetID
// in the runs runIDs (in any order; duplicates ignored), ordered by run
// id, then probe id and sample as Observations orders them. It reads only
// the columns a VerdictRow holds and those needed to tell a damaged row:
// a row ObservationsWithDamage would return as damaged (any column not
// holding what the schema means) is skipped, never passed to fn. fn's
// row is reused between calls. An error of fn stops the read and is
// returned as it is; any other error is a database error.
func (d *DB) VerdictRows(ctx context.Context, targetID int64, runIDs []int64, fn func(*VerdictRow) error) error {
	ids := slices.Clone(runIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var (
		row      VerdictRow
		class    string
		at       string
		signals  sql.RawBytes // valid until the next row: checked, not kept (nor copied)
		ptrs     = []any{&row.RunID, &row.ProbeID, &row.RequestSHA256, &class, &row.Categories, &at, &signals}
		args     = make([]any, 0, verdictRunChunk+1)
		lastSize = -1
		q        string
	)
	for len(ids) > 0 {
		n := min(len(ids), verdictRunChunk)
		chunk := ids[:n]
		ids = ids[n:]
		if n != lastSize {
			q = `SELECT run_id, probe_id, request_sha256, class, categories, observed_at, signals FROM observations` +
				` WHERE run_id IN (?` + strings.Repeat(", ?", n-1) + `) AND target_id = ? AND ` + soundRow +
				` ORDER BY run_id, probe_id, sample`
			lastSize = n
		}
		args = args[:0]
		for _, id := range chunk {
			args = append(args, id)
		}
		args = append(args, targetID)
		if err := d.verdictRows(ctx, q, args, ptrs, &row, &class, &at, &signals, fn); err != nil {
			return err
		}
	}
	return nil
}

func (d *DB) verdictRows(ctx context.Context, q string, args, ptrs []any, row *VerdictRow, class, at *string, signals *sql.RawBytes, fn func(*VerdictRow) error) error {
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		// The checks obsScanner makes that SQL does not: a row failing
		// them is damaged and gives no verdict.
		if _, err := time.Parse(timeFmt, *at); err != nil {
			continue
		}
		if checkSignals(*signals) != nil {
			continue
		}
		row.Class = probes.Class(*class)
		if err := fn(row); err != nil {
			return err
		}
	}
	return rows.Err()
}
