package diff

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// EventProbe is one flipped probe of an event.
type EventProbe struct {
	Target        string  `json:"target"`
	ProbeID       string  `json:"probe_id"`
	RequestSHA256 string  `json:"request_sha256"`
	Before        Verdict `json:"before"`
	After         Verdict `json:"after"`
	BeforeObs     int64   `json:"before_observation"`
	AfterObs      int64   `json:"after_observation"`
	// BeforeRun is the run of the before observation: the answer the
	// probe's baseline rests on, at the endpoint of the flip (so not
	// necessarily FirstRun-1: earlier when the baseline held for several
	// runs, or when the target was at another endpoint in between). 0 when
	// the event cites no before observation.
	BeforeRun int64 `json:"before_run,omitempty"`
	// LastRunBefore is the last run before the flip at the endpoint it was
	// seen at (runs of the target from BeforeRun up to FirstRun whose
	// origin is Origin or was not recorded; any run of the target when
	// Origin is "") in which the probe, with the same request bytes,
	// answered its Before verdict: FirstRun-1 unless the target was
	// elsewhere in between, or the probe went unanswered (a run of 429s,
	// a corpus version without it) or blipped then. A diff from it to the
	// flip shows the flip and never compares two endpoints. 0 when
	// BeforeRun is (or is not before FirstRun), or no such run is stored.
	LastRunBefore int64 `json:"last_run_before,omitempty"`
	// Origin is the endpoint the flip was seen at (see
	// storage.RunTarget.Origin); absent for rows recorded before origins
	// were kept.
	Origin       string `json:"origin,omitempty"`
	FirstRun     int64  `json:"first_run"`
	ConfirmedRun int64  `json:"confirmed_run"`
	// FlipRate: the share of the probe's run-to-run transitions on these
	// bytes, as of the run that last wrote the row, in which its first
	// answer's verdict changed; only runs that compared that answer count
	// (not those in which the target was away or the probe unanswered).
	// Rows recorded before 2026-12-02 counted every run of the database.
	FlipRate float64 `json:"flip_rate"`
	// ScoreMoves (score drift only) are the scores that moved past the
	// tolerance on the unchanged verdict, largest first.
	ScoreMoves  []ScoreMove `json:"score_moves,omitempty"`
	Reverted    bool        `json:"reverted"`
	RevertedRun int64       `json:"reverted_run,omitempty"`
	// Withdrawn: the probe left the event in RevertedRun because it was
	// marked nondeterministic, not because it flipped back (Reverted is
	// true as well: it no longer counts).
	Withdrawn bool `json:"withdrawn,omitempty"`
	// MovedOn: the probe left the event in RevertedRun without flipping
	// back to Before: its verdict moved on so that the change the event
	// recorded no longer holds for it (a later stage of a change it then
	// undid, or a tightened probe now allowed past its before-verdict);
	// Reverted is true as well.
	MovedOn bool `json:"moved_on,omitempty"`
}

// EventUpdate is one logged change of an event.
type EventUpdate struct {
	ID     int64     `json:"id"`
	RunID  int64     `json:"run_id"`
	Change string    `json:"change"`
	Detail string    `json:"detail"`
	At     time.Time `json:"at"`
	// Target is the target the update is about (the one that joined,
	// added probes or flipped back); "" for updates recorded before
	// databases kept it.
	Target string `json:"target,omitempty"`
}

