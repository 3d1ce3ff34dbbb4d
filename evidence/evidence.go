// Package evidence builds the self-contained, hash-verifiable record of an
// event for incident reviews: for every flipped probe, the exact request
// bytes and pinned headers and their SHA-256 (recomputed and checked), the
// probe's canonical corpus form, and the before and after observations
// with provider request ids, timestamps, model fingerprints, verdicts,
// categories, signals and the stored response bodies with their hashes.
// The record carries a SHA-256 over its own canonical JSON.
//
// What the database cannot supply is said, never papered over: a side of a
// flip with no stored observation is absent (Probe.BeforeAbsent,
// AfterAbsent), request bytes no stored observation holds any more are
// missing (Request.Missing), a body retention dropped is absent
// (Observation.ResponseAbsent). Absent is not a mismatch. Stored bytes
// that cannot be read or do not hash to their fingerprint are problems
// (Observation.Problem): the record is still produced, and says it does
// not verify (AllVerified false, Record.Problems).
package evidence

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// Format is the record format this package writes and verifies.
const Format = "driftprobe-evidence/1"

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
	ID           int64           `json:"observation_id"`
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
	Attempts     int             `json:"attempts"`
	ResponseBody string          `json:"response_body"`
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
	// request other than the event's.
	Problem string `json:"problem,omitempty"`
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
	FlipRate       float64      `json:"flip_rate"`
	Nondeterminism string       `json:"note,omitempty"`
}

// Record is the whole evidence record of an event.
type Record struct {
	Format      string      `json:"format"`
	GeneratedAt time.Time   `json:"generated_at"`
	Event       *diff.Event `json:"event"`
	Probes      []Probe     `json:"probes"`
	AllVerified bool        `json:"all_verified"`  // no problem (see Problems); absences are not problems
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
	b := &builder{ctx: ctx, db: db, ev: ev, runs: map[int64]time.Time{}, targets: map[string]int64{}}
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
	out    *Observation
	obs    *storage.Observation
	absent string
	req    []byte // the stored request body, read and hashing (with obs's method, path and pinned headers) to obs.RequestSHA256
	reqOK  bool
}

