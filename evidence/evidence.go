// Package evidence builds the self-contained, hash-verifiable record of an
// event for incident reviews: for every flipped probe, the exact request
// bytes and pinned headers and their SHA-256 (recomputed and checked), the
// probe's canonical corpus form, and the before and after observations
// with provider request ids, timestamps, model fingerprints, verdicts,
// categories, signals and the stored response bodies with their hashes.
// The record carries a SHA-256 over its own canonical JSON.
//
// Every observation shown is checked against the verdict the event claims
// for its side (Observation.VerdictMatches): one that does not carry it
// does not support the event, and is a problem. A nondeterminism event's
// probe may cite an observation that answered the other of the two
// verdicts it moved between (detection cites sample 0 of the run the probe
// was marked in, whatever it answered, and no observation at all for a
// "before" no baseline held): the record then shows the answer of the same
// bytes that does carry the claimed verdict, naming the cited one
// (Observation.CitedID, Selection).
//
// What the database legitimately lacks is said, never papered over: a side
// of a flip the event cites no observation for, or (nondeterminism) whose
// answer carrying the claimed verdict retention deleted, is absent
// (Probe.BeforeAbsent, AfterAbsent), request bytes no stored observation
// holds any more are missing (Request.Missing), a body retention dropped is
// absent (Observation.ResponseAbsent). Absent is not a mismatch. An
// observation the event cites that the database does not hold is a problem
// (Probe.BeforeProblem, AfterProblem): retention keeps every observation an
// event cites, so it was deleted or the database is damaged. So is one
// whose row is damaged (storage.ErrDamagedRow: a column not holding what
// the schema means), named with each damaged column; nothing of it is
// shown, since nothing of it can be trusted. Stored bytes
// that cannot be read or do not hash to their fingerprint are problems
// (Observation.Problem), and so is a cited observation of another target
// or probe than the flip's own: shown as it is (never replaced by an
// answer of the flip's probe), it is no evidence of the flip. Every
// observation shown names the target and probe it is an observation of
// (Observation.Target, ProbeID), so Verify re-checks that from the record
// alone. With a problem the record is still produced, and says it does
// not verify (AllVerified false, Record.Problems).
package evidence

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// Format is the record format this package writes. Format 2 added the
// check of every observation's verdict against the event's claim
// (verdict_matches_event) and counts an observation the event cites but the
// database lacks as a problem (before_problem, after_problem).
// Format 3 adds each observation's origin (the endpoint its run answered
// at) and the problem of a flip answered at two endpoints. Format 4 adds
// the check of a score drift's cited answers against the scores it claims
// moved. Format 5 names, for every observation shown, the target and probe
// it is an observation of (Observation.Target, ProbeID), so that Verify
// re-checks that each is of its flip's own target and probe, whatever the
// record's problem fields say.
const Format = "driftprobe-evidence/5"

// FormatV4 is format 5 without each observation's target and probe: Verify
// reads it as format 5 but cannot re-check whose observations it shows; an
// observation of another target or probe is caught only where its writer
// named it (in the observation's problem).
const FormatV4 = "driftprobe-evidence/4"

// FormatV3 is format 4 without the score check: Verify reads it as format
// 4 and does not check scores (its writer did not, and score drifts
// recorded then could cite an answer that already carried the new score).
const FormatV3 = "driftprobe-evidence/3"

// FormatV2 is format 3 without origins: Verify reads it as format 3 (a
// record written before origins were kept has none to check).
const FormatV2 = "driftprobe-evidence/2"

// FormatV1 is the format written before: Verify still reads it, re-hashes
// it as before, and checks what its writer did not: its observations'
// verdicts against its event, and that no side it shows absent is one its
// event cites an observation for (its writer took a cited observation
// missing from the database for an absence).
const FormatV1 = "driftprobe-evidence/1"

// Request is the exact request of a probe on a target.
type Request struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	// PinnedHeaders are the request's pinned headers as stored
	// (probes.Request.PinnedHeaders: "name: value\n" lines, e.g.
	// anthropic-version), part of the fingerprint; omitted when the
	// request pins none, as every record written before headers could be
	// pinned.
	PinnedHeaders string `json:"pinned_headers,omitempty"`
	Body          string `json:"body"`
	SHA256        string `json:"sha256"`   // the event's request fingerprint
	Verified      bool   `json:"verified"` // probes.Fingerprint(method, path, body, pinned_headers) equals the fingerprint
	// ObservationID is the stored observation the bytes were read from:
	// the before observation, else the after one, else (when neither
	// holds readable bytes) another observation of the same bytes on the
	// same target.
	ObservationID int64 `json:"observation_id,omitempty"`
	// Missing says why the record holds no request bytes (Method, Path,
	// PinnedHeaders and Body are then empty and Verified false): no stored
	// observation holds them any more. Not a mismatch.
	Missing string `json:"missing,omitempty"`
}

// Observation is one side of a flip.
type Observation struct {
	ID int64 `json:"observation_id"`
	// Target and ProbeID are what the database records the observation
	// as: an observation of this target (its name; "id N (not in the
	// database)" for a target id no target row holds) and this probe.
	// Verify checks them against the flip's own (Probe.Target, ProbeID).
	// Absent from records older than format 5.
	Target       string          `json:"target,omitempty"`
	ProbeID      string          `json:"probe_id,omitempty"`
	RunID        int64           `json:"run_id"`
	RunStartedAt time.Time       `json:"run_started_at"`
	ObservedAt   time.Time       `json:"observed_at"`
	Verdict      diff.Verdict    `json:"verdict"`
	Stage        string          `json:"stage"`
	Signals      []probes.Signal `json:"signals"`
	Reason       string          `json:"reason"`
	Message      string          `json:"message,omitempty"`
	Heuristic    bool            `json:"heuristic,omitempty"`
	HTTPStatus   int             `json:"http_status"`
	RequestID    string          `json:"provider_request_id"`
	ModelID      string          `json:"model_id"`
	ModelFP      string          `json:"model_fingerprint"`
	// Origin is the endpoint the run sent the target's requests to
	// (scheme://host, or "sim:embedded"); absent for runs recorded before
	// driftprobe kept it.
	Origin       string `json:"origin,omitempty"`
	Attempts     int    `json:"attempts"`
	ResponseBody string `json:"response_body"`
	// ResponseBase64 holds the exact response bytes, base64, when they are
	// not valid UTF-8 (ResponseBody then shows them with U+FFFD in place
	// of the invalid bytes, and could not be re-hashed).
	ResponseBase64 string `json:"response_body_base64,omitempty"`
	ResponseSHA256 string `json:"response_body_sha256"`
	ResponseOK     bool   `json:"response_body_verified"`
	Truncated      bool   `json:"response_body_truncated,omitempty"`
	// ResponseAbsent says why the stored response body is not in the
	// record (retention dropped it): ResponseSHA256 is still the hash of
	// what was received. Not a mismatch.
	ResponseAbsent string `json:"response_body_absent,omitempty"`
	// Problem says why this observation's stored evidence does not verify:
	// unreadable bodies, bytes that do not hash to their fingerprint, a
	// request other than the event's, an observation of another target or
	// probe than the event's (the event cites one that is no evidence of
	// this flip).
	Problem string `json:"problem,omitempty"`
	// Sample is the observation's sample in its run: 0 the run's answer,
	// 1… extra samples of the identical bytes (screening, confirmation).
	// Absent from format 1 records.
	Sample *int `json:"sample,omitempty"`
	// VerdictMatches says whether Verdict is the verdict the event claims
	// for this side (event.probes[].before or .after); false is a problem.
	// Absent when the event claims no verdict for the side, and from
	// format 1 records.
	VerdictMatches *bool `json:"verdict_matches_event,omitempty"`
	// CitedID is the observation the event cites for this side when this
	// one is shown in its place (nondeterminism events only, see Selection):
	// the cited one did not carry the event's verdict. Omitted when this is
	// the cited observation, or when the event cites none.
	CitedID int64 `json:"cited_observation_id,omitempty"`
	// Selection says why this observation is shown when the event does not
	// cite it; empty when it does.
	Selection string `json:"selected_because,omitempty"`
}

