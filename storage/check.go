package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
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
	// FromRun, when above 1, limits the evidence check (reading back the
	// stored bodies) to the observations of runs FromRun and later, found
	// through the run index: a monitor's database grows by every run, and
	// the runs a previous check verified need not be read again. The
	// structure, foreign key, type and citation checks still cover the
	// whole database.
	FromRun int64
}

// DefaultMaxProblems is how many evidence problems Check lists by default.
const DefaultMaxProblems = 100

// CheckReport is what Check found: the JSON of `driftprobe db check --json`.
// OK is true when the structure, the foreign keys and every stored body
// are sound.
type CheckReport struct {
	OK bool `json:"ok"`
	// Structure is SQLite's quick_check (or, with Full, integrity_check)
	// verdict: empty when it answered "ok", else its messages; then what
	// stopped a part of the check (a damaged page), and the rows of
	// driftprobe's other tables whose typed columns do not hold what the
	// schema means ("event_probes row (event_id 1, …): column before_obs
	// holds text \"x\", not an integer"; at most MaxProblems per table).
	// SQLite and SQLiteCheckOK tell SQLite's verdict from driftprobe's
	// findings.
	Structure []string `json:"structure"`
	// SQLiteCheckOK is true when SQLite's own check (quick_check, or with
	// Full integrity_check) answered "ok": SQLite finds the file sound,
	// whatever driftprobe's own checks found.
	SQLiteCheckOK bool `json:"sqlite_check_ok"`
	// SQLite lists the messages of Structure that are SQLite's own: those
	// of quick_check (integrity_check), or what stopped it, and what
	// stopped a later part of the check on a damaged page
	// (SQLITE_CORRUPT). Structure's other messages are driftprobe's own
	// findings: rows whose typed columns do not hold what the schema
	// means, detection states that do not decode.
	SQLite []string `json:"sqlite"`
	Full   bool     `json:"full"`
	// ForeignKeys lists rows whose parent row is missing.
	ForeignKeys []ForeignKeyProblem `json:"foreign_keys"`
	// Citations lists observations an event or a detection state cites
	// that the database lacks (retention never deletes them), or holds as
	// another target's or probe's than the citing one. Check leaves
	// it empty; the caller fills it (diff.CheckCitations reads detection's
	// tables) and clears OK when it has any.
	Citations []string `json:"citations"`
	// BodiesSkipped: the evidence was not checked, because --no-bodies
	// asked so or for the reason BodiesSkippedWhy gives (a database of a
	// newer schema, whose evidence a newer driftprobe may store or
	// fingerprint differently).
	BodiesSkipped    bool   `json:"bodies_skipped"`
	BodiesSkippedWhy string `json:"bodies_skipped_why,omitempty"`
	// Observations read; BodiesChecked of them had bodies to verify,
	// BodiesPruned had theirs removed by retention (nothing to verify);
	// the rest recorded no answer and hold only the request.
	Observations int64 `json:"observations"`
	// FromRun is CheckOptions.FromRun when it limited the evidence check
	// (Observations then counts those runs' only).
	FromRun int64 `json:"from_run,omitempty"`
	// LatestRun is the database's latest run (0: none yet) when no
	// observation of runs FromRun and later was there to read back: past
	// FromRun when no run has happened since (an incremental check with
	// nothing new), else those runs stored no observation.
	LatestRun     int64 `json:"latest_run,omitempty"`
	BodiesChecked int64 `json:"bodies_checked"`
	BodiesPruned  int64 `json:"bodies_pruned"`
	// Problems are the observations whose stored bytes do not read back
	// as recorded, whose row is damaged (a column not holding what the
	// schema means: ProblemDamagedRow) or cannot be read
	// (ProblemRowUnreadable), the first MaxProblems of them by id;
	// ProblemCount counts all.
	Problems     []BodyProblem `json:"problems"`
	ProblemCount int64         `json:"problem_count"`
}

