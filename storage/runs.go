package storage

import (
	"context"
	"database/sql"
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
	TokensIn       int
	TokensOut      int
	CostUSD        float64
	Duration       time.Duration
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
	rows, err := d.db.QueryContext(ctx, `SELECT id FROM runs WHERE detected = 0 AND status IN ('complete', 'partial') ORDER BY id`)
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

// MarkDetected records, inside detection's transaction tx, that run's
// detection committed. A run detected already (by another process that
// took over the lease while this one stalled) is ErrAlreadyDetected: the
// caller rolls back, so no run's flips are ever counted twice.
func MarkDetected(ctx context.Context, tx *sql.Tx, run int64) error {
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
	return nil
}

// GiveUpDetection marks run detected without detecting it: its detection
// failed where the next run would retry it forever.
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
		var cur string
		if err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, runID).Scan(&cur); err != nil {
			return fmt.Errorf("finish run %d: %w", runID, err)
		}
		if cur != RunRunning {
			return fmt.Errorf("finish run %d: %w (it is %s)", runID, ErrRunFinished, cur)
		}
		for _, rt := range rts {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO run_targets (run_id, target_id, status, observations, verdicts, transient, client_errors, unavailable, breaker_opened, requests, retries, requests_sha256, tokens_in, tokens_out, cost_usd, duration_ms)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				runID, rt.TargetID, rt.Status, rt.Observations, rt.Verdicts, rt.Transient, rt.ClientErrors, rt.Unavailable, b2i(rt.BreakerOpened),
				rt.Requests, rt.Retries, rt.RequestsSHA256, rt.TokensIn, rt.TokensOut, rt.CostUSD, float64(rt.Duration)/1e6); err != nil {
				return fmt.Errorf("finish run: %w", err)
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, finished_at = ? WHERE id = ?`, status, ts(d.now()), runID)
		return err
	})
}

// ErrRunFinished is returned (wrapped) by FinishRun for a run that is no
// longer running: another process recorded it aborted.
var ErrRunFinished = errors.New("run already finished")

// AbandonStaleRuns marks runs still "running" that started before cutoff
// as aborted (a process that died mid-run). It returns how many it marked.
func (d *DB) AbandonStaleRuns(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := d.db.ExecContext(ctx, `UPDATE runs SET status = 'aborted', finished_at = ?, note = 'abandoned: process ended mid-run' WHERE status = 'running' AND started_at < ?`, ts(d.now()), ts(cutoff))
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
// and sets their ids. Rows go in multi-row INSERTs of up to insertRows,
// each statement prepared once per transaction. Ids are assigned
// explicitly as SQLite would (one more than the largest id, in order), so
// they are known without a round trip per row; the transaction holds the
// write lock, so nothing else can insert in between.
func (d *DB) InsertObservations(ctx context.Context, obs []*Observation) error {
	if len(obs) == 0 {
		return nil
	}
	return d.Tx(ctx, func(tx *sql.Tx) error {
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
			if st == nil {
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

const obsCols = `id, run_id, target_id, probe_id, probe_sha256, sample, request_sha256, request_method, request_path, request_pinned, class, stage, categories, signals, reason, message,
	heuristic, unknown, http_status, request_id, model_id, model_fp, latency_ms, tokens_in, tokens_out, cost_usd, attempts, body_sha256, body_truncated, observed_at, bodies_pruned`

func scanObs(rows interface{ Scan(...any) error }) (*Observation, error) {
	var o Observation
	var class, stage, cats, sig, unknown, at string
	var heur, trunc, pruned int
	var lat float64
	err := rows.Scan(&o.ID, &o.RunID, &o.TargetID, &o.ProbeID, &o.ProbeSHA256, &o.Sample, &o.RequestSHA256, &o.RequestMethod, &o.RequestPath, &o.RequestPinned, &class, &stage, &cats, &sig,
		&o.Result.Reason, &o.Result.Message, &heur, &unknown, &o.HTTPStatus, &o.Result.RequestID, &o.Result.ModelID, &o.Result.ModelFP,
		&lat, &o.Result.TokensIn, &o.Result.TokensOut, &o.CostUSD, &o.Attempts, &o.BodySHA256, &trunc, &at, &pruned)
	if err != nil {
		return nil, err
	}
	o.BodiesPruned = pruned != 0
	o.Result.Class, o.Result.Stage = probes.Class(class), probes.Stage(stage)
	o.Result.Categories = splitList(cats)
	o.Result.Unknown = splitList(unknown)
	o.Result.Heuristic, o.BodyTruncated = heur != 0, trunc != 0
	// A corrupt column reads as no signals; the stored body is the evidence.
	o.Result.Signals, _ = decodeSignals([]byte(sig))
	o.Latency = time.Duration(lat * 1e6)
	o.ObservedAt = ParseTime(at)
	return &o, nil
}

// Observations returns a run's observations for one target (all targets
// when targetID is 0), ordered by target, probe and sample.
func (d *DB) Observations(ctx context.Context, runID, targetID int64) ([]*Observation, error) {
	q := `SELECT ` + obsCols + ` FROM observations WHERE run_id = ?`
	args := []any{runID}
	if targetID != 0 {
		q += ` AND target_id = ?`
		args = append(args, targetID)
	}
	q += ` ORDER BY target_id, probe_id, sample`
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Observation
	for rows.Next() {
		o, err := scanObs(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// Observation returns one observation by id.
func (d *DB) Observation(ctx context.Context, id int64) (*Observation, error) {
	o, err := scanObs(d.db.QueryRowContext(ctx, `SELECT `+obsCols+` FROM observations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("observation %d: %w", id, ErrNotFound)
	}
	return o, err
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

// RunTargets returns the per-target summaries of a run.
func (d *DB) RunTargets(ctx context.Context, runID int64) ([]RunTarget, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT rt.run_id, rt.target_id, t.name, rt.status, rt.observations, rt.verdicts, rt.transient, rt.client_errors, rt.unavailable,
		rt.breaker_opened, rt.requests, rt.retries, rt.requests_sha256, rt.tokens_in, rt.tokens_out, rt.cost_usd, rt.duration_ms
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
			&bo, &rt.Requests, &rt.Retries, &rt.RequestsSHA256, &rt.TokensIn, &rt.TokensOut, &rt.CostUSD, &ms); err != nil {
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
