package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

// Run statuses.
const (
	RunRunning  = "running"
	RunComplete = "complete"
	RunPartial  = "partial"
	RunAborted  = "aborted"
)

// Run-target statuses.
const (
	TargetComplete = "complete"
	TargetDegraded = "degraded"
	TargetAborted  = "aborted"
)

// Run is one pass of the corpus over the targets.
type Run struct {
	ID            int64
	StartedAt     time.Time
	FinishedAt    time.Time
	Status        string
	CorpusName    string
	CorpusVersion string
	CorpusHash    string
	ConfigHash    string
	Host          string
	Version       string
	Note          string
	// Pruned is how far retention has pruned the run's observations: ""
	// (not), "bodies" or "observations" (pinned ones aside).
	Pruned string
}

// TargetRow is a stored target.
type TargetRow struct {
	ID       int64
	Name     string
	Provider string
	Model    string
	Endpoint string
}

// RunTarget is the per-target summary of a run.
type RunTarget struct {
	RunID          int64
	TargetID       int64
	Target         string
	Status         string
	Observations   int
	Verdicts       int
	Transient      int
	ClientErrors   int
	Unavailable    int
	BreakerOpened  bool
	Requests       int
	Retries        int
	RequestsSHA256 string
	// Origin is the endpoint the target's requests went to: scheme://host
	// of the API root (port only when not the scheme's default), or a
	// prober's own identity (probes.Originer), then the account the target
	// names there, if any (probes.AccountScoper: " organization=… project=…").
	// "" when not known (runs recorded before it was kept).
	Origin string
	// Model is the model the target's requests named in this run (its
	// configured model then); "" for runs recorded before it was kept.
	Model     string
	TokensIn  int
	TokensOut int
	CostUSD   float64
	Duration  time.Duration
}

// Observation is one probe sent to one target in one run (one sample).
// RenderError is the request_sha256 of an observation whose request could
// not be rendered (nothing was sent, no request bytes are stored).
const RenderError = "render-error"

type Observation struct {
	ID            int64
	RunID         int64
	TargetID      int64
	ProbeID       string
	ProbeSHA256   string
	Sample        int
	RequestSHA256 string
	RequestMethod string
	RequestPath   string
	RequestBody   []byte // exact bytes (stored compressed)
	// RequestPinned is the request's pinned headers
	// (probes.Request.PinnedHeaders), part of RequestSHA256 (see
	// RequestFingerprint): "" for requests pinning nothing and for every
	// observation stored before headers could be pinned (migration 0010).
	RequestPinned string
	Result        probes.Result
	HTTPStatus    int
	Latency       time.Duration
	CostUSD       float64
	Attempts      int
	BodySHA256    string
	Body          []byte // response body as received (capped; stored compressed)
	BodyTruncated bool
	ObservedAt    time.Time
	// BodiesPruned (read only) is set when retention dropped the stored
	// bodies: BodySHA256 names a response the database no longer holds.
	BodiesPruned bool

	reqZ, bodyZ compressed // stored forms computed ahead (CompressBodies)
}

// Categories returns the observation's sorted normalized categories.
func (o *Observation) Categories() []string { return o.Result.Categories }

// RequestFingerprint returns the fingerprint of the stored request with
// body as its bytes (the request body, decompressed): probes.Fingerprint
// of the method, path, body and pinned headers. For sound evidence it
// equals RequestSHA256.
func (o *Observation) RequestFingerprint(body []byte) string {
	return probes.Fingerprint(o.RequestMethod, o.RequestPath, body, o.RequestPinned)
}

// BodyIntact reports whether body, the stored response body decompressed,
// is the one the observation recorded (its SHA-256 is BodySHA256; an
// observation that recorded none accepts any).
func (o *Observation) BodyIntact(body []byte) bool {
	if o.BodySHA256 == "" {
		return true
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:]) == o.BodySHA256
}

// Request rebuilds the stored request with body as its bytes: method,
// path, body, and the pinned headers as Header and Pinned, so that a
// classifier sees them as sent and, for pinned text as
// probes.Request.PinnedHeaders writes it, SHA256 equals
// RequestFingerprint. Nothing else of the request is stored: the URL
// (host), other headers and credentials are absent.
func (o *Observation) Request(body []byte) *probes.Request {
	req := &probes.Request{Method: o.RequestMethod, Path: o.RequestPath, Body: body}
	for line := range strings.Lines(o.RequestPinned) {
		name, value, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ": ")
		if !ok || name == "" {
			continue // not as PinnedHeaders writes it; RequestFingerprint still hashes the text as stored
		}
		if req.Header == nil {
			req.Header = http.Header{}
		}
		if !slices.Contains(req.Pinned, name) {
			req.Pinned = append(req.Pinned, name)
		}
		req.Header.Add(name, value)
	}
	return req
}

// ErrNotFound is returned when a requested row does not exist.
var ErrNotFound = errors.New("not found")

// BeginRun records a new run in status running and returns its id. Run ids
// are 1, 2, 3… in the order runs started in this database.
func (d *DB) BeginRun(ctx context.Context, r Run) (int64, error) {
	if r.StartedAt.IsZero() {
		r.StartedAt = d.now()
	}
	res, err := d.db.ExecContext(ctx, `INSERT INTO runs (started_at, status, corpus_name, corpus_version, corpus_hash, config_hash, host, version, note, detected)
		VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, 0)`, ts(r.StartedAt), r.CorpusName, r.CorpusVersion, r.CorpusHash, r.ConfigHash, r.Host, r.Version, r.Note)
	if err != nil {
		return 0, fmt.Errorf("begin run: %w", err)
	}
	return res.LastInsertId()
}

// UndetectedRuns returns the finished runs (complete or partial) whose
// detection never committed — the process ended between recording the
// run and detecting it — oldest first. Detection marks a run detected in
// its own transaction (MarkDetected).
func (d *DB) UndetectedRuns(ctx context.Context) ([]int64, error) {
	return d.queryIDs(ctx, `SELECT id FROM runs WHERE detected = 0 AND status IN ('complete', 'partial') ORDER BY id`)
}

