package ghissue

import (
	"context"

	"github.com/driftprobe/driftprobe/storage"
)

// MarkSkippedUnderClaim records outbox row id (of event) skipped because
// the event's open row open was, as a pass holding the row's claim
// (claim: the next_attempt_at it wrote) does once it found no issue of the
// event: markSkipped, for the tests that race Unskip against it.
func MarkSkippedUnderClaim(ctx context.Context, db *storage.DB, id, event int64, claim string, open int64) (recorded bool, err error) {
	d := &deliverer{db: db, opts: Options{Now: db.Now}, claims: map[int64]string{id: claim}}
	return d.markSkipped(ctx, row{ID: id, EventID: event}, &skippedIssueError{open: open})
}