// Event is a confirmed change, in the contract's JSON shape (plus extras).
//
// ModelBefore and ModelAfter are set from the event's flips, never from the
// model a target reports later: for a policy_change, the model its flips'
// baselines last held under and the model of their first differing
// answers (one model: a policy change is one on an unchanged model); for a
// model_change, the model change that made it one — the models of the
// flips on ModelTarget, the target whose flips opened the event as a model
// change or later turned it into one (the opener, or a target that joined
// it). ModelTarget is empty for other kinds; for an event whose updates
// were recorded before they kept a kind, it is the event's target.
type Event struct {
	ID          int64    `json:"id"`
	Fingerprint string   `json:"fingerprint"`
	Target      string   `json:"target"`
	Targets     []string `json:"targets"`
	Provider    string   `json:"provider"`
	Kind        string   `json:"kind"`
	// Direction is that of the change the event recorded: every confirmed
	// flip of it counts, those whose probes later flipped back or moved on
	// included (Status and each probe's Reverted say what was undone);
	// probes withdrawn as nondeterministic do not.
	Direction          string        `json:"direction"`
	Status             string        `json:"status"`
	Probes             []EventProbe  `json:"probes"`
	NewCategories      []string      `json:"new_categories"`
	VanishedCategories []string      `json:"vanished_categories"`
	FirstRun           int64         `json:"first_run"`
	ConfirmedRun       int64         `json:"confirmed_run"`
	LastRun            int64         `json:"last_run"`
	RevertedRun        int64         `json:"reverted_run,omitempty"`
	ModelBefore        string        `json:"model_before"`
	ModelAfter         string        `json:"model_after"`
	ModelTarget        string        `json:"model_target,omitempty"` // model_change: the target ModelBefore/ModelAfter are about
	CorpusVersion      string        `json:"corpus_version"`
	CorpusHash         string        `json:"corpus_sha256"`
	CreatedAt          time.Time     `json:"created_at"`
	UpdatedAt          time.Time     `json:"updated_at"`
	IssueNumber        int           `json:"issue_number,omitempty"`
	IssueURL           string        `json:"issue_url"`
	Updates            []EventUpdate `json:"updates,omitempty"`
}

// Filter selects events.
type Filter struct {
	Target string // events involving this target
	Since  int64  // events whose last run is >= Since
	IDs    []int64
}

// ListEvents returns events matching f, oldest first, with probes, targets
// and updates.
//
// The events are read in one query, then their targets, probes and
// updates in one query each (the events' filter repeated as a subquery),
// handed out to the events in Go: the cost grows with the rows read, not
// with a round of queries per event.
func ListEvents(ctx context.Context, db *storage.DB, f Filter) ([]*Event, error) {
	cond := ``
	var args []any
	if f.Target != "" {
		cond += ` AND EXISTS (SELECT 1 FROM event_targets et JOIN targets tt ON tt.id = et.target_id WHERE et.event_id = e.id AND tt.name = ?)`
		args = append(args, f.Target)
	}
	if f.Since > 0 {
		cond += ` AND e.last_run >= ?`
		args = append(args, f.Since)
	}
	if len(f.IDs) > 0 {
		cond += ` AND e.id IN (` + strings.TrimSuffix(strings.Repeat("?,", len(f.IDs)), ",") + `)`
		for _, id := range f.IDs {
			args = append(args, id)
		}
	}
	q := `SELECT e.id, e.fingerprint, t.name, e.provider, e.kind, e.direction, e.status, e.new_categories, e.vanished_categories,
		e.first_run, e.confirmed_run, e.last_run, e.reverted_run, e.model_before, e.model_after, e.corpus_version, e.corpus_hash,
		e.created_at, e.updated_at, e.issue_number, e.issue_url FROM events e JOIN targets t ON t.id = e.target_id WHERE 1=1` + cond + ` ORDER BY e.id`
	sdb := db.SQL()
	rows, err := sdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var out []*Event
	byID := map[int64]*Event{}
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
		byID[e.ID] = e
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, nil
	}
	// The same events, for the queries of their rows (rows of an event
	// not read above, say one added since, are skipped).
	in := ` IN (SELECT e.id FROM events e WHERE 1=1` + cond + `)`
	if err := fillEvents(ctx, sdb, in, args, byID); err != nil {
		return nil, err
	}
	return out, nil
}

// GetEvent returns one event.
func GetEvent(ctx context.Context, db *storage.DB, id int64) (*Event, error) {
	evs, err := ListEvents(ctx, db, Filter{IDs: []int64{id}})
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("event %d: %w", id, storage.ErrNotFound)
	}
	return evs[0], nil
}

