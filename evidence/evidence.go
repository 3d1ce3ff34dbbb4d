// Package evidence builds the self-contained, hash-verifiable record of an
// event for incident reviews: for every flipped probe, the exact request
// bytes and their SHA-256 (recomputed and checked), the probe's canonical
// corpus form, and the before and after observations with provider request
// ids, timestamps, model fingerprints, verdicts, categories, signals and
// the stored response bodies with their hashes. The record carries a
// SHA-256 over its own canonical JSON.
package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// Request is the exact request of a probe on a target.
type Request struct {
	Method   string `json:"method"`
	Path     string `json:"path"`
	Body     string `json:"body"`
	SHA256   string `json:"sha256"`
	Verified bool   `json:"verified"` // sha256(method \n path \n body) equals the recorded fingerprint
}

// Observation is one side of a flip.
type Observation struct {
	ID             int64           `json:"observation_id"`
	RunID          int64           `json:"run_id"`
	RunStartedAt   time.Time       `json:"run_started_at"`
	ObservedAt     time.Time       `json:"observed_at"`
	Verdict        diff.Verdict    `json:"verdict"`
	Stage          string          `json:"stage"`
	Signals        []probes.Signal `json:"signals"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message,omitempty"`
	Heuristic      bool            `json:"heuristic,omitempty"`
	HTTPStatus     int             `json:"http_status"`
	RequestID      string          `json:"provider_request_id"`
	ModelID        string          `json:"model_id"`
	ModelFP        string          `json:"model_fingerprint"`
	Attempts       int             `json:"attempts"`
	ResponseBody   string          `json:"response_body"`
	ResponseSHA256 string          `json:"response_body_sha256"`
	ResponseOK     bool            `json:"response_body_verified"`
	Truncated      bool            `json:"response_body_truncated,omitempty"`
}

// Probe is the evidence for one flipped probe.
type Probe struct {
	Target         string       `json:"target"`
	ProbeID        string       `json:"probe_id"`
	ProbeSHA256    string       `json:"probe_sha256"`
	ProbeCanonical string       `json:"probe_canonical"`
	Request        Request      `json:"request"`
	SameBytes      bool         `json:"same_request_bytes"` // before and after sent identical bytes
	Before         *Observation `json:"before"`
	After          *Observation `json:"after"`
	FirstRun       int64        `json:"first_run"`
	ConfirmedRun   int64        `json:"confirmed_run"`
	Reverted       bool         `json:"reverted"`
	FlipRate       float64      `json:"flip_rate"`
	Nondeterminism string       `json:"note,omitempty"`
}

// Record is the whole evidence record of an event.
type Record struct {
	Format      string      `json:"format"`
	GeneratedAt time.Time   `json:"generated_at"`
	Event       *diff.Event `json:"event"`
	Probes      []Probe     `json:"probes"`
	AllVerified bool        `json:"all_verified"`
	SHA256      string      `json:"record_sha256"` // over this record with this field empty
}