// ForeignKeyProblem is one row of PRAGMA foreign_key_check.
type ForeignKeyProblem struct {
	Table  string `json:"table"`
	RowID  int64  `json:"rowid"`
	Parent string `json:"parent"`
}

// BodyProblem is an observation whose stored evidence does not verify,
// or whose row is damaged or cannot be read. The row's identity (run,
// target, probe) is given as far as its own columns read.
type BodyProblem struct {
	ObservationID int64  `json:"observation_id"`
	RunID         int64  `json:"run_id"`
	TargetID      int64  `json:"target_id"`
	Target        string `json:"target"`
	ProbeID       string `json:"probe_id"`
	Problem       string `json:"problem"`
	// Columns are the damaged columns of a damaged row (Problem
	// ProblemDamagedRow), each with what it holds instead.
	Columns []ColumnDamage `json:"columns,omitempty"`
}

// Evidence problems Check reports.
const (
	ProblemRequestUnreadable  = "request body unreadable"
	ProblemRequestMismatch    = "request bytes do not match request_sha256"
	ProblemResponseUnreadable = "response body unreadable"
	ProblemResponseMismatch   = "response body does not match body_sha256"
	// ProblemDamagedRow: a column of the row does not hold what the
	// schema means (BodyProblem.Columns says which and what instead);
	// nothing of the row is trusted, so its evidence is not checked.
	ProblemDamagedRow = "damaged row"
	// ProblemRowUnreadable: SQLite cannot read the row (a damaged page).
	ProblemRowUnreadable = "row unreadable"
)

// checkChunk is how many observations Check reads per query: each chunk is
// read whole before it is verified (the database has one connection), so
// memory stays bounded on any database and a run can write in between.
const checkChunk = 512

// Check verifies the database: SQLite's own structure check, foreign keys,
// the storage class of the typed columns of every table but observations
// (typedTables), and, unless opts.SkipBodies, every observation: its row
// must read as one (the checks Observation makes: each column of the type
// the schema means, a known class and stage, a time and signals that
// parse; a damaged row is a problem naming each column and what it holds
// instead), the request (method, path, body and pinned headers,
// probes.Fingerprint) must hash to request_sha256 and the response body
// to body_sha256, both after decompression. A row SQLite cannot read (a
// damaged page) is a problem too, and the check goes on past it. It only
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
	rep := &CheckReport{Full: opts.Full, Structure: []string{}, SQLite: []string{}, ForeignKeys: []ForeignKeyProblem{}, Citations: []string{}, Problems: []BodyProblem{}, BodiesSkipped: opts.SkipBodies}
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
		rep.sqlite(fmt.Sprintf("%s stopped: %v", pragma, err))
	case err != nil:
		return nil, fmt.Errorf("check: %s: %w", pragma, err)
	case len(msgs) != 1 || msgs[0] != "ok":
		rep.sqlite(msgs...)
	default:
		rep.SQLiteCheckOK = true
	}
	rep.ForeignKeys, err = d.foreignKeyProblems(ctx)
	switch {
	case IsCorrupt(err):
		rep.sqlite(fmt.Sprintf("foreign key check stopped: %v", err))
	case err != nil:
		return nil, err
	}
	if !newer {
		// A newer schema may store other types: left, like its
		// evidence, to a driftprobe that knows it.
		if err := d.checkTypes(ctx, rep, opts.MaxProblems); err != nil {
			return nil, err
		}
	}
	if !opts.SkipBodies && newer {
		rep.BodiesSkipped = true
		rep.BodiesSkippedWhy = fmt.Sprintf("schema %d is newer than this driftprobe's %d, which cannot tell how a newer driftprobe stores and fingerprints evidence: check it with a driftprobe at least as new as the database", schema, SchemaLatest())
	}
	if !rep.BodiesSkipped {
		err := d.checkBodies(ctx, rep, opts.MaxProblems, opts.FromRun)
		switch {
		case IsCorrupt(err):
			rep.sqlite(fmt.Sprintf("reading observations stopped: %v", err))
		case err != nil:
			return nil, err
		}
	}
	rep.OK = len(rep.Structure) == 0 && len(rep.ForeignKeys) == 0 && rep.ProblemCount == 0
	return rep, nil
}