// Probe is the evidence for one flipped probe.
type Probe struct {
	Target         string       `json:"target"`
	ProbeID        string       `json:"probe_id"`
	ProbeSHA256    string       `json:"probe_sha256"`
	ProbeCanonical string       `json:"probe_canonical"`
	Request        Request      `json:"request"`
	SameBytes      bool         `json:"same_request_bytes"` // before and after sent identical bytes (false when a side is absent)
	Before         *Observation `json:"before"`
	BeforeAbsent   string       `json:"before_absent,omitempty"` // why Before is null
	After          *Observation `json:"after"`
	AfterAbsent    string       `json:"after_absent,omitempty"` // why After is null
	FirstRun       int64        `json:"first_run"`
	ConfirmedRun   int64        `json:"confirmed_run"`
	Reverted       bool         `json:"reverted"`
	Withdrawn      bool         `json:"withdrawn,omitempty"` // left the event as nondeterministic (Reverted too)
	MovedOn        bool         `json:"moved_on,omitempty"`  // left the event because its verdict moved on, not back (Reverted too)
	// RevertedRun is the run the probe flipped back (or, Withdrawn, was
	// marked nondeterministic) in; 0 while the flip holds.
	RevertedRun    int64   `json:"reverted_run,omitempty"`
	FlipRate       float64 `json:"flip_rate"`
	Nondeterminism string  `json:"note,omitempty"`
	// BeforeProblem and AfterProblem say why a side the event cites an
	// observation for does not verify although no observation is shown:
	// the database does not hold it (retention never deletes one an
	// event cites), or its row is damaged (each damaged column named).
	// Before/After is then null and *Absent says the same.
	BeforeProblem string `json:"before_problem,omitempty"`
	AfterProblem  string `json:"after_problem,omitempty"`
}

// Record is the whole evidence record of an event.
type Record struct {
	Format      string      `json:"format"`
	GeneratedAt time.Time   `json:"generated_at"`
	Event       *diff.Event `json:"event"`
	Probes      []Probe     `json:"probes"`
	AllVerified bool        `json:"all_verified"`  // no problem (see Problems): hashes, the event's verdicts, the observations it cites; absences are not problems
	SHA256      string      `json:"record_sha256"` // over this record with this field empty
}

// Build assembles the record of event id. Unreadable or mismatching stored
// evidence does not fail it: the record says so (AllVerified false). Errors
// are the event not existing (storage.ErrNotFound) and database failures.
func Build(ctx context.Context, db *storage.DB, id int64, now time.Time) (*Record, error) {
	ev, err := diff.GetEvent(ctx, db, id)
	if err != nil {
		return nil, err
	}
	rec := &Record{Format: Format, GeneratedAt: now.UTC(), Event: ev}
	b := &builder{ctx: ctx, db: db, ev: ev, runs: map[int64]time.Time{}, targets: map[string]int64{}, origins: map[int64]map[int64]string{}}
	for _, ep := range ev.Probes {
		p, err := b.probe(ep)
		if err != nil {
			return nil, fmt.Errorf("evidence of %s/%s: %w", ep.Target, ep.ProbeID, err)
		}
		rec.Probes = append(rec.Probes, *p)
	}
	sort.SliceStable(rec.Probes, func(i, j int) bool {
		if rec.Probes[i].Target != rec.Probes[j].Target {
			return rec.Probes[i].Target < rec.Probes[j].Target
		}
		return rec.Probes[i].ProbeID < rec.Probes[j].ProbeID
	})
	// The record is hashed, and returned, in the form a reader of its JSON
	// gets back: json.Marshal writes invalid UTF-8 (a provider's header,
	// a proxy's error text) as the escape \ufffd, which reads back as a
	// valid U+FFFD that Marshal writes as raw bytes, so a hash over the
	// record as built would never match one recomputed from the file.
	rec, err = canonical(rec)
	if err != nil {
		return nil, err
	}
	rec.AllVerified = len(rec.Problems()) == 0
	sum, err := rec.hash()
	if err != nil {
		return nil, err
	}
	rec.SHA256 = sum
	return rec, nil
}

