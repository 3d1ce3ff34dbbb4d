package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/termtext"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// RunOptions tune one run.
type RunOptions struct {
	Logger   *slog.Logger
	Progress func(done, total int)
	Sleep    func(ctx context.Context, d time.Duration) error
	Now      func() time.Time
	Client   *http.Client
	Note     string
	Hooks    runner.Options // OnAttempt / OnBreaker observers
	// Lease identifies this process for the run lock; nil means a fresh
	// identity for this call.
	Lease *storage.Lease
	// Clock ticks the lease's renewals; nil: the real clock.
	Clock clockwork.Clock
	// SubsetRun marks a run of only some of the configured targets
	// (compare --run): it does not attribute production changes, which
	// concern every target, nor clear stored attribution reports.
	SubsetRun bool
	// FullConfig is the whole configuration when the run's is a subset
	// (compare --run): a missed run found before this one is detected
	// with every target's settings. nil: the run's own.
	FullConfig *config.Config
}

// RunResult is a run and what detection made of it.
type RunResult struct {
	Summary   *runner.Summary
	Detection *diff.Result
	Events    []*diff.Event // events new or updated by this run
	// Pruned is what the configured retention pruned after the run (nil
	// when retention is off or the prune failed).
	Pruned *storage.PruneResult
	// Attribution is what the config's attribution block found after the
	// run (nil without the block, or when the run was aborted).
	Attribution *AttributionSummary
}

// reclassifier returns the classifier of the target named name as
// detection re-reads stored answers with it (diff.TargetRun.Reclassify),
// or nil when there is no such target.
func reclassifier(targets []*runner.Target, name string) func(*probes.Request, *probes.Response) probes.Result {
	for _, t := range targets {
		if t.Config.Name == name {
			p := t.Prober
			return func(req *probes.Request, resp *probes.Response) probes.Result { return runner.Classify(p, req, resp) }
		}
	}
	return nil
}

// checkCorpusHash refuses (Usage) a corpus version whose bytes differ
// from the ones the database's runs of that version used. The lock file
// guards a version's bytes where the corpus lives; the database guards
// them too, so a lost or regenerated corpus.lock cannot make one version
// mean two corpora.
func checkCorpusHash(ctx context.Context, st *storage.DB, cp *corpus.Corpus) error {
	h, err := st.CorpusHashOf(ctx, cp.Name, cp.Version)
	if err != nil || h == "" || h == cp.Hash {
		return err
	}
	where := "corpus " + cp.Name
	if at := cp.VersionAt(); at != "" {
		where = at + ": version"
	}
	return Usage(fmt.Errorf("%s: %w: corpus %s version %s: its bytes changed (sha256 %.12s, the database's runs of this version used %.12s): bump the version for any change to a probe",
		where, corpus.ErrChangedUnderVersion, cp.Name, cp.Version, cp.Hash, h))
}