// MarkDetected records, inside detection's transaction tx, that run's
// detection committed (runs.detected), and for which of its targets:
// targets are those whose answers detection read into their detection
// state (run_targets.detected, schema 23). A target of the run not among
// them (left out: its state damaged, or not configured when the run was
// detected late) keeps run_targets.detected 0, as FinishRun wrote it. A
// run detected already (by another process that took over the lease while
// this one stalled) is ErrAlreadyDetected: the caller rolls back, so no
// run's flips are ever counted twice.
func MarkDetected(ctx context.Context, tx *sql.Tx, run int64, targets []int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE runs SET detected = 1 WHERE id = ? AND detected = 0`, run)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err == nil {
			err = fmt.Errorf("run %d: %w", run, ErrAlreadyDetected)
		}
		return err
	}
	for _, t := range targets {
		if _, err := tx.ExecContext(ctx, `UPDATE run_targets SET detected = 1 WHERE run_id = ? AND target_id = ?`, run, t); err != nil {
			return err
		}
	}
	return nil
}

// GiveUpDetection marks run detected without detecting it: its detection
// failed where the next run would retry it forever. Its targets' rows keep
// run_targets.detected 0: no target's detection read its answers (see
// MarkDetected).
func (d *DB) GiveUpDetection(ctx context.Context, run int64) error {
	_, err := d.db.ExecContext(ctx, `UPDATE runs SET detected = 1 WHERE id = ?`, run)
	return err
}

// ErrAlreadyDetected: detection was applied to the run already.
var ErrAlreadyDetected = errors.New("detection was applied to this run already")

// FinishRun records a run's final status and per-target summaries. It
// refuses (ErrRunFinished) a run that is no longer running.
func (d *DB) FinishRun(ctx context.Context, runID int64, status string, rts []RunTarget) error {
	return d.Tx(ctx, func(tx *sql.Tx) error {
		// A finished run never changes: one another lease holder already
		// recorded aborted (this process lost the lease) stays as it was.
		if err := d.schemaKnown(ctx, tx); err != nil {
			return fmt.Errorf("finish run %d: %w", runID, err)
		}
		var cur string
		if err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, runID).Scan(&cur); err != nil {
			return fmt.Errorf("finish run %d: %w", runID, err)
		}
		if cur != RunRunning {
			return fmt.Errorf("finish run %d: %w (it is %s)", runID, ErrRunFinished, cur)
		}
		for _, rt := range rts {
			// detected 0: MarkDetected sets it, in detection's
			// transaction, for the targets detection reads.
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO run_targets (run_id, target_id, status, observations, verdicts, transient, client_errors, unavailable, breaker_opened, requests, retries, requests_sha256, tokens_in, tokens_out, cost_usd, duration_ms, origin, model, detected)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
				runID, rt.TargetID, rt.Status, rt.Observations, rt.Verdicts, rt.Transient, rt.ClientErrors, rt.Unavailable, b2i(rt.BreakerOpened),
				rt.Requests, rt.Retries, rt.RequestsSHA256, rt.TokensIn, rt.TokensOut, rt.CostUSD, float64(rt.Duration)/1e6, rt.Origin, rt.Model); err != nil {
				return fmt.Errorf("finish run: %w", err)
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, finished_at = ? WHERE id = ?`, status, ts(d.now()), runID)
		return err
	})
}

// schemaKnown returns an error wrapping ErrNewerSchema when the database,
// read in tx, has a schema newer than this driftprobe's: a newer one
// migrated it while this process, paused or stalled past its run lease,
// was in the middle of a run (no driftprobe migrates under a live
// lease). Nothing more of that run is written — neither the answers it
// had in memory when it resumed, which it may flush before its next
// renewal stops it (RenewLock), nor its end: it stays running for the
// newer driftprobe's next run to mark aborted.
func (d *DB) schemaKnown(ctx context.Context, tx *sql.Tx) error {
	return d.refuseNewerSchema(ctx, tx, ": a newer driftprobe migrated it during this run, while this one's run lease had lapsed; nothing more of the run is written: stop this process and run the newer driftprobe in its place")
}

// refuseNewerSchema reads the schema version through q and returns an
// error wrapping ErrNewerSchema (newerSchema, followed by why) when it is
// newer than this driftprobe's, or the read's error; nil otherwise. Every
// writer's check before it writes: the lease's acquisition and renewal,
// and a run's inserts and end.
func (d *DB) refuseNewerSchema(ctx context.Context, q querier, why string) error {
	var schema int
	if err := q.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&schema); err != nil {
		return fmt.Errorf("read the database's schema version: %w", err)
	}
	if schema > SchemaLatest() {
		return newerSchema(d.path, schema, why)
	}
	return nil
}

// ErrRunFinished is returned (wrapped) by FinishRun for a run that is no
// longer running: another process recorded it aborted.
var ErrRunFinished = errors.New("run already finished")