// canonical returns r as it reads back from its JSON. One round trip is a
// fixed point (strings are then valid UTF-8; control characters, U+2028,
// U+2029 and HTML characters are escaped and read back the same, however
// the writer escapes them), so hashing the result hashes exactly what
// Verify recomputes from a written record.
func canonical(r *Record) (*Record, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var c Record
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

type builder struct {
	ctx     context.Context
	db      *storage.DB
	ev      *diff.Event
	runs    map[int64]time.Time
	targets map[string]int64
	origins map[int64]map[int64]string // run → target id → origin
}

// origin returns the origin target answered at in run ("" when not known).
func (b *builder) origin(run, target int64) string {
	if _, ok := b.origins[run]; !ok {
		m := map[int64]string{}
		if rts, err := b.db.RunTargets(b.ctx, run); err == nil {
			for _, rt := range rts {
				m[rt.TargetID] = rt.Origin
			}
		}
		b.origins[run] = m
	}
	return b.origins[run][target]
}

func (b *builder) runStart(id int64) time.Time {
	if t, ok := b.runs[id]; ok {
		return t
	}
	r, err := b.db.Run(b.ctx, id)
	if err == nil {
		b.runs[id] = r.StartedAt
	}
	return b.runs[id]
}

// side is one loaded side of a flip.
type side struct {
	out     *Observation
	obs     *storage.Observation
	absent  string
	problem string // a cited observation the database lacks, or holds damaged (out is nil)
	damaged string // why the cited row does not read as an observation: "damaged (column …)", "unreadable (…)"
	req     []byte // the stored request body, read and hashing (with obs's method, path and pinned headers) to obs.RequestSHA256
	reqOK   bool
	foreign bool // obs is an observation of another target or probe than the event's (a problem: out.Problem says so)
}

func (b *builder) probe(ep diff.EventProbe) (*Probe, error) {
	p := &Probe{Target: ep.Target, ProbeID: ep.ProbeID, FirstRun: ep.FirstRun, ConfirmedRun: ep.ConfirmedRun, Reverted: ep.Reverted, Withdrawn: ep.Withdrawn, MovedOn: ep.MovedOn,
		RevertedRun: ep.RevertedRun, FlipRate: ep.FlipRate, Request: Request{SHA256: ep.RequestSHA256}}
	if b.ev.Kind == diff.KindNondeterminism {
		p.Nondeterminism = "identical bytes got different answers: not evidence of a policy change"
	}
	before, err := b.pick(ep, "before", ep.BeforeObs, ep.Before)
	if err != nil {
		return nil, err
	}
	after, err := b.pick(ep, "after", ep.AfterObs, ep.After)
	if err != nil {
		return nil, err
	}
	p.Before, p.BeforeAbsent, p.BeforeProblem = before.out, before.absent, before.problem
	p.After, p.AfterAbsent, p.AfterProblem = after.out, after.absent, after.problem

	// The request bytes.
	switch {
	case before.reqOK && !before.foreign && before.obs.RequestSHA256 == ep.RequestSHA256:
		p.Request = request(before.obs, before.req)
	case after.reqOK && !after.foreign && after.obs.RequestSHA256 == ep.RequestSHA256:
		p.Request = request(after.obs, after.req)
	default:
		o, rq, err := b.storedRequest(ep, ep.BeforeObs, ep.AfterObs)
		if err != nil {
			return nil, err
		}
		if o != nil {
			p.Request = request(o, rq)
			break
		}
		p.Request.Missing = "no stored observation holds these request bytes any more"
		if before.out != nil || after.out != nil {
			p.Request.Missing = "no readable stored copy of these request bytes: the observations cited hold none (see their problems or absent bodies) and no other stored observation does"
		}
	}
	if before.out != nil && after.out != nil {
		p.SameBytes = before.obs.RequestSHA256 == ep.RequestSHA256 && after.obs.RequestSHA256 == ep.RequestSHA256
		if before.reqOK && after.reqOK && (!bytes.Equal(before.req, after.req) || before.obs.RequestPinned != after.obs.RequestPinned) {
			p.SameBytes = false
		}
	}

	src := before.obs
	if src == nil {
		src = after.obs
	}
	if src != nil {
		p.ProbeSHA256 = src.ProbeSHA256
		if pr, err := b.db.Probe(b.ctx, src.ProbeSHA256); err == nil {
			p.ProbeCanonical = pr.Canonical
		} else if !errors.Is(err, storage.ErrNotFound) {
			return nil, err
		}
	}
	return p, nil
}

// searchRuns is how many runs before a nondeterminism event's confirming
// run pick searches for the answer carrying a verdict the event claims:
// a probe is marked nondeterministic on reverts within 24 runs of each
// other, so the verdicts it moved between were answered within them.
const searchRuns = 64

// pick loads the observation shown for one side of a flip: the one the
// event cites (cited, 0 for none) when it carries the verdict the event
// claims for the side. For a nondeterminism event, whose detection cites
// sample 0 of the run it marked the probe in whatever that answered (and
// nothing for a "before" no baseline held), it is otherwise the latest
// answer of the same bytes on the same target, up to the probe's confirming
// run, that carries the claimed verdict, with the cited one named. For
// other kinds the cited observation is shown as it is: a verdict other
// than the claimed one is a problem (Record.Problems).
func (b *builder) pick(ep diff.EventProbe, name string, cited int64, claim diff.Verdict) (side, error) {
	nd := b.ev.Kind == diff.KindNondeterminism && claim.Class != ""
	if cited == 0 {
		s := side{absent: fmt.Sprintf("the event recorded no %s observation for this probe", name)}
		if name == "before" && claim.Class == "" {
			s.absent = "no verdict had held as this probe's baseline on these bytes: there is no before observation"
		}
		if !nd {
			return s, nil
		}
		alt, lo, pruned, err := b.find(ep, claim)
		if err != nil || alt.out != nil {
			if alt.out != nil {
				why := "a nondeterminism event cites none for a before verdict no baseline had held"
				if name == "after" {
					why = "nondeterminism events recorded before migration 0008 cite none for an after verdict whose observation was gone"
				}
				alt.out.Selection = fmt.Sprintf("the event cites no %s observation for this probe (%s): this is the latest answer of the same request bytes on %s, "+
					"in runs %d to %d, that carries the event's %s verdict %s", name, why, ep.Target, lo, ep.ConfirmedRun, name, claim)
			}
			return alt, err
		}
		s.absent += fmt.Sprintf(", and no stored answer of these request bytes in runs %d to %d carries its %s verdict %s", lo, ep.ConfirmedRun, name, claim)
		if pruned {
			s.absent += " (retention deleted observations of those runs: it keeps only those an event cites)"
		}
		return s, nil
	}
	s, err := b.side(ep, cited)
	if err != nil {
		return side{}, err
	}
	if s.damaged != "" {
		// Nothing of a damaged row is shown or compared: not its verdict
		// (detection's claim stands unsupported), not its bytes. Another
		// answer shown in its place would hide the damage.
		s.problem = fmt.Sprintf("observation %d, which the event cites as its %s observation, is %s: its row cannot be read as an observation; driftprobe db check lists it",
			cited, name, s.damaged)
		return s, nil
	}
	if s.out == nil {
		// Retention never deletes an observation an event cites (diff.LoadPins).
		s.problem = fmt.Sprintf("observation %d, which the event cites as its %s observation, is not in the database: retention keeps every observation an event cites, "+
			"so it was deleted outside driftprobe or the database is damaged", cited, name)
		return s, nil
	}
	if claim.Class == "" {
		return s, nil
	}
	match := s.out.Verdict.Key() == claim.Key()
	s.out.VerdictMatches = &match
	if match || !nd || s.foreign {
		// An observation of another target or probe is shown as it is,
		// its problem named: an answer of the event's own probe shown in
		// its place would hide that the event cites a foreign one.
		return s, nil
	}
	alt, lo, pruned, err := b.find(ep, claim)
	if err != nil {
		return side{}, err
	}
	if alt.out != nil {
		alt.out.CitedID = cited
		alt.out.Selection = fmt.Sprintf("the event cites observation %d (run %d, sample %d), which answered %s, not the event's %s verdict %s "+
			"(detection cites sample 0 of the run it marked the probe nondeterministic in, whatever that answered): "+
			"this is the latest answer of the same request bytes on %s, in runs %d to %d, that carries %s",
			cited, s.obs.RunID, s.obs.Sample, s.out.Verdict, name, claim, ep.Target, lo, ep.ConfirmedRun, claim)
		return alt, nil
	}
	if pruned {
		// The answer that carried the claim was not pinned: retention may
		// have deleted it legitimately. Absent, not a problem; the cited
		// observation still supplies the request bytes.
		return side{obs: s.obs, req: s.req, reqOK: s.reqOK, absent: fmt.Sprintf("observation %d (run %d, sample %d), which the event cites, answered %s, not the event's %s verdict %s "+
			"(detection cites sample 0 of the run it marked the probe nondeterministic in, whatever that answered), and no stored answer of these request bytes in runs %d to %d carries %s: "+
			"retention deleted observations of those runs (it keeps only those an event cites)",
			cited, s.obs.RunID, s.obs.Sample, s.out.Verdict, name, claim, lo, ep.ConfirmedRun, claim)}, nil
	}
	return s, nil // shown as it is: the mismatch is a problem
}

// find returns the latest stored answer of ep's request bytes on its target
// in runs lo..ep.ConfirmedRun that carries verdict v (side.out nil: none),
// and whether retention deleted observations of the target in any of those
// runs (storage.TargetRowsPruned).
func (b *builder) find(ep diff.EventProbe, v diff.Verdict) (s side, lo int64, pruned bool, err error) {
	lo = max(1, ep.ConfirmedRun-searchRuns)
	tid, ok, err := b.targetID(ep.Target)
	if err != nil || !ok {
		return side{}, lo, false, err
	}
	// The UNIQUE (run_id, target_id, probe_id, sample) index serves the
	// run range; observations are not indexed by target and probe.
	rows, err := b.db.SQL().QueryContext(b.ctx, `SELECT id, class FROM observations
		WHERE run_id BETWEEN ? AND ? AND target_id = ? AND probe_id = ? AND request_sha256 = ?
		ORDER BY run_id DESC, sample, id`, lo, ep.ConfirmedRun, tid, ep.ProbeID, ep.RequestSHA256)
	if err != nil {
		return side{}, lo, false, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		var class any // as stored: a damaged row's may be of any type
		if err := rows.Scan(&id, &class); err != nil {
			rows.Close()
			return side{}, lo, false, err
		}
		if c, ok := class.(string); ok && c == string(v.Class) {
			ids = append(ids, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return side{}, lo, false, err
	}
	for _, id := range ids {
		o, err := b.db.Observation(b.ctx, id)
		if storage.IsDamagedRow(err) {
			continue // no verdict to show: not an answer carrying v
		}
		if err != nil {
			return side{}, lo, false, err
		}
		if diff.VerdictOf(o.Result).Key() != v.Key() {
			continue
		}
		s, err := b.side(ep, id)
		if err != nil || s.out == nil {
			return side{}, lo, false, err
		}
		match := true
		s.out.VerdictMatches = &match
		return s, lo, false, nil
	}
	// Per target: in a run marked pruned to observations, a target
	// retention kept whole (its detection state did not decode) kept every
	// row, so the answer's absence there is not retention's doing.
	marked, err := b.db.SQL().QueryContext(b.ctx, `SELECT id FROM runs WHERE id BETWEEN ? AND ? AND pruned = ?`, lo, ep.ConfirmedRun, storage.PrunedObservations)
	if err != nil {
		return side{}, lo, false, err
	}
	var runs []int64
	for marked.Next() {
		var id int64
		if err := marked.Scan(&id); err != nil {
			marked.Close()
			return side{}, lo, false, err
		}
		runs = append(runs, id)
	}
	marked.Close()
	if err := marked.Err(); err != nil {
		return side{}, lo, false, err
	}
	for _, run := range runs {
		deleted, err := b.db.TargetRowsPruned(b.ctx, run, tid)
		if err != nil || deleted {
			return side{}, lo, deleted, err
		}
	}
	return side{}, lo, false, nil
}

func request(o *storage.Observation, body []byte) Request {
	return Request{Method: o.RequestMethod, Path: o.RequestPath, PinnedHeaders: o.RequestPinned, Body: text(body), SHA256: o.RequestSHA256, Verified: true, ObservationID: o.ID}
}

// side loads the observation obsID cites (0: none). A damaged row
// (storage.ErrDamagedRow), or one SQLite cannot read (a damaged page), is
// a side with damaged set and nothing else read.
func (b *builder) side(ep diff.EventProbe, obsID int64) (side, error) {
	if obsID == 0 {
		return side{}, nil
	}
	o, err := b.db.Observation(b.ctx, obsID)
	if errors.Is(err, storage.ErrNotFound) {
		return side{absent: fmt.Sprintf("observation %d is no longer in the database", obsID)}, nil
	}
	var de *storage.DamagedError
	switch {
	case errors.As(err, &de) && len(de.Rows) == 1:
		why := "damaged (" + de.Rows[0].Problem() + ")"
		return side{damaged: why, absent: fmt.Sprintf("observation %d is %s", obsID, why)}, nil
	case storage.IsCorrupt(err):
		why := "unreadable (" + err.Error() + ")"
		return side{damaged: why, absent: fmt.Sprintf("observation %d is %s", obsID, why)}, nil
	}
	if err != nil {
		return side{}, err
	}
	sample := o.Sample
	out := &Observation{ID: o.ID, RunID: o.RunID, Sample: &sample, RunStartedAt: b.runStart(o.RunID), ObservedAt: o.ObservedAt, Verdict: diff.VerdictOf(o.Result),
		Stage: string(o.Result.Stage), Signals: o.Result.Signals, Reason: o.Result.Reason, Message: o.Result.Message, Heuristic: o.Result.Heuristic,
		HTTPStatus: o.HTTPStatus, RequestID: o.Result.RequestID, ModelID: o.Result.ModelID, ModelFP: o.Result.ModelFP, Attempts: o.Attempts,
		ResponseSHA256: o.BodySHA256, Truncated: o.BodyTruncated, Origin: b.origin(o.RunID, o.TargetID)}
	s := side{out: out, obs: o}
	var problems []string
	// The event cites it for its own target and probe: an observation of
	// another target or probe (an id an edit or damage moved) is no
	// evidence of this flip, whatever bytes and verdict it holds.
	tid, known, err := b.targetID(ep.Target)
	if err != nil {
		return side{}, err
	}
	if out.Target, err = b.targetName(o.TargetID); err != nil {
		return side{}, err
	}
	out.ProbeID = o.ProbeID
	if !known || o.TargetID != tid || o.ProbeID != ep.ProbeID {
		s.foreign = true
		problems = append(problems, foreignProblem(out.Target, o.ProbeID, ep.Target, ep.ProbeID))
	}
	if o.RequestSHA256 != ep.RequestSHA256 {
		problems = append(problems, fmt.Sprintf("it sent request sha256 %s, not the event's %s", o.RequestSHA256, ep.RequestSHA256))
	}
	if o.BodiesPruned {
		out.ResponseAbsent = "retention dropped the stored bodies; response_body_sha256 is the hash of what was received"
	} else if bodies, err := b.db.ReadBodies(b.ctx, obsID); err != nil {
		return side{}, fmt.Errorf("observation %d: %w", obsID, err)
	} else {
		// A damaged side is a problem of its own; the other side is still
		// shown and checked.
		if rq := bodies.Request; bodies.RequestErr != nil {
			problems = append(problems, bodies.RequestErr.Error()) // "request body: stored body unreadable: ..."
		} else if got := o.RequestFingerprint(rq); got != o.RequestSHA256 {
			problems = append(problems, fmt.Sprintf("stored request bytes hash to %s, recorded %s", got, o.RequestSHA256))
		} else {
			s.req, s.reqOK = rq, true
		}
		if rs := bodies.Response; bodies.ResponseErr != nil {
			problems = append(problems, bodies.ResponseErr.Error())
		} else {
			out.ResponseBody = text(rs)
			if !utf8.Valid(rs) {
				out.ResponseBase64 = base64.StdEncoding.EncodeToString(rs)
			}
			sum := sha256.Sum256(rs)
			switch got := hex.EncodeToString(sum[:]); {
			case o.BodySHA256 == "" && len(rs) == 0, got == o.BodySHA256:
				out.ResponseOK = true
			case o.BodySHA256 == "":
				problems = append(problems, fmt.Sprintf("stored response body hashes to %s, none recorded", got))
			default:
				problems = append(problems, fmt.Sprintf("stored response body hashes to %s, recorded %s", got, o.BodySHA256))
			}
		}
	}
	out.Problem = strings.Join(problems, "; ")
	return s, nil
}

// targetID returns the id of the target named name (ok false: none).
func (b *builder) targetID(name string) (int64, bool, error) {
	if tid, ok := b.targets[name]; ok {
		return tid, true, nil
	}
	t, err := b.db.TargetByName(b.ctx, name)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	b.targets[name] = t.ID
	return t.ID, true, nil
}

// targetName returns the name of the target with id id ("id N" when the
// database holds no such target).
func (b *builder) targetName(id int64) (string, error) {
	for name, tid := range b.targets {
		if tid == id {
			return name, nil
		}
	}
	var name string
	err := b.db.SQL().QueryRowContext(b.ctx, `SELECT name FROM targets WHERE id = ?`, id).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Sprintf("id %d (not in the database)", id), nil
	}
	if err != nil {
		return "", err
	}
	return name, nil
}

// storedRequest finds the request bytes of ep in another observation of
// the same bytes on the same target (those of the confirming run first),
// within searchRuns runs of the confirming run (found through the
// observations' run index: the whole table is never scanned), skipping
// the ids given. It returns nil when none holds readable bytes.
func (b *builder) storedRequest(ep diff.EventProbe, skip ...int64) (*storage.Observation, []byte, error) {
	tid, ok, err := b.targetID(ep.Target)
	if err != nil || !ok {
		return nil, nil, err
	}
	rows, err := b.db.SQL().QueryContext(b.ctx, `SELECT id FROM observations WHERE run_id BETWEEN ? AND ? AND target_id = ? AND probe_id = ? AND request_sha256 = ? AND bodies_pruned = 0
		ORDER BY ABS(run_id - ?), sample, id LIMIT 8`, ep.ConfirmedRun-searchRuns, ep.ConfirmedRun+searchRuns, tid, ep.ProbeID, ep.RequestSHA256, ep.ConfirmedRun)
	if err != nil {
		return nil, nil, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
next:
	for _, id := range ids {
		for _, s := range skip {
			if id == s {
				continue next
			}
		}
		o, err := b.db.Observation(b.ctx, id)
		if storage.IsDamagedRow(err) {
			continue // its request columns cannot be trusted
		}
		if err != nil {
			return nil, nil, err
		}
		bodies, err := b.db.ReadBodies(b.ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if rq := bodies.Request; bodies.RequestErr == nil && o.RequestFingerprint(rq) == ep.RequestSHA256 {
			return o, rq, nil
		}
	}
	return nil, nil, nil
}

// Problems lists every reason the record's evidence does not verify, as
// derived from its probes: stored evidence that could not be read or does
// not hash to its fingerprint, flips whose sides sent different bytes,
// observations the event cites that the database did not hold,
// observations that do not carry the verdict the event claims for their
// side, and observations of another target or probe than their flip's
// (from a format 5 record's target and probe_id; in older formats only
// where the writer named one in the observation's problem). Absent
// observations, bodies and request bytes are not problems.
func (r *Record) Problems() []string {
	out := r.hashProblems()
	out = append(out, r.claimProblems()...)
	out = append(out, r.ownershipProblems()...)
	return out
}

// hashProblems are the problems format 1 knew: stored bytes that do not
// verify, and flips whose sides sent different bytes, with each
// observation's problem field as its writer wrote it (which names, since
// format 2 writers, an observation of another target or probe too).
func (r *Record) hashProblems() []string {
	var out []string
	for i := range r.Probes {
		out = append(out, r.Probes[i].problems(false)...)
	}
	return out
}

// bytesProblems are hashProblems without an observation's being of another
// target or probe (ownership is not a hash: its bytes may all verify).
func (r *Record) bytesProblems() []string {
	var out []string
	for i := range r.Probes {
		out = append(out, r.Probes[i].problems(true)...)
	}
	return out
}

// namesOwners says whether the record names, for every observation shown,
// the target and probe it is an observation of (format 5 on).
func (r *Record) namesOwners() bool { return r.Format == Format }

// checksScores says whether the record's writer checked a score drift's
// cited answers against the scores it claims moved (format 4 on).
func (r *Record) checksScores() bool { return r.Format == Format || r.Format == FormatV4 }

// foreignProblem is the problem of an observation of target/probe cited
// for a flip of eventTarget/eventProbe.
func foreignProblem(target, probe, eventTarget, eventProbe string) string {
	return fmt.Sprintf("it is an observation of target %s, probe %s, not of the event's %s/%s: it is no evidence of this flip",
		target, probe, eventTarget, eventProbe)
}

// foreignEnd ends foreignProblem's text.
const foreignEnd = ": it is no evidence of this flip"

// ownershipPart splits an observation's problem as a writer wrote it into
// the statement that it is an observation of another target or probe
// (foreignProblem, which writers put first) and the rest. A problem that
// does not read that way (a target name holding the text, say) is all
// rest: the hashes are then not claimed to verify.
func ownershipPart(problem string) (own, rest string) {
	if !strings.HasPrefix(problem, "it is an observation of target ") {
		return "", problem
	}
	i := strings.Index(problem, foreignEnd)
	if i < 0 {
		return "", problem
	}
	end := i + len(foreignEnd)
	switch {
	case end == len(problem):
		return problem, ""
	case strings.HasPrefix(problem[end:], "; "):
		return problem[:end], problem[end+2:]
	}
	return "", problem
}

// derivedForeign is, in a format 5 record, the problem of observation o,
// shown for flip p, being of another target or probe than p's own, as its
// target and probe_id say ("" when it is p's own, and in older formats).
func (r *Record) derivedForeign(p *Probe, o *Observation) string {
	switch {
	case !r.namesOwners() || o == nil:
		return ""
	case o.Target == "" || o.ProbeID == "":
		return fmt.Sprintf("it does not name the target and probe it is an observation of (a %s record names them for every observation shown), so it cannot be checked to be of the event's %s/%s",
			Format, p.Target, p.ProbeID)
	case o.Target != p.Target || o.ProbeID != p.ProbeID:
		return foreignProblem(o.Target, o.ProbeID, p.Target, p.ProbeID)
	}
	return ""
}

// foreign says whether observation o, shown for flip p, is of another
// target or probe than p's own: as its target and probe_id say (format 5),
// or as its writer said in its problem.
func (r *Record) foreign(p *Probe, o *Observation) bool {
	if o == nil {
		return false
	}
	own, _ := ownershipPart(o.Problem)
	return own != "" || r.derivedForeign(p, o) != ""
}

// ownershipProblems are the problems format 5 added: an observation whose
// target and probe_id are not its flip's, unless its problem (listed by
// hashProblems) already says so.
func (r *Record) ownershipProblems() []string {
	var out []string
	for i := range r.Probes {
		p := &r.Probes[i]
		for _, s := range p.sides() {
			if d := r.derivedForeign(p, s.o); d != "" && !strings.Contains(s.o.Problem, d) {
				out = append(out, fmt.Sprintf("%s/%s: %s observation %d: %s", p.Target, p.ProbeID, s.name, s.o.ID, d))
			}
		}
	}
	return out
}

// claimProblems are the problems format 2 added: observations the event
// cites that the database lacked (in a format 1 record: a side shown
// absent although the event cites an observation for it), and
// observations whose verdict is not the one the event claims for their
// side (a probe the event does not list is one too).
func (r *Record) claimProblems() []string {
	claims := r.claims()
	var out []string
	for _, p := range r.Probes {
		name := p.Target + "/" + p.ProbeID
		ep, ok := claims[p.Target+"\x00"+p.ProbeID]
		if !ok {
			out = append(out, fmt.Sprintf("%s: not among the event's probes", name))
			continue
		}
		for _, s := range p.sides() {
			if s.problem != "" {
				out = append(out, fmt.Sprintf("%s: %s: %s", name, s.name, s.problem))
			}
			if cited := ep.cited(s.name); r.Format == FormatV1 && s.o == nil && cited != 0 {
				// A format 1 writer said a cited observation it could not
				// find was absent ("no longer in the database"); it never
				// showed another one in its place.
				out = append(out, fmt.Sprintf("%s: %s: observation %d, which the event cites as its %s observation, was not in the database when the record was written: "+
					"retention keeps every observation an event cites, so it was deleted outside driftprobe or the database is damaged", name, s.name, cited, s.name))
			}
			if r.Format == FormatV1 && r.Event != nil && r.Event.Kind == diff.KindNondeterminism {
				// Format 1 writers showed the observation a nondeterminism
				// event cites, sample 0 of the marking run, which often
				// carries the other of its two answers: an untouched
				// record of such an event still verifies (rebuilding it
				// shows answers that carry both verdicts).
				continue
			}
			if v := ep.claim(s.name); s.o != nil && v.Class != "" && s.o.Verdict.Key() != v.Key() {
				out = append(out, fmt.Sprintf("%s: %s observation %d (run %d) recorded verdict %s, but the event claims %s %s",
					name, s.name, s.o.ID, s.o.RunID, s.o.Verdict, s.name, v))
			}
			if s.o != nil && r.checksScores() {
				out = append(out, scoreProblems(name, s.name, s.o, ep.ScoreMoves)...)
			}
		}
	}
	return out
}

// scoreProblems checks a score drift's claims against the observation it
// cites for side: each moved score must be the one the answer carried
// (before or after the move; the moves keep four decimals).
func scoreProblems(name, side string, o *Observation, moves []diff.ScoreMove) []string {
	var out []string
	for _, m := range moves {
		want := m.Before
		if side == "after" {
			want = m.After
		}
		got, ok := 0.0, false
		for _, sig := range o.Signals {
			if sig.HasScore && sig.Raw == m.Key {
				got, ok = sig.Score, true
				break
			}
		}
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: %s observation %d (run %d) carries no %q score, but the event claims it moved %s %v",
				name, side, o.ID, o.RunID, m.Key, map[string]string{"before": "from", "after": "to"}[side], want))
		case math.Abs(got-want) > 0.00005+1e-9:
			out = append(out, fmt.Sprintf("%s: %s observation %d (run %d) carries %q score %v, but the event claims it moved %s %v",
				name, side, o.ID, o.RunID, m.Key, got, map[string]string{"before": "from", "after": "to"}[side], want))
		}
	}
	return out
}

// claims indexes the event's probes by target and probe id.
func (r *Record) claims() map[string]eventProbe {
	m := map[string]eventProbe{}
	if r.Event != nil {
		for _, ep := range r.Event.Probes {
			m[ep.Target+"\x00"+ep.ProbeID] = eventProbe(ep)
		}
	}
	return m
}

type eventProbe diff.EventProbe

// cited is the observation the event cites for side "before" or "after".
func (ep eventProbe) cited(side string) int64 {
	if side == "before" {
		return ep.BeforeObs
	}
	return ep.AfterObs
}

// claim is the verdict the event claims for side "before" or "after".
func (ep eventProbe) claim(side string) diff.Verdict {
	if side == "before" {
		return ep.Before
	}
	return ep.After
}

// problems lists the probe's problems as its fields state them; bytesOnly
// leaves out an observation's problem of being of another target or probe
// (ownershipPart).
func (p *Probe) problems(bytesOnly bool) []string {
	var out []string
	name := p.Target + "/" + p.ProbeID
	if !p.Request.Verified && p.Request.Missing == "" {
		out = append(out, fmt.Sprintf("%s: request bytes not verified against sha256 %s", name, p.Request.SHA256))
	}
	for _, s := range p.sides() {
		problem := ""
		if s.o != nil {
			problem = s.o.Problem
			if bytesOnly {
				_, problem = ownershipPart(problem)
			}
		}
		switch {
		case s.o == nil:
		case problem != "":
			out = append(out, fmt.Sprintf("%s: %s observation %d: %s", name, s.name, s.o.ID, problem))
		case !s.o.ResponseOK && s.o.ResponseAbsent == "":
			out = append(out, fmt.Sprintf("%s: %s observation %d: response body not verified against sha256 %s", name, s.name, s.o.ID, s.o.ResponseSHA256))
		}
	}
	if p.Before != nil && p.After != nil && !p.SameBytes {
		out = append(out, fmt.Sprintf("%s: before and after did not send identical request bytes", name))
	}
	if b, a := p.Before, p.After; b != nil && a != nil && b.Origin != "" && a.Origin != "" && b.Origin != a.Origin {
		out = append(out, fmt.Sprintf("%s: before and after were answered at different endpoints (%s, %s): not evidence of a provider change", name, b.Origin, a.Origin))
	}
	return out
}

type namedSide struct {
	name    string
	o       *Observation
	absent  string
	problem string
}

func (p *Probe) sides() []namedSide {
	return []namedSide{{"before", p.Before, p.BeforeAbsent, p.BeforeProblem}, {"after", p.After, p.AfterAbsent, p.AfterProblem}}
}

// revertedProbes counts the probes that flipped back or were withdrawn.
// movedOn counts the probes that left the event because their verdict
// moved on rather than back.
func (r *Record) movedOn() int {
	n := 0
	for _, p := range r.Probes {
		if p.MovedOn {
			n++
		}
	}
	return n
}

// withdrawn counts the probes that left the event as nondeterministic.
func (r *Record) withdrawn() int {
	n := 0
	for _, p := range r.Probes {
		if p.Withdrawn {
			n++
		}
	}
	return n
}

// withdrawnNote is "; N withdrawn as nondeterministic" when n > 0.
func withdrawnNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d withdrawn as nondeterministic", n)
}