// RunOnce performs one run of every enabled target and stores it. Holding
// the run lease throughout, it then applies detection, prunes by the
// configured retention and, with an attribution block, attributes
// production changes from Prometheus and stores the report
// (AttributeAfterRun). Neither a failed prune nor a failed attribution
// fails the run. A run whose detection failed for some of its targets (a
// detection state that does not decode: diff.Result.Failed, logged here)
// is returned without an error, detected for the others: callers report
// it as failed with DetectionFailed, as they do MeasuredNothing. Any other
// failed detection is a *runner.RunError (the run recorded, not detected).
//
// A run that never started because another process holds the lease
// returns an error matching storage.ErrLocked. A run that lost its lease
// mid-run (another process took it over while this one was paused or
// stalled) stopped after doing work: its error matches storage.ErrLeaseLost
// (and, as every lease error, storage.ErrLocked), with the result when the
// run was recorded.
func RunOnce(ctx context.Context, cfg *config.Config, cp *corpus.Corpus, st *storage.DB, targets []*runner.Target, o RunOptions) (res *RunResult, err error) {
	lease := o.Lease
	if lease == nil {
		lease = NewLease("driftprobe run")
	}
	// A corpus the database refuses is refused before the lease is taken:
	// a run refused for bad input writes nothing (checked again under the
	// lease, where another process may have recorded the version since).
	if err := checkCorpusHash(ctx, st, cp); err != nil {
		return nil, err
	}
	runCtx, release, err := holdLease(ctx, st, lease, cfg.LockTTL.D(), o.Logger, o.Clock)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := release(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	// Holding the lease, no other process can be running: any run still
	// marked running belongs to a process that died mid-run.
	if n, err := st.AbandonStaleRuns(context.WithoutCancel(ctx), st.Now().Add(time.Second)); err == nil && n > 0 && o.Logger != nil {
		o.Logger.Warn("marked abandoned runs as aborted", "runs", n)
	}
	// A run recorded finished whose detection never committed (the process
	// ended in between) is detected now, before this run: its flips would
	// otherwise go unseen, and later runs would compare against a state
	// that skipped it.
	full := cfg
	if o.FullConfig != nil {
		full = o.FullConfig
	}
	detectMissed(context.WithoutCancel(ctx), full, st, targets, o.Logger)
	if err := checkCorpusHash(ctx, st, cp); err != nil {
		return nil, err
	}
	// Only now, with the database agreeing, is a new version locked: a run
	// the database refuses must not write the changed bytes into a lost
	// or regenerated corpus.lock.
	if _, err := corpus.CheckLock(cp, true); err != nil {
		return nil, Usage(err)
	}
	resample, err := resampler(ctx, cfg, st, targets, cp, o.Logger)
	if err != nil {
		return nil, err
	}
	r := runner.New(runner.Options{
		Config: cfg, Corpus: cp, Store: st, Targets: targets, Client: o.Client, Sleep: o.Sleep, Now: o.Now,
		Progress: o.Progress, Logger: o.Logger, Version: Version, Host: Hostname(), Note: o.Note,
		OnAttempt: o.Hooks.OnAttempt, OnBreaker: o.Hooks.OnBreaker, Resample: resample,
	})
	sum, err := r.Run(runCtx)
	if lost := leaseStop(runCtx); err != nil && lost != nil {
		// The run could not be finished because its lease was lost (the
		// run is already marked aborted by the process that took over):
		// say that first.
		return nil, fmt.Errorf("run aborted: %w (%w)", lost, err)
	}
	if err != nil {
		return nil, err
	}
	if lost := leaseStop(runCtx); lost != nil {
		return &RunResult{Summary: sum}, fmt.Errorf("run %d aborted: %w", sum.RunID, lost)
	}
	res = &RunResult{Summary: sum}
	if sum.Status == storage.RunAborted {
		// An aborted run confirms nothing and breaks no streak.
		return res, nil
	}
	in := diff.Input{RunID: sum.RunID, CorpusVersion: cp.Version, CorpusHash: cp.Hash, Params: DetectionParams(cfg)}
	for _, t := range sum.Targets {
		tc := cfg.Target(t.Target)
		in.Targets = append(in.Targets, diff.TargetRun{ID: t.TargetID, Name: t.Target, Provider: t.Provider, Status: t.Status,
			ConfirmSamples: tc.ConfirmSamples, Observations: sum.Observations[t.TargetID], Reclassify: reclassifier(targets, t.Target)})
	}
	det, err := diff.Apply(context.WithoutCancel(ctx), st, in)
	if err != nil {
		// The run is recorded (complete or partial) but not detected:
		// the next run under the lease detects it.
		return nil, &runner.RunError{RunID: sum.RunID, Status: sum.Status, Err: fmt.Errorf("run %d: detection: %w", sum.RunID, err)}
	}
	res.Detection = det
	logDetection(o.Logger, sum.RunID, det)
	if ids := det.EventIDs(); len(ids) > 0 {
		if res.Events, err = diff.ListEvents(context.WithoutCancel(ctx), st, diff.Filter{IDs: ids}); err != nil {
			return nil, err
		}
	}
	if runCtx.Err() != nil {
		// Interrupted (SIGTERM, a deadline) after the run was recorded and
		// detected: pruning and attribution are left to the next run
		// rather than failing half-way with a cancelled context.
		if o.Logger != nil {
			o.Logger.Info("interrupted after the run: pruning and attribution are left to the next run", "run", sum.RunID)
		}
		return res, nil
	}
	if cfg.Retention.Enabled() {
		// Still holding the lease. A failed prune is logged, not a failed
		// run: the run is recorded, and the next run prunes again.
		pr, err := Prune(runCtx, st, cfg.Retention, false)
		switch {
		case err != nil && o.Logger != nil:
			o.Logger.Error("prune", "err", err)
		case err == nil:
			res.Pruned = &pr
			if o.Logger != nil && (pr.ObservationsDeleted > 0 || pr.BodiesDropped > 0) {
				o.Logger.Info("pruned", "runs", pr.Runs, "observations_deleted", pr.ObservationsDeleted, "bodies_dropped", pr.BodiesDropped, "stored_bytes", pr.StoredBytes)
			}
			LogKeptTargets(o.Logger, pr)
		}
	}
	switch {
	case o.SubsetRun:
		// Attribution is about every configured target: a subset run
		// (compare --run) leaves it to the next full run.
	case cfg.Attribution != nil:
		end := time.Now()
		if o.Now != nil {
			end = o.Now()
		}
		actx, cancel := context.WithTimeout(runCtx, attributionBudget)
		res.Attribution = AttributeAfterRun(actx, &Session{Config: cfg, Corpus: cp, Store: st}, sum.RunID, end, o.Logger)
		cancel()
	default:
		// No block (any more): stored reports and their metrics go.
		if err := st.ClearAttributionReports(runCtx); err != nil && o.Logger != nil {
			o.Logger.Error("clear attribution reports", "err", err)
		}
	}
	return res, nil
}

// ErrMeasuredNothing is matched (errors.Is) by MeasuredNothing's error.
var ErrMeasuredNothing = errors.New("measured nothing")

// MeasuredNothingError is a run in which no target answered a single
// probe with a verdict (account-level enforcement included): every answer
// was a transient failure, a client error (a revoked key's 401) or an
// unavailable filter. The counts are the targets' first samples.
type MeasuredNothingError struct {
	RunID                                int64
	Transient, ClientErrors, Unavailable int
}

func (e *MeasuredNothingError) Error() string {
	return fmt.Sprintf("run %d measured nothing: no target answered a probe with a verdict (%d transient, %d client errors, %d filter unavailable); check the keys, base URLs and network (`driftprobe plan`, the run's JSON); the run is stored",
		e.RunID, e.Transient, e.ClientErrors, e.Unavailable)
}

func (e *MeasuredNothingError) Is(target error) bool { return target == ErrMeasuredNothing }

// MeasuredNothing returns a *MeasuredNothingError for a finished run in
// which no target answered a single probe with a verdict or with
// account-level enforcement, nil otherwise. Such a run is stored (partial:
// every target degraded) and detected, but it confirms nothing and
// measured nothing: `run` exits 3 on it, and serve counts it as a failed
// run (driftprobe_run_failures_total, a `run failed` log line), so that a
// cron job, a CI step or an alert never read it as a success. A run in
// which any target measured something is no failure; an aborted run
// (interrupted) is reported as aborted, not as this, and a run of no
// target is none either.
func MeasuredNothing(s *runner.Summary) error {
	if s == nil || len(s.Targets) == 0 || s.Status == storage.RunAborted {
		return nil
	}
	e := &MeasuredNothingError{RunID: s.RunID}
	for _, t := range s.Targets {
		if t.Verdicts > 0 || t.Counts[probes.AbuseBlock] > 0 {
			return nil
		}
		e.Transient += t.Transient
		e.ClientErrors += t.ClientErrors
		e.Unavailable += t.Unavailable
	}
	return e
}

// ErrDetectionFailed is matched (errors.Is) by DetectionFailed's error.
var ErrDetectionFailed = errors.New("detection failed")

// DetectionFailedError is a run whose detection failed for some of its
// targets (diff.Result.Failed): their detection state, or the state parked
// at the endpoint they returned to, does not decode. Their answers of this
// run are not detected; the other targets' are (their events recorded and
// queued), and the run is marked detected.
type DetectionFailedError struct {
	RunID  int64
	Failed []diff.TargetFailure
}

func (e *DetectionFailedError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		parts[i] = fmt.Sprintf("target %s: %s", f.Target, f.Err)
	}
	return fmt.Sprintf("run %d: detection failed for %d target(s), whose answers of this run are not detected (the run's other targets, if any, were detected; the run is stored): %s; `driftprobe db check` lists every damaged state",
		e.RunID, len(e.Failed), strings.Join(parts, "; "))
}