// sqlite adds messages of SQLite's own (see CheckReport.SQLite) to the
// report's structure messages.
func (r *CheckReport) sqlite(msgs ...string) {
	r.Structure = append(r.Structure, msgs...)
	r.SQLite = append(r.SQLite, msgs...)
}

// OwnFindings is how many of Structure's messages are driftprobe's own
// findings rather than SQLite's (see SQLite).
func (r *CheckReport) OwnFindings() int {
	return len(r.Structure) - len(r.SQLite)
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

// storedObs is one observation row as Check reads it: the observation, or
// the damaged row when it does not read as one, and its stored bodies.
type storedObs struct {
	o             *Observation
	dmg           *DamagedObservation
	reqBody, body []byte
}

func (s *storedObs) id() int64 {
	if s.dmg != nil {
		return s.dmg.ID
	}
	return s.o.ID
}

func (d *DB) checkBodies(ctx context.Context, rep *CheckReport, max int, fromRun int64) error {
	// Target names for the report, read leniently: a damaged targets row
	// (checkTypes names it) must not stop the check before it reports.
	names := map[int64]string{}
	trows, err := d.db.QueryContext(ctx, `SELECT id, name FROM targets`)
	if err != nil {
		return fmt.Errorf("check: targets: %w", err)
	}
	for trows.Next() {
		var id, name any
		if err := trows.Scan(&id, &name); err != nil {
			trows.Close()
			return fmt.Errorf("check: targets: %w", err)
		}
		if n, ok := id.(int64); ok {
			names[n] = asText(name)
		}
	}
	trows.Close()
	if err := trows.Err(); err != nil {
		return fmt.Errorf("check: targets: %w", err)
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
	cols := selectList(obsColumns, map[string]string{"bodies_pruned": pruned, "request_pinned": pinned})
	q := `SELECT ` + cols + `, request_body, body FROM observations WHERE id > ? ORDER BY id LIMIT ?`
	one := `SELECT ` + cols + `, request_body, body FROM observations WHERE id = ?`
	var cur storedObs
	sc := newObsScanner(&cur.reqBody, &cur.body)
	sc.checkOnly = true
	read := func(rows interface{ Scan(...any) error }) (storedObs, error) {
		cur = storedObs{}
		o, dmg, err := sc.scan(rows)
		cur.o, cur.dmg = o, dmg
		return cur, err
	}
	start := int64(0)
	if fromRun > 1 {
		// The first observation of run fromRun or later, through the run
		// index: observations are inserted run after run under the run
		// lease, so every later one has a larger id; a row of an earlier
		// run stored after it (none is) would be checked too.
		rep.FromRun = fromRun
		var first sql.NullInt64
		if err := d.db.QueryRowContext(ctx, `SELECT MIN(id) FROM observations WHERE run_id >= ?`, fromRun).Scan(&first); err != nil && !IsCorrupt(err) {
			return fmt.Errorf("check: observations: %w", err)
		}
		if !first.Valid {
			// No observation of those runs: say whether they exist yet.
			var latest sql.NullInt64
			if err := d.db.QueryRowContext(ctx, `SELECT MAX(id) FROM runs`).Scan(&latest); err != nil && !IsCorrupt(err) {
				return fmt.Errorf("check: runs: %w", err)
			}
			rep.LatestRun = latest.Int64
			return nil
		}
		start = first.Int64 - 1
	}
	chunk := make([]storedObs, 0, checkChunk)
	for last := start; ; {
		chunk = chunk[:0]
		rows, err := d.db.QueryContext(ctx, q, last, checkChunk)
		if err != nil && !IsCorrupt(err) {
			return fmt.Errorf("check: observations: %w", err)
		}
		if err == nil {
			for rows.Next() {
				s, serr := read(rows)
				if serr != nil {
					err = serr
					break
				}
				chunk = append(chunk, s)
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
		// What was read before an error is checked all the same.
		for i := range chunk {
			d.checkStored(&chunk[i], rep, names, max)
		}
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1].id()
		}
		switch {
		case IsCorrupt(err):
			// A damaged page: list the rows past it that cannot be read,
			// one by one, and go on from the first that can.
			next, rerr := d.skipUnreadable(ctx, one, last, read, rep, names, max)
			if rerr != nil {
				return rerr
			}
			if next == 0 {
				return nil
			}
			last = next
		case err != nil:
			return fmt.Errorf("check: observations: %w", err)
		case len(chunk) == 0:
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// skipWindow is how many ids skipUnreadable takes from the index at a
// time, and skipLimit how many rows in a row it may fail to read before
// it gives up on the rest of the table.
const (
	skipWindow = 4096
	skipLimit  = 16 * skipWindow
)

// obsKeyIndex is the index of observations' UNIQUE (run_id, target_id,
// probe_id, sample): it holds every row's id apart from the table's pages.
const obsKeyIndex = "sqlite_autoindex_observations_1"

// skipUnreadable is Check's way past SQLITE_CORRUPT while reading
// observations after id last. The ids after last are taken from the
// table's unique index, which is stored apart from the table, and each row
// is read alone by its id: a row the table cannot return (a damaged page)
// is a problem, and the first that reads is checked and returned, the id
// to go on from with chunks again. It returns 0 when no row after last
// reads (nothing left, or a structure message says why it stopped).
func (d *DB) skipUnreadable(ctx context.Context, one string, last int64, read func(interface{ Scan(...any) error }) (storedObs, error), rep *CheckReport, names map[int64]string, max int) (int64, error) {
	add := func(id int64, problem string) {
		rep.Observations++
		rep.ProblemCount++
		if len(rep.Problems) < max {
			rep.Problems = append(rep.Problems, BodyProblem{ObservationID: id, Problem: ProblemRowUnreadable + ": " + problem})
		}
	}
	for failed := 0; ; {
		ids, err := d.indexedIDs(ctx, last, skipWindow)
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			rep.sqlite(fmt.Sprintf("reading observations stopped after observation %d: neither the table nor its index %s can be read past it (%v)", last, obsKeyIndex, err))
			return 0, nil
		}
		if len(ids) == 0 {
			return 0, nil
		}
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			s, err := read(d.db.QueryRowContext(ctx, one, id))
			switch {
			case errors.Is(err, sql.ErrNoRows):
				add(id, "the table does not return it, though its index "+obsKeyIndex+" lists it (a damaged page)")
			case IsCorrupt(err):
				add(id, err.Error())
			case err != nil:
				return 0, fmt.Errorf("check: observation %d: %w", id, err)
			default:
				d.checkStored(&s, rep, names, max)
				return id, nil
			}
			last = id
			if failed++; failed == skipLimit {
				rep.sqlite(fmt.Sprintf("reading observations stopped after observation %d: the %d rows before it cannot be read; the rest were not checked", id, skipLimit))
				return 0, nil
			}
		}
	}
}

// indexedIDs returns up to n ids after last, in order, as the unique
// index of observations lists them (a scan of the index alone).
func (d *DB) indexedIDs(ctx context.Context, last int64, n int) ([]int64, error) {
	return d.queryIDs(ctx, `SELECT id FROM observations INDEXED BY `+obsKeyIndex+` WHERE id > ? ORDER BY id LIMIT ?`, last, n)
}

// queryIDs runs query, whose one column is an integer id, and returns the
// ids in the order it gives them.
func (d *DB) queryIDs(ctx context.Context, query string, args ...any) ([]int64, error) {
	rows, err := d.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// checkStored verifies one observation row and counts it in rep.
func (d *DB) checkStored(s *storedObs, rep *CheckReport, names map[int64]string, max int) {
	rep.Observations++
	add := func(p BodyProblem) {
		rep.ProblemCount++
		if len(rep.Problems) < max {
			rep.Problems = append(rep.Problems, p)
		}
	}
	if s.dmg != nil {
		// Nothing of a damaged row is trusted: its fingerprints may be
		// the damaged columns.
		m := s.dmg
		add(BodyProblem{ObservationID: m.ID, RunID: m.RunID, TargetID: m.TargetID, Target: names[m.TargetID], ProbeID: m.ProbeID,
			Problem: ProblemDamagedRow + ": " + m.Problem(), Columns: m.Columns})
		return
	}
	o := s.o
	switch {
	case o.BodiesPruned:
		rep.BodiesPruned++
		return
	case o.BodySHA256 != "" || len(s.body) > 0:
		rep.BodiesChecked++
	}
	if p := verifyStored(o, s.reqBody, s.body); p != "" {
		add(BodyProblem{ObservationID: o.ID, RunID: o.RunID, TargetID: o.TargetID, Target: names[o.TargetID], ProbeID: o.ProbeID, Problem: p})
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

// verifyStored returns what is wrong with o's stored bytes (the stored
// forms of its request and response bodies), or "".
func verifyStored(o *Observation, reqBody, respBody []byte) string {
	if o.RequestSHA256 != "" && !(o.RequestSHA256 == RenderError && o.RequestMethod == "" && o.RequestPath == "" && o.RequestPinned == "" && len(reqBody) == 0) {
		body, err := decodeBody(reqBody)
		if err != nil {
			return fmt.Sprintf("%s: %v", ProblemRequestUnreadable, err)
		}
		if o.RequestFingerprint(body) != o.RequestSHA256 {
			return ProblemRequestMismatch
		}
	}
	body, err := decodeBody(respBody)
	if err != nil {
		return fmt.Sprintf("%s: %v", ProblemResponseUnreadable, err)
	}
	if o.BodySHA256 == "" {
		if len(body) > 0 {
			return ProblemResponseMismatch + " (none recorded)"
		}
		return ""
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != o.BodySHA256 {
		return ProblemResponseMismatch
	}
	return ""
}

// typedTable is one of driftprobe's tables (observations aside, which
// checkBodies reads whole) with the columns Check verifies hold the
// storage class the schema means. key names a row in a report: the
// primary key of a WITHOUT ROWID table, else the rowid.
type typedTable struct {
	name string
	key  []string
	cols []column
}

// typedTables are the tables checkTypes reads. Each is read once, only
// its typed columns, filtered in SQL: cheap beside the observations.
var typedTables = []typedTable{
	{"runs", nil, []column{{"started_at", colText}, {"finished_at", colTextOrNull}, {"status", colText}, {"corpus_name", colText}, {"corpus_version", colText},
		{"corpus_hash", colText}, {"config_hash", colText}, {"host", colText}, {"version", colText}, {"note", colText}, {"pruned", colText}, {"detected", colBool}}},
	{"targets", nil, []column{{"name", colText}, {"provider", colText}, {"model", colText}, {"endpoint", colText}, {"first_seen", colText}}},
	{"run_targets", nil, []column{{"run_id", colInt}, {"target_id", colInt}, {"status", colText}, {"observations", colInt}, {"verdicts", colInt}, {"transient", colInt},
		{"client_errors", colInt}, {"unavailable", colInt}, {"breaker_opened", colBool}, {"requests", colInt}, {"retries", colInt}, {"requests_sha256", colText},
		{"tokens_in", colInt}, {"tokens_out", colInt}, {"cost_usd", colReal}, {"duration_ms", colReal}, {"origin", colText}, {"model", colText}, {"detected", colBool}}},
	{"probes", []string{"sha256"}, []column{{"sha256", colText}, {"probe_id", colText}, {"corpus_version", colText}, {"role", colText}, {"expect", colText}, {"tags", colText}, {"canonical", colText}}},
	{"probe_states", nil, []column{{"states", colBlob}, {"probes", colInt}, {"updated_run", colInt}, {"origin", colText}}},
	{"target_categories", []string{"target_id", "category"}, []column{{"target_id", colInt}, {"category", colText}, {"first_run", colInt}}},
	{"input_changes", nil, []column{{"run_id", colInt}, {"target_id", colInt}, {"probe_id", colText}, {"old_sha256", colText}, {"new_sha256", colText}, {"cause", colText}}},
	{"events", nil, []column{{"fingerprint", colText}, {"target_id", colInt}, {"provider", colText}, {"kind", colText}, {"direction", colText}, {"opened_kind", colText},
		{"opened_direction", colText}, {"status", colText}, {"new_categories", colText}, {"vanished_categories", colText}, {"first_run", colInt}, {"confirmed_run", colInt},
		{"last_run", colInt}, {"reverted_run", colInt}, {"model_before", colText}, {"model_after", colText}, {"corpus_version", colText}, {"corpus_hash", colText},
		{"created_at", colText}, {"updated_at", colText}, {"issue_number", colInt}, {"issue_url", colText}}},
	{"event_targets", []string{"event_id", "target_id"}, []column{{"event_id", colInt}, {"target_id", colInt}, {"joined_run", colInt}}},
	{"event_probes", []string{"event_id", "target_id", "probe_id"}, []column{{"event_id", colInt}, {"target_id", colInt}, {"probe_id", colText}, {"request_sha256", colText},
		{"before", colText}, {"after", colText}, {"before_obs", colInt}, {"after_obs", colInt}, {"first_run", colInt}, {"confirmed_run", colInt}, {"flip_rate", colReal},
		{"reverted_run", colInt}, {"score_moves", colText}, {"withdrawn", colBool}, {"origin", colText}}},
	{"parked_states", []string{"target_id", "origin"}, []column{{"target_id", colInt}, {"origin", colText}, {"states", colBlob}, {"parked_run", colInt}}},
	{"event_updates", nil, []column{{"event_id", colInt}, {"run_id", colInt}, {"change", colText}, {"detail", colText}, {"at", colText}, {"target_id", colInt}, {"kind", colText}}},
	{"outbox", nil, []column{{"event_id", colInt}, {"update_id", colInt}, {"action", colText}, {"created_at", colText}, {"attempts", colInt}, {"next_attempt_at", colText},
		{"last_error", colText}, {"sent_at", colText}}},
	{"target_models", nil, []column{{"model", colText}, {"prev_model", colText}, {"since_run", colInt}}},
	{"run_lock", nil, []column{{"holder", colText}, {"host", colText}, {"pid", colInt}, {"command", colText}, {"acquired_at", colText}, {"expires_at", colText}}},
	{"pruned_kept", nil, []column{{"run_id", colInt}}},
	{"attribution_reports", nil, []column{{"run_id", colInt}, {"created_at", colText}, {"report", colTextOrNull}, {"error", colText}}},
	{"github_holds", []string{"api", "credential"}, []column{{"api", colText}, {"credential", colText}, {"until", colText}, {"failures", colInt}, {"reason", colText}, {"at", colText}, {"kind", colText}}},
	{"origin_scope_unnamed", []string{"target_id"}, []column{{"target_id", colInt}}},
}

// typeFilter is an SQL condition true when column c (quoted) does not
// hold what kind k means; colKind.damage says the same of a read value.
func (k colKind) typeFilter(c string) string {
	switch k {
	case colInt:
		return `typeof(` + c + `) != 'integer'`
	case colBool:
		return `typeof(` + c + `) != 'integer' OR ` + c + ` NOT IN (0, 1)`
	case colReal:
		return `typeof(` + c + `) NOT IN ('real', 'integer')`
	case colText:
		return `typeof(` + c + `) != 'text'`
	case colTextOrNull:
		return `typeof(` + c + `) NOT IN ('text', 'null')`
	case colTextOrBlob:
		return `typeof(` + c + `) NOT IN ('text', 'blob')`
	}
	return `typeof(` + c + `) != 'blob'`
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// checkTypes lists, as structure messages, the rows of typedTables whose
// typed columns do not hold what the schema means (a value a reader would
// fail on, or take for another): at most max rows per table, the rest
// counted. Tables and columns an older schema lacks are left out.
func (d *DB) checkTypes(ctx context.Context, rep *CheckReport, max int) error {
	for _, t := range typedTables {
		have := map[string]bool{}
		names, err := d.strings(ctx, `SELECT name FROM pragma_table_info('`+t.name+`')`)
		if err != nil {
			return fmt.Errorf("check: %s: %w", t.name, err)
		}
		for _, n := range names {
			have[n] = true
		}
		var cols []column
		var sel, where []string
		for _, c := range t.cols {
			if have[c.name] {
				cols = append(cols, c)
				sel = append(sel, quoteIdent(c.name))
				where = append(where, "("+c.kind.typeFilter(quoteIdent(c.name))+")")
			}
		}
		if len(cols) == 0 {
			continue
		}
		key := t.key
		if key == nil {
			key = []string{"rowid"}
		}
		var keySel []string
		for _, k := range key {
			keySel = append(keySel, quoteIdent(k))
		}
		if len(key) == 1 && key[0] == "rowid" {
			keySel = []string{"rowid"}
		}
		q := `SELECT ` + strings.Join(keySel, ", ") + `, ` + strings.Join(sel, ", ") + ` FROM ` + quoteIdent(t.name) + ` WHERE ` + strings.Join(where, " OR ")
		if err := d.typedRows(ctx, q, t.name, key, cols, rep, max); err != nil {
			if IsCorrupt(err) {
				rep.sqlite(fmt.Sprintf("reading %s stopped: %v", t.name, err))
				continue
			}
			return fmt.Errorf("check: %s: %w", t.name, err)
		}
	}
	return nil
}

// typedRows reads the damaged rows q selects (key columns, then cols) and
// adds each to rep.Structure.
func (d *DB) typedRows(ctx context.Context, q, table string, key []string, cols []column, rep *CheckReport, max int) error {
	rows, err := d.db.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]any, len(key)+len(cols))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		clear(vals)
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if n++; n > max {
			continue
		}
		var what []string
		for i, c := range cols {
			if p := c.kind.damage(vals[len(key)+i]); p != "" {
				what = append(what, ColumnDamage{Column: c.name, Problem: p}.String())
			}
		}
		var id string
		if len(key) == 1 && key[0] == "rowid" {
			id = fmt.Sprintf("row %d", asInt(vals[0]))
		} else {
			parts := make([]string, len(key))
			for i, k := range key {
				parts[i] = k + " " + keyText(vals[i])
			}
			id = "row (" + strings.Join(parts, ", ") + ")"
		}
		rep.Structure = append(rep.Structure, fmt.Sprintf("%s %s: %s", table, id, strings.Join(what, "; ")))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n > max {
		rep.Structure = append(rep.Structure, fmt.Sprintf("%s: and %d more damaged rows (--max-problems)", table, n-max))
	}
	return nil
}

// keyText shows a key value: an integer as it is, anything else described.
func keyText(v any) string {
	if n, ok := v.(int64); ok {
		return fmt.Sprint(n)
	}
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return describe(v)
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
	return newerSchema(d.path, schema, fmt.Sprintf(", and this driftprobe's SQLite cannot read it (%v): use a driftprobe at least as new as the database (were it damaged, that one says so)", err))
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