// fillEvents reads the targets, probes and updates of the events in byID
// (those whose id is `IN` in: a subquery with args) in one query each.
func fillEvents(ctx context.Context, db *sql.DB, in string, args []any, byID map[int64]*Event) error {
	rows, err := db.QueryContext(ctx, `SELECT et.event_id, t.name FROM event_targets et JOIN targets t ON t.id = et.target_id
		WHERE et.event_id`+in+` ORDER BY et.event_id, et.joined_run, t.name`, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var n string
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return err
		}
		if e := byID[id]; e != nil {
			e.Targets = append(e.Targets, n)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = db.QueryContext(ctx, `SELECT ep.event_id, t.name, ep.probe_id, ep.request_sha256, ep.before, ep.after, ep.before_obs, ep.after_obs, ep.first_run, ep.confirmed_run, ep.flip_rate, ep.reverted_run, ep.score_moves, ep.withdrawn,
		ep.origin, COALESCE((SELECT o.run_id FROM observations o WHERE o.id = ep.before_obs), 0), ep.target_id,
		COALESCE(`+lastBeforeSQL(`rt.run_id || '|' || o.categories`)+`, '')
		FROM event_probes ep JOIN targets t ON t.id = ep.target_id WHERE ep.event_id`+in+` ORDER BY ep.event_id, t.name, ep.probe_id`, args...)
	if err != nil {
		return err
	}
	type slowProbe struct {
		e        *Event
		i        int
		targetID int64
	}
	var slow []slowProbe // probes whose last run before needs lastRunBefore
	for rows.Next() {
		var p EventProbe
		var b, a, moves, last string
		var id, tid int64
		if err := rows.Scan(&id, &p.Target, &p.ProbeID, &p.RequestSHA256, &b, &a, &p.BeforeObs, &p.AfterObs, &p.FirstRun, &p.ConfirmedRun, &p.FlipRate, &p.RevertedRun, &moves, &p.Withdrawn, &p.Origin, &p.BeforeRun, &tid, &last); err != nil {
			rows.Close()
			return err
		}
		e := byID[id]
		if e == nil {
			continue
		}
		p.Before, p.After, p.Reverted = ParseKey(b), ParseKey(a), p.RevertedRun != 0
		p.ScoreMoves = parseScoreMoves(moves)
		// The query found the latest run at the endpoint whose answer
		// had the before-verdict's class; its categories are compared
		// here (stored as the adapter listed them). When they differ
		// (a blip within the class), the runs are walked one by one.
		if run, cats, ok := strings.Cut(last, "|"); ok {
			if carriesBefore(p.Before, cats) {
				p.LastRunBefore, _ = strconv.ParseInt(run, 10, 64)
			} else {
				slow = append(slow, slowProbe{e, len(e.Probes), tid})
			}
		}
		e.Probes = append(e.Probes, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range slow {
		if _, err := lastRunBefore(ctx, db, s.targetID, &s.e.Probes[s.i]); err != nil {
			return err
		}
	}
	rows, err = db.QueryContext(ctx, `SELECT u.event_id, u.id, u.run_id, u.change, u.detail, u.at, COALESCE(t.name, ''), u.kind FROM event_updates u
		LEFT JOIN targets t ON t.id = u.target_id WHERE u.event_id`+in+` ORDER BY u.event_id, u.id`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var u EventUpdate
		var id int64
		var at, kind string
		if err := rows.Scan(&id, &u.ID, &u.RunID, &u.Change, &u.Detail, &at, &u.Target, &kind); err != nil {
			return err
		}
		e := byID[id]
		if e == nil {
			continue
		}
		u.At = storage.ParseTime(at)
		e.Updates = append(e.Updates, u)
		if e.Kind == KindModel && e.ModelTarget == "" && kind == KindModel {
			e.ModelTarget = u.Target
		}
		markMovedOn(e, u)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, e := range byID {
		if e.Kind == KindModel && e.ModelTarget == "" {
			e.ModelTarget = e.Target
		}
	}
	return nil
}

// lastBeforeSQL is the subquery, correlated with the event_probes row ep,
// that selects sel (of run_targets rt and observations o) for the latest
// run of ep's target at ep's endpoint, from the run of ep's before
// observation up to the flip, in which ep's probe answered, as its first
// sample and with the flip's request bytes, the class of ep's before
// verdict; NULL when there is none. Its categories are compared by the
// caller (carriesBefore): a run whose answer blipped within the class is
// walked past by lastRunBefore.
func lastBeforeSQL(sel string) string {
	return `(SELECT ` + sel + ` FROM run_targets rt
			JOIN observations o ON o.run_id = rt.run_id AND o.target_id = rt.target_id AND o.probe_id = ep.probe_id AND o.sample = 0 AND o.request_sha256 = ep.request_sha256
			WHERE rt.target_id = ep.target_id AND rt.run_id >= (SELECT b.run_id FROM observations b WHERE b.id = ep.before_obs) AND rt.run_id < ep.first_run
				AND (ep.origin = '' OR rt.origin IN (ep.origin, '')) AND o.class = substr(ep.before, 1, instr(ep.before, '|') - 1)
			ORDER BY rt.run_id DESC LIMIT 1)`
}

// carriesBefore reports whether an answer of before's class with the
// stored categories cats carries the verdict before.
func carriesBefore(before Verdict, cats string) bool {
	return VerdictOf(probes.Result{Class: before.Class, Categories: splitList(cats)}).Key() == before.Key()
}

// lastRunBefore sets p.LastRunBefore: the target's runs at p's endpoint
// from p.BeforeRun up to the flip, latest first, down to the first in
// which the probe's first sample, with the flip's request bytes, answered
// p.Before (each run one lookup in the observations' unique index). It
// returns the id of that answer (0 when there is none): retention keeps it
// (LoadPins), so the run found stays the same.
func lastRunBefore(ctx context.Context, db *sql.DB, targetID int64, p *EventProbe) (int64, error) {
	if p.BeforeRun <= 0 || p.BeforeRun >= p.FirstRun {
		return 0, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT rt.run_id, COALESCE(o.id, 0), COALESCE(o.class, ''), COALESCE(o.categories, '') FROM run_targets rt
		LEFT JOIN observations o ON o.run_id = rt.run_id AND o.target_id = rt.target_id AND o.probe_id = ? AND o.sample = 0 AND o.request_sha256 = ?
		WHERE rt.target_id = ? AND rt.run_id >= ? AND rt.run_id < ? AND (? = '' OR rt.origin IN (?, ''))
		ORDER BY rt.run_id DESC`, p.ProbeID, p.RequestSHA256, targetID, p.BeforeRun, p.FirstRun, p.Origin, p.Origin)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	want := p.Before.Key()
	for rows.Next() {
		var run, obs int64
		var class, cats string
		if err := rows.Scan(&run, &obs, &class, &cats); err != nil {
			return 0, err
		}
		if class != "" && VerdictOf(probes.Result{Class: probes.Class(class), Categories: splitList(cats)}).Key() == want {
			p.LastRunBefore = run
			return obs, nil
		}
	}
	return 0, rows.Err()
}

// markMovedOn sets MovedOn on the probes update u names as having moved
// on (closeProbes' detail part "N probe(s) on T <whyMovedOn>: a, b"; probe
// ids and target names hold no ", ", ";" or ":").
func markMovedOn(e *Event, u EventUpdate) {
	if u.Change != ChangeReverted && u.Change != ChangePartialRevert {
		return
	}
	for _, part := range strings.Split(u.Detail, "; ") {
		head, list, ok := strings.Cut(part, ": ")
		if !ok || !strings.HasSuffix(head, " "+whyMovedOn) {
			continue
		}
		_, target, ok := strings.Cut(strings.TrimSuffix(head, " "+whyMovedOn), " probe(s) on ")
		if !ok {
			continue
		}
		for _, id := range strings.Split(list, ", ") {
			for i := range e.Probes {
				if p := &e.Probes[i]; p.Target == target && p.ProbeID == id && p.RevertedRun == u.RunID && !p.Withdrawn {
					p.MovedOn = true
				}
			}
		}
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// SetIssue records the GitHub issue of an event.
func SetIssue(ctx context.Context, db *storage.DB, eventID int64, number int, url string) error {
	_, err := db.SQL().ExecContext(ctx, `UPDATE events SET issue_number = ?, issue_url = ? WHERE id = ?`, number, url, eventID)
	return err
}