func (e *DetectionFailedError) Is(target error) bool { return target == ErrDetectionFailed }

// DetectionFailed returns a *DetectionFailedError for a run whose
// detection failed for a target (a detection state that does not decode:
// diff.Result.Failed), nil otherwise. Such a run is stored and detected for
// its other targets, whose events are recorded and delivered, but it did
// not do its work for those targets, with every run until the damaged row
// is removed: `run` exits 3 on it, and serve counts it as a failed run
// (driftprobe_run_failures_total, a `run failed` log line), as for a run
// that measured nothing.
func DetectionFailed(r *RunResult) error {
	if r == nil || r.Detection == nil || len(r.Detection.Failed) == 0 {
		return nil
	}
	return &DetectionFailedError{RunID: r.Summary.RunID, Failed: r.Detection.Failed}
}

// attributionBudget bounds the attribution after a run (both Prometheus
// queries and storing the report), so that a slow Prometheus cannot hold
// the run lease or outlast a CronJob's deadline.
const attributionBudget = 2 * time.Minute

// HoldLease takes the run lease for ttl and renews it every ttl/3 until
// release is called, so that a renewal may wait up to two thirds of ttl
// (for SQLite's write lock, which another process, or this one's run,
// may hold) and still land before the lease expires. A renewal goes
// through the lease's own connection (storage.DB.LeaseSQL): it waits for
// the write lock, through the busy timeout at most, never for the store's
// connection and the statements queued on it (a run's writes, serve's
// delivery worker), each of which may wait as long. The returned context
// is cancelled, with a cause matching storage.ErrLocked, if the lease is
// lost (another process took it over after it expired): whatever holds it
// must stop writing. A holder about to run a statement that holds the
// database longer than ttl extends the lease first (ExtendLease, Vacuum).
// A renewal that release interrupts is not an error.
func HoldLease(ctx context.Context, st *storage.DB, lease *storage.Lease, ttl time.Duration, logger *slog.Logger) (held context.Context, release func() error, err error) {
	return holdLease(ctx, st, lease, ttl, logger, nil)
}

// holdLease is HoldLease with the renewals' ticker on clock (nil: the
// real clock).
func holdLease(ctx context.Context, st *storage.DB, lease *storage.Lease, ttl time.Duration, logger *slog.Logger, clock clockwork.Clock) (held context.Context, release func() error, err error) {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	l := *lease
	if gone := l.Gone; gone != nil && logger != nil {
		l.Gone = func(h storage.Lease) bool {
			if !gone(h) {
				return false
			}
			logger.Warn("taking over the run lease of a process that ended without releasing it",
				"command", h.Command, "pid", h.PID, "host", h.Host, "since", h.AcquiredAt.Format(time.RFC3339))
			return true
		}
	}
	if err := st.AcquireLock(ctx, l, ttl); err != nil {
		return nil, nil, err
	}
	held, cancel := context.WithCancelCause(ctx)
	h := &leaseHold{st: st, lease: l, ttl: ttl, cancel: cancel}
	held = context.WithValue(held, leaseHoldKey{}, h)
	renewCtx, stopRenew := context.WithCancel(context.WithoutCancel(ctx))
	renewed := make(chan struct{})
	t := clock.NewTicker(ttl / 3) // before HoldLease returns: a clock advanced then ticks it
	go func() {
		defer close(renewed)
		defer t.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-t.Chan():
			}
			if renewCtx.Err() != nil {
				return // released: a tick that came with it renews nothing
			}
			// Renew only the lease this process still holds: one
			// taken over while it was paused or stalled is lost for
			// good (storage.ErrLeaseLost), never taken back.
			err := h.renew(renewCtx, 0)
			switch {
			case errors.Is(err, storage.ErrLocked):
				if logger != nil {
					logger.Error("run lease lost: stopping", "err", err)
				}
				cancel(err)
				return
			case errors.Is(err, storage.ErrNewerSchema):
				// Migrated by a newer driftprobe while this lease had
				// lapsed: nothing more of this run may be written.
				if logger != nil {
					logger.Error("database migrated by a newer driftprobe: stopping", "err", err)
				}
				cancel(err)
				return
			case renewCtx.Err() != nil:
				return // released during the renewal, which it interrupted
			case err != nil && logger != nil:
				logger.Error("renew run lock", "err", err)
			}
		}
	}()
	release = func() error {
		stopRenew()
		<-renewed
		defer cancel(nil)
		if errors.Is(context.Cause(held), storage.ErrLocked) {
			return nil // not ours any more
		}
		return st.ReleaseLock(context.WithoutCancel(ctx), *lease)
	}
	return held, release, nil
}

// leaseStop returns why the lease's renewals stopped the run held
// (HoldLease) — the lease lost (storage.ErrLocked), or the database
// migrated by a newer driftprobe (storage.ErrNewerSchema) — or nil when
// they did not.
func leaseStop(held context.Context) error {
	if c := context.Cause(held); errors.Is(c, storage.ErrLocked) || errors.Is(c, storage.ErrNewerSchema) {
		return c
	}
	return nil
}

// leaseHold is a run lease HoldLease holds, as its context carries it for
// ExtendLease.
type leaseHold struct {
	st     *storage.DB
	lease  storage.Lease
	ttl    time.Duration
	cancel context.CancelCauseFunc
	// mu serializes renewals and extensions: a renewal reckoned before an
	// extension never lands after it, cutting it short.
	mu sync.Mutex
	// until is how long an ExtendLease that landed extended the lease to,
	// by the store's clock (zero: never): renewals keep it at least that
	// long, and renew nothing while it is at least ttl away.
	until time.Time
}

type leaseHoldKey struct{}