// Build assembles the record of event id.
func Build(ctx context.Context, db *storage.DB, id int64, now time.Time) (*Record, error) {
	ev, err := diff.GetEvent(ctx, db, id)
	if err != nil {
		return nil, err
	}
	rec := &Record{Format: "driftprobe-evidence/1", GeneratedAt: now.UTC(), Event: ev, AllVerified: true}
	runs := map[int64]time.Time{}
	runStart := func(id int64) time.Time {
		if t, ok := runs[id]; ok {
			return t
		}
		r, err := db.Run(ctx, id)
		if err == nil {
			runs[id] = r.StartedAt
		}
		return runs[id]
	}
	for _, ep := range ev.Probes {
		p := Probe{Target: ep.Target, ProbeID: ep.ProbeID, FirstRun: ep.FirstRun, ConfirmedRun: ep.ConfirmedRun, Reverted: ep.Reverted, FlipRate: ep.FlipRate}
		var reqBody []byte
		load := func(obsID int64) (*Observation, *storage.Observation, error) {
			if obsID == 0 {
				return nil, nil, nil
			}
			o, err := db.Observation(ctx, obsID)
			if err != nil {
				return nil, nil, err
			}
			rq, rs, err := db.ObservationBodies(ctx, obsID)
			if err != nil {
				return nil, nil, err
			}
			if reqBody == nil {
				reqBody = rq
				p.Request = Request{Method: o.RequestMethod, Path: o.RequestPath, Body: text(rq), SHA256: o.RequestSHA256}
				req := probes.Request{Method: o.RequestMethod, Path: o.RequestPath, Body: rq}
				p.Request.Verified = req.SHA256() == o.RequestSHA256 && o.RequestSHA256 == ep.RequestSHA256
			} else if string(rq) != string(reqBody) {
				p.SameBytes = false
			}
			sum := sha256.Sum256(rs)
			out := &Observation{ID: o.ID, RunID: o.RunID, RunStartedAt: runStart(o.RunID), ObservedAt: o.ObservedAt, Verdict: diff.VerdictOf(o.Result),
				Stage: string(o.Result.Stage), Signals: o.Result.Signals, Reason: o.Result.Reason, Message: o.Result.Message, Heuristic: o.Result.Heuristic,
				HTTPStatus: o.HTTPStatus, RequestID: o.Result.RequestID, ModelID: o.Result.ModelID, ModelFP: o.Result.ModelFP, Attempts: o.Attempts,
				ResponseBody: text(rs), ResponseSHA256: o.BodySHA256, Truncated: o.BodyTruncated}
			out.ResponseOK = o.BodySHA256 == "" && len(rs) == 0 || hex.EncodeToString(sum[:]) == o.BodySHA256
			return out, o, nil
		}
		p.SameBytes = true
		var bo, ao *storage.Observation
		if p.Before, bo, err = load(ep.BeforeObs); err != nil {
			return nil, err
		}
		if p.After, ao, err = load(ep.AfterObs); err != nil {
			return nil, err
		}
		if bo != nil && ao != nil && bo.RequestSHA256 != ao.RequestSHA256 {
			p.SameBytes = false
		}
		src := bo
		if src == nil {
			src = ao
		}
		if src != nil {
			p.ProbeSHA256 = src.ProbeSHA256
			if pr, err := db.Probe(ctx, src.ProbeSHA256); err == nil {
				p.ProbeCanonical = pr.Canonical
			} else if !errors.Is(err, storage.ErrNotFound) {
				return nil, err
			}
		}
		if ev.Kind == diff.KindNondeterminism {
			p.Nondeterminism = "identical bytes got different answers: not evidence of a policy change"
		}
		ok := p.Request.Verified && p.SameBytes && (p.Before == nil || p.Before.ResponseOK) && (p.After == nil || p.After.ResponseOK)
		rec.AllVerified = rec.AllVerified && ok
		rec.Probes = append(rec.Probes, p)
	}
	sort.SliceStable(rec.Probes, func(i, j int) bool {
		if rec.Probes[i].Target != rec.Probes[j].Target {
			return rec.Probes[i].Target < rec.Probes[j].Target
		}
		return rec.Probes[i].ProbeID < rec.Probes[j].ProbeID
	})
	sum, err := rec.hash()
	if err != nil {
		return nil, err
	}
	rec.SHA256 = sum
	return rec, nil
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

// Verify recomputes the record's own hash and every request fingerprint.
func Verify(r *Record) error {
	sum, err := r.hash()
	if err != nil {
		return err
	}
	if sum != r.SHA256 {
		return fmt.Errorf("record_sha256 mismatch: recorded %s, computed %s", r.SHA256, sum)
	}
	for _, p := range r.Probes {
		req := probes.Request{Method: p.Request.Method, Path: p.Request.Path, Body: []byte(p.Request.Body)}
		if got := req.SHA256(); got != p.Request.SHA256 {
			return fmt.Errorf("%s/%s: request sha256 %s, recorded %s", p.Target, p.ProbeID, got, p.Request.SHA256)
		}
	}
	return nil
}

func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// WriteMarkdown renders the record for humans. Provider text is fenced, so
// it cannot render as markup.
func WriteMarkdown(w io.Writer, r *Record) {
	e := r.Event
	fmt.Fprintf(w, "# driftprobe evidence: event %d\n\n", e.ID)
	fmt.Fprintf(w, "- kind: %s, direction: %s, status: %s\n- targets: %s (provider %s)\n- runs: first seen %d, confirmed %d\n- corpus: %s (sha256 %s)\n- model: %s → %s\n- new categories: %s\n- all request and response hashes verified: %v\n- record sha256: %s\n\n",
		e.Kind, e.Direction, e.Status, strings.Join(e.Targets, ", "), e.Provider, e.FirstRun, e.ConfirmedRun, e.CorpusVersion, e.CorpusHash,
		orDash(e.ModelBefore), orDash(e.ModelAfter), orDash(strings.Join(e.NewCategories, ", ")), r.AllVerified, r.SHA256)
	for _, p := range r.Probes {
		fmt.Fprintf(w, "## %s / %s\n\n", p.Target, p.ProbeID)
		fmt.Fprintf(w, "request %s %s, sha256 %s (verified: %v, identical bytes before and after: %v)\n\n", p.Request.Method, p.Request.Path, p.Request.SHA256, p.Request.Verified, p.SameBytes)
		fmt.Fprintf(w, "%s\n%s\n%s\n\n", fence(p.Request.Body), p.Request.Body, fence(p.Request.Body))
		for _, side := range []struct {
			name string
			o    *Observation
		}{{"before", p.Before}, {"after", p.After}} {
			if side.o == nil {
				continue
			}
			o := side.o
			fmt.Fprintf(w, "- %s: run %d (%s), %s, HTTP %d, provider request id `%s`, model `%s` `%s`, reason `%s`\n", side.name, o.RunID,
				o.ObservedAt.Format(time.RFC3339), o.Verdict.String(), o.HTTPStatus, o.RequestID, o.ModelID, o.ModelFP, o.Reason)
		}
		fmt.Fprintln(w)
	}
}

func orDash(s string) string {
	if s == "" || s == "|" {
		return "-"
	}
	return s
}

// fence returns a backtick fence longer than any backtick run in s.
func fence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			if run > longest {
				longest = run
			}
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