// AbandonStaleRuns marks runs still "running" that started before cutoff
// as aborted (a process that died mid-run). It returns how many it marked.
func (d *DB) AbandonStaleRuns(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := d.db.ExecContext(ctx, `UPDATE runs SET status = 'aborted', finished_at = ?, note = 'abandoned: another run took over its lease (its process ended, or stopped renewing the lease)' WHERE status = 'running' AND started_at < ?`, ts(d.now()), ts(cutoff))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// EnsureTarget upserts a target by name and returns its id.
func (d *DB) EnsureTarget(ctx context.Context, t TargetRow) (int64, error) {
	_, err := d.db.ExecContext(ctx, `INSERT INTO targets (name, provider, model, endpoint, first_seen) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(name) DO UPDATE SET provider = excluded.provider, model = excluded.model, endpoint = excluded.endpoint`,
		t.Name, t.Provider, t.Model, t.Endpoint, ts(d.now()))
	if err != nil {
		return 0, fmt.Errorf("ensure target %s: %w", t.Name, err)
	}
	var id int64
	err = d.db.QueryRowContext(ctx, `SELECT id FROM targets WHERE name = ?`, t.Name).Scan(&id)
	return id, err
}

// Targets returns every known target.
func (d *DB) Targets(ctx context.Context) ([]TargetRow, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, name, provider, model, endpoint FROM targets ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []TargetRow
	for rows.Next() {
		var t TargetRow
		if err := rows.Scan(&t.ID, &t.Name, &t.Provider, &t.Model, &t.Endpoint); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// TargetByName returns the target named name.
func (d *DB) TargetByName(ctx context.Context, name string) (TargetRow, error) {
	var t TargetRow
	err := d.db.QueryRowContext(ctx, `SELECT id, name, provider, model, endpoint FROM targets WHERE name = ?`, name).Scan(&t.ID, &t.Name, &t.Provider, &t.Model, &t.Endpoint)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("target %q: %w", name, ErrNotFound)
	}
	return t, err
}

// ProbeRecord is a corpus probe's stored canonical form.
type ProbeRecord struct {
	SHA256, ProbeID, CorpusVersion, Role, Expect string
	Tags                                         []string
	Canonical                                    string
}

// SaveProbes stores the canonical form of every probe (idempotent). Probes
// already stored are skipped without a write, so a scheduled run of an
// unchanged corpus only reads; new ones go in multi-row INSERTs.
func (d *DB) SaveProbes(ctx context.Context, ps []ProbeRecord) error {
	return d.Tx(ctx, func(tx *sql.Tx) error {
		known := make(map[string]bool)
		rows, err := tx.QueryContext(ctx, `SELECT sha256 FROM probes`)
		if err != nil {
			return fmt.Errorf("save probes: %w", err)
		}
		for rows.Next() {
			var sha string
			if err := rows.Scan(&sha); err != nil {
				rows.Close()
				return fmt.Errorf("save probes: %w", err)
			}
			known[sha] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("save probes: %w", err)
		}
		var todo []ProbeRecord
		for _, p := range ps {
			if !known[p.SHA256] {
				known[p.SHA256] = true // a corpus listing a probe twice inserts it once
				todo = append(todo, p)
			}
		}
		// In hash order: each insert then lands beside the last in the
		// sha256 index instead of at a random page of it (a 5,000-probe
		// first save measured ~7 µs per probe in random order).
		slices.SortFunc(todo, func(a, b ProbeRecord) int { return strings.Compare(a.SHA256, b.SHA256) })
		const per = 64
		var stmts [per + 1]*sql.Stmt
		defer func() {
			for _, st := range stmts {
				if st != nil {
					st.Close()
				}
			}
		}()
		args := make([]any, 0, per*7)
		for len(todo) > 0 {
			chunk := todo[:min(len(todo), per)]
			todo = todo[len(chunk):]
			st := stmts[len(chunk)]
			if st == nil {
				if st, err = tx.PrepareContext(ctx, valuesSQL(`INSERT OR IGNORE INTO probes (sha256, probe_id, corpus_version, role, expect, tags, canonical) VALUES `, `(?, ?, ?, ?, ?, ?, ?)`, len(chunk))); err != nil {
					return fmt.Errorf("save probes: %w", err)
				}
				stmts[len(chunk)] = st
			}
			args = args[:0]
			for _, p := range chunk {
				args = append(args, p.SHA256, p.ProbeID, p.CorpusVersion, p.Role, p.Expect, strings.Join(p.Tags, ","), p.Canonical)
			}
			if _, err := st.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("save probes %s…%s: %w", chunk[0].ProbeID, chunk[len(chunk)-1].ProbeID, err)
			}
		}
		return nil
	})
}

// Probe returns a stored probe by its sha256.
func (d *DB) Probe(ctx context.Context, sha string) (ProbeRecord, error) {
	var p ProbeRecord
	var tags string
	err := d.db.QueryRowContext(ctx, `SELECT sha256, probe_id, corpus_version, role, expect, tags, canonical FROM probes WHERE sha256 = ?`, sha).
		Scan(&p.SHA256, &p.ProbeID, &p.CorpusVersion, &p.Role, &p.Expect, &tags, &p.Canonical)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("probe %s: %w", sha, ErrNotFound)
	}
	p.Tags = splitList(tags)
	return p, err
}

// insertRows is how many observations one INSERT statement carries: 32
// rows bind 992 values, far under SQLite's 32,766-parameter limit. 16, 32
// and 64 measured alike; per-statement overhead is spread by then.
const insertRows = 32

// obsParams is the number of values bound per observation row.
const obsParams = 32

const insertHead = `INSERT INTO observations (id, run_id, target_id, probe_id, probe_sha256, sample, request_sha256, request_method, request_path, request_body, request_pinned,
	class, stage, categories, signals, reason, message, heuristic, unknown, http_status, request_id, model_id, model_fp,
	latency_ms, tokens_in, tokens_out, cost_usd, attempts, body_sha256, body, body_truncated, observed_at) VALUES `

const insertRow = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// insertSQL returns the INSERT statement for rows observations.
func insertSQL(rows int) string { return valuesSQL(insertHead, insertRow, rows) }