// renew extends the lease to ttl from now, or to until when that is
// later: h.until, or extend from now when that is later (h.until then
// moves there once the lease is extended). A renewal (extend 0) while
// h.until is at least ttl away renews nothing: the lease already lasts
// that long, and the statement the extension covers holds the write lock
// the renewal would wait for, failing after the busy timeout.
func (h *leaseHold) renew(ctx context.Context, extend time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.st.Now()
	until := h.until
	if u := now.Add(extend); u.After(until) {
		until = u
	}
	if extend == 0 && until.Sub(now) >= h.ttl {
		return nil
	}
	if err := h.st.RenewLock(ctx, h.lease, max(h.ttl, until.Sub(now))); err != nil {
		return err
	}
	h.until = until
	return nil
}

// ExtendLease makes the run lease held (a context HoldLease returned) last
// at least d from now by the store's clock, whatever renewals follow. A
// holder calls it before a statement that holds the database longer than
// the lease's ttl (VACUUM: see Vacuum): no renewal can land meanwhile,
// through the lease's own connection or any other, since SQLite has one
// writer at a time, and past ttl another process would take the lease
// over from a live holder. Until the extension is less than ttl away the
// renewals renew nothing (they would only wait out the busy timeout and
// fail). Should the holder die meanwhile, its lease lapses only when the
// extension ends, unless its holder is seen to have ended
// (storage.Lease.Gone: a holder on the same machine). A lease found
// lost is reported as a renewal reports it (storage.ErrLeaseLost), held
// cancelled with it, and so is a database a newer driftprobe migrated
// (storage.ErrNewerSchema); an extension that fails (the database busy through
// the busy timeout) extends nothing. It waits for a renewal in flight,
// which may be waiting for SQLite's write lock: call it outside any write
// transaction on the store, whose lock it would wait for, and fail.
func ExtendLease(held context.Context, d time.Duration) error {
	h, _ := held.Value(leaseHoldKey{}).(*leaseHold)
	if h == nil {
		return errors.New("extend the run lease: the context holds none (HoldLease)")
	}
	err := h.renew(held, d)
	if errors.Is(err, storage.ErrLocked) || errors.Is(err, storage.ErrNewerSchema) {
		h.cancel(err) // as a renewal stops the holder (holdLease)
	}
	return err
}

// Vacuum rebuilds the database (storage.DB.Vacuum) under the run lease
// held (a context HoldLease returned: db prune --vacuum), having extended
// the lease to cover it (ExtendLease by storage.DB.VacuumBound): VACUUM
// holds the write lock throughout, so no renewal lands until it ends. Its
// errors are Vacuum's (storage.ErrNotShrunk among them) or the lease's.
func Vacuum(held context.Context, st *storage.DB) error {
	bound, err := st.VacuumBound(held)
	if err != nil {
		return err
	}
	if err := ExtendLease(held, bound); err != nil {
		return err
	}
	return st.Vacuum(held)
}

// detectMissed applies detection to every finished run that never had it
// (storage.UndetectedRuns), oldest first, reading their observations from
// the database, for the targets still configured (a removed target's
// state no longer matters). The caller holds the run lease. It never
// stops the run that follows: a missed run whose detection fails (the
// very failure that may have left it undetected) is logged and given up
// — marked detected — so it cannot block every later run. One another
// process detected meanwhile (storage.ErrAlreadyDetected: it took the
// lease over and detected the run first) was detected: logged at INFO,
// never given up.
func detectMissed(ctx context.Context, cfg *config.Config, st *storage.DB, targets []*runner.Target, logger *slog.Logger) {
	ids, err := st.UndetectedRuns(ctx)
	if err != nil {
		if logger != nil {
			logger.Error("find runs never detected", "err", err)
		}
		return
	}
	for _, id := range ids {
		if beforeMissedDetection != nil {
			beforeMissedDetection(st, id)
		}
		det, err := detectRun(ctx, cfg, st, id, targets)
		switch {
		case err == nil && logger != nil:
			logger.Warn("a finished run was never detected (its process ended or its detection failed): detected now", "run", id, "events", len(det.EventIDs()))
			logDetection(logger, id, det)
		case errors.Is(err, storage.ErrAlreadyDetected):
			// Another process (one that took the lease over meanwhile)
			// detected it first: its flips were counted there.
			if logger != nil {
				logger.Info("a missed run was detected by another process (its flips are counted)", "run", id)
			}
		case err != nil:
			if logger != nil {
				logger.Error("a finished run was never detected, and detecting it now failed: given up (its flips are not counted)", "run", id, "err", err)
			}
			if merr := st.GiveUpDetection(ctx, id); merr != nil && logger != nil {
				logger.Error("give up detection", "run", id, "err", merr)
			}
		}
	}
}

// beforeMissedDetection, when set (tests), is called by detectMissed
// before it detects each missed run.
var beforeMissedDetection func(st *storage.DB, run int64)

// logDetection logs what detection of run found that needs a person's
// attention beyond events: likely renames, endpoint moves, input changes.
func logDetection(logger *slog.Logger, run int64, det *diff.Result) {
	if logger == nil {
		return
	}
	for _, f := range det.Failed {
		logger.Error("detection failed for a target: its answers of this run are not detected (the other targets' are), and every run's until the damaged row is removed; `driftprobe db check` lists it",
			"target", f.Target, "run", run, "err", f.Err)
	}
	for _, ts := range det.Stats {
		for _, rn := range ts.Renamed {
			logger.Warn("probe id new with the request bytes of a probe no longer in the corpus (renamed?): it starts its own baseline; the old id's history does not carry over",
				"target", ts.Target, "from", rn.From, "to", rn.To, "request_sha256", rn.RequestSHA256, "run", run)
		}
		if oc := ts.OriginChange; oc != nil {
			msg := "target moved to another endpoint: detection there starts over, every probe's baseline restarts (an input change, never a flip); detection at the old endpoint is kept for a return, and its open events stay open"
			switch {
			case oc.Resumed:
				msg = "target moved back to an endpoint it was at before: detection there resumes where it was; detection at the endpoint it left is kept for a return, and its open events stay open"
			case ts.StateLost:
				msg = "target moved back to an endpoint it was at before, but the detection state it left there is missing (its parked_states row was removed, or lost): detection there starts over, every probe's baseline restarts (an input change, never a flip); detection at the endpoint it left is kept for a return"
			}
			logger.Warn(msg, "target", ts.Target, "from", oc.From, "to", oc.To, "last_run_at_from", oc.FromRun, "input_changes", ts.InputChanges, "run", run)
		}
		if ts.Reread > 0 {
			logger.Warn("this driftprobe's classifier reads some stored baseline answers differently: their verdicts (or scores) were re-read from the stored answers before comparing, so the same answers read anew are no flip",
				"target", ts.Target, "probes", ts.Reread, "run", run)
		}
		if ts.StateLost && ts.OriginChange == nil {
			logger.Warn("detection state missing though earlier runs had established it (its probe_states row was removed, or lost): every probe's baseline restarts (an input change, never a flip); a provider change at this moment is absorbed into the new baselines",
				"target", ts.Target, "probes", ts.InputChanges, "run", run)
		} else if ts.InputChanges > 0 && ts.OriginChange == nil {
			logger.Warn("request bytes changed: these probes' baselines restart (nothing is compared across the change)",
				"target", ts.Target, "probes", ts.InputChanges, "run", run)
		}
	}
}

