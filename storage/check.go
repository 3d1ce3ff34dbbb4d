package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/driftprobe/driftprobe/probes"
)

// CheckOptions selects what Check verifies.
type CheckOptions struct {
	// Full runs SQLite's integrity_check (every index against its table)
	// instead of quick_check.
	Full bool
	// SkipBodies leaves out the evidence check (reading back every stored
	// body).
	SkipBodies bool
	// MaxProblems caps the problems listed (the rest are only counted); 0:
	// DefaultMaxProblems.
	MaxProblems int
}

// DefaultMaxProblems is how many evidence problems Check lists by default.
const DefaultMaxProblems = 100

// CheckReport is what Check found: the JSON of `driftprobe db check --json`.
// OK is true when the structure, the foreign keys and every stored body
// are sound.
type CheckReport struct {
	OK bool `json:"ok"`
	// Structure is SQLite's quick_check (or, with Full, integrity_check)
	// verdict: empty when it answered "ok", else its messages.
	Structure []string `json:"structure"`
	Full      bool     `json:"full"`
	// ForeignKeys lists rows whose parent row is missing.
	ForeignKeys []ForeignKeyProblem `json:"foreign_keys"`
	// BodiesSkipped: the evidence was not checked, because --no-bodies
	// asked so or for the reason BodiesSkippedWhy gives (a database of a
	// newer schema, whose evidence a newer driftprobe may store or
	// fingerprint differently).
	BodiesSkipped    bool   `json:"bodies_skipped"`
	BodiesSkippedWhy string `json:"bodies_skipped_why,omitempty"`
	// Observations read; BodiesChecked of them had bodies to verify,
	// BodiesPruned had theirs removed by retention (nothing to verify);
	// the rest recorded no answer and hold only the request.
	Observations  int64 `json:"observations"`
	BodiesChecked int64 `json:"bodies_checked"`
	BodiesPruned  int64 `json:"bodies_pruned"`
	// Problems are the observations whose stored bytes do not read back
	// as recorded, the first MaxProblems of them; ProblemCount counts all.
	Problems     []BodyProblem `json:"problems"`
	ProblemCount int64         `json:"problem_count"`
}

// ForeignKeyProblem is one row of PRAGMA foreign_key_check.
type ForeignKeyProblem struct {
	Table  string `json:"table"`
	RowID  int64  `json:"rowid"`
	Parent string `json:"parent"`
}

// BodyProblem is an observation whose stored evidence does not verify.
type BodyProblem struct {
	ObservationID int64  `json:"observation_id"`
	RunID         int64  `json:"run_id"`
	TargetID      int64  `json:"target_id"`
	Target        string `json:"target"`
	ProbeID       string `json:"probe_id"`
	Problem       string `json:"problem"`
}

// Evidence problems Check reports.
const (
	ProblemRequestUnreadable  = "request body unreadable"
	ProblemRequestMismatch    = "request bytes do not match request_sha256"
	ProblemResponseUnreadable = "response body unreadable"
	ProblemResponseMismatch   = "response body does not match body_sha256"
)

// checkChunk is how many observations Check reads per query: each chunk is
// read whole before it is verified (the database has one connection), so
// memory stays bounded on any database and a run can write in between.
const checkChunk = 512

// Check verifies the database: SQLite's own structure check, foreign keys,
// and, unless opts.SkipBodies, every stored body against its fingerprint:
// the request (method, path, body and pinned headers, probes.Fingerprint)
// must hash to request_sha256 and
// the response body to body_sha256, both after decompression. It only
// reads, holds no lock across chunks (runs may write meanwhile; rows they
// add may or may not be seen), and returns an error only when the database
// cannot be read, never for what it finds.
//
// A database of a newer schema than this binary's gets the structure and
// foreign key checks, which read no driftprobe table, and not the evidence
// check (BodiesSkippedWhy says so): a newer driftprobe may store or
// fingerprint evidence in ways this one would call a mismatch. When this
// binary's SQLite cannot even read a newer schema, Check returns
// ErrNewerSchema rather than calling the file damaged.
//
// A database opened as immutable (OpenReadOnly, where this process may not
// write beside it) is read without locks: when something does not verify
// and the file changed meanwhile, Check returns ErrChangedWhileRead
// instead of a report that may mix two states of the file.
func (d *DB) Check(ctx context.Context, opts CheckOptions) (*CheckReport, error) {
	rep, err := d.check(ctx, opts)
	if (err != nil || !rep.OK) && d.changedSinceOpen() {
		return nil, fmt.Errorf("check: %s: %w (it was read without locks, since this user cannot create the -wal and -shm files beside it); run db check again, or as a user who can write there", d.path, ErrChangedWhileRead)
	}
	return rep, err
}

