package diff

// The reference implementation of ListEvents before its probes, targets and
// updates were read in batches (one query per event and kind, plus the
// walk of lastRunBefore), copied verbatim but for the names: the
// batched ListEvents must return exactly what it returned. It is an oracle
// for the batching only: a change meant to alter ListEvents' output
// replaces this file's comparison rather than copying the change here.

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// ListEventsPerEvent is the reference ListEvents (one query per event).
var ListEventsPerEvent = listEventsPerEvent

// listEventsPerEvent returns events matching f, oldest first, with probes, targets
// and updates.
func listEventsPerEvent(ctx context.Context, db *storage.DB, f Filter) ([]*Event, error) {
	q := `SELECT e.id, e.fingerprint, t.name, e.provider, e.kind, e.direction, e.status, e.new_categories, e.vanished_categories,
		e.first_run, e.confirmed_run, e.last_run, e.reverted_run, e.model_before, e.model_after, e.corpus_version, e.corpus_hash,
		e.created_at, e.updated_at, e.issue_number, e.issue_url FROM events e JOIN targets t ON t.id = e.target_id WHERE 1=1`
	var args []any
	if f.Target != "" {
		q += ` AND EXISTS (SELECT 1 FROM event_targets et JOIN targets tt ON tt.id = et.target_id WHERE et.event_id = e.id AND tt.name = ?)`
		args = append(args, f.Target)
	}
	if f.Since > 0 {
		q += ` AND e.last_run >= ?`
		args = append(args, f.Since)
	}
	if len(f.IDs) > 0 {
		q += ` AND e.id IN (` + strings.TrimSuffix(strings.Repeat("?,", len(f.IDs)), ",") + `)`
		for _, id := range f.IDs {
			args = append(args, id)
		}
	}
	q += ` ORDER BY e.id`
	sdb := db.SQL()
	rows, err := sdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var out []*Event
	for rows.Next() {
		e := &Event{Probes: []EventProbe{}}
		var nc, vc, ca, ua string
		if err := rows.Scan(&e.ID, &e.Fingerprint, &e.Target, &e.Provider, &e.Kind, &e.Direction, &e.Status, &nc, &vc,
			&e.FirstRun, &e.ConfirmedRun, &e.LastRun, &e.RevertedRun, &e.ModelBefore, &e.ModelAfter, &e.CorpusVersion, &e.CorpusHash,
			&ca, &ua, &e.IssueNumber, &e.IssueURL); err != nil {
			rows.Close()
			return nil, err
		}
		e.NewCategories, e.VanishedCategories = nonNil(splitList(nc)), nonNil(splitList(vc))
		e.CreatedAt, e.UpdatedAt = storage.ParseTime(ca), storage.ParseTime(ua)
		out = append(out, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, e := range out {
		if err := fillEventPerEvent(ctx, sdb, e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func fillEventPerEvent(ctx context.Context, db *sql.DB, e *Event) error {
	rows, err := db.QueryContext(ctx, `SELECT t.name FROM event_targets et JOIN targets t ON t.id = et.target_id WHERE et.event_id = ? ORDER BY et.joined_run, t.name`, e.ID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		e.Targets = append(e.Targets, n)
	}
	rows.Close()
	rows, err = db.QueryContext(ctx, `SELECT t.name, ep.probe_id, ep.request_sha256, ep.before, ep.after, ep.before_obs, ep.after_obs, ep.first_run, ep.confirmed_run, ep.flip_rate, ep.reverted_run, ep.score_moves, ep.withdrawn,
		ep.origin, COALESCE((SELECT o.run_id FROM observations o WHERE o.id = ep.before_obs), 0), ep.target_id,
		COALESCE((SELECT rt.run_id || '|' || o.categories FROM run_targets rt
			JOIN observations o ON o.run_id = rt.run_id AND o.target_id = rt.target_id AND o.probe_id = ep.probe_id AND o.sample = 0 AND o.request_sha256 = ep.request_sha256
			WHERE rt.target_id = ep.target_id AND rt.run_id >= (SELECT b.run_id FROM observations b WHERE b.id = ep.before_obs) AND rt.run_id < ep.first_run
				AND (ep.origin = '' OR rt.origin IN (ep.origin, '')) AND o.class = substr(ep.before, 1, instr(ep.before, '|') - 1)
			ORDER BY rt.run_id DESC LIMIT 1), '')
		FROM event_probes ep JOIN targets t ON t.id = ep.target_id WHERE ep.event_id = ? ORDER BY t.name, ep.probe_id`, e.ID)
	if err != nil {
		return err
	}
	var targetIDs []int64
	var slow []int // probes whose last run before needs lastRunBefore
	for rows.Next() {
		var p EventProbe
		var b, a, moves, last string
		var tid int64
		if err := rows.Scan(&p.Target, &p.ProbeID, &p.RequestSHA256, &b, &a, &p.BeforeObs, &p.AfterObs, &p.FirstRun, &p.ConfirmedRun, &p.FlipRate, &p.RevertedRun, &moves, &p.Withdrawn, &p.Origin, &p.BeforeRun, &tid, &last); err != nil {
			rows.Close()
			return err
		}
		p.Before, p.After, p.Reverted = ParseKey(b), ParseKey(a), p.RevertedRun != 0
		p.ScoreMoves = parseScoreMoves(moves)
		// The query found the latest run at the endpoint whose answer
		// had the before-verdict's class; its categories are compared
		// here (stored as the adapter listed them). When they differ
		// (a blip within the class), the runs are walked one by one.
		if run, cats, ok := strings.Cut(last, "|"); ok {
			if VerdictOf(probes.Result{Class: p.Before.Class, Categories: splitList(cats)}).Key() == p.Before.Key() {
				p.LastRunBefore, _ = strconv.ParseInt(run, 10, 64)
			} else {
				slow = append(slow, len(e.Probes))
			}
		}
		e.Probes = append(e.Probes, p)
		targetIDs = append(targetIDs, tid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, i := range slow {
		if err := lastRunBeforePerEvent(ctx, db, targetIDs[i], &e.Probes[i]); err != nil {
			return err
		}
	}
	rows, err = db.QueryContext(ctx, `SELECT u.id, u.run_id, u.change, u.detail, u.at, COALESCE(t.name, ''), u.kind FROM event_updates u
		LEFT JOIN targets t ON t.id = u.target_id WHERE u.event_id = ? ORDER BY u.id`, e.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var u EventUpdate
		var at, kind string
		if err := rows.Scan(&u.ID, &u.RunID, &u.Change, &u.Detail, &at, &u.Target, &kind); err != nil {
			return err
		}
		u.At = storage.ParseTime(at)
		e.Updates = append(e.Updates, u)
		if e.Kind == KindModel && e.ModelTarget == "" && kind == KindModel {
			e.ModelTarget = u.Target
		}
		markMovedOn(e, u)
	}
	if e.Kind == KindModel && e.ModelTarget == "" {
		e.ModelTarget = e.Target
	}
	return rows.Err()
}

// lastRunBeforePerEvent sets p.LastRunBefore: the target's runs at p's endpoint
// from p.BeforeRun up to the flip, latest first, down to the first in
// which the probe's first sample, with the flip's request bytes, answered
// p.Before (each run one lookup in the observations' unique index).
func lastRunBeforePerEvent(ctx context.Context, db *sql.DB, targetID int64, p *EventProbe) error {
	if p.BeforeRun <= 0 || p.BeforeRun >= p.FirstRun {
		return nil
	}
	rows, err := db.QueryContext(ctx, `SELECT rt.run_id, COALESCE(o.class, ''), COALESCE(o.categories, '') FROM run_targets rt
		LEFT JOIN observations o ON o.run_id = rt.run_id AND o.target_id = rt.target_id AND o.probe_id = ? AND o.sample = 0 AND o.request_sha256 = ?
		WHERE rt.target_id = ? AND rt.run_id >= ? AND rt.run_id < ? AND (? = '' OR rt.origin IN (?, ''))
		ORDER BY rt.run_id DESC`, p.ProbeID, p.RequestSHA256, targetID, p.BeforeRun, p.FirstRun, p.Origin, p.Origin)
	if err != nil {
		return err
	}
	defer rows.Close()
	want := p.Before.Key()
	for rows.Next() {
		var run int64
		var class, cats string
		if err := rows.Scan(&run, &class, &cats); err != nil {
			return err
		}
		if class != "" && VerdictOf(probes.Result{Class: probes.Class(class), Categories: splitList(cats)}).Key() == want {
			p.LastRunBefore = run
			return nil
		}
	}
	return rows.Err()
}