// detectRun applies detection to the stored run id for its targets still
// in cfg and returns what it found.
func detectRun(ctx context.Context, cfg *config.Config, st *storage.DB, id int64, targets []*runner.Target) (*diff.Result, error) {
	run, err := st.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	rts, err := st.RunTargets(ctx, id)
	if err != nil {
		return nil, err
	}
	in := diff.Input{RunID: id, CorpusVersion: run.CorpusVersion, CorpusHash: run.CorpusHash, Params: DetectionParams(cfg)}
	for _, rt := range rts {
		tc := cfg.Target(rt.Target)
		if tc == nil || tc.Disabled {
			continue
		}
		row, err := st.TargetByName(ctx, rt.Target)
		if err != nil {
			return nil, err
		}
		// Re-reading is safe whichever driftprobe recorded the run: a
		// stored verdict changes only to a reading that is the answer's
		// own (diff.TargetRun.Reclassify).
		in.Targets = append(in.Targets, diff.TargetRun{ID: rt.TargetID, Name: rt.Target, Provider: row.Provider, Status: rt.Status, ConfirmSamples: tc.ConfirmSamples,
			Reclassify: reclassifier(targets, rt.Target)})
	}
	det, err := diff.Apply(ctx, st, in)
	if err != nil {
		return nil, fmt.Errorf("detection of run %d: %w", id, err)
	}
	return det, nil
}

// Prune prunes the store as r says, keeping what detection, evidence and
// compare need (diff.LoadPins). A target whose detection state (or a state
// parked at an endpoint it left) does not decode is kept whole, every
// observation of it, and listed in the result's KeptTargets with why; the
// other targets are pruned as usual. The caller holds the run lease.
func Prune(ctx context.Context, st *storage.DB, r config.Retention, dryRun bool) (storage.PruneResult, error) {
	pins, err := diff.LoadPins(ctx, st)
	if err != nil {
		return storage.PruneResult{}, err
	}
	o := storage.PruneOptions{Pinned: pins.Observations, KeepRuns: pins.Runs, DryRun: dryRun}
	for _, t := range pins.Targets {
		o.KeepTargets = append(o.KeepTargets, storage.KeepTarget{ID: t.TargetID, Reason: t.Reason()})
	}
	now := st.Now()
	if r.Bodies > 0 {
		o.BodiesBefore = now.Add(-r.Bodies.D())
	}
	if r.Observations > 0 {
		o.ObservationsBefore = now.Add(-r.Observations.D())
	}
	return st.Prune(ctx, o)
}

// LogKeptTargets logs, at WARN, each target a prune kept whole (pr's
// KeptTargets): which, how many of its observations were kept that would
// have been pruned, and why.
func LogKeptTargets(logger *slog.Logger, pr storage.PruneResult) {
	if logger == nil {
		return
	}
	for _, k := range pr.KeptTargets {
		logger.Warn("prune kept every observation of a target: its detection state (or a state parked at an endpoint it left) does not decode, so what it pins cannot be read; its observations are kept until the row is removed",
			"target", k.Target, "target_id", k.TargetID, "observations_kept", k.Observations, "reason", k.Reason)
	}
}

// DetectionParams derives detection parameters from the config.
func DetectionParams(cfg *config.Config) diff.Params {
	d := cfg.Detection
	p := diff.Params{ConfirmRuns: cfg.ConfirmRuns, NondeterministicFlips: d.NondeterministicFlips, ScoreTolerance: d.ScoreTolerance, WindowRuns: d.WindowRuns}
	if g := cfg.GitHub; g != nil {
		kinds := map[string]bool{}
		for _, k := range g.Kinds {
			kinds[k] = true
		}
		p.Enqueue = func(kind string) bool {
			if len(kinds) == 0 {
				return kind != diff.KindNondeterminism
			}
			return kinds[kind]
		}
	}
	return p
}

// resampler decides extra in-run samples: when a probe's first answer
// differs from its baseline on the same bytes, take confirm_samples (or
// detection.screen_samples, whichever is larger) more. While a baseline
// is still being established (bytes seen in an earlier run, no baseline
// yet), every answer is screened the same way: an answer that would
// confirm the baseline, or start a new candidate, is checked against a
// second sample of the identical bytes first, so a probe flipping at
// random near a threshold never becomes its own reference (a noisy
// baseline later "flips" to its true verdict as a policy change). Bytes
// never seen before take confirm_samples only: the first run of a corpus
// costs no extra requests.
func resampler(ctx context.Context, cfg *config.Config, st *storage.DB, targets []*runner.Target, cp *corpus.Corpus, logger *slog.Logger) (func(*runner.Target, string, string, probes.Result) int, error) {
	base := map[string]map[string]diff.Baseline{}
	for _, t := range targets {
		row, err := st.TargetByName(ctx, t.Config.Name)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		// The baselines of the endpoint this run sends to: after a move,
		// those parked there (or none), not the ones being left.
		if base[t.Config.Name], err = diff.BaselinesAt(ctx, st.SQL(), row.ID, runner.Origin(t, cp)); err != nil {
			// Damaged detection state: the run still probes and records
			// the target (unscreened); its detection reports the damage.
			if logger != nil {
				logger.Error("read detection state: the target's answers are not screened this run", "target", t.Config.Name, "err", err)
			}
			delete(base, t.Config.Name)
		}
	}
	return func(t *runner.Target, probeID, sha string, first probes.Result) int {
		if first.Class == probes.AbuseBlock {
			return 0
		}
		b, ok := base[t.Config.Name][probeID]
		if !ok || b.SHA256 != sha {
			// New bytes: samples can establish a baseline.
			return t.Config.ConfirmSamples
		}
		if b.Verdict == "" {
			if b.Nondeterministic {
				// Marked noisy before it ever settled: screening
				// every answer would triple its cost for good.
				return t.Config.ConfirmSamples
			}
			return MaxExtraSamples(cfg, t.Config)
		}
		if diff.VerdictOf(first).Key() == b.Verdict {
			return 0
		}
		return MaxExtraSamples(cfg, t.Config)
	}, nil
}