// valuesSQL returns head followed by rows copies of row, comma-separated.
func valuesSQL(head, row string, rows int) string {
	var b strings.Builder
	b.Grow(len(head) + rows*(len(row)+2))
	b.WriteString(head)
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// InsertObservations writes a batch of observations in one transaction
// and sets their ids. Rows go in multi-row INSERTs of up to insertRows
// (the full-size statement prepared once per handle, a shorter one once
// per transaction). Ids are assigned
// explicitly as SQLite would (one more than the largest id, in order), so
// they are known without a round trip per row; the transaction holds the
// write lock, so nothing else can insert in between.
func (d *DB) InsertObservations(ctx context.Context, obs []*Observation) error {
	if len(obs) == 0 {
		return nil
	}
	var full *sql.Stmt
	if len(obs) >= insertRows {
		// Prepared outside the transaction: the handle has one connection.
		var err error
		if full, err = d.fullInsert(ctx); err != nil {
			return fmt.Errorf("insert observations: %w", err)
		}
	}
	return d.Tx(ctx, func(tx *sql.Tx) error {
		if err := d.schemaKnown(ctx, tx); err != nil {
			return fmt.Errorf("insert observations: %w", err)
		}
		// A run another process already finished (it took over the lease
		// of this one, paused or stalled, and marked it aborted) gains no
		// observations: an answer still in flight when this process
		// resumed is not added to it.
		for _, run := range runsOf(obs) {
			var status string
			if err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, run).Scan(&status); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("insert observations: %w", err)
			}
			if status != "" && status != RunRunning {
				return fmt.Errorf("insert observations into run %d: %w (it is %s)", run, ErrRunFinished, status)
			}
		}
		var last int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM observations`).Scan(&last); err != nil {
			return fmt.Errorf("insert observations: %w", err)
		}
		if last > math.MaxInt64-int64(len(obs)) {
			// SQLite picks random unused ids past the largest; let it.
			return d.insertObservationsRowwise(ctx, tx, obs)
		}
		var (
			stmts [insertRows + 1]*sql.Stmt // by row count
			args  = make([]any, 0, min(len(obs), insertRows)*obsParams)
			sig   []byte
		)
		defer func() {
			for _, st := range stmts {
				if st != nil {
					st.Close()
				}
			}
		}()
		for len(obs) > 0 {
			chunk := obs[:min(len(obs), insertRows)]
			obs = obs[len(chunk):]
			st := stmts[len(chunk)]
			switch {
			case st != nil:
			case len(chunk) == insertRows && full != nil:
				st = tx.StmtContext(ctx, full)
				stmts[len(chunk)] = st
			default:
				var err error
				if st, err = tx.PrepareContext(ctx, insertSQL(len(chunk))); err != nil {
					return fmt.Errorf("insert observations: %w", err)
				}
				stmts[len(chunk)] = st
			}
			args = args[:0]
			for i, o := range chunk {
				args, sig = d.appendObsArgs(args, sig, o, last+1+int64(i))
			}
			if _, err := st.ExecContext(ctx, args...); err != nil {
				if len(chunk) == 1 {
					return fmt.Errorf("insert observation %s: %w", chunk[0].ProbeID, err)
				}
				return fmt.Errorf("insert observations %s…%s: %w", chunk[0].ProbeID, chunk[len(chunk)-1].ProbeID, err)
			}
			for i, o := range chunk {
				o.ID = last + 1 + int64(i)
			}
			last += int64(len(chunk))
		}
		return nil
	})
}

// fullInsert returns the INSERT of insertRows observations, prepared on
// first use and kept until Close.
func (d *DB) fullInsert(ctx context.Context) (*sql.Stmt, error) {
	d.insertMu.Lock()
	defer d.insertMu.Unlock()
	if d.insertFull == nil {
		st, err := d.db.PrepareContext(ctx, insertSQL(insertRows))
		if err != nil {
			return nil, err
		}
		d.insertFull = st
	}
	return d.insertFull, nil
}

// runsOf returns the distinct run ids of obs (almost always one).
func runsOf(obs []*Observation) []int64 {
	var runs []int64
	for _, o := range obs {
		if !slices.Contains(runs, o.RunID) {
			runs = append(runs, o.RunID)
		}
	}
	return runs
}

// insertObservationsRowwise inserts one row per statement and lets SQLite
// choose the ids.
func (d *DB) insertObservationsRowwise(ctx context.Context, tx *sql.Tx, obs []*Observation) error {
	st, err := tx.PrepareContext(ctx, insertSQL(1))
	if err != nil {
		return err
	}
	defer st.Close()
	args := make([]any, 0, obsParams)
	var sig []byte
	for _, o := range obs {
		args, sig = d.appendObsArgs(args[:0], sig, o, nil)
		res, err := st.ExecContext(ctx, args...)
		if err != nil {
			return fmt.Errorf("insert observation %s: %w", o.ProbeID, err)
		}
		o.ID, _ = res.LastInsertId()
	}
	return nil
}

// appendObsArgs appends o's column values (id first) to args. sig is a
// scratch buffer for the packed signals, returned for reuse.
func (d *DB) appendObsArgs(args []any, sig []byte, o *Observation, id any) ([]any, []byte) {
	r := &o.Result
	var signals any = ""
	if len(r.Signals) > 0 {
		// A BLOB (format 1 is binary), copied: sig is reused per row.
		sig = appendSignals(sig[:0], r.Signals)
		signals = append([]byte(nil), sig...)
	}
	if o.ObservedAt.IsZero() {
		o.ObservedAt = d.now()
	}
	reqBody, body := o.reqZ.stored(o.RequestBody), o.bodyZ.stored(o.Body)
	o.reqZ, o.bodyZ = compressed{}, compressed{} // used; don't keep it alive
	return append(args, id, o.RunID, o.TargetID, o.ProbeID, o.ProbeSHA256, o.Sample, o.RequestSHA256, o.RequestMethod, o.RequestPath, reqBody, o.RequestPinned,
		string(r.Class), string(r.Stage), strings.Join(r.Categories, ","), signals, r.Reason, r.Message, b2i(r.Heuristic),
		strings.Join(r.Unknown, ","), o.HTTPStatus, r.RequestID, r.ModelID, r.ModelFP,
		float64(o.Latency)/1e6, r.TokensIn, r.TokensOut, o.CostUSD, o.Attempts, o.BodySHA256, body, b2i(o.BodyTruncated), ts(o.ObservedAt)), sig
}

// CompressBodies computes the stored (compressed) form of the request and
// response bodies now, so that a caller with spare goroutines, such as the
// runner's workers, takes the compression off the single writer's path.
// InsertObservations uses the precomputed form only if Body and
// RequestBody are still the very slices that were compressed (replacing
// them afterwards is safe; modifying their bytes in place is not), and
// releases it once used. Calling it is optional.
func (o *Observation) CompressBodies() {
	o.reqZ = compress(o.RequestBody)
	o.bodyZ = compress(o.Body)
}

// compressed is a body's stored form and the slice it was computed from.
type compressed struct {
	src, z []byte
}

func compress(b []byte) compressed { return compressed{src: b, z: encodeBody(b)} }

// stored returns the stored form of b: the precomputed one when it was
// computed from b itself, otherwise b compressed now.
func (c compressed) stored(b []byte) []byte {
	if c.src != nil && sameSlice(c.src, b) {
		return c.z
	}
	return encodeBody(b)
}

// sameSlice reports whether a and b are the same slice (not merely equal
// bytes): same nil-ness, length, capacity and backing array.
func sameSlice(a, b []byte) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) || cap(a) != cap(b) {
		return false
	}
	return cap(a) == 0 || &a[:1][0] == &b[:1][0]
}

// obsColumns are the columns an observation is read from, in the order
// scanObs reads them, each with the storage class the schema means it
// to hold (see colKind). obsCols is their list for a SELECT.
var obsColumns = []column{
	{"id", colInt}, {"run_id", colInt}, {"target_id", colInt}, {"probe_id", colText}, {"probe_sha256", colText}, {"sample", colInt},
	{"request_sha256", colText}, {"request_method", colText}, {"request_path", colText}, {"request_pinned", colText},
	{"class", colText}, {"stage", colText}, {"categories", colText}, {"signals", colTextOrBlob}, {"reason", colText}, {"message", colText},
	{"heuristic", colBool}, {"unknown", colText}, {"http_status", colInt}, {"request_id", colText}, {"model_id", colText}, {"model_fp", colText},
	{"latency_ms", colReal}, {"tokens_in", colInt}, {"tokens_out", colInt}, {"cost_usd", colReal}, {"attempts", colInt},
	{"body_sha256", colText}, {"body_truncated", colBool}, {"observed_at", colText}, {"bodies_pruned", colBool},
}

// Positions in obsColumns.
const (
	ocID = iota
	ocRun
	ocTarget
	ocProbe
	ocProbeSHA
	ocSample
	ocReqSHA
	ocMethod
	ocPath
	ocPinned
	ocClass
	ocStage
	ocCategories
	ocSignals
	ocReason
	ocMessage
	ocHeuristic
	ocUnknown
	ocHTTPStatus
	ocRequestID
	ocModelID
	ocModelFP
	ocLatency
	ocTokensIn
	ocTokensOut
	ocCost
	ocAttempts
	ocBodySHA
	ocTruncated
	ocObservedAt
	ocPruned
	ocCount
)

var obsCols = selectList(obsColumns, nil)

// selectList returns the names of cols for a SELECT, each replaced by
// subst[name] when there is one (an expression standing for a column an
// older schema lacks).
func selectList(cols []column, subst map[string]string) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
		if e, ok := subst[c.name]; ok {
			names[i] = e
		}
	}
	return strings.Join(names, ", ")
}

// ErrDamagedRow is wrapped by the errors of readers that found a stored
// row a column of which does not hold what the schema means (a value of
// another type, NULL, a flag other than 0 or 1, an unknown verdict class
// or stage, a time or signals that do not parse): the row was damaged
// after it was written (a bad write, a flipped byte, an edit). The row
// cannot be trusted as a whole, so it is never read as an observation.
var ErrDamagedRow = errors.New("damaged row")

// IsDamagedRow reports whether err says a stored row is damaged
// (ErrDamagedRow; errors.As finds the *DamagedError naming the rows).
func IsDamagedRow(err error) bool { return errors.Is(err, ErrDamagedRow) }

// ColumnDamage is one column of a stored row that does not hold what the
// schema means.
type ColumnDamage struct {
	Column string `json:"column"`
	// Problem says what the column holds instead, as "holds text \"x\",
	// not an integer" (stored text is quoted, Go-escaped and clipped).
	Problem string `json:"problem"`
}

func (c ColumnDamage) String() string { return "column " + c.Column + " " + c.Problem }

// DamagedObservation is an observation row that does not read as an
// observation: Columns says what is wrong. It carries what identifies the
// row, each field as far as its own column reads (0 or "" when that
// column is damaged too), and deliberately nothing else: no verdict,
// request or body of a damaged row is ever used.
type DamagedObservation struct {
	ID       int64          `json:"observation_id"`
	RunID    int64          `json:"run_id"`
	TargetID int64          `json:"target_id"`
	ProbeID  string         `json:"probe_id"`
	Sample   int            `json:"sample"`
	Columns  []ColumnDamage `json:"columns"`
}

// Problem lists what is wrong with the row: "column C holds …; column D …".
func (d *DamagedObservation) Problem() string {
	parts := make([]string, len(d.Columns))
	for i, c := range d.Columns {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// String names the row and what is wrong with it.
func (d *DamagedObservation) String() string {
	return fmt.Sprintf("observation %d (run %d, target %d, probe %q, sample %d): %s", d.ID, d.RunID, d.TargetID, d.ProbeID, d.Sample, d.Problem())
}

// DamagedError is the error of Observations and Observation when a row
// they read is damaged: it names every damaged row the call read, and
// wraps ErrDamagedRow.
type DamagedError struct {
	Rows []DamagedObservation
}

// damagedListed is how many rows a DamagedError's message names.
const damagedListed = 3

func (e *DamagedError) Error() string {
	var b strings.Builder
	if len(e.Rows) == 1 {
		b.WriteString("damaged row: ")
		b.WriteString(e.Rows[0].String())
	} else {
		fmt.Fprintf(&b, "%d observations are damaged: ", len(e.Rows))
		for i := range e.Rows[:min(len(e.Rows), damagedListed)] {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(e.Rows[i].String())
		}
		if more := len(e.Rows) - damagedListed; more > 0 {
			fmt.Fprintf(&b, "; and %d more", more)
		}
	}
	b.WriteString(" (driftprobe db check lists every damaged row)")
	return b.String()
}

func (e *DamagedError) Unwrap() error { return ErrDamagedRow }

// obsScanner reads observation rows leniently: every column into the
// value the driver returns (int64, float64, string, []byte or nil), so
// that a damaged column is described rather than failing the query.
type obsScanner struct {
	vals []any
	ptrs []any
	// checkOnly: signals are checked, not decoded (Observation.Result.
	// Signals stays nil): db check needs them sound, not read, and
	// decoding is most of a row's allocations.
	checkOnly bool
}

// newObsScanner returns a scanner for rows of obsColumns followed by
// extra destinations (scanned as rows.Scan scans them).
func newObsScanner(extra ...any) *obsScanner {
	s := &obsScanner{vals: make([]any, ocCount)}
	s.ptrs = make([]any, 0, ocCount+len(extra))
	for i := range s.vals {
		s.ptrs = append(s.ptrs, &s.vals[i])
	}
	s.ptrs = append(s.ptrs, extra...)
	return s
}

// scan reads one row. It returns the observation, or, when a column does
// not hold what the schema means, the damaged row instead; err is a
// database error only.
func (s *obsScanner) scan(rows interface{ Scan(...any) error }) (*Observation, *DamagedObservation, error) {
	clear(s.vals)
	if err := rows.Scan(s.ptrs...); err != nil {
		return nil, nil, err
	}
	v := s.vals
	var dmg []ColumnDamage
	for i, c := range obsColumns {
		if p := c.kind.damage(v[i]); p != "" {
			dmg = append(dmg, ColumnDamage{Column: c.name, Problem: p})
		}
	}
	o := &Observation{ID: asInt(v[ocID]), RunID: asInt(v[ocRun]), TargetID: asInt(v[ocTarget]), ProbeID: asText(v[ocProbe]), Sample: int(asInt(v[ocSample]))}
	// What the types allow but the schema does not mean: a verdict class
	// or stage no driftprobe writes, a time or signals that do not parse.
	class, stage, at := asText(v[ocClass]), asText(v[ocStage]), asText(v[ocObservedAt])
	// (An empty class is no verdict either, but it is what an
	// Observation with no Result stores, not damage.)
	if _, err := probes.ParseClass(class); err != nil && class != "" && !damagedAt(dmg, ocClass) {
		dmg = append(dmg, ColumnDamage{Column: "class", Problem: fmt.Sprintf("holds %s, not a verdict class", describe(v[ocClass]))})
	}
	switch probes.Stage(stage) {
	case probes.StageNone, probes.StageInput, probes.StageOutput, probes.StageAccount:
	default:
		if !damagedAt(dmg, ocStage) {
			dmg = append(dmg, ColumnDamage{Column: "stage", Problem: fmt.Sprintf("holds %s, not a verdict stage", describe(v[ocStage]))})
		}
	}
	observed, err := time.Parse(timeFmt, at)
	if err != nil && !damagedAt(dmg, ocObservedAt) {
		dmg = append(dmg, ColumnDamage{Column: "observed_at", Problem: fmt.Sprintf("holds %s, not an RFC 3339 time", describe(v[ocObservedAt]))})
	}
	var sigs []probes.Signal
	if s.checkOnly {
		err = checkSignals(asBytes(v[ocSignals]))
	} else {
		sigs, err = decodeSignals(asBytes(v[ocSignals]))
	}
	if err != nil && !damagedAt(dmg, ocSignals) {
		dmg = append(dmg, ColumnDamage{Column: "signals", Problem: fmt.Sprintf("holds %s, which does not decode as signals (%v)", describe(v[ocSignals]), err)})
	}
	if len(dmg) > 0 {
		return nil, &DamagedObservation{ID: o.ID, RunID: o.RunID, TargetID: o.TargetID, ProbeID: o.ProbeID, Sample: o.Sample, Columns: dmg}, nil
	}
	o.ProbeSHA256, o.RequestSHA256 = asText(v[ocProbeSHA]), asText(v[ocReqSHA])
	o.RequestMethod, o.RequestPath, o.RequestPinned = asText(v[ocMethod]), asText(v[ocPath]), asText(v[ocPinned])
	r := &o.Result
	r.Class, r.Stage, r.Signals = probes.Class(class), probes.Stage(stage), sigs
	r.Categories, r.Unknown = splitList(asText(v[ocCategories])), splitList(asText(v[ocUnknown]))
	r.Reason, r.Message, r.Heuristic = asText(v[ocReason]), asText(v[ocMessage]), asInt(v[ocHeuristic]) != 0
	r.RequestID, r.ModelID, r.ModelFP = asText(v[ocRequestID]), asText(v[ocModelID]), asText(v[ocModelFP])
	r.TokensIn, r.TokensOut = int(asInt(v[ocTokensIn])), int(asInt(v[ocTokensOut]))
	o.HTTPStatus, o.Attempts = int(asInt(v[ocHTTPStatus])), int(asInt(v[ocAttempts]))
	o.Latency, o.CostUSD = time.Duration(asReal(v[ocLatency])*1e6), asReal(v[ocCost])
	o.BodySHA256, o.BodyTruncated = asText(v[ocBodySHA]), asInt(v[ocTruncated]) != 0
	o.ObservedAt, o.BodiesPruned = observed, asInt(v[ocPruned]) != 0
	return o, nil, nil
}

// damagedAt reports whether dmg already names column i of obsColumns.
func damagedAt(dmg []ColumnDamage, i int) bool {
	for _, d := range dmg {
		if d.Column == obsColumns[i].name {
			return true
		}
	}
	return false
}

// colKind is the storage class a column is meant to hold, as driftprobe
// writes it (its declared affinity alone would let SQLite keep text in an
// INTEGER column).
type colKind int

const (
	colInt        colKind = iota // INTEGER
	colBool                      // INTEGER 0 or 1
	colReal                      // REAL (an integer reads as one)
	colText                      // TEXT
	colTextOrNull                // TEXT or NULL
	colTextOrBlob                // TEXT or BLOB (signals: packed, or legacy JSON)
	colBlob                      // BLOB
)

// column is a column and the storage class it is meant to hold.
type column struct {
	name string
	kind colKind
}

// damage returns what is wrong with v, a driver value, as a value of kind
// k ("holds text \"x\", not an integer"), or "".
func (k colKind) damage(v any) string {
	var want string
	switch k {
	case colInt:
		if _, ok := v.(int64); ok {
			return ""
		}
		want = "an integer"
	case colBool:
		if n, ok := v.(int64); ok && (n == 0 || n == 1) {
			return ""
		}
		want = "0 or 1"
	case colReal:
		switch v.(type) {
		case float64, int64:
			return ""
		}
		want = "a number"
	case colText:
		if _, ok := v.(string); ok {
			return ""
		}
		want = "text"
	case colTextOrNull:
		switch v.(type) {
		case string, nil:
			return ""
		}
		want = "text or NULL"
	case colTextOrBlob:
		switch v.(type) {
		case string, []byte:
			return ""
		}
		want = "text or a blob"
	case colBlob:
		if _, ok := v.([]byte); ok {
			return ""
		}
		want = "a blob"
	}
	return "holds " + describe(v) + ", not " + want
}

// describe names a driver value for a damage report: its storage class
// and, but for a blob, the value (text quoted, escaped, clipped).
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return fmt.Sprintf("real %g", v)
	case string:
		const clip = 40
		if len(v) > clip {
			return fmt.Sprintf("text %q… (%d bytes)", v[:clip], len(v))
		}
		return fmt.Sprintf("text %q", v)
	case []byte:
		return fmt.Sprintf("a %d-byte blob", len(v))
	}
	return fmt.Sprintf("a %T", v)
}

// asInt, asReal, asText and asBytes read driver values of a row whose
// kinds were checked; a value of another kind reads as the zero value.
func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

func asReal(v any) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	}
	return 0
}

func asText(v any) string {
	s, _ := v.(string)
	return s
}

func asBytes(v any) []byte {
	switch v := v.(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	return nil
}

// Observations returns a run's observations for one target (all targets
// when targetID is 0), ordered by target, probe and sample.
//
// A damaged row (ErrDamagedRow) is never returned as an observation: when
// the query reads one, the call fails with a *DamagedError naming every
// damaged row it read, so that no caller reads a damaged verdict as a
// verdict. Callers that go on past damage (replay, db check) use
// ObservationsWithDamage, which returns the damaged rows apart.
func (d *DB) Observations(ctx context.Context, runID, targetID int64) ([]*Observation, error) {
	obs, damaged, err := d.ObservationsWithDamage(ctx, runID, targetID)
	if err != nil {
		return nil, err
	}
	if len(damaged) > 0 {
		return nil, &DamagedError{Rows: damaged}
	}
	return obs, nil
}

// ObservationsWithDamage is Observations returning the damaged rows apart
// (in the same order) instead of failing: obs holds only the rows that
// read as observations. A damaged row whose own run_id or target_id
// column is damaged is not found by run and target: db check lists it.
// err is a database error only.
func (d *DB) ObservationsWithDamage(ctx context.Context, runID, targetID int64) (obs []*Observation, damaged []DamagedObservation, err error) {
	q := `SELECT ` + obsCols + ` FROM observations WHERE run_id = ?`
	args := []any{runID}
	if targetID != 0 {
		q += ` AND target_id = ?`
		args = append(args, targetID)
	}
	q += ` ORDER BY target_id, probe_id, sample`
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	s := newObsScanner()
	for rows.Next() {
		o, dmg, err := s.scan(rows)
		switch {
		case err != nil:
			return nil, nil, err
		case dmg != nil:
			damaged = append(damaged, *dmg)
		default:
			obs = append(obs, o)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return obs, damaged, nil
}

// Observation returns one observation by id: ErrNotFound (wrapped) when
// there is none, a *DamagedError (ErrDamagedRow) when its row is damaged.
func (d *DB) Observation(ctx context.Context, id int64) (*Observation, error) {
	o, dmg, err := newObsScanner().scan(d.db.QueryRowContext(ctx, `SELECT `+obsCols+` FROM observations WHERE id = ?`, id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("observation %d: %w", id, ErrNotFound)
	case err != nil:
		return nil, err
	case dmg != nil:
		return nil, &DamagedError{Rows: []DamagedObservation{*dmg}}
	}
	return o, nil
}

// RowQuerier is what StoredAnswer reads through: a *sql.DB, *sql.Tx or
// *sql.Conn.
type RowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// StoredAnswer reads one observation with its request and response bodies
// (decompressed) through q, so a caller inside a transaction (detection)
// can read it on the transaction's connection. ErrNotFound (wrapped) when
// there is none; a *DamagedError when its row is damaged; an error
// wrapping ErrUnreadableBody when a body is.
func StoredAnswer(ctx context.Context, q RowQuerier, id int64) (o *Observation, request, response []byte, err error) {
	var rq, rs []byte
	o, dmg, err := newObsScanner(&rq, &rs).scan(q.QueryRowContext(ctx, `SELECT `+obsCols+`, request_body, body FROM observations WHERE id = ?`, id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil, nil, fmt.Errorf("observation %d: %w", id, ErrNotFound)
	case err != nil:
		return nil, nil, nil, err
	case dmg != nil:
		return nil, nil, nil, &DamagedError{Rows: []DamagedObservation{*dmg}}
	}
	if request, err = decodeBody(rq); err != nil {
		return nil, nil, nil, fmt.Errorf("observation %d: request body: %w", id, err)
	}
	if response, err = decodeBody(rs); err != nil {
		return nil, nil, nil, fmt.Errorf("observation %d: response body: %w", id, err)
	}
	return o, request, response, nil
}

// ObservationBodies returns the stored request and response bodies of an
// observation, decompressed. A damaged body makes err wrap
// ErrUnreadableBody; ReadBodies says which side it was and keeps the other.
func (d *DB) ObservationBodies(ctx context.Context, id int64) (request, response []byte, err error) {
	b, err := d.ReadBodies(ctx, id)
	if err == nil {
		err = errors.Join(b.RequestErr, b.ResponseErr)
	}
	if err != nil {
		return nil, nil, err
	}
	return b.Request, b.Response, nil
}

// Bodies are an observation's stored bodies, decompressed. A side whose
// stored bytes do not decompress is nil, its error (wrapping
// ErrUnreadableBody) in RequestErr or ResponseErr; the other side is
// decoded all the same, so damage to one does not hide the other.
type Bodies struct {
	Request, Response       []byte
	RequestErr, ResponseErr error
}

// ReadBodies reads an observation's bodies (see Bodies); err is a database
// error only.
func (d *DB) ReadBodies(ctx context.Context, id int64) (Bodies, error) {
	var rq, rs []byte
	if err := d.db.QueryRowContext(ctx, `SELECT request_body, body FROM observations WHERE id = ?`, id).Scan(&rq, &rs); err != nil {
		return Bodies{}, err
	}
	var b Bodies
	if b.Request, b.RequestErr = decodeBody(rq); b.RequestErr != nil {
		b.RequestErr = fmt.Errorf("request body: %w", b.RequestErr)
	}
	if b.Response, b.ResponseErr = decodeBody(rs); b.ResponseErr != nil {
		b.ResponseErr = fmt.Errorf("response body: %w", b.ResponseErr)
	}
	return b, nil
}

// CorpusHashOf returns the corpus hash the latest run of corpus name at
// version recorded, or "" when no run used that version.
func (d *DB) CorpusHashOf(ctx context.Context, name, version string) (string, error) {
	var h string
	err := d.db.QueryRowContext(ctx, `SELECT corpus_hash FROM runs WHERE corpus_name = ? AND corpus_version = ? ORDER BY id DESC LIMIT 1`, name, version).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return h, err
}

// Run returns one run.
func (d *DB) Run(ctx context.Context, id int64) (Run, error) {
	var r Run
	var started string
	var finished sql.NullString
	err := d.db.QueryRowContext(ctx, `SELECT id, started_at, finished_at, status, corpus_name, corpus_version, corpus_hash, config_hash, host, version, note, pruned FROM runs WHERE id = ?`, id).
		Scan(&r.ID, &started, &finished, &r.Status, &r.CorpusName, &r.CorpusVersion, &r.CorpusHash, &r.ConfigHash, &r.Host, &r.Version, &r.Note, &r.Pruned)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	r.StartedAt = ParseTime(started)
	if finished.Valid {
		r.FinishedAt = ParseTime(finished.String)
	}
	return r, err
}

// LatestRunID returns the id of the most recent run, or 0.
func (d *DB) LatestRunID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	err := d.db.QueryRowContext(ctx, `SELECT MAX(id) FROM runs`).Scan(&id)
	return id.Int64, err
}

// LatestFinishedRunID returns the id of the latest run no longer marked
// running (0 if none): a run whose process died mid-run is marked running
// until the next run under the lease marks it aborted.
func (d *DB) LatestFinishedRunID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	err := d.db.QueryRowContext(ctx, `SELECT MAX(id) FROM runs WHERE status != ?`, RunRunning).Scan(&id)
	return id.Int64, err
}

// RunTargets returns the per-target summaries of a run.
func (d *DB) RunTargets(ctx context.Context, runID int64) ([]RunTarget, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT rt.run_id, rt.target_id, t.name, rt.status, rt.observations, rt.verdicts, rt.transient, rt.client_errors, rt.unavailable,
		rt.breaker_opened, rt.requests, rt.retries, rt.requests_sha256, rt.tokens_in, rt.tokens_out, rt.cost_usd, rt.duration_ms, rt.origin, rt.model
		FROM run_targets rt JOIN targets t ON t.id = rt.target_id WHERE rt.run_id = ? ORDER BY t.name`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RunTarget
	for rows.Next() {
		var rt RunTarget
		var bo int
		var ms float64
		if err := rows.Scan(&rt.RunID, &rt.TargetID, &rt.Target, &rt.Status, &rt.Observations, &rt.Verdicts, &rt.Transient, &rt.ClientErrors, &rt.Unavailable,
			&bo, &rt.Requests, &rt.Retries, &rt.RequestsSHA256, &rt.TokensIn, &rt.TokensOut, &rt.CostUSD, &ms, &rt.Origin, &rt.Model); err != nil {
			return nil, err
		}
		rt.BreakerOpened = bo != 0
		rt.Duration = time.Duration(ms * 1e6)
		out = append(out, rt)
	}
	return out, rows.Err()
}

// ObservedTargets lists the targets run runID stored observations for,
// as RunTargets with only TargetID and Target set: the targets of a run
// whose process died before it recorded its per-target summaries.
func (d *DB) ObservedTargets(ctx context.Context, runID int64) ([]RunTarget, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT t.id, t.name FROM targets t WHERE t.id IN (SELECT DISTINCT target_id FROM observations WHERE run_id = ?) ORDER BY t.name`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RunTarget
	for rows.Next() {
		rt := RunTarget{RunID: runID}
		if err := rows.Scan(&rt.TargetID, &rt.Target); err != nil {
			return nil, err
		}
		out = append(out, rt)
	}
	return out, rows.Err()
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// RunStatus is a run's start, status and per-target statuses.
type RunStatus struct {
	ID        int64
	StartedAt time.Time
	Status    string            // running, complete, partial, aborted
	Targets   map[string]string // target name → run-target status
}

// RunStatuses returns every run, oldest first, with the status of each
// target it probed.
func (d *DB) RunStatuses(ctx context.Context) ([]RunStatus, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, started_at, status FROM runs ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("run statuses: %w", err)
	}
	var out []RunStatus
	index := map[int64]int{}
	for rows.Next() {
		var r RunStatus
		var started string
		if err := rows.Scan(&r.ID, &started, &r.Status); err != nil {
			rows.Close()
			return nil, fmt.Errorf("run statuses: %w", err)
		}
		r.StartedAt, r.Targets = ParseTime(started), map[string]string{}
		index[r.ID] = len(out)
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("run statuses: %w", err)
	}
	rows, err = d.db.QueryContext(ctx, `SELECT rt.run_id, t.name, rt.status FROM run_targets rt JOIN targets t ON t.id = rt.target_id`)
	if err != nil {
		return nil, fmt.Errorf("run statuses: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name, status string
		if err := rows.Scan(&id, &name, &status); err != nil {
			return nil, fmt.Errorf("run statuses: %w", err)
		}
		if i, ok := index[id]; ok {
			out[i].Targets[name] = status
		}
	}
	return out, rows.Err()
}

// ProbeTags returns the tags of every probe id ever stored; when a probe
// changed across corpus versions, the most recently stored tags win.
func (d *DB) ProbeTags(ctx context.Context) (map[string][]string, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT probe_id, tags FROM probes ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("probe tags: %w", err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var id, tags string
		if err := rows.Scan(&id, &tags); err != nil {
			return nil, fmt.Errorf("probe tags: %w", err)
		}
		out[id] = splitList(tags)
	}
	return out, rows.Err()
}