func (r *Record) revertedProbes() int {
	n := 0
	for _, p := range r.Probes {
		if p.Reverted || p.Withdrawn {
			n++
		}
	}
	return n
}

// absences counts the observations, request bytes and response bodies the
// record does not hold.
func (r *Record) absences() (obs, reqs, bodies int) {
	for _, p := range r.Probes {
		for _, s := range p.sides() {
			if s.o == nil && s.problem == "" {
				obs++
			} else if s.o != nil && s.o.ResponseAbsent != "" {
				bodies++
			}
		}
		if p.Request.Missing != "" {
			reqs++
		}
	}
	return
}

func (r *Record) hash() (string, error) {
	c := *r
	c.SHA256 = ""
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// NotRecordError is returned for input that is not an evidence record.
type NotRecordError struct{ Reason string }

func (e *NotRecordError) Error() string { return "not an evidence record (" + e.Reason + ")" }

// UnverifiedError is returned by Verify for an intact record (its own hash
// and its request bytes check) whose evidence does not verify: AllVerified
// is false, and Problems says why. For a format 1 record it is also
// returned when observations in it do not carry the verdicts its event
// claims, which its writer did not check (Format1 true).
type UnverifiedError struct {
	Problems []string
	Format1  bool
}

func (e *UnverifiedError) Error() string {
	if e.Format1 {
		return fmt.Sprintf("the record's hashes verify, but it was written in format %s, by a driftprobe that checked only hashes, "+
			"and what it records does not support its event (an observation's verdict is not the one the event claims, "+
			"or an observation the event cites missing from the database was taken for an absence): %s; "+
			"build the record again with a current driftprobe ('driftprobe evidence ID --json')", FormatV1, strings.Join(e.Problems, "; "))
	}
	return fmt.Sprintf("the record is intact but its evidence does not verify (all_verified false): %s", strings.Join(e.Problems, "; "))
}

// isRecord says whether r is an evidence record at all.
func isRecord(r *Record) error {
	switch {
	case r.Format == "":
		return &NotRecordError{fmt.Sprintf("no \"format\": %q", Format)}
	case r.Format != Format && r.Format != FormatV4 && r.Format != FormatV3 && r.Format != FormatV2 && r.Format != FormatV1:
		return &NotRecordError{fmt.Sprintf("format %q, want %q (or %q, %q, %q, %q)", r.Format, Format, FormatV4, FormatV3, FormatV2, FormatV1)}
	case r.Event == nil:
		return &NotRecordError{"no event"}
	case r.SHA256 == "":
		return &NotRecordError{"no record_sha256"}
	}
	return nil
}

// Verify checks a record: that it is one (a *NotRecordError if not), its
// own hash, every request's bytes against its fingerprint, that every
// observation's verdict_matches_event agrees with its verdict and the
// event's claim, in a format 5 record that every observation shown is of
// its flip's target and probe (Observation.Target, ProbeID; older records
// do not name them, so only what their writer named in an observation's
// problem is caught), and that all_verified agrees with the probes. A record
// that is intact but says its evidence did not verify returns an
// *UnverifiedError. A format 1 record is held to what its writer checked
// (hashes) for all_verified, and additionally fails, with an
// *UnverifiedError saying so, when an observation in it does not carry the
// verdict its event claims.
func Verify(r *Record) error {
	if err := isRecord(r); err != nil {
		return err
	}
	sum, err := r.hash()
	if err != nil {
		return err
	}
	if sum != r.SHA256 {
		return fmt.Errorf("record_sha256 mismatch: recorded %s, computed %s", r.SHA256, sum)
	}
	// The record's own claims must hold: request bytes present are always
	// re-hashed (a request marked missing carries none), and a response
	// body marked verified must hash to its recorded sha256. These catch
	// edits and corruption; record_sha256 has no key, so they do not stop
	// a forger who recomputes every hash.
	claims := r.claims()
	for _, p := range r.Probes {
		q := p.Request
		carries := q.Method != "" || q.Path != "" || q.PinnedHeaders != "" || q.Body != ""
		if q.Missing != "" {
			if carries || q.Verified {
				return fmt.Errorf("%s/%s: request marked missing (%s) but carries bytes or is marked verified", p.Target, p.ProbeID, q.Missing)
			}
		} else if carries || q.Verified {
			if got := probes.Fingerprint(q.Method, q.Path, []byte(q.Body), q.PinnedHeaders); got != q.SHA256 && q.Verified {
				return fmt.Errorf("%s/%s: request sha256 %s, recorded %s", p.Target, p.ProbeID, got, q.SHA256)
			} else if got == q.SHA256 && !q.Verified {
				return fmt.Errorf("%s/%s: request bytes hash to the fingerprint but are marked unverified", p.Target, p.ProbeID)
			}
		}
		ep, listed := claims[p.Target+"\x00"+p.ProbeID]
		for _, side := range p.sides() {
			o := side.o
			if o != nil && r.Format != FormatV1 && listed {
				// verdict_matches_event is the record's own statement of
				// the comparison: it must be what the verdicts say.
				var want *bool
				if v := ep.claim(side.name); v.Class != "" {
					m := o.Verdict.Key() == v.Key()
					want = &m
				}
				if (want == nil) != (o.VerdictMatches == nil) || want != nil && *want != *o.VerdictMatches {
					return fmt.Errorf("%s/%s: %s observation %d: verdict_matches_event %s, but its verdict %s against the event's %s says %s",
						p.Target, p.ProbeID, side.name, o.ID, boolPtr(o.VerdictMatches), o.Verdict, ep.claim(side.name), boolPtr(want))
				}
			}
			if o == nil || !o.ResponseOK {
				continue
			}
			raw := []byte(o.ResponseBody)
			if o.ResponseBase64 != "" {
				// A body that was not valid UTF-8: its exact bytes, which
				// the readable text must show.
				b, err := base64.StdEncoding.DecodeString(o.ResponseBase64)
				if err != nil {
					return fmt.Errorf("%s/%s: %s response_body_base64: %v", p.Target, p.ProbeID, side.name, err)
				}
				if text(b) != o.ResponseBody {
					return fmt.Errorf("%s/%s: %s response_body is not the text of response_body_base64", p.Target, p.ProbeID, side.name)
				}
				raw = b
			}
			sum := sha256.Sum256(raw)
			if matches := hex.EncodeToString(sum[:]) == o.ResponseSHA256 || o.ResponseSHA256 == "" && len(raw) == 0; !matches {
				if o.ResponseBase64 == "" && strings.ContainsRune(o.ResponseBody, utf8.RuneError) {
					// A record written before response_body_base64: its
					// invalid bytes were replaced and cannot be re-hashed.
					continue
				}
				return fmt.Errorf("%s/%s: %s response body does not hash to its recorded sha256 %s", p.Target, p.ProbeID, side.name, o.ResponseSHA256)
			}
		}
	}
	problems := r.Problems()
	if r.Format == FormatV1 {
		// Its writer judged all_verified on the hashes alone.
		hashes := r.hashProblems()
		if r.AllVerified != (len(hashes) == 0) {
			return fmt.Errorf("all_verified is %v but the probes list %d problem(s)%s", r.AllVerified, len(hashes), listed(hashes))
		}
		if len(problems) > 0 {
			return &UnverifiedError{Problems: problems, Format1: len(problems) > len(hashes)}
		}
		return nil
	}
	if r.AllVerified != (len(problems) == 0) {
		return fmt.Errorf("all_verified is %v but the probes list %d problem(s)%s", r.AllVerified, len(problems), listed(problems))
	}
	if len(problems) > 0 {
		return &UnverifiedError{Problems: problems}
	}
	return nil
}

// listed is ": p1; p2…", or "" for none.
func listed(problems []string) string {
	if len(problems) == 0 {
		return ""
	}
	return ": " + strings.Join(problems, "; ")
}

func boolPtr(b *bool) string {
	if b == nil {
		return "absent"
	}
	return fmt.Sprint(*b)
}

// VerifyJSON parses and verifies a record file's content. Content that is
// not an evidence record is a *NotRecordError; content record_sha256 does
// not cover fails verification: fields a record does not have, keys
// spelt otherwise than the record spells them (Go reads keys in any case),
// and duplicate keys (a reader keeping the first of two reads another
// record than the one hashed, which keeps the last).
func VerifyJSON(data []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &NotRecordError{err.Error()}
	}
	if err := isRecord(&r); err != nil {
		return nil, err
	}
	if err := checkKeys(data); err != nil {
		return &r, fmt.Errorf("content not covered by record_sha256: %v", err)
	}
	if err := Verify(&r); err != nil {
		return &r, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var strict Record
	if err := dec.Decode(&strict); err != nil {
		return &r, fmt.Errorf("content not covered by record_sha256: %v", err)
	}
	return &r, nil
}

// recordKeys is every object key a record has, as it spells them.
var recordKeys = func() map[string]bool {
	keys := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || t == reflect.TypeFor[time.Time]() {
			return
		}
		seen[t] = true
		for f := range t.Fields() {
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			keys[name] = true
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Record]())
	return keys
}()