// MaxExtraSamples is the most extra samples of one probe's bytes a run of
// tc takes after its first answer (the resampler never asks for more):
// the larger of the target's confirm_samples and detection.screen_samples.
// plan's ceilings rest on it.
func MaxExtraSamples(cfg *config.Config, tc *config.Target) int {
	return max(tc.ConfirmSamples, cfg.Detection.ScreenSamples, 0)
}

// JSON shapes of `run --json` (the output contract in docs/CLI.md).
type (
	RunJSON struct {
		RunID         int64         `json:"run_id"`
		Status        string        `json:"status"`
		CorpusVersion string        `json:"corpus_version"`
		CorpusSHA256  string        `json:"corpus_sha256"`
		StartedAt     time.Time     `json:"started_at"`
		DurationSec   float64       `json:"duration_seconds"`
		Targets       []TargetJSON  `json:"targets"`
		Events        []*diff.Event `json:"events"`
		// Pruned is present when the config's retention pruned after the run.
		Pruned *storage.PruneResult `json:"pruned,omitempty"`
		// Attribution is present when the config has an attribution block.
		Attribution *AttributionSummary `json:"attribution,omitempty"`
	}
	TargetJSON struct {
		Target         string         `json:"target"`
		Provider       string         `json:"provider"`
		Status         string         `json:"status"`
		Observations   int            `json:"observations"`
		Verdicts       map[string]int `json:"verdicts"`
		RequestsSHA256 string         `json:"requests_sha256"`
		Requests       int            `json:"requests"`
		Retries        int            `json:"retries"`
		BreakerOpened  bool           `json:"breaker_opened"`
		TokensIn       int            `json:"tokens_in"`
		TokensOut      int            `json:"tokens_out"`
		CostUSD        float64        `json:"cost_usd"`
		// InputChanges counts probes whose answers are not comparable
		// with their baseline: their request bytes differ (corpus or
		// target parameters changed), the target's endpoint moved
		// (OriginChange), or its detection state was missing
		// (StateLost). Their baselines restart.
		InputChanges int `json:"input_changes"`
		// Reread counts probes whose stored baseline (or candidate)
		// verdict, or baseline scores, this driftprobe's classifier read
		// differently from their stored answers (diff.TargetStats.Reread):
		// brought up to the new reading, never a flip.
		Reread int `json:"reread"`
		// Renamed lists probe ids new to the target sent with the request
		// bytes of an id no longer in the corpus (likely renames): each
		// starts its own baseline. Always present, [] when none.
		Renamed []diff.ProbeRename `json:"renamed"`
		// Origin is the endpoint the requests went to (scheme://host, or
		// "sim:embedded"; then the account named, if any: " organization=…
		// project=…"); OriginChange is set when it differs from the
		// target's previous run's: every baseline restarts.
		Origin       string             `json:"origin"`
		OriginChange *diff.OriginChange `json:"origin_change"`
		// StateLost is true when the target's detection state (at the
		// endpoint it went to) was missing though an earlier run had
		// established it: removed from the database (the row db check
		// tells to delete when it no longer decodes) or lost. Every
		// baseline restarted (input_changes, cause state).
		StateLost bool `json:"state_lost"`
		// DetectionError is null, or why the target's detection failed in
		// this run (diff.Result.Failed: its detection state, or the state
		// parked at the endpoint it returned to, does not decode; the
		// message names the row and the statement that removes it): its
		// answers of this run are not detected, and the run exits 3.
		DetectionError *string `json:"detection_error"`
	}
)

// JSON returns the contract shape of the result.
func (r *RunResult) JSON() RunJSON {
	s := r.Summary
	out := RunJSON{RunID: s.RunID, Status: s.Status, CorpusVersion: s.CorpusVersion, CorpusSHA256: s.CorpusHash,
		StartedAt: s.Started.UTC(), DurationSec: s.Duration.Seconds(), Targets: []TargetJSON{}, Events: r.Events, Pruned: r.Pruned, Attribution: r.Attribution}
	if out.Events == nil {
		out.Events = []*diff.Event{}
	}
	inputChanges := r.inputChanges()
	reread := map[string]int{}
	if r.Detection != nil {
		for _, ts := range r.Detection.Stats {
			reread[ts.Target] = ts.Reread
		}
	}
	renamed := r.renamed()
	originChanges := r.originChanges()
	stateLost := r.stateLost()
	failed := r.detectionFailed()
	for _, t := range s.Targets {
		v := map[string]int{}
		for _, c := range probes.Classes {
			v[string(c)] = t.Counts[c]
		}
		out.Targets = append(out.Targets, TargetJSON{Target: t.Target, Provider: t.Provider, Status: t.Status, Observations: t.Observations,
			Verdicts: v, RequestsSHA256: t.RequestsSHA256, Requests: t.Requests, Retries: t.Retries, BreakerOpened: t.BreakerOpened,
			TokensIn: t.TokensIn, TokensOut: t.TokensOut, CostUSD: t.CostUSD, InputChanges: inputChanges[t.Target], Reread: reread[t.Target], Renamed: renamed[t.Target],
			Origin: t.Origin, OriginChange: originChanges[t.Target], StateLost: stateLost[t.Target]})
		if msg, ok := failed[t.Target]; ok {
			out.Targets[len(out.Targets)-1].DetectionError = &msg
		}
		if out.Targets[len(out.Targets)-1].Renamed == nil {
			out.Targets[len(out.Targets)-1].Renamed = []diff.ProbeRename{}
		}
	}
	return out
}

