package ghissue

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/storage"
)

// PendingRow is one undelivered outbox row and why it is still pending.
type PendingRow struct {
	ID            int64      `json:"id"`
	EventID       int64      `json:"event_id"`
	Fingerprint   string     `json:"event_fingerprint"`
	Target        string     `json:"target"`
	Kind          string     `json:"kind"`
	UpdateID      int64      `json:"update_id"`
	RunID         int64      `json:"run_id"`
	Change        string     `json:"change"`
	Action        string     `json:"action"`
	IssueNumber   int        `json:"issue_number,omitempty"`
	IssueURL      string     `json:"issue_url,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	Attempts      int        `json:"attempts"`
	LastError     string     `json:"last_error,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	// Claimed is set while a delivery has the row claimed, until
	// NextAttemptAt: it is being delivered, or its deliverer was killed
	// and the row waits for the claim to run out. LastError is then what
	// the row recorded before the claim (its previous attempt's error),
	// not what it waits on.
	Claimed bool   `json:"claimed,omitempty"`
	Reason  string `json:"reason"`
}

// Pending lists undelivered outbox rows, oldest first, each with the reason
// it is still pending (as of the store's clock). A row a delivery has
// claimed is told from one waiting on its error (Claimed), and its
// LastError is the row's own, without the claim's mark.
func Pending(ctx context.Context, db *storage.DB) ([]PendingRow, error) {
	// The target is the update's (a target joining a provider-wide event,
	// its revert), else the event's.
	rows, err := db.SQL().QueryContext(ctx, `SELECT o.id, o.event_id, e.fingerprint, COALESCE(ut.name, t.name), e.kind, o.update_id, COALESCE(u.run_id, 0), COALESCE(u.change, ''),
		o.action, e.issue_number, e.issue_url, o.created_at, o.attempts, o.last_error, o.next_attempt_at,
		COALESCE((SELECT MIN(s.id) FROM outbox s WHERE s.event_id = o.event_id AND s.action = ? AND s.sent_at != '' AND s.last_error IN (?, ?)), 0)
		FROM outbox o JOIN events e ON e.id = o.event_id JOIN targets t ON t.id = e.target_id LEFT JOIN event_updates u ON u.id = o.update_id
		LEFT JOIN targets ut ON ut.id = u.target_id AND u.target_id != 0
		WHERE o.sent_at = '' ORDER BY o.id`, ActionOpen, SkipNote, skipNoteClaimed)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	defer rows.Close()
	now := db.Now()
	out := []PendingRow{}
	// event -> its first pending row: the later ones wait behind it, so
	// its reason is theirs (their own last_error is older news: a pass
	// skips a held row without touching it).
	type blocker struct {
		id     int64
		reason string
	}
	first := map[int64]blocker{}
	for rows.Next() {
		var p PendingRow
		var created, next string
		var skippedOpen int64
		if err := rows.Scan(&p.ID, &p.EventID, &p.Fingerprint, &p.Target, &p.Kind, &p.UpdateID, &p.RunID, &p.Change,
			&p.Action, &p.IssueNumber, &p.IssueURL, &created, &p.Attempts, &p.LastError, &next, &skippedOpen); err != nil {
			return nil, err
		}
		p.CreatedAt = storage.ParseTime(created)
		if next != "" {
			t := storage.ParseTime(next)
			p.NextAttemptAt = &t
		}
		// A claim (claimMark) is told from a wait on the row's error.
		stored := p.LastError
		var marked bool
		p.LastError, marked = unmarked(stored)
		waiting := p.NextAttemptAt != nil && p.NextAttemptAt.After(now)
		p.Claimed = waiting && claimedBy(stored)
		switch {
		case !waiting && p.LastError == UnskipNote:
			p.Reason = "queued again: " + UnskipNote + " (after the next run, or now with `driftprobe outbox --send`)"
		case p.Claimed && p.LastError != "":
			p.Reason = fmt.Sprintf("being delivered (claimed until %s; %s)", ts(*p.NextAttemptAt), beforeClaim(p.LastError))
		case p.Claimed:
			p.Reason = fmt.Sprintf("being delivered (claimed until %s)", ts(*p.NextAttemptAt))
		case waiting:
			p.Reason = fmt.Sprintf("waiting until %s: %s", ts(*p.NextAttemptAt), p.LastError)
		case marked:
			// Claimed by a delivery that never came back (killed), whose
			// claim ran out: it may have reached GitHub.
			p.Reason = "retried on the next delivery: an earlier delivery was interrupted before its outcome was recorded; " + beforeClaim(p.LastError)
		case p.LastError != "":
			p.Reason = "retried on the next delivery: " + p.LastError
		case p.NextAttemptAt != nil:
			// Released by an interrupted pass, or claimed by one that
			// never came back: it may have reached GitHub.
			p.Reason = "retried on the next delivery: an earlier delivery was interrupted before its outcome was recorded"
		default:
			p.Reason = "queued: not attempted yet (delivered after the next run, or now with `driftprobe outbox --send`)"
		}
		if skippedOpen != 0 && p.IssueNumber == 0 && p.Action != ActionOpen {
			p.Reason += fmt.Sprintf("; the event's issue was skipped (its open row %d was given up with `driftprobe outbox --skip`): unless its issue is found on GitHub by its marker, this row is recorded skipped too when delivered, never sent", skippedOpen)
		}
		if f, held := first[p.EventID]; held {
			p.Reason = fmt.Sprintf("held back until outbox row %d of the same event is delivered; row %d: %s", f.id, f.id, f.reason)
			if waiting {
				// A global failure deferred it too (not attempted).
				p.Reason += fmt.Sprintf("; this row itself not before %s", ts(*p.NextAttemptAt))
			}
		} else {
			first[p.EventID] = blocker{p.ID, p.Reason}
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// beforeClaim says what a claimed row recorded besides its claim: le, its
// last_error, an earlier attempt's error or a pass's note. UnskipNote is
// said as it is: the skip may have been undone before the claim or, for
// a row skipped and unskipped while a delivery had it (Unskip keeps the
// claim), after it.
func beforeClaim(le string) string {
	switch {
	case le == UnskipNote:
		return le
	case strings.HasPrefix(le, "not attempted: ") || strings.HasPrefix(le, envNotePrefix):
		return "noted before the claim: " + le
	}
	return "its previous attempt failed: " + le
}

// AfterRun delivers pending outbox rows after a run when cfg has a github
// block. With dryRun set it writes what would be sent instead (with a
// github block: the pending deliveries, which stay pending; without one:
// the issue and comments for the events the latest run changed). Delivery
// failures are recorded on the rows and logged, never returned: the error
// is non-nil only for database errors.
func AfterRun(ctx context.Context, db *storage.DB, cfg *config.Config, log *slog.Logger, dryRun io.Writer) (sent int, err error) {
	return AfterRunAs(ctx, db, cfg, log, dryRun, "")
}

// AfterRunAs is AfterRun for the command caller ("driftprobe serve",
// "driftprobe run"; see Options.Caller): an unattended delivery, so a
// problem of this process's own environment (no usable GitHub credential)
// is recorded on the rows, naming the process.
func AfterRunAs(ctx context.Context, db *storage.DB, cfg *config.Config, log *slog.Logger, dryRun io.Writer, caller string) (sent int, err error) {
	if cfg == nil {
		return 0, nil
	}
	if cfg.GitHub == nil {
		if dryRun == nil {
			return 0, nil
		}
		runID, err := db.LatestRunID(ctx)
		if err != nil || runID == 0 {
			return 0, err
		}
		evs, err := diff.ListEvents(ctx, db, diff.Filter{Since: runID})
		if err != nil {
			return 0, err
		}
		_, err = RenderEvents(ctx, db, nil, evs, runID, dryRun, "")
		return 0, err
	}
	res, err := Deliver(ctx, db, cfg, Options{Logger: log, DryRun: dryRun, Caller: caller})
	if res != nil {
		sent = res.Sent
		if log != nil && (res.Sent > 0 || res.Failed > 0 || res.Lost > 0 || res.Skipped > 0) {
			log.Info("github outbox delivered", "sent", res.Sent, "failed", res.Failed, "deferred", res.Deferred, "skipped", res.Skipped, "lost", res.Lost)
		}
	}
	return sent, err
}

// RenderEvents writes, for each event, the issue delivery would open and a
// comment per later update; with onlyRun > 0, only what that run changed.
// Output goes to w, or to one markdown file per issue/comment in dir.
func RenderEvents(ctx context.Context, db *storage.DB, gh *config.GitHub, evs []*diff.Event, onlyRun int64, w io.Writer, dir string) (int, error) {
	n := 0
	for _, ev := range evs {
		e, err := LoadEvidence(ctx, db, ev)
		if err != nil {
			return n, err
		}
		for _, u := range sortedUpdates(ev) {
			if onlyRun > 0 && u.RunID != onlyRun {
				continue
			}
			action := ActionComment
			switch u.Change {
			case diff.ChangeOpened:
				action = ActionOpen
			case diff.ChangeReverted, diff.ChangeRetracted:
				action = ActionRevert
			}
			if err := renderOne(ev, e, u, action, gh, w, dir, ""); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// renderRows renders pending outbox rows (dry run).
func renderRows(ctx context.Context, db *storage.DB, gh *config.GitHub, rows []row, w io.Writer, dir string) (int, error) {
	n := 0
	for _, r := range rows {
		ev, err := diff.GetEvent(ctx, db, r.EventID)
		if err != nil {
			return n, err
		}
		e, err := LoadEvidence(ctx, db, ev)
		if err != nil {
			return n, err
		}
		u := diff.EventUpdate{ID: r.UpdateID}
		for _, x := range ev.Updates {
			if x.ID == r.UpdateID {
				u = x
			}
		}
		note := ""
		if ev.IssueNumber == 0 && r.Action != ActionOpen {
			open, err := skippedOpen(ctx, db, ev.ID)
			if err != nil {
				return n, err
			}
			if open != 0 {
				note = fmt.Sprintf("the event's issue was skipped (open row %d, driftprobe outbox --skip): unless its issue is found on GitHub by its marker, outbox row %d is recorded skipped too, nothing sent", open, r.ID)
			}
		}
		if err := renderOne(ev, e, u, r.Action, gh, w, dir, note); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// renderOne renders one delivery; note, when set, says in the header why
// it may not go out (text output only).
func renderOne(ev *diff.Event, e *Evidence, u diff.EventUpdate, action string, gh *config.GitHub, w io.Writer, dir string, note string) error {
	var extra []string
	repo := "(no github block)"
	closing := false
	if gh != nil {
		extra, repo, closing = gh.Labels, gh.Repo, gh.CloseOnRevert && action == ActionRevert
	}
	var head, body, file string
	if action == ActionOpen {
		title, labels := Title(ev), Labels(ev, extra)
		body = IssueBody(ev, e)
		file = fmt.Sprintf("event-%d-issue.md", ev.ID)
		tj, _ := json.Marshal(title)
		lj, _ := json.Marshal(labels)
		if dir != "" {
			head = fmt.Sprintf("---\ntitle: %s\nlabels: %s\nrepo: %s\n---\n", tj, lj, repo)
		} else if ev.IssueNumber != 0 {
			// Rendering every event (--all, or nothing pending): this
			// one's issue exists; nothing would open another.
			head = fmt.Sprintf("==== event %d already has issue #%d: its body as rendered now (nothing would be sent) ====\ntitle: %s\nlabels: %s\n\n", ev.ID, ev.IssueNumber, tj, lj)
		} else {
			head = fmt.Sprintf("==== would open an issue in %s for event %d ====\ntitle: %s\nlabels: %s\n\n", repo, ev.ID, tj, lj)
		}
	} else {
		body = CommentBody(ev, u, e, closing)
		file = fmt.Sprintf("event-%d-update-%d.md", ev.ID, u.ID)
		on := fmt.Sprintf("the issue of event %d", ev.ID)
		if ev.IssueNumber != 0 {
			on = fmt.Sprintf("issue #%d", ev.IssueNumber)
		}
		what := "comment on"
		if closing {
			what = "comment on and close (state_reason " + CloseReason + ")"
		}
		if dir != "" {
			head = fmt.Sprintf("---\naction: %s\nevent: %d\nupdate: %d\nrepo: %s\n---\n", action, ev.ID, u.ID, repo)
		} else {
			tj, _ := json.Marshal(Title(ev))
			head = fmt.Sprintf("==== would %s %s in %s: update %d (%s, run %d) ====\ntitle (edited if it differs): %s\n\n", what, on, repo, u.ID, u.Change, u.RunID, tj)
			if note != "" {
				head = "==== " + note + " ====\n" + head
			}
		}
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, file), []byte(head+body), 0o644)
	}
	if w == nil {
		return nil
	}
	_, err := io.WriteString(w, head+strings.TrimRight(body, "\n")+"\n\n")
	return err
}

// Unfiled returns the open events that have no issue and nothing queued
// for GitHub, oldest first, among the kinds file accepts (nil: every kind):
// events recorded while no github block was configured, or while
// github.kinds left their kind out. Detection queues an event's later
// changes only when its opening was queued, so such an event is never
// filed unless QueueUnfiled queues it.
func Unfiled(ctx context.Context, db *storage.DB, file func(kind string) bool) ([]int64, error) {
	ids, err := unfiled(ctx, db.SQL(), file)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	return ids, nil
}

// QueueUnfiled queues an "open" delivery for every event Unfiled returns,
// as detection would have queued its opening: the issue then shows the
// event as it is when delivered, and its later changes are queued as
// comments. It returns the events queued. Checked and queued in one
// transaction, so two processes cannot queue an event twice (the outbox's
// update_id is unique besides).
func QueueUnfiled(ctx context.Context, db *storage.DB, file func(kind string) bool) ([]int64, error) {
	var queued []int64
	err := db.Tx(ctx, func(tx *sql.Tx) error {
		ids, err := unfiled(ctx, tx, file)
		if err != nil {
			return err
		}
		now := ts(db.Now())
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (event_id, update_id, action, created_at)
				SELECT ?, MIN(id), ?, ? FROM event_updates WHERE event_id = ?`, id, ActionOpen, now, id); err != nil {
				return err
			}
		}
		queued = ids
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: queue unfiled events: %w", err)
	}
	return queued, nil
}

// unfiled is Unfiled's query, run on q (the database or a transaction).
func unfiled(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, file func(kind string) bool) ([]int64, error) {
	// The kind the event opened as: detection decides queuing on it
	// (Params.Enqueue), and so does a backfill.
	rows, err := q.QueryContext(ctx, `SELECT e.id, e.opened_kind FROM events e
		WHERE e.status = 'open' AND e.issue_number = 0 AND e.issue_url = ''
		AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = e.id)
		AND EXISTS (SELECT 1 FROM event_updates u WHERE u.event_id = e.id)
		ORDER BY e.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		var kind string
		if err := rows.Scan(&id, &kind); err != nil {
			return nil, err
		}
		if file == nil || file(kind) {
			ids = append(ids, id)
		}
	}
	return ids, rows.Err()
}

// SkipNote is what a skipped row records as its last error; after
// claimMark when a delivery had the row claimed as it was skipped
// (skipNoteClaimed).
const SkipNote = "skipped by the operator (driftprobe outbox --skip): never delivered"

// skipNoteClaimed is the last error of a row skipped while a delivery had
// it claimed (Skip): SkipNote, the claim's mark kept before it, so that
// Unskip gives the row back under that claim, marked as claimed (Pending,
// noteAll) and not as waiting on a note. Every reader that asks whether a
// row was skipped by the operator takes either (isSkipNote, and the SQL
// "last_error IN (SkipNote, skipNoteClaimed)").
const skipNoteClaimed = claimMark + SkipNote

// isSkipNote reports whether le, a done row's last_error, says the
// operator skipped it (outbox --skip), claimed then or not.
func isSkipNote(le string) bool { return le == SkipNote || le == skipNoteClaimed }

// Skip gives up pending outbox rows ids: each is recorded done (sent_at
// set, last_error SkipNote) without being sent, so the later rows of its
// event are delivered in turn. For a delivery that cannot go out, such as
// a comment on an issue a maintainer locked and keeps locked. Skipping an
// event's open row means no issue for the event: its later rows are
// recorded skipped when delivered (see skippedIssueError), unless an issue
// of the event exists (mapped, or found by its marker), which they update
// as usual. A row being
// delivered by another pass at that moment may still reach GitHub; its
// outcome is then not recorded over the skip (every outcome a pass writes
// requires the row pending). Such a row, claimed as Pending reads it (its
// last_error marked with claimMark, or empty with its next attempt
// ahead: the claim's end), records skipNoteClaimed, the claim's mark kept,
// so that Unskip gives the claim back whole; its next attempt time stays,
// as every row's does. It returns the rows skipped; ids that are not
// pending (unknown or delivered) are not. Unskip undoes it.
func Skip(ctx context.Context, db *storage.DB, ids []int64) ([]int64, error) {
	var done []int64
	err := db.Tx(ctx, func(tx *sql.Tx) error {
		done = nil
		now := db.Now()
		for _, id := range ids {
			// Read and written in this (immediate, write-locked)
			// transaction: no delivery claims or records the row between.
			var le, next string
			err := tx.QueryRowContext(ctx, `SELECT last_error, next_attempt_at FROM outbox WHERE id = ? AND sent_at = ''`, id).Scan(&le, &next)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			note := SkipNote
			if _, marked := unmarked(le); marked || (le == "" && next != "" && storage.ParseTime(next).After(now)) {
				note = skipNoteClaimed
			}
			res, err := tx.ExecContext(ctx, `UPDATE outbox SET sent_at = ?, last_error = ? WHERE id = ? AND sent_at = ''`, ts(now), note, id)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				done = append(done, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: skip: %w", err)
	}
	return done, nil
}

// UnskipNote is what a row Unskip made pending again records as its last
// error, until its delivery (or a failure) replaces it.
const UnskipNote = "skip undone by the operator (driftprobe outbox --unskip): pending again, delivered in turn"

// Unskipped is an outbox row Unskip made pending again.
type Unskipped struct {
	ID      int64  `json:"id"`
	EventID int64  `json:"event_id"`
	Action  string `json:"action"`
	// Later lists, in order, the event's later rows that were recorded
	// skipped because this open row was skipped (skippedIssueNote), made
	// pending again with it: the event's issue is opened and they follow.
	Later []int64 `json:"later,omitempty"`
	// ClaimedUntil is set when the row was skipped while a delivery had
	// it claimed and that claim still runs: the row is pending again
	// under it (being delivered by that delivery, whose outcome is
	// recorded on it), and no other delivery takes it before then.
	ClaimedUntil *time.Time `json:"claimed_until,omitempty"`
}

// NotUnskipped is an id Unskip left as it was, and why.
type NotUnskipped struct {
	ID     int64  `json:"id"`
	Reason string `json:"reason"`
}

// Unskip undoes Skip (outbox --unskip): each row of ids recorded skipped
// by the operator (sent_at set, last_error SkipNote or skipNoteClaimed)
// is pending again (sent_at cleared, last_error UnskipNote), with the
// attempts and the next attempt time it had when it was skipped (Skip
// leaves them, and no delivery writes to a row once it is done): a row
// skipped while a pass had it claimed keeps that claim, its mark included
// (last_error claimMark before UnskipNote, as claim writes it), so the
// pass's outcome is recorded as for any claimed row, no other pass sends
// it meanwhile, it is listed as being delivered (Pending: Claimed), and
// no other pass's note of a GitHub wait moves its claim's end (noteAll
// leaves a claimed row alone); a row skipped
// while it waited on its own failure waits as it did; any other is due at
// once. For an event's open row, the event's later rows that delivery
// recorded skipped because that open row was (skippedIssueNote naming it)
// are pending again too, in the same transaction: the issue is opened and
// their comments follow, in order (a delivery claims a row only while no
// earlier row of its event is pending, checks that again just before it
// creates the issue or posts a comment, and records a row skipped only
// while its open row still is, so a pass that read the outbox before the
// Unskip neither skips one after it nor sends a later row first, unless
// the Unskip lands while that create or comment is already on its way to
// GitHub: then that one comment precedes theirs, nothing lost or doubled).
//
// Refused, and returned in not with the reason: an unknown id, a pending
// row, a delivered row, and a row recorded skipped because its event's
// open row was, while that open row is still skipped (unskip the open
// row, which brings it back; named with it in ids, it is simply brought
// back with it). Such a row whose open row is no longer skipped is made
// pending again itself. Everything is checked and written in one
// (immediate, write-locked) transaction: no delivery or other command
// writes the outbox between the checks and the writes, and a skip is
// undone whole (with its later rows) or not at all.
func Unskip(ctx context.Context, db *storage.DB, ids []int64) (done []Unskipped, not []NotUnskipped, err error) {
	err = db.Tx(ctx, func(tx *sql.Tx) error {
		done, not = nil, nil
		var uniq []int64
		named := map[int64]bool{}
		for _, id := range ids {
			if !named[id] {
				named[id] = true
				uniq = append(uniq, id)
			}
		}
		type outboxRow struct {
			event                  int64
			action, sent, le, next string
			found                  bool
		}
		read := func(id int64) (outboxRow, error) {
			var r outboxRow
			err := tx.QueryRowContext(ctx, `SELECT event_id, action, sent_at, last_error, next_attempt_at FROM outbox WHERE id = ?`, id).Scan(&r.event, &r.action, &r.sent, &r.le, &r.next)
			if errors.Is(err, sql.ErrNoRows) {
				return r, nil
			}
			r.found = err == nil
			return r, err
		}
		// restore makes row id, read done with note as its last error in
		// this (write-locked) transaction, pending again: UnskipNote, after
		// the claim's mark when it was skipped under a claim
		// (skipNoteClaimed), which it keeps.
		restore := func(id int64, note string) error {
			back := UnskipNote
			if _, marked := unmarked(note); marked {
				back = claimMark + UnskipNote
			}
			res, err := tx.ExecContext(ctx, `UPDATE outbox SET sent_at = '', last_error = ? WHERE id = ? AND sent_at != '' AND last_error = ?`, back, id, note)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return cmp.Or(err, fmt.Errorf("row %d: no longer recorded skipped", id))
			}
			return nil
		}
		back := map[int64]bool{} // rows made pending again by this call
		// Rows the operator skipped first, with the later rows their
		// skip took along; then the rest, which may be among those.
		var rest []int64
		for _, id := range uniq {
			r, err := read(id)
			if err != nil {
				return err
			}
			if !r.found || r.sent == "" || !isSkipNote(r.le) {
				rest = append(rest, id)
				continue
			}
			if err := restore(id, r.le); err != nil {
				return err
			}
			back[id] = true
			u := Unskipped{ID: id, EventID: r.event, Action: r.action}
			if t := storage.ParseTime(r.next); r.le == skipNoteClaimed && r.next != "" && t.After(db.Now()) {
				u.ClaimedUntil = &t
			}
			if r.action == ActionOpen {
				later, err := laterSkipped(ctx, tx, r.event, id)
				if err != nil {
					return err
				}
				for _, l := range later {
					if err := restore(l, skippedIssueNote(id)); err != nil {
						return err
					}
					back[l] = true
				}
				u.Later = later
			}
			done = append(done, u)
		}
		for _, id := range rest {
			if back[id] {
				continue // brought back with its open row, listed there
			}
			r, err := read(id)
			if err != nil {
				return err
			}
			switch {
			case !r.found:
				not = append(not, NotUnskipped{id, "unknown: no outbox row has this id"})
				continue
			case r.sent == "":
				not = append(not, NotUnskipped{id, "pending, not skipped: nothing to undo"})
				continue
			case r.le == "":
				not = append(not, NotUnskipped{id, "delivered to GitHub, not skipped: nothing to undo"})
				continue
			}
			open, err := skippedBecauseOf(ctx, tx, id, r.event, r.le)
			if err != nil {
				return err
			}
			if open == 0 {
				not = append(not, NotUnskipped{id, "recorded done, but not skipped with driftprobe outbox --skip: nothing to undo"})
				continue
			}
			var openSent, openErr string
			if err := tx.QueryRowContext(ctx, `SELECT sent_at, last_error FROM outbox WHERE id = ?`, open).Scan(&openSent, &openErr); err != nil {
				return err
			}
			if openSent != "" && isSkipNote(openErr) {
				not = append(not, NotUnskipped{id, fmt.Sprintf("recorded skipped because its event's open row %d was skipped (no issue of the event): unskip row %d, which makes this row pending again with it", open, open)})
				continue
			}
			// Its open row is no longer skipped: nothing keeps it done.
			if err := restore(id, r.le); err != nil {
				return err
			}
			done = append(done, Unskipped{ID: id, EventID: r.event, Action: r.action})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: unskip: %w", err)
	}
	return done, not, nil
}

// laterSkipped returns, in order, the rows of event recorded skipped
// because its open row open was (skippedIssueNote(open)).
func laterSkipped(ctx context.Context, tx *sql.Tx, event, open int64) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM outbox WHERE id > ? AND event_id = ? AND sent_at != '' AND last_error = ? ORDER BY id`, open, event, skippedIssueNote(open))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// skippedBecauseOf returns the open row of event, before row id, whose
// skip note (skippedIssueNote) is note, row id's last error, else 0.
func skippedBecauseOf(ctx context.Context, tx *sql.Tx, id, event int64, note string) (int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM outbox WHERE id < ? AND event_id = ? AND action = ? ORDER BY id`, id, event, ActionOpen)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return 0, err
		}
		if skippedIssueNote(id) == note {
			return id, nil
		}
	}
	return 0, rows.Err()
}