// ErrChangedWhileRead is returned (wrapped) by Check when a database read
// without locks changed while it was checked.
var ErrChangedWhileRead = errors.New("the file changed while it was checked")

func (d *DB) check(ctx context.Context, opts CheckOptions) (*CheckReport, error) {
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = DefaultMaxProblems
	}
	rep := &CheckReport{Full: opts.Full, Structure: []string{}, ForeignKeys: []ForeignKeyProblem{}, Problems: []BodyProblem{}, BodiesSkipped: opts.SkipBodies}
	schema, err := d.SchemaVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("check: schema version: %w", err)
	}
	newer := schema > SchemaLatest()
	pragma := "PRAGMA quick_check"
	if opts.Full {
		pragma = "PRAGMA integrity_check"
	}
	// SQLite answers a damaged file with a list of messages, or, when the
	// damage stops the check itself, SQLITE_CORRUPT: a finding either way
	// (but for a newer schema, which this binary's SQLite may not parse).
	msgs, err := d.strings(ctx, pragma)
	switch {
	case IsCorrupt(err) && newer:
		return nil, d.newerUnreadable(schema, err)
	case IsCorrupt(err):
		rep.Structure = append(rep.Structure, fmt.Sprintf("%s stopped: %v", pragma, err))
	case err != nil:
		return nil, fmt.Errorf("check: %s: %w", pragma, err)
	case len(msgs) != 1 || msgs[0] != "ok":
		rep.Structure = msgs
	}
	rep.ForeignKeys, err = d.foreignKeyProblems(ctx)
	switch {
	case IsCorrupt(err):
		rep.Structure = append(rep.Structure, fmt.Sprintf("foreign key check stopped: %v", err))
	case err != nil:
		return nil, err
	}
	if !opts.SkipBodies && newer {
		rep.BodiesSkipped = true
		rep.BodiesSkippedWhy = fmt.Sprintf("schema %d is newer than this driftprobe's %d, which cannot tell how a newer driftprobe stores and fingerprints evidence: check it with a driftprobe at least as new as the database", schema, SchemaLatest())
	}
	if !rep.BodiesSkipped {
		err := d.checkBodies(ctx, rep, opts.MaxProblems)
		switch {
		case IsCorrupt(err):
			rep.Structure = append(rep.Structure, fmt.Sprintf("reading observations stopped: %v", err))
		case err != nil:
			return nil, err
		}
	}
	rep.OK = len(rep.Structure) == 0 && len(rep.ForeignKeys) == 0 && rep.ProblemCount == 0
	return rep, nil
}