// checkKeys rejects, in JSON data, an object with two keys that read as the
// same field (encoding/json matches keys case-insensitively, with Unicode
// simple folding) and a key that is not spelt as a record spells it.
func checkKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value func(path string) error
	value = func(path string) error {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'):
			seen := map[string]string{}
			for dec.More() {
				t, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := t.(string)
				f := fold(key)
				if prev, dup := seen[f]; dup {
					if prev == key {
						return fmt.Errorf("duplicate key %q in %s", key, path)
					}
					return fmt.Errorf("duplicate key %q in %s (as %q: keys are read without regard to case)", key, path, prev)
				}
				seen[f] = key
				if !recordKeys[key] {
					return fmt.Errorf("key %q in %s is not a field of an evidence record as spelt", key, path)
				}
				if err := value(path + "." + key); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := value(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	return value("the record")
}

// fold maps s to one representative of its case-folding class: each rune
// to the smallest rune of its unicode.SimpleFold orbit.
func fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// WriteMarkdown renders the record for humans. Every string it prints from
// the record (provider request ids, model ids and fingerprints, reasons,
// target names, probe ids, categories, the corpus version, the event's own
// fields, the reasons a side or its bytes are absent, problems) is made
// inert first: control, escape, line-separator and bidi characters never
// reach the output, and GitHub renders no markup, mention, reference or
// link from them (identifiers through ghissue.Code, sentences as whole code
// spans, the request body fenced).
func WriteMarkdown(w io.Writer, r *Record) {
	e := r.Event
	status := code(e.Status)
	if e.RevertedRun != 0 && r.withdrawn() > 0 && r.withdrawn() == len(r.Probes) {
		status += " (retracted)" // the stored status; the line below says why
	}
	fmt.Fprintf(w, "# driftprobe evidence: event %d\n\n", e.ID)
	fmt.Fprintf(w, "- kind: %s, direction: %s, status: %s\n- targets: %s (provider %s)\n- runs: first seen %d, confirmed %d\n- corpus: %s (sha256 %s)\n- model: %s → %s\n- new categories: %s\n",
		code(e.Kind), code(e.Direction), status, codes(e.Targets), code(e.Provider), e.FirstRun, e.ConfirmedRun, code(e.CorpusVersion), code(e.CorpusHash),
		model(e.ModelBefore), model(e.ModelAfter), codes(e.NewCategories))
	if e.Kind == diff.KindModel {
		writeModelCounts(w, r)
		// The bytes are hashed; who answered them is not.
		fmt.Fprintf(w, "- what no hash covers: the hashes prove the request bytes sent and the response bytes stored, and the model id and fingerprint above are what the provider reported in its answers; "+
			"they do not prove which model served a request, nor whether anything held on the provider's side and not in the bytes (a content filter configuration, a guardrail version, account or project settings) changed with it\n")
	}
	if e.RevertedRun != 0 {
		switch withdrawn := r.withdrawn(); {
		case withdrawn > 0 && withdrawn == len(r.Probes):
			// Retracted (status reverted, update retracted): nothing went
			// back; the flips proved to be noise.
			fmt.Fprintf(w, "- retracted in run %d: every flip of the event was withdrawn, its probes marked nondeterministic: they are no evidence of a policy change, and the provider did not necessarily change anything\n", e.RevertedRun)
		case r.movedOn() > 0:
			fmt.Fprintf(w, "- ended in run %d: every flip of the event left it, not all by going back (%d moved on: the change no longer holds for them%s)\n", e.RevertedRun, r.movedOn(), withdrawnNote(withdrawn))
		case withdrawn > 0:
			fmt.Fprintf(w, "- reverted in run %d: every flip of the event went back or was withdrawn (%d withdrawn as nondeterministic: no evidence either way)\n", e.RevertedRun, withdrawn)
		default:
			fmt.Fprintf(w, "- reverted in run %d: every flip of the event went back\n", e.RevertedRun)
		}
	}
	if n := r.revertedProbes(); n > 0 && e.RevertedRun == 0 {
		fmt.Fprintf(w, "- partially reverted: %d of %d probe(s) flipped back, moved on or were withdrawn since (see the history and each probe)\n", n, len(r.Probes))
	}
	hashes := r.bytesProblems()
	fmt.Fprintf(w, "- record verifies (all_verified): %v\n", r.AllVerified)
	fmt.Fprintf(w, "- all request and response hashes verified: %v\n", len(hashes) == 0)
	writeOwnership(w, r)
	missing, mismatched := 0, 0
	for _, p := range r.Probes {
		for _, s := range p.sides() {
			if s.problem != "" {
				missing++
			}
			if s.o != nil && s.o.VerdictMatches != nil && !*s.o.VerdictMatches {
				mismatched++
			}
		}
	}
	fmt.Fprintf(w, "- every observation the event cites is in the database: %v", missing == 0)
	if missing > 0 {
		fmt.Fprintf(w, " (%d missing: retention keeps them, so they were deleted or the database is damaged)", missing)
	}
	fmt.Fprintf(w, "\n- every observation shown carries the verdict the event claims: %v", mismatched == 0)
	if mismatched > 0 {
		fmt.Fprintf(w, " (%d do not)", mismatched)
	}
	fmt.Fprintln(w)
	if e.Kind == diff.KindScoreDrift {
		writeScoreCheck(w, r)
	}
	if obs, reqs, bodies := r.absences(); obs+reqs+bodies > 0 {
		fmt.Fprintf(w, "- not in this record (absent, so not checked): %d observation(s), %d request(s), %d response body(ies); see the probes\n", obs, reqs, bodies)
	}
	for _, p := range r.Problems() {
		fmt.Fprintf(w, "- does not verify: %s\n", span(p))
	}
	// The hash covers generated_at: every generation differs. Say so, so
	// nobody cites a hash of a record that was never saved.
	fmt.Fprintf(w, "- record sha256: %s (of the JSON record generated at %s, which differs on every call: cite a record saved with `--json`, checked by `--verify`)\n\n",
		code(r.SHA256), r.GeneratedAt.Format(time.RFC3339))
	if len(e.Updates) > 0 {
		fmt.Fprintf(w, "## History\n\n")
		for _, u := range e.Updates {
			target := ""
			if u.Target != "" {
				target = ", target " + code(u.Target)
			}
			fmt.Fprintf(w, "- run %d (%s): %s%s: %s\n", u.RunID, u.At.UTC().Format(time.RFC3339), code(u.Change), target, span(u.Detail))
		}
		fmt.Fprintln(w)
	}
	verdicts := map[string]diff.EventProbe{}
	for _, ep := range e.Probes {
		verdicts[ep.Target+"\x00"+ep.ProbeID] = ep
	}
	for _, p := range r.Probes {
		fmt.Fprintf(w, "## %s / %s\n\n", code(p.Target), code(p.ProbeID))
		switch {
		case p.Withdrawn:
			fmt.Fprintf(w, "**withdrawn in run %d**: the probe was marked nondeterministic, so this flip no longer counts as evidence of the change\n\n", p.RevertedRun)
		case p.MovedOn:
			fmt.Fprintf(w, "**moved on in run %d**: the probe's verdict moved so that this change no longer holds for it (it did not go back)\n\n", p.RevertedRun)
		case p.Reverted && p.RevertedRun != 0:
			fmt.Fprintf(w, "**reverted in run %d**: the probe flipped back to its before verdict; this flip no longer holds\n\n", p.RevertedRun)
		case p.Reverted:
			fmt.Fprintf(w, "**reverted**: the probe flipped back to its before verdict; this flip no longer holds\n\n")
		}
		if p.Request.Missing != "" {
			fmt.Fprintf(w, "request sha256 %s: the bytes are not in this record: %s\n\n", code(p.Request.SHA256), span(p.Request.Missing))
		} else {
			var same string
			switch {
			case p.Before != nil && p.After != nil:
				same = fmt.Sprint(p.SameBytes)
			case p.Before != nil:
				same = "not applicable, no after observation"
			case p.After != nil:
				same = "not applicable, no before observation"
			default:
				same = "not applicable, neither observation"
			}
			from := fmt.Sprintf("observation %d", p.Request.ObservationID)
			ep := verdicts[p.Target+"\x00"+p.ProbeID]
			if (p.Before == nil || p.Before.ID != p.Request.ObservationID) && (p.After == nil || p.After.ID != p.Request.ObservationID) &&
				ep.BeforeObs != p.Request.ObservationID && ep.AfterObs != p.Request.ObservationID {
				from += ", which the event does not cite: the same bytes on the same target"
			}
			var pinned string
			if p.Request.PinnedHeaders != "" {
				// One inert code span per "name: value" line.
				var lines []string
				for l := range strings.Lines(p.Request.PinnedHeaders) {
					lines = append(lines, span(strings.TrimSuffix(l, "\n")))
				}
				pinned = ", pinned headers " + strings.Join(lines, ", ")
			}
			fmt.Fprintf(w, "request %s %s%s, sha256 %s (verified: %v, identical bytes before and after: %s; bytes read from %s)\n\n",
				code(p.Request.Method), code(p.Request.Path), pinned, code(p.Request.SHA256), p.Request.Verified, same, from)
			fmt.Fprintf(w, "%s(shown for reading, control and bidi characters removed; the exact bytes that hash to the fingerprint are in --json)\n\n", ghissue.Fenced(p.Request.Body, 1<<20))
		}
		ep := eventProbe(verdicts[p.Target+"\x00"+p.ProbeID])
		for _, s := range p.sides() {
			o := s.o
			v := ep.claim(s.name)
			if o == nil {
				verdict := "no verdict"
				if v.Class != "" {
					verdict = code(v.String()) + " (as the event recorded it)"
				}
				if s.problem != "" {
					fmt.Fprintf(w, "- %s: %s; OBSERVATION MISSING, DOES NOT VERIFY: %s\n", s.name, verdict, span(s.problem))
					continue
				}
				fmt.Fprintf(w, "- %s: %s; no observation in this record: %s\n", s.name, verdict, span(s.absent))
				continue
			}
			sample := ""
			if o.Sample != nil {
				sample = fmt.Sprintf(" sample %d", *o.Sample)
			}
			fmt.Fprintf(w, "- %s: observation %d, run %d%s (%s), %s, HTTP %d, provider request id %s, model %s %s, reason %s", s.name, o.ID, o.RunID, sample,
				o.ObservedAt.Format(time.RFC3339), code(o.Verdict.String()), o.HTTPStatus, code(o.RequestID), code(o.ModelID), code(o.ModelFP), code(o.Reason))
			if o.Origin != "" {
				fmt.Fprintf(w, ", endpoint %s", code(o.Origin))
			}
			if v.Class != "" && o.Verdict.Key() != v.Key() {
				fmt.Fprintf(w, "; DOES NOT VERIFY: the event claims %s %s, this observation recorded %s", s.name, code(v.String()), code(o.Verdict.String()))
			}
			if d := r.derivedForeign(&p, o); d != "" && !strings.Contains(o.Problem, d) {
				fmt.Fprintf(w, "; DOES NOT VERIFY: %s", span(d))
			}
			switch {
			case o.Problem != "":
				fmt.Fprintf(w, "; DOES NOT VERIFY: %s", span(o.Problem))
			case o.ResponseAbsent != "":
				fmt.Fprintf(w, "; response body not in this record: %s", span(o.ResponseAbsent))
			}
			fmt.Fprintln(w)
			if o.Selection != "" {
				fmt.Fprintf(w, "  - shown in place of what the event cites: %s\n", span(o.Selection))
			}
		}
		if e.Kind == diff.KindScoreDrift {
			fmt.Fprintf(w, "- scores moved (the verdict held): %s\n", movesText(ep.ScoreMoves))
		}
		if p.Nondeterminism != "" {
			fmt.Fprintf(w, "- note: %s\n", span(p.Nondeterminism))
		}
		fmt.Fprintln(w)
	}
}

// movesText renders a score drift probe's moves, each "`key` before →
// after" (keys are the provider's: inert through code).
func movesText(moves []diff.ScoreMove) string {
	if len(moves) == 0 {
		return "none recorded (the event was recorded before driftprobe kept a score drift's moves)"
	}
	parts := make([]string, len(moves))
	for i, m := range moves {
		parts[i] = fmt.Sprintf("%s %s → %s", code(m.Key), strconv.FormatFloat(m.Before, 'f', -1, 64), strconv.FormatFloat(m.After, 'f', -1, 64))
	}
	return strings.Join(parts, ", ")
}

// writeScoreCheck writes a score drift's check line: whether every
// observation shown carries the score the event claims it moved from
// (before) or to (after), as Problems checks in format 4; records of
// earlier formats were written without that check, and the line says so.
func writeScoreCheck(w io.Writer, r *Record) {
	if !r.checksScores() {
		fmt.Fprintf(w, "- every observation shown carries the scores the event claims moved: not checked (a %s record: its writer did not check scores)\n", code(r.Format))
		return
	}
	claims := r.claims()
	wrong := 0
	for _, p := range r.Probes {
		ep := claims[p.Target+"\x00"+p.ProbeID]
		for _, sd := range p.sides() {
			if sd.o != nil && len(scoreProblems("", sd.name, sd.o, ep.ScoreMoves)) > 0 {
				wrong++
			}
		}
	}
	fmt.Fprintf(w, "- every observation shown carries the scores the event claims moved: %v", wrong == 0)
	if wrong > 0 {
		fmt.Fprintf(w, " (%d do not)", wrong)
	}
	fmt.Fprintln(w)
}

// writeOwnership writes whether every observation shown is of its flip's
// own target and probe, apart from the hashes (an observation of another
// target or probe may hash perfectly and still be no evidence of the
// flip). A record older than format 5 does not name each observation's
// target and probe: the line gives its writer's word and says so.
func writeOwnership(w io.Writer, r *Record) {
	n := 0
	for i := range r.Probes {
		p := &r.Probes[i]
		for _, s := range p.sides() {
			if r.foreign(p, s.o) {
				n++
			}
		}
	}
	fmt.Fprintf(w, "- every observation shown is of its flip's target and probe: %v", n == 0)
	if n > 0 {
		fmt.Fprintf(w, " (%d of another target or probe, or not naming theirs: no evidence of the flip)", n)
	}
	if !r.namesOwners() {
		fmt.Fprintf(w, " (as its writer checked: a %s record does not name each observation's target and probe, so this cannot be re-checked)", code(r.Format))
	}
	fmt.Fprintln(w)
}

// writeModelCounts writes, for a model change, how many observations the
// record shows on each side of the flips on the target the model change is
// about (Event.ModelTarget; every target when it names none), and how many
// of them reported the event's model before and after.
func writeModelCounts(w io.Writer, r *Record) {
	e := r.Event
	count := func(name, joined string) string {
		wantID, wantFP := diff.SplitModel(joined)
		n, same, none := 0, 0, 0
		for _, p := range r.Probes {
			if e.ModelTarget != "" && p.Target != e.ModelTarget {
				continue
			}
			for _, sd := range p.sides() {
				if sd.name != name || sd.o == nil {
					continue
				}
				n++
				switch {
				case sd.o.ModelID == wantID && sd.o.ModelFP == wantFP:
					same++
				case sd.o.ModelID == "" && sd.o.ModelFP == "":
					none++
				}
			}
		}
		if joined == "" || joined == "|" {
			return fmt.Sprintf("%d %s (the event names no model %s)", n, name, name)
		}
		out := fmt.Sprintf("%d %s, %d of them reporting %s", n, name, same, model(joined))
		if none > 0 {
			out += fmt.Sprintf(" (%d reporting no model)", none)
		}
		if other := n - same - none; other > 0 {
			out += fmt.Sprintf(" (%d reporting another model)", other)
		}
		return out
	}
	on := "of the flips"
	if e.ModelTarget != "" {
		on = "on " + code(e.ModelTarget) + ", the target the model change is about"
	}
	fmt.Fprintf(w, "- observations shown %s: %s; %s\n", on, count("before", e.ModelBefore), count("after", e.ModelAfter))
}

// oneLine makes untrusted text safe for a terminal and a rendered page:
// valid UTF-8, control characters (C0, DEL, C1, so escape sequences,
// newlines and NUL), line and paragraph separators and the BOM become
// spaces, bidi embeddings, overrides, isolates and marks are dropped, and
// other invisible format characters (zero-width, soft hyphen, tags) are
// shown as their code point, so two ids that differ only by them never
// read the same.
func oneLine(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\uFEFF':
			b.WriteByte(' ')
		case ghissue.BidiControl(r):
		case unicode.Is(unicode.Cf, r):
			b.WriteString(ghissue.FormatEscape(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// code renders an untrusted identifier (a model id, a target name, a
// category, a hash) inert: ghissue.Code, after oneLine.
func code(s string) string { return ghissue.Code(oneLine(s)) }

// codes renders a list of identifiers, or "-" for none.
func codes(ss []string) string {
	if len(ss) == 0 {
		return "-"
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = code(s)
	}
	return strings.Join(out, ", ")
}

// model renders an event's "model id|fingerprint" (diff.JoinModel), or
// "-" for none.
func model(s string) string {
	if s == "" || s == "|" {
		return "-"
	}
	id, fp := diff.SplitModel(s)
	if fp == "" {
		return code(id)
	}
	return code(id) + " " + code(fp)
}

// span renders a sentence that carries untrusted parts (a problem naming a
// target and probe, why a side is absent) whole and inert, as one inline
// code span: oneLine first, and a backtick fence longer than any backtick
// run inside, so nothing in it can close the span. GitHub renders neither
// markup nor mentions, references or links in code.
func span(s string) string {
	s = strings.TrimSpace(oneLine(s))
	if s == "" {
		return "-"
	}
	// No driftprobe marker (looked up as plain text in issues and
	// comments, code spans included) in Markdown pasted into GitHub: the
	// opener is broken with a zero-width joiner, as in an issue's fences.
	s = strings.ReplaceAll(s, "<!--", "<!\u200d--")
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if s[0] == '`' || s[len(s)-1] == '`' {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