// byTarget returns f of each target's detection stats, by target name
// (empty without detection).
func byTarget[T any](r *RunResult, f func(diff.TargetStats) T) map[string]T {
	out := map[string]T{}
	if r.Detection != nil {
		for _, ts := range r.Detection.Stats {
			out[ts.Target] = f(ts)
		}
	}
	return out
}

// originChanges returns, by target, the endpoint changes detection found.
func (r *RunResult) originChanges() map[string]*diff.OriginChange {
	return byTarget(r, func(ts diff.TargetStats) *diff.OriginChange { return ts.OriginChange })
}

// stateLost returns the targets whose detection state detection found
// missing (diff.TargetStats.StateLost).
func (r *RunResult) stateLost() map[string]bool {
	return byTarget(r, func(ts diff.TargetStats) bool { return ts.StateLost })
}

// detectionFailed returns, by target, why its detection failed in the run
// (diff.Result.Failed).
func (r *RunResult) detectionFailed() map[string]string {
	out := map[string]string{}
	if r.Detection != nil {
		for _, f := range r.Detection.Failed {
			out[f.Target] = f.Err
		}
	}
	return out
}

// renamed returns, by target, the likely renames detection reported.
func (r *RunResult) renamed() map[string][]diff.ProbeRename {
	return byTarget(r, func(ts diff.TargetStats) []diff.ProbeRename { return ts.Renamed })
}

// inputChanges returns, by target, how many probes detection found with
// other request bytes than their baseline.
func (r *RunResult) inputChanges() map[string]int {
	return byTarget(r, func(ts diff.TargetStats) int { return ts.InputChanges })
}

// WriteSummary prints a human summary of a run.
func WriteSummary(w io.Writer, r *RunResult) {
	s := r.Summary
	fmt.Fprintf(w, "run %d %s · corpus %s (%.12s) · %d target(s) · %s\n", s.RunID, s.Status, s.CorpusVersion, s.CorpusHash, len(s.Targets), s.Duration.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tSTATUS\tPROBES\tALLOWED\tBLOCKED_IN\tBLOCKED_OUT\tREFUSED\tABUSE\tTRANSIENT\tCLIENT_ERR\tUNAVAIL\tREQUESTS\tCOST_USD\t")
	for _, t := range s.Targets {
		c := t.Counts
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.4f\t\n", t.Target, t.Status, t.Observations,
			c[probes.Allowed], c[probes.BlockedInput], c[probes.BlockedOutput], c[probes.ModelRefusal], c[probes.AbuseBlock],
			c[probes.Transient], c[probes.ClientError], c[probes.FilterUnavailable], t.Requests, t.CostUSD)
	}
	tw.Flush()
	inputChanges, renamed, originChanges, stateLost := r.inputChanges(), r.renamed(), r.originChanges(), r.stateLost()
	failed := r.detectionFailed()
	for _, t := range s.Targets {
		var notes []string
		if msg, ok := failed[t.Target]; ok {
			notes = append(notes, "DETECTION FAILED: its answers of this run are not detected: "+termtext.SafeLong(msg))
		}
		if t.BreakerOpened {
			notes = append(notes, "circuit breaker opened")
		}
		if t.Status == storage.TargetDegraded {
			notes = append(notes, "degraded: this run confirms nothing on this target")
		}
		if t.Counts[probes.AbuseBlock] > 0 {
			notes = append(notes, "ACCOUNT-LEVEL ENFORCEMENT (abuse_block): every user of this account is affected")
		}
		if oc := originChanges[t.Target]; oc != nil && oc.Resumed {
			notes = append(notes, fmt.Sprintf("moved from endpoint %s (run %d) back to %s: detection there resumes where it was",
				termtext.Safe(oc.From), oc.FromRun, termtext.Safe(oc.To)))
		} else if oc != nil && stateLost[t.Target] {
			notes = append(notes, fmt.Sprintf("moved from endpoint %s (run %d) back to %s, whose detection state is missing (removed or lost): %d probe baseline(s) restart there (an input change, never a flip)",
				termtext.Safe(oc.From), oc.FromRun, termtext.Safe(oc.To), inputChanges[t.Target]))
		} else if stateLost[t.Target] {
			notes = append(notes, fmt.Sprintf("detection state missing (removed or lost; earlier runs had established it): %d probe baseline(s) restart (an input change, never a flip)", inputChanges[t.Target]))
		} else if oc != nil {
			notes = append(notes, fmt.Sprintf("moved from endpoint %s (run %d) to %s: %d probe baseline(s) restart there (an input change, never a flip)",
				termtext.Safe(oc.From), oc.FromRun, termtext.Safe(oc.To), inputChanges[t.Target]))
		} else if n := inputChanges[t.Target]; n > 0 {
			notes = append(notes, fmt.Sprintf("%d probe(s) sent other request bytes than their baseline (corpus or target parameters changed): their baselines restart", n))
		}
		for _, rn := range renamed[t.Target] {
			notes = append(notes, fmt.Sprintf("probe %s has the request bytes of %s, no longer in the corpus (renamed?): it starts its own baseline", termtext.Safe(rn.To), termtext.Safe(rn.From)))
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "  %s: %s\n", t.Target, strings.Join(notes, "; "))
		}
	}
	switch a := r.Attribution; {
	case a == nil:
	case a.Error != "":
		fmt.Fprintf(w, "attribution failed (the run is recorded): %s\n", attribution.Safe(a.Error))
	default:
		fmt.Fprintf(w, "attribution · %d series · %d provider, %d traffic, %d inconclusive · uncovered categories: %d · details: driftprobe attribute\n",
			a.Series, a.Changes[attribution.Provider], a.Changes[attribution.Traffic], a.Changes[attribution.Inconclusive], a.Uncovered)
	}
}