func (d *DB) strings(ctx context.Context, q string) ([]string, error) {
	rows, err := d.db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (d *DB) foreignKeyProblems(ctx context.Context) ([]ForeignKeyProblem, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT "table", COALESCE(rowid, 0), parent FROM pragma_foreign_key_check`)
	if err != nil {
		return nil, fmt.Errorf("check: foreign keys: %w", err)
	}
	defer rows.Close()
	out := []ForeignKeyProblem{}
	for rows.Next() {
		var p ForeignKeyProblem
		if err := rows.Scan(&p.Table, &p.RowID, &p.Parent); err != nil {
			return nil, fmt.Errorf("check: foreign keys: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// storedObs is one observation's stored evidence, as Check reads it.
type storedObs struct {
	id, run, target       int64
	probe, reqSHA, method string
	path, pinned, bodySHA string
	reqBody, body         []byte
	pruned                bool
}

func (d *DB) checkBodies(ctx context.Context, rep *CheckReport, max int) error {
	targets, err := d.Targets(ctx)
	if err != nil {
		return fmt.Errorf("check: targets: %w", err)
	}
	names := map[int64]string{}
	for _, t := range targets {
		names[t.ID] = t.Name
	}
	// A database read as it is (OpenReadOnly) may predate bodies_pruned
	// (migration 0005): nothing was pruned then; and request_pinned
	// (migration 0010): no header was pinned then, every request hashed
	// over method, path and body alone.
	pruned, err := d.columnOr(ctx, "observations", "bodies_pruned", "0")
	if err != nil {
		return fmt.Errorf("check: observations: %w", err)
	}
	pinned, err := d.columnOr(ctx, "observations", "request_pinned", "''")
	if err != nil {
		return fmt.Errorf("check: observations: %w", err)
	}
	q := `SELECT id, run_id, target_id, probe_id, request_sha256, request_method, request_path, ` + pinned + `, request_body, body_sha256, body, ` + pruned + `
			FROM observations WHERE id > ? ORDER BY id LIMIT ?`
	chunk := make([]storedObs, 0, checkChunk)
	for last := int64(0); ; {
		chunk = chunk[:0]
		rows, err := d.db.QueryContext(ctx, q, last, checkChunk)
		if err != nil {
			return fmt.Errorf("check: observations: %w", err)
		}
		for rows.Next() {
			var o storedObs
			if err := rows.Scan(&o.id, &o.run, &o.target, &o.probe, &o.reqSHA, &o.method, &o.path, &o.pinned, &o.reqBody, &o.bodySHA, &o.body, &o.pruned); err != nil {
				rows.Close()
				return fmt.Errorf("check: observations: %w", err)
			}
			chunk = append(chunk, o)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("check: observations: %w", err)
		}
		if len(chunk) == 0 {
			return nil
		}
		for i := range chunk {
			o := &chunk[i]
			rep.Observations++
			switch {
			case o.pruned:
				rep.BodiesPruned++
				continue
			case o.bodySHA != "" || len(o.body) > 0:
				rep.BodiesChecked++
			}
			if p := verifyStored(o); p != "" {
				rep.ProblemCount++
				if len(rep.Problems) < max {
					rep.Problems = append(rep.Problems, BodyProblem{ObservationID: o.id, RunID: o.run, TargetID: o.target, Target: names[o.target], ProbeID: o.probe, Problem: p})
				}
			}
		}
		last = chunk[len(chunk)-1].id
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// columnOr returns column when table has it, else or (an SQL expression
// standing for the value every row had before the column was added).
func (d *DB) columnOr(ctx context.Context, table, column, or string) (string, error) {
	var has bool
	if err := d.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pragma_table_info(?) WHERE name = ?)`, table, column).Scan(&has); err != nil {
		return "", err
	}
	if has {
		return column, nil
	}
	return or, nil
}

// verifyStored returns what is wrong with o's stored bytes, or "".
func verifyStored(o *storedObs) string {
	if o.reqSHA != "" && !(o.reqSHA == RenderError && o.method == "" && o.path == "" && o.pinned == "" && len(o.reqBody) == 0) {
		body, err := decodeBody(o.reqBody)
		if err != nil {
			return fmt.Sprintf("%s: %v", ProblemRequestUnreadable, err)
		}
		if probes.Fingerprint(o.method, o.path, body, o.pinned) != o.reqSHA {
			return ProblemRequestMismatch
		}
	}
	body, err := decodeBody(o.body)
	if err != nil {
		return fmt.Sprintf("%s: %v", ProblemResponseUnreadable, err)
	}
	if o.bodySHA == "" {
		if len(body) > 0 {
			return ProblemResponseMismatch + " (none recorded)"
		}
		return ""
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != o.bodySHA {
		return ProblemResponseMismatch
	}
	return ""
}

// IsCorrupt reports whether err is SQLite's SQLITE_CORRUPT or SQLITE_NOTADB:
// the file is damaged.
func IsCorrupt(err error) bool {
	code := sqliteCode(err)
	return code == sqliteCorrupt || code == sqliteNotADB
}

// newerUnreadable is the error for a database of a newer schema (schema)
// that SQLite answered with err, SQLITE_CORRUPT: this binary's SQLite may
// not parse what a newer driftprobe wrote, so it is not called damage.
func (d *DB) newerUnreadable(schema int, err error) error {
	return fmt.Errorf("%s: %w (schema %d, this binary knows %d), and this driftprobe's SQLite cannot read it (%v): use a driftprobe at least as new as the database (were it damaged, that one says so)",
		d.path, ErrNewerSchema, schema, SchemaLatest(), err)
}

// IsDamaged reports whether err, from OpenReadOnly, means the file is
// damaged or incomplete rather than unreadable here: SQLITE_CORRUPT,
// SQLITE_NOTADB, ErrIncomplete, or an SQLITE_READONLY error OpenReadOnly
// had no way around (the file needs a write before it can be read).
// A -wal file this process cannot read (ErrWALUnreadable) is not damage.
func IsDamaged(err error) bool {
	if err == nil || errors.Is(err, ErrWALUnreadable) {
		return false
	}
	return IsCorrupt(err) || errors.Is(err, ErrIncomplete) || isReadOnly(err) || strings.Contains(err.Error(), "attempt to write a readonly database")
}