func (b *builder) probe(ep diff.EventProbe) (*Probe, error) {
	p := &Probe{Target: ep.Target, ProbeID: ep.ProbeID, FirstRun: ep.FirstRun, ConfirmedRun: ep.ConfirmedRun, Reverted: ep.Reverted, Withdrawn: ep.Withdrawn, FlipRate: ep.FlipRate,
		Request: Request{SHA256: ep.RequestSHA256}}
	if b.ev.Kind == diff.KindNondeterminism {
		p.Nondeterminism = "identical bytes got different answers: not evidence of a policy change"
	}
	before, err := b.side(ep, ep.BeforeObs)
	if err != nil {
		return nil, err
	}
	after, err := b.side(ep, ep.AfterObs)
	if err != nil {
		return nil, err
	}
	if ep.BeforeObs == 0 {
		before.absent = "the event recorded no before observation for this probe"
		if ep.Before.Class == "" {
			before.absent = "no verdict had held as this probe's baseline on these bytes: there is no before observation"
		}
	}
	if ep.AfterObs == 0 {
		after.absent = "the event recorded no after observation for this probe"
	}
	p.Before, p.BeforeAbsent = before.out, before.absent
	p.After, p.AfterAbsent = after.out, after.absent

	// The request bytes.
	switch {
	case before.reqOK && before.obs.RequestSHA256 == ep.RequestSHA256:
		p.Request = request(before.obs, before.req)
	case after.reqOK && after.obs.RequestSHA256 == ep.RequestSHA256:
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

func request(o *storage.Observation, body []byte) Request {
	return Request{Method: o.RequestMethod, Path: o.RequestPath, PinnedHeaders: o.RequestPinned, Body: text(body), SHA256: o.RequestSHA256, Verified: true, ObservationID: o.ID}
}

// side loads the observation obsID cites (0: none).
func (b *builder) side(ep diff.EventProbe, obsID int64) (side, error) {
	if obsID == 0 {
		return side{}, nil
	}
	o, err := b.db.Observation(b.ctx, obsID)
	if errors.Is(err, storage.ErrNotFound) {
		return side{absent: fmt.Sprintf("observation %d is no longer in the database", obsID)}, nil
	}
	if err != nil {
		return side{}, err
	}
	out := &Observation{ID: o.ID, RunID: o.RunID, RunStartedAt: b.runStart(o.RunID), ObservedAt: o.ObservedAt, Verdict: diff.VerdictOf(o.Result),
		Stage: string(o.Result.Stage), Signals: o.Result.Signals, Reason: o.Result.Reason, Message: o.Result.Message, Heuristic: o.Result.Heuristic,
		HTTPStatus: o.HTTPStatus, RequestID: o.Result.RequestID, ModelID: o.Result.ModelID, ModelFP: o.Result.ModelFP, Attempts: o.Attempts,
		ResponseSHA256: o.BodySHA256, Truncated: o.BodyTruncated}
	s := side{out: out, obs: o}
	var problems []string
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

// storedRequest finds the request bytes of ep in another observation of
// the same bytes on the same target (those of the confirming run first),
// skipping the ids given. It returns nil when none holds readable bytes.
func (b *builder) storedRequest(ep diff.EventProbe, skip ...int64) (*storage.Observation, []byte, error) {
	tid, ok := b.targets[ep.Target]
	if !ok {
		t, err := b.db.TargetByName(b.ctx, ep.Target)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		tid = t.ID
		b.targets[ep.Target] = tid
	}
	rows, err := b.db.SQL().QueryContext(b.ctx, `SELECT id FROM observations WHERE target_id = ? AND probe_id = ? AND request_sha256 = ? AND bodies_pruned = 0
		ORDER BY ABS(run_id - ?), sample, id LIMIT 8`, tid, ep.ProbeID, ep.RequestSHA256, ep.ConfirmedRun)
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
// not hash to its fingerprint, and flips whose sides sent different bytes.
// Absent observations, bodies and request bytes are not problems.
func (r *Record) Problems() []string {
	var out []string
	for i := range r.Probes {
		out = append(out, r.Probes[i].problems()...)
	}
	return out
}

func (p *Probe) problems() []string {
	var out []string
	name := p.Target + "/" + p.ProbeID
	if !p.Request.Verified && p.Request.Missing == "" {
		out = append(out, fmt.Sprintf("%s: request bytes not verified against sha256 %s", name, p.Request.SHA256))
	}
	for _, s := range p.sides() {
		switch {
		case s.o == nil:
		case s.o.Problem != "":
			out = append(out, fmt.Sprintf("%s: %s observation %d: %s", name, s.name, s.o.ID, s.o.Problem))
		case !s.o.ResponseOK && s.o.ResponseAbsent == "":
			out = append(out, fmt.Sprintf("%s: %s observation %d: response body not verified against sha256 %s", name, s.name, s.o.ID, s.o.ResponseSHA256))
		}
	}
	if p.Before != nil && p.After != nil && !p.SameBytes {
		out = append(out, fmt.Sprintf("%s: before and after did not send identical request bytes", name))
	}
	return out
}

type namedSide struct {
	name   string
	o      *Observation
	absent string
}

func (p *Probe) sides() []namedSide {
	return []namedSide{{"before", p.Before, p.BeforeAbsent}, {"after", p.After, p.AfterAbsent}}
}

// absences counts the observations, request bytes and response bodies the
// record does not hold.
func (r *Record) absences() (obs, reqs, bodies int) {
	for _, p := range r.Probes {
		for _, s := range p.sides() {
			if s.o == nil {
				obs++
			} else if s.o.ResponseAbsent != "" {
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
// and its request bytes check) whose evidence did not verify when it was
// built: AllVerified is false, and Problems says why.
type UnverifiedError struct{ Problems []string }

func (e *UnverifiedError) Error() string {
	return fmt.Sprintf("the record is intact but its evidence does not verify (all_verified false): %s", strings.Join(e.Problems, "; "))
}

// Verify checks a record: that it is one (a *NotRecordError if not), its
// own hash, every request's bytes against its fingerprint, and that
// all_verified agrees with the probes. A record that is intact but says its
// evidence did not verify returns an *UnverifiedError.
func Verify(r *Record) error {
	switch {
	case r.Format == "":
		return &NotRecordError{fmt.Sprintf("no \"format\": %q", Format)}
	case r.Format != Format:
		return &NotRecordError{fmt.Sprintf("format %q, want %q", r.Format, Format)}
	case r.Event == nil:
		return &NotRecordError{"no event"}
	case r.SHA256 == "":
		return &NotRecordError{"no record_sha256"}
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
		for _, side := range []struct {
			name string
			o    *Observation
		}{{"before", p.Before}, {"after", p.After}} {
			o := side.o
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
	if r.AllVerified != (len(problems) == 0) {
		return fmt.Errorf("all_verified is %v but the probes list %d problem(s)", r.AllVerified, len(problems))
	}
	if len(problems) > 0 {
		return &UnverifiedError{problems}
	}
	return nil
}

// VerifyJSON parses and verifies a record file's content. Content that is
// not an evidence record is a *NotRecordError; fields a record does not
// have (content record_sha256 does not cover) fail verification.
func VerifyJSON(data []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &NotRecordError{err.Error()}
	}
	if err := Verify(&r); err != nil {
		var nr *NotRecordError
		if errors.As(err, &nr) {
			return nil, err
		}
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
	fmt.Fprintf(w, "# driftprobe evidence: event %d\n\n", e.ID)
	fmt.Fprintf(w, "- kind: %s, direction: %s, status: %s\n- targets: %s (provider %s)\n- runs: first seen %d, confirmed %d\n- corpus: %s (sha256 %s)\n- model: %s → %s\n- new categories: %s\n",
		code(e.Kind), code(e.Direction), code(e.Status), codes(e.Targets), code(e.Provider), e.FirstRun, e.ConfirmedRun, code(e.CorpusVersion), code(e.CorpusHash),
		model(e.ModelBefore), model(e.ModelAfter), codes(e.NewCategories))
	fmt.Fprintf(w, "- all request and response hashes verified: %v\n", r.AllVerified)
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
	verdicts := map[string]diff.EventProbe{}
	for _, ep := range e.Probes {
		verdicts[ep.Target+"\x00"+ep.ProbeID] = ep
	}
	for _, p := range r.Probes {
		fmt.Fprintf(w, "## %s / %s\n\n", code(p.Target), code(p.ProbeID))
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
			if (p.Before == nil || p.Before.ID != p.Request.ObservationID) && (p.After == nil || p.After.ID != p.Request.ObservationID) {
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
		ep := verdicts[p.Target+"\x00"+p.ProbeID]
		for _, s := range p.sides() {
			o := s.o
			if o == nil {
				v := ep.Before
				if s.name == "after" {
					v = ep.After
				}
				verdict := "no verdict"
				if v.Class != "" {
					verdict = code(v.String()) + " (as the event recorded it)"
				}
				fmt.Fprintf(w, "- %s: %s; no observation in this record: %s\n", s.name, verdict, span(s.absent))
				continue
			}
			fmt.Fprintf(w, "- %s: observation %d, run %d (%s), %s, HTTP %d, provider request id %s, model %s %s, reason %s", s.name, o.ID, o.RunID,
				o.ObservedAt.Format(time.RFC3339), code(o.Verdict.String()), o.HTTPStatus, code(o.RequestID), code(o.ModelID), code(o.ModelFP), code(o.Reason))
			switch {
			case o.Problem != "":
				fmt.Fprintf(w, "; DOES NOT VERIFY: %s", span(o.Problem))
			case o.ResponseAbsent != "":
				fmt.Fprintf(w, "; response body not in this record: %s", span(o.ResponseAbsent))
			}
			fmt.Fprintln(w)
		}
		if p.Nondeterminism != "" {
			fmt.Fprintf(w, "- note: %s\n", span(p.Nondeterminism))
		}
		fmt.Fprintln(w)
	}
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

// model renders an event's "model id|fingerprint", or "-" for none.
func model(s string) string {
	if s == "" || s == "|" {
		return "-"
	}
	id, fp, _ := strings.Cut(s, "|")
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