// WriteEvents prints events for humans.
func WriteEvents(w io.Writer, evs []*diff.Event, changes []diff.Change) {
	byEvent := map[int64][]diff.Change{}
	for _, c := range changes {
		byEvent[c.EventID] = append(byEvent[c.EventID], c)
	}
	for _, e := range evs {
		status := e.Status
		if e.Status == diff.StatusReverted && retracted(e) {
			// Every flip was withdrawn as nondeterministic: nothing went
			// back, and the provider did not necessarily change anything
			// (status reverted in JSON, its last update retracted).
			status = "retracted"
		}
		if e.LastRun > e.ConfirmedRun {
			status = fmt.Sprintf("updated run %d · %s", e.LastRun, status)
		}
		// An event without a direction or categories (a model change, a
		// nondeterminism mark) leaves no gap where they would be.
		what := "[" + strings.ToUpper(e.Kind) + "]"
		for _, s := range []string{e.Direction, categoriesOf(e)} {
			if s != "" {
				what += " " + s
			}
		}
		fmt.Fprintf(w, "\nevent %d %s on %s (%s) · runs %d→%d · %s\n", e.ID, what,
			strings.Join(e.Targets, ", "), e.Provider, e.FirstRun, e.ConfirmedRun, status)
		for _, c := range byEvent[e.ID] {
			fmt.Fprintf(w, "  %s: %s\n", c.Change, termtext.SafeLong(c.Detail)) // probe lists are long
		}
		if len(e.NewCategories) > 0 {
			fmt.Fprintf(w, "  NEW CATEGORIES (never fired on this target before): %s\n", strings.Join(e.NewCategories, ", "))
		}
		if len(e.VanishedCategories) > 0 {
			fmt.Fprintf(w, "  vanished categories: %s\n", strings.Join(e.VanishedCategories, ", "))
		}
		if e.ModelBefore != e.ModelAfter {
			// Model ids and fingerprints are the provider's text.
			fmt.Fprintf(w, "  model: %s → %s\n", termtext.Clean(diff.ModelText(e.ModelBefore)), termtext.Clean(diff.ModelText(e.ModelAfter)))
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		switch e.Kind {
		case diff.KindScoreDrift:
			// The verdict held; the scores moved.
			fmt.Fprintln(tw, "  TARGET\tPROBE\tREQUEST_SHA256\tVERDICT\tSCORES MOVED\tCONFIRMED\t")
			for _, p := range e.Probes {
				fmt.Fprintf(tw, "  %s\t%s\t%.12s\t%s\t%s\trun %d\t\n", termtext.Clean(p.Target), termtext.Clean(p.ProbeID), p.RequestSHA256, p.Before.String(), movesText(p.ScoreMoves, 3), p.ConfirmedRun)
			}
		case diff.KindNondeterminism:
			// The probe flips on identical bytes: the two verdicts it was
			// marked going back and forth between (its baseline, else its
			// answer in the marking run, first; the row keeps them when
			// it settles on either later: neither is its latest verdict)
			// and how often it flipped.
			fmt.Fprintln(tw, "  TARGET\tPROBE\tREQUEST_SHA256\tMARKED BETWEEN\tFLIP_RATE\tMARKED\t")
			for _, p := range e.Probes {
				base := p.Before.String()
				if p.Before.Class == "" {
					base = "(none held)"
				}
				// Marked in its first run; later markings and a change
				// that held move only the last one.
				marked := fmt.Sprintf("run %d", p.FirstRun)
				if p.ConfirmedRun > p.FirstRun {
					marked += fmt.Sprintf(" (latest run %d)", p.ConfirmedRun)
				}
				fmt.Fprintf(tw, "  %s\t%s\t%.12s\t%s ↔ %s\t%.0f%%\t%s\t\n", termtext.Clean(p.Target), termtext.Clean(p.ProbeID), p.RequestSHA256, base, p.After.String(), 100*p.FlipRate, marked)
			}
		default:
			fmt.Fprintln(tw, "  TARGET\tPROBE\tREQUEST_SHA256\tBEFORE\tAFTER\tCONFIRMED\t")
			for _, p := range e.Probes {
				after := p.After.String()
				switch {
				case p.Withdrawn:
					after += " (withdrawn: nondeterministic)"
				case p.Reverted:
					after += " (reverted)"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%.12s\t%s\t%s\trun %d\t\n", termtext.Clean(p.Target), termtext.Clean(p.ProbeID), p.RequestSHA256, p.Before.String(), after, p.ConfirmedRun)
			}
		}
		tw.Flush()
		if e.IssueURL != "" {
			// GitHub's text: one stored before its URLs were checked may
			// hold anything.
			fmt.Fprintf(w, "  issue: %s\n", termtext.Clean(e.IssueURL))
		}
	}
}

// retracted reports whether every probe of e was withdrawn as
// nondeterministic (an event that ended so is retracted, not reverted).
func retracted(e *diff.Event) bool {
	for _, p := range e.Probes {
		if !p.Withdrawn {
			return false
		}
	}
	return len(e.Probes) > 0
}

// movesText is up to n score moves, "key 0.02→0.32", keys escaped (they
// are the provider's).
func movesText(moves []diff.ScoreMove, n int) string {
	if len(moves) == 0 {
		return "-"
	}
	var parts []string
	for i, m := range moves {
		if i == n {
			parts = append(parts, fmt.Sprintf("+%d more", len(moves)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s→%s", attribution.Clean(wire.Shorten(m.Key, 40)), trimScore(m.Before), trimScore(m.After)))
	}
	return strings.Join(parts, ", ")
}

func trimScore(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// categoriesOf names what an event is about: the categories of the
// verdicts that changed or, for score drift, the normalized categories
// among the score keys that moved. A score key is the provider's raw
// signal name (prompt.privacy, self-harm/intent): only one that is itself
// a normalized category is named here; the probe table shows every key.
func categoriesOf(e *diff.Event) string {
	var cats []string
	for _, p := range e.Probes {
		if e.Kind == diff.KindScoreDrift {
			for _, m := range p.ScoreMoves {
				if probes.ValidCategory(m.Key) {
					cats = append(cats, m.Key)
				}
			}
			continue
		}
		cats = append(cats, p.After.Categories...)
		cats = append(cats, p.Before.Categories...)
	}
	cats = probes.SortedUnique(cats)
	if len(cats) == 0 {
		return ""
	}
	return "(" + strings.Join(cats, ", ") + ")"
}
