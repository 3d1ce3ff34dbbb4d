// Package ghissue files one GitHub issue per driftprobe change event and
// delivers the event's later changes as comments, exactly once, from the
// outbox that detection fills in the same transaction as the change.
//
// Exactly once, in three layers:
//   - SQLite is the source of truth: events.issue_number maps an event to
//     its issue, outbox.sent_at marks a delivered row. Rows are sent in id
//     order, so per event the issue is opened before it is commented on;
//     a row that fails holds back the later rows of its event.
//   - Every issue body carries a hidden marker <!-- driftprobe:event=FP -->
//     (and the fingerprint visibly). Before creating an issue, driftprobe
//     lists the repository's issues labelled "driftprobe" (state all, every
//     page) and adopts one that carries the marker: an issue created by a
//     call whose answer was lost, or whose mapping was lost, is found again
//     instead of doubled. GitHub drops the labels of a new issue when the
//     caller lacks push access, so when the label listing has no issue
//     with the marker, the issues created since the row was queued are
//     searched too, labelled or not (afresh when an earlier attempt of
//     the row may have created it; else one search serves the pass: a
//     database restored from a backup lost the mapping of rows it never
//     attempted). A mapping counts as it is only on this GitHub's web host
//     (github.base_url changed: another host's issue numbers name
//     strangers' issues there); on another host only when the issue of
//     that number carries the marker. An event whose open row the operator
//     skipped (outbox --skip) gets no issue: its later rows are recorded
//     skipped too, unless its issue is found by the mapping or the marker.
//   - Every comment starts with <!-- driftprobe:update=ID --><!--
//     driftprobe:key=K -->, K a hash of the event's fingerprint and the
//     update's run, change, target, detail and time (update ids alone are
//     reused by a database restored from a backup); before posting, the
//     issue's comments are checked for it.
//
// Failures never drop a row: the row keeps attempts, last_error and
// next_attempt_at. Outages (a 5xx GitHub answered, no answer in time on
// a connection GitHub took) and an unreachable GitHub (no HTTP answer:
// DNS, connection, TLS, no connection in time; or a 5xx without GitHub's
// request id, from a proxy or load balancer on the way: fromGitHub) back
// off exponentially; primary rate limits wait
// until x-ratelimit-reset, secondary limits for retry-after, else a
// minute, doubling as they recur (secondaryUntil); a stated wait is capped
// at an hour from the failure (maxGitHubWait); configuration problems
// (unknown repository, no permission) are recorded with a clear message
// and retried on the next call. No usable credential in this process's
// environment (the token's or the app key's variable) is no fact about
// the rows: an attended pass (outbox --send) reports it and leaves them,
// an unattended one (serve, run) notes it on each due row, naming the
// process and keeping the row's error (envNote). Rate limits, outages and
// an unreachable GitHub are not a row's: the pass stops, records "GitHub
// not before T" (github_holds, see hold.go: a rate limit for the
// credential on that GitHub, an outage or an unreachable GitHub for the
// host; only a rate limit is worded as GitHub asking to wait, HoldPhrase)
// and raises every pending row's next attempt to at least T;
// every pass (this process's or another's, on this database) reads the
// holds before its first request and before each row, and sends nothing
// while one lasts (Result.HeldUntil). An outage's backoff counts its
// failures in a row, so each step sends one request, whichever row is
// tried; a pass GitHub answers once the hold is over deletes it. Any
// other failure (a 422, a deleted issue, a locked one:
// a 403 on a comment or edit of an issue GitHub says is locked, see
// issueErr) backs off too and holds back only the later rows of its
// event. A pass interrupted (a signal) while a create or an edit is in
// flight leaves that row waiting as after a lost answer (release), since
// GitHub may still carry the call out after a retry's marker lookup.
//
// Two processes may deliver from one database at once (serve after each
// run, an operator's outbox --send). A row is claimed by a compare-and-swap
// of next_attempt_at to the claim's end (Options.ClaimFor), its last_error,
// if any, kept behind claimMark meanwhile, so that a claim is never read as
// a wait on the row's earlier error (Pending, noteAll); every later
// write of the pass to that row (a failure, the release of an interrupted
// attempt) is a compare-and-swap on that claim, and deferring the rows a
// global failure did not reach is one on the value the pass read. A claim
// that ran out while its call was in flight has passed to the process that
// claimed the row since: the late outcome is left to it and reported in
// Result.Lost and Result.Notes, never written over its claim. A late
// delivery is still recorded, unless another process recorded the row's
// delivery first, whose record stands.
//
// Auth is a token (github.token_env) or a GitHub App installation
// (github.app_id, installation_id and private_key_env): ghinstallation
// signs an RS256 JWT with the app's key, exchanges it for an installation
// token and refreshes that before it expires. Neither the key nor a token
// is ever logged, stored or put in an issue: besides the configured token or
// key, every credential that goes out in an Authorization header (each
// installation token as it is fetched or refreshed, each app JWT) is
// registered for redaction before the request is sent, so an answer that
// echoes it is recorded and logged as [redacted]. Credentials go to the
// origin of the API root (github.base_url, else api.github.com) only: a
// redirect to another scheme, host or port is not followed, and the call
// fails with a message saying so (see apiOrigin).
package ghissue

import (
	"context"
	"database/sql"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/storage"
)

// Outbox actions (see diff.detector.record).
const (
	ActionOpen    = "open"
	ActionComment = "comment"
	ActionRevert  = "revert"
)

// CloseReason is the state_reason used when a reverted event's issue is
// closed (close_on_revert). "completed", not "not_planned": the issue
// tracked a live provider change and that change has ended, which is a
// resolution; "not_planned" means "won't fix / invalid", and the evidence
// in the issue stays valid.
const CloseReason = "completed"

// RetractedReason is the state_reason when a retracted event's issue is
// closed: its flips proved nondeterministic, so there was no change to
// resolve — GitHub's "not planned".
const RetractedReason = "not_planned"

// Options tune Deliver.
type Options struct {
	// Now is the clock for next_attempt_at and sent_at (tests inject it;
	// nothing ever sleeps). Default: the store's clock.
	Now func() time.Time
	// HTTPClient is used for GitHub calls (default: a fresh client). With
	// GitHub App auth its transport (default http.DefaultTransport) carries
	// the installation token requests too.
	HTTPClient *http.Client
	// Timeout bounds each GitHub call (default 30s).
	Timeout time.Duration
	// Logger receives one line per delivery or failure (default: discard).
	Logger *slog.Logger
	// Getenv reads the token or private key variable (default os.Getenv).
	Getenv func(string) string
	// DryRun, when set, receives what would be sent instead of GitHub
	// calls; nothing is marked sent.
	DryRun io.Writer
	// DryRunDir, when set, receives one markdown file per delivery instead
	// of GitHub calls; nothing is marked sent.
	DryRunDir string
	// ClaimFor is how long a row is claimed while it is being delivered, so
	// two processes sharing a database never send it twice (default 10m).
	// A claim that runs out while its call is still in flight (a hung
	// call, a slow pass) lets another process take the row; the first
	// process then leaves the row to it (see Result.Lost).
	ClaimFor time.Duration
	// Caller names the command delivering ("driftprobe serve",
	// "driftprobe run", "driftprobe outbox --send"; default "driftprobe"):
	// with this process's pid and host it is what the rows and holds
	// record of who met a problem of its own environment or could not
	// reach GitHub (processName).
	Caller string
	// Attended is set when a person runs the pass and reads its Result
	// (outbox --send). A problem of this process's own environment (the
	// credential's variable unset or blank, or holding no usable key) is
	// then reported in Result only: the rows keep what they recorded, since
	// an operator's shell says nothing of the prober's environment. A pass
	// nobody attends (serve's, run's: the rows and the log are all it
	// leaves) records it on every due row, naming the process, the row's
	// own last_error kept after it (envNote).
	Attended bool
}

// Result summarizes one Deliver pass.
type Result struct {
	Sent   int `json:"sent"`   // rows delivered in this pass (posted, or found already on GitHub by their marker)
	Failed int `json:"failed"` // rows whose attempt failed in this pass
	// Deferred counts the rows left for later, not attempted in this
	// pass; with a github block, NotDue, ClaimedElsewhere, HeldBack,
	// Stopped and HeldByGitHub say why and add up to it.
	Deferred int `json:"deferred"`
	// NotDue counts deferred rows whose next attempt time had not come:
	// backing off after a failure of their own, or waiting for the end
	// of a GitHub wait (rate limit, outage) an earlier pass moved them to.
	NotDue int `json:"not_due"`
	// ClaimedElsewhere counts deferred rows another delivery had claimed:
	// being delivered by another process (or waiting for the claim of
	// one that was killed to run out).
	ClaimedElsewhere int `json:"claimed_elsewhere"`
	// HeldBack counts deferred rows behind an earlier row of their event
	// that this pass did not deliver (not due, claimed elsewhere, failed,
	// left after a failure or while a GitHub wait was in force, or made pending
	// again by outbox --unskip): an event's rows go out in order.
	HeldBack int `json:"held_back"`
	// Stopped counts deferred rows that were due but not attempted after a
	// failure stopped the pass: a configuration problem (no token, no
	// permission, an unknown repository), a rate limit or an outage.
	Stopped int `json:"stopped"`
	// HeldByGitHub counts deferred rows that were due but not sent because
	// a GitHub wait recorded earlier (by this process or another; see
	// HeldUntil and HeldKind: a rate limit, an outage's or an unreachable
	// GitHub's backoff) was in force.
	HeldByGitHub int `json:"held_by_github"`
	// Skipped counts rows recorded done without being sent in this pass
	// because their event's open row was skipped (outbox --skip) and the
	// event has no issue on GitHub; Notes says which, and so does each
	// row's last_error.
	Skipped  int `json:"skipped"`
	Rendered int `json:"rendered"` // rows rendered by a dry run
	// Lost counts rows whose claim ran out during this pass and that
	// another process claimed (or recorded) before this pass recorded its
	// outcome: a failure or an interrupted attempt is then left to that
	// process, not recorded over its claim; a delivery is still recorded
	// (and counted in Sent) unless that process recorded the row's
	// delivery first. Notes says which rows and what happened; neither is
	// an error of the pass.
	Lost int `json:"lost"`
	// HeldUntil is set when the pass sent nothing from some point on
	// because a GitHub wait was in force (see github_holds): no request to
	// GitHub before it. HeldKind says what the wait is for: GitHub asked
	// driftprobe to wait (HoldRateLimit), GitHub failing (HoldOutage), or
	// GitHub not reached at all (HoldUnreachable). Errors says why when that
	// kept rows that were due from going out (HeldByGitHub), else Notes.
	HeldUntil *time.Time `json:"held_until,omitempty"`
	HeldKind  string     `json:"held_kind,omitempty"`
	// Errors holds the failures of the pass: each failed attempt, a
	// configuration problem that stopped it, and GitHub's wait when it
	// kept due rows from going out.
	Errors []string `json:"errors"` // nil marshals as null: outbox --json sets []
	Notes  []string `json:"notes"`
}

// Incomplete reports whether the pass failed to deliver what it should
// have: an attempt failed, a failure stopped it (a configuration problem
// included, whatever was due), or a GitHub wait in force kept it from
// sending rows that were due. Rows not due yet, claimed by another
// delivery or held back behind such a row of their event are not: they go
// out when their time comes, and a row's own backoff or GitHub's wait
// was already reported by the pass that met the failure.
func (r *Result) Incomplete() bool {
	return r.Failed > 0 || r.Stopped > 0 || r.HeldByGitHub > 0 || len(r.Errors) > 0
}

// leave counts in r the rows rest, left unattempted in order, by why: a
// row behind an earlier row of its event that the pass did not deliver
// (held, updated here) is held back, one not due at now is not due or
// claimed by another delivery; it returns how many were due, which the
// caller counts by its cause (Stopped, HeldByGitHub).
func (r *Result) leave(rest []row, held map[int64]bool, now time.Time) (due int) {
	for _, x := range rest {
		r.Deferred++
		switch {
		case held[x.EventID]:
			r.HeldBack++
		case notDue(x, now):
			if claimedBy(x.LastError) {
				r.ClaimedElsewhere++
			} else {
				r.NotDue++
			}
		default:
			due++
		}
		held[x.EventID] = true
	}
	return due
}

// notDue reports whether r's next attempt is after now.
func notDue(r row, now time.Time) bool {
	return r.NextAttempt != "" && storage.ParseTime(r.NextAttempt).After(now)
}

// row is one outbox row.
type row struct {
	ID          int64
	EventID     int64
	UpdateID    int64
	Action      string
	CreatedAt   string
	Attempts    int
	NextAttempt string
	LastError   string
}

func pendingRows(ctx context.Context, db *sql.DB) ([]row, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, event_id, update_id, action, created_at, attempts, next_attempt_at, last_error
		FROM outbox WHERE sent_at = '' ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.ID, &r.EventID, &r.UpdateID, &r.Action, &r.CreatedAt, &r.Attempts, &r.NextAttempt, &r.LastError); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// dbError marks an error from our own database (a real error, not a
// delivery failure).
type dbError struct{ err error }

func (e dbError) Error() string { return e.err.Error() }
func (e dbError) Unwrap() error { return e.err }

// deliverer holds one pass's state.
type deliverer struct {
	db     *storage.DB
	cfg    *config.GitHub
	gh     *github.Client
	owner  string
	repo   string
	opts   Options
	log    *slog.Logger
	auth   string                   // who calls GitHub, for messages: "the token in $X" or the app installation
	red    *redactor                // the credentials redacted from every message
	index  map[string]*github.Issue // event fingerprint -> issue, from the label listing (and findRecent)
	listed bool
	seen   map[int]map[int64][]seenComment // issue -> update id -> the comments by driftprobe marked with it
	// authors holds issues' authors (number -> login) and self the logins
	// this pass created issues or comments as: an update marker counts
	// only in a comment by either, so nobody else can silence an update by
	// pasting its (guessable) marker into a comment of their own.
	authors map[int]string
	self    map[string]bool
	// titles holds issues' titles (number -> title) as this pass last saw
	// them on GitHub: created, fetched or edited (the label listing's are
	// in index). ensureState compares with them, so a title already right,
	// an edit whose answer was lost included, is not edited again.
	titles map[int]string
	// labels holds issues' label names (number -> labels) as this pass
	// last saw them on GitHub (created, fetched or edited; the label
	// listing's are in index): ensureState compares the kind label with
	// them.
	labels map[int][]string
	// closed holds whether issues were closed (number -> closed) as this
	// pass last saw them on GitHub (created, fetched or edited; the label
	// listing's are in index): ensureState never edits the state of an
	// issue already closed.
	closed map[int]bool
	// whoami asks GitHub for the login this pass posts as (once, before
	// the first comment listing): its comments from an earlier pass count
	// even on an issue another login opened (a token's, before a switch
	// to a GitHub App). When GitHub does not say, the rule above holds.
	whoami   func(context.Context) (string, error)
	askedWho bool
	// claims holds the next_attempt_at value this pass's claim wrote on
	// each row it claimed: release and fail compare-and-swap on it, so a
	// row another process claimed after this claim ran out is left alone.
	claims map[int64]string
	// recent indexes by marker the issues created since recentSince,
	// labelled or not, listed once for the rows never attempted (see
	// recentIssue); nil until then.
	recent      map[string]*github.Issue
	recentSince time.Time
	// checked holds the mappings on another host that checkMapping found
	// right this pass (event fingerprint -> issue number).
	checked map[string]int
	// unsure is set when a call that creates or edits something on GitHub
	// (an issue, a comment, an edit) was cut off by the pass's own
	// cancellation (a signal): GitHub may still be carrying it out, so
	// the row waits as after a lost answer before it is tried again (see
	// release). Reset for every row.
	unsure bool
	// key names the github_holds this pass obeys and records (its API
	// origin and credential); held is what they said when last read.
	// cleared is set once the pass has deleted the holds that were over
	// (GitHub answered).
	key     holdKey
	held    hold
	cleared bool
	// who names this process (processName): an unreachable GitHub's
	// message says from where it was not reached.
	who string
}

// Deliver sends pending outbox rows to GitHub in order and records the
// outcome of each on its row. Delivery failures are recorded and logged,
// not returned: the error is non-nil only for database errors and a
// cancelled ctx.
func Deliver(ctx context.Context, db *storage.DB, cfg *config.Config, opts Options) (*Result, error) {
	res := &Result{}
	if opts.Now == nil {
		opts.Now = db.Now
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.ClaimFor <= 0 {
		opts.ClaimFor = 10 * time.Minute
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rows, err := pendingRows(ctx, db.SQL())
	if err != nil {
		return res, fmt.Errorf("outbox: %w", err)
	}
	if len(rows) == 0 {
		return res, nil
	}
	if opts.DryRun != nil || opts.DryRunDir != "" {
		var gh *config.GitHub
		if cfg != nil {
			gh = cfg.GitHub
		}
		n, err := renderRows(ctx, db, gh, rows, opts.DryRun, opts.DryRunDir)
		res.Rendered = n
		return res, err
	}
	if cfg == nil || cfg.GitHub == nil {
		res.Deferred = len(rows)
		return res, nil
	}
	g := cfg.GitHub
	now := opts.Now() // which rows are due; claims and retry times read the clock when they happen
	owner, repo, _ := strings.Cut(g.Repo, "/")
	who := processName(opts.Caller)
	client, auth, red, problem, whoami := newClient(g, opts.HTTPClient, opts.Getenv)
	if problem != nil {
		// Nothing is sent: the pass stops before any request.
		log.Warn("github delivery skipped", "reason", problem.msg, "pending", len(rows), "process", who, "own_environment", problem.env)
		switch {
		case problem.env && opts.Attended:
			// An operator's shell without the prober's credential: the
			// rows' errors (GitHub's answers, the prober's own notes)
			// stay what the next reader of `driftprobe outbox` sees.
			res.Notes = append(res.Notes, fmt.Sprintf("the rows keep what they recorded: a problem of the environment of %s only, which says nothing of the prober's (serve and run read their own, and say so on the rows when theirs lacks the credential)", who))
		case problem.env:
			// The prober's own environment: every due row says so, and
			// which process, its own error kept after it.
			if err := noteRows(ctx, db, rows, func(prev string) string { return envNote(who, problem.msg, prev) }, time.Time{}, now); err != nil {
				return res, err
			}
		default:
			// The configuration's (github.base_url): every row says why.
			if err := noteAll(ctx, db, rows, problem.msg, time.Time{}, now); err != nil {
				return res, err
			}
		}
		res.Stopped += res.leave(rows, map[int64]bool{}, now)
		res.Errors = append(res.Errors, problem.msg)
		return res, nil
	}
	d := &deliverer{db: db, cfg: g, gh: client, owner: owner, repo: repo, opts: opts, log: log, auth: auth, red: red,
		index: map[string]*github.Issue{}, seen: map[int]map[int64][]seenComment{}, claims: map[int64]string{},
		authors: map[int]string{}, self: map[string]bool{}, titles: map[int]string{}, labels: map[int][]string{}, closed: map[int]bool{}, whoami: whoami,
		checked: map[string]int{}, key: holdKey{api: originOf(client.BaseURL), credential: credentialKey(g)}, who: who}
	// The wait in force first: while a rate limit, an outage's or an
	// unreachable GitHub's backoff recorded by an earlier pass (or another
	// process) lasts, nothing is sent at all, whatever row is due; the rows
	// say why.
	if d.held, err = readHold(ctx, db, d.key); err != nil {
		return res, err
	}
	if d.held.active(now) {
		if err := noteAll(ctx, db, rows, "not attempted: "+d.held.reason, d.held.until, now); err != nil {
			return res, err
		}
		d.deferred(res, rows, map[int64]bool{}, now)
		return res, nil
	}
	lost := func(r row, what string) {
		note := fmt.Sprintf("outbox %d (event %d, %s): %s", r.ID, r.EventID, r.Action, what)
		res.Lost++
		res.Notes = append(res.Notes, note)
		log.Warn("github delivery outcome left to another process", "outbox", r.ID, "event", r.EventID, "action", r.Action, "note", what)
	}

	held := map[int64]bool{} // events with an earlier row not delivered
	for i, r := range rows {
		if held[r.EventID] || notDue(r, now) {
			res.leave(rows[i:i+1], held, now)
			continue
		}
		claimedAt := d.opts.Now()
		if i > 0 {
			// Another process sharing the database may have met a rate
			// limit or an outage since this pass began.
			if d.held, err = readHold(ctx, db, d.key); err != nil {
				return res, err
			}
			if d.held.active(claimedAt) {
				d.deferred(res, rows[i:], held, now)
				break
			}
		}
		ok, err := d.claim(ctx, r, claimedAt)
		if err != nil {
			return res, err
		}
		if !ok { // another process has it, or an earlier row of its event is pending again (Unskip)
			behind, err := earlierPending(ctx, db, r)
			if err != nil {
				return res, err
			}
			held[r.EventID] = true
			res.Deferred++
			if behind != 0 {
				res.HeldBack++
			} else {
				res.ClaimedElsewhere++
			}
			continue
		}
		d.unsure = false
		err = d.deliver(ctx, r)
		if err == nil {
			out, err := d.markSent(ctx, r)
			if err != nil {
				return res, err
			}
			if err := d.answered(ctx); err != nil {
				return res, err
			}
			res.Sent++
			switch out {
			case sentOverClaim:
				lost(r, "delivered after this pass's claim on the row ran out and another process took the row over; the delivery is recorded")
			case sentBefore:
				lost(r, "delivered after this pass's claim on the row ran out; another process had already recorded the row's delivery, which is kept")
			}
			continue
		}
		var dbe dbError
		if errors.As(err, &dbe) {
			if kept, rerr := d.release(context.WithoutCancel(ctx), r, claimedAt); rerr == nil && !kept {
				lost(r, "interrupted by a database error after this pass's claim on the row ran out and another process took the row over; the row is left to it")
			}
			return res, err
		}
		if ctx.Err() != nil {
			if d.unsure {
				log.Warn("github delivery interrupted while a call was in flight: the row waits before it is tried again", "outbox", r.ID, "event", r.EventID, "action", r.Action)
			}
			if kept, rerr := d.release(context.WithoutCancel(ctx), r, claimedAt); rerr == nil && !kept {
				lost(r, "interrupted after this pass's claim on the row ran out and another process took the row over; the row is left to it")
			}
			return res, ctx.Err()
		}
		var se *skippedIssueError
		lostMsg := "held back behind an earlier row of its event made pending again (outbox --unskip), after this pass's claim on the row ran out and another process took the row over; the row is left to it"
		if errors.As(err, &se) {
			recorded, merr := d.markSkipped(ctx, r, se)
			if merr != nil {
				return res, merr
			}
			if recorded {
				res.Skipped++
				res.Notes = append(res.Notes, fmt.Sprintf("outbox %d (event %d, %s): %s", r.ID, r.EventID, r.Action, se.Error()))
				log.Info("github delivery skipped: the event's issue was skipped", "outbox", r.ID, "event", r.EventID, "action", r.Action, "open_row", se.open)
				continue
			}
			// Another process took the row over (release finds its claim
			// gone), or the open row was made pending again (Unskip) since
			// ensureIssue read it skipped: the row then waits behind it.
			err = &heldBackError{behind: se.open}
			lostMsg = "found its event's issue skipped after this pass's claim on the row ran out and another process took the row over; the row is left to it"
		}
		var hb *heldBackError
		if errors.As(err, &hb) {
			kept, rerr := d.release(context.WithoutCancel(ctx), r, claimedAt)
			if rerr != nil {
				return res, rerr
			}
			if !kept {
				lost(r, lostMsg)
				continue
			}
			held[r.EventID] = true
			res.Deferred++
			res.HeldBack++
			res.Notes = append(res.Notes, fmt.Sprintf("outbox %d (event %d, %s): %s", r.ID, r.EventID, r.Action, hb.Error()))
			log.Info("github delivery held back: an earlier row of the event is pending again", "outbox", r.ID, "event", r.EventID, "action", r.Action, "behind", hb.behind)
			continue
		}
		// Retry times count from the failure, not from the start of the
		// pass: a call that timed out after 30s still waits its backoff.
		var le *lockedError
		if errors.As(err, &le) {
			le.row = r.ID // its message says how to skip it
		}
		failedAt := d.opts.Now()
		f := d.classify(err, r.Attempts+1, failedAt)
		f.msg = d.red.redact(f.msg)
		held[r.EventID] = true
		recorded, err := d.fail(ctx, r, f)
		if err != nil {
			return res, err
		}
		if f.global {
			// GitHub's wait applies to every row, later passes' and other
			// processes' included, whatever happened to this row's record.
			if err := writeHold(ctx, db, d.key, f, failedAt); err != nil {
				return res, err
			}
		} else if err := d.answered(ctx); err != nil {
			return res, err
		}
		if recorded {
			res.Failed++
			res.Errors = append(res.Errors, fmt.Sprintf("outbox %d (event %d, %s): %s", r.ID, r.EventID, r.Action, f.msg))
			logArgs := []any{"outbox", r.ID, "event", r.EventID, "action", r.Action, "attempts", r.Attempts + 1, "error", f.msg}
			if !f.until.IsZero() {
				logArgs = append(logArgs, "retry_at", ts(f.until))
			}
			log.Warn("github delivery failed", logArgs...)
		} else {
			lost(r, "failed after this pass's claim on the row ran out and another process took the row over; the failure is not recorded, the row is left to it: "+f.msg)
		}
		if f.global {
			// GitHub is down, rate limited or refusing us: defer everything
			// else instead of hitting it again in this pass. Every pending
			// row waits for GitHub's end, rows that were already waiting
			// for less and rows queued since this pass read the outbox
			// included (the hold keeps every pass from sending anyway;
			// this makes each row, and `driftprobe outbox`, say so).
			all, err := pendingRows(context.WithoutCancel(ctx), db.SQL())
			if err != nil {
				return res, fmt.Errorf("outbox: %w", err)
			}
			all = slices.DeleteFunc(all, func(x row) bool { return x.ID == r.ID }) // recorded by fail, or another process's
			if err := noteAll(ctx, db, all, "not attempted: "+f.msg, f.until, failedAt); err != nil {
				return res, err
			}
			res.Stopped += res.leave(rows[i+1:], held, now)
			break
		}
	}
	return res, nil
}

// claim takes a row for delivery: a compare-and-swap on next_attempt_at.
// The claim runs ClaimFor from now, the clock read at the claim (not the
// start of the pass: after slow calls earlier in the pass, a claim counted
// from the start could already have run out while the row is sent). The
// value written is remembered: it is this pass's claim, which release and
// fail compare-and-swap on. It cannot be mistaken for another process's
// claim: a row is claimed again only once the earlier claim has run out,
// so every later claim ends strictly after it.
//
// A row with a last_error (an earlier attempt failed, or a pass noted why
// it was not attempted) keeps it behind claimMark while claimed: the claim
// is then told from a row waiting on that error (Pending, noteAll), and
// the error is still there (Pending shows it). A row without one keeps
// none: a wait with no error is a claim already. Every outcome the pass
// records replaces the mark, and release takes it off.
//
// A row is claimed only while no earlier row of its event is pending: the
// event's rows go out in order. Within a pass that already holds (a row
// held behind an earlier one never reaches its claim); the check in the
// same statement covers an earlier row made pending again after the pass
// read the outbox (outbox --unskip), which is then delivered first, by
// the next pass.
func (d *deliverer) claim(ctx context.Context, r row, now time.Time) (bool, error) {
	until := ts(now.Add(d.opts.ClaimFor))
	res, err := d.db.SQL().ExecContext(ctx, `UPDATE outbox SET next_attempt_at = ?,
		last_error = CASE WHEN last_error = '' THEN '' ELSE ? || `+unmarkedSQL+` END
		WHERE id = ? AND sent_at = '' AND next_attempt_at = ?
		AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.sent_at = '' AND e.id < ? AND e.event_id = ?)`,
		until, claimMark, r.ID, r.NextAttempt, r.ID, r.EventID)
	if err != nil {
		return false, fmt.Errorf("outbox claim: %w", err)
	}
	n, _ := res.RowsAffected()
	if n != 1 {
		return false, nil
	}
	d.claims[r.ID] = until
	return true, nil
}

// claimMark starts a pending row's last_error while a delivery has the
// row claimed (claim): what follows it is the row's earlier last_error.
// It stays when the deliverer is killed; the row is then due again once
// the claim has run out, and the next claim, outcome or note replaces it.
const claimMark = "[being delivered] "

// unmarkedSQL is the SQL expression for last_error without claimMark.
var unmarkedSQL = fmt.Sprintf(`(CASE WHEN substr(last_error, 1, %d) = '%s' THEN substr(last_error, %d) ELSE last_error END)`,
	len(claimMark), claimMark, len(claimMark)+1)

// unmarked splits a pending row's stored last_error into the row's own
// last_error and whether a claim marked it (claimMark).
func unmarked(lastError string) (string, bool) {
	return strings.CutPrefix(lastError, claimMark)
}

// claimedBy reports whether a pending row whose next attempt is after
// now, with lastError stored, is held by a delivery's claim rather than
// waiting on an error or a note: its last_error is empty (claimed before
// any failure) or marked (claimMark). A claim an older driftprobe took on
// a row with an error carries no mark and reads as that error's wait.
func claimedBy(lastError string) bool {
	_, marked := unmarked(lastError)
	return lastError == "" || marked
}

// release undoes the claim taken at claimedAt (an interrupted pass: ctx
// cancelled, or a database error). It never puts back an empty
// next_attempt_at: the interrupted attempt may have sent a create whose
// answer, or the recording of it, was lost, and attempted must tell the
// next pass so: that pass then lists the issues created since the row was
// queued in a listing made for this row, when the row is delivered (not
// the pass's one listing, recentIssue, made earlier for the rows never
// attempted), so it never opens a second issue next to one GitHub created
// without its labels.
//
// When nothing was in flight (d.unsure unset: the pass stopped between
// calls, or a call's outcome is known and only its recording failed), the
// row is due at once: a first attempt is released to its claim time
// (already past), a row that was already waiting keeps its time, and its
// last_error is what it was before the claim (claimMark taken off). When a
// call creating or editing something was cut off in flight (d.unsure),
// GitHub may still be carrying it out: an immediate retry would look for
// its issue or comment by marker before GitHub made it, find nothing and
// send it a second time. Such a row waits as after a lost answer (the
// backoff of its next attempt, at least the per-call timeout), with
// last_error saying so; its next attempt then finds what the cut-off
// call made by its marker (attempted, findRecent, the comment check).
//
// The release is a compare-and-swap on this pass's claim: when the claim
// ran out and another process claimed the row (or recorded an outcome),
// the row is that process's and is left alone (held is false). Its
// next_attempt_at is then non-empty or the row is sent, so the "attempted"
// signal survives either way.
func (d *deliverer) release(ctx context.Context, r row, claimedAt time.Time) (held bool, err error) {
	next := r.NextAttempt
	if next == "" {
		next = ts(claimedAt)
	}
	q, args := `UPDATE outbox SET next_attempt_at = ?, last_error = `+unmarkedSQL+` WHERE id = ? AND sent_at = '' AND next_attempt_at = ?`, []any{next, r.ID, d.claims[r.ID]}
	if d.unsure {
		now := d.opts.Now()
		until := now.Add(max(backoff(r.Attempts+1), d.opts.Timeout))
		if storage.ParseTime(next).Before(until) {
			next = ts(until)
		}
		msg := fmt.Sprintf("interrupted at %s while a call creating or editing on GitHub was in flight: GitHub may still carry it out, so the row waits as after a lost answer, then looks for what that call made (by its marker) before sending anything again", ts(now))
		q, args = `UPDATE outbox SET next_attempt_at = ?, last_error = ? WHERE id = ? AND sent_at = '' AND next_attempt_at = ?`, []any{next, msg, r.ID, d.claims[r.ID]}
	}
	res, err := d.db.SQL().ExecContext(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("outbox release: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// sentOutcome says how markSent found the row.
type sentOutcome int

const (
	sentClaimed   sentOutcome = iota // the row still held this pass's claim
	sentOverClaim                    // another process had claimed (or failed) the row since; the delivery is recorded over it
	sentBefore                       // another process had already recorded the row sent; its record is kept
)

// markSent records the row delivered. The delivery happened, so it is
// recorded even when this pass's claim ran out and another process has
// claimed the row since: a pending row whose issue or comment exists on
// GitHub is worth less than a sent one, and that process loses nothing by
// it (its own markSent finds the row sent and keeps this record; its fail
// and release find their claim gone and leave the row). What it never does
// is record over a row already marked sent: the first recorded delivery
// (its sent_at, its attempts) stands, so a late pass neither moves the
// delivery time nor counts an attempt twice.
func (d *deliverer) markSent(ctx context.Context, r row) (sentOutcome, error) {
	ctx = context.WithoutCancel(ctx)
	const q = `UPDATE outbox SET sent_at = ?, attempts = attempts + 1, last_error = '', next_attempt_at = '' WHERE id = ? AND sent_at = ''`
	now := ts(d.opts.Now())
	res, err := d.db.SQL().ExecContext(ctx, q+` AND next_attempt_at = ?`, now, r.ID, d.claims[r.ID])
	if err != nil {
		return 0, fmt.Errorf("outbox mark sent: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return sentClaimed, nil
	}
	if res, err = d.db.SQL().ExecContext(ctx, q, now, r.ID); err != nil {
		return 0, fmt.Errorf("outbox mark sent: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return sentOverClaim, nil
	}
	return sentBefore, nil
}

// markSkipped records the row done without sending it (its event's issue
// was skipped, see skippedIssueError), se's note as its last error, as
// Skip does (no attempt counted): a compare-and-swap on this pass's claim,
// so a row another process took over since is left to it, and on the
// event's open row still being skipped, in the same statement, so a row
// whose open row the operator made pending again meanwhile (Unskip) is
// never recorded skipped after Unskip looked for such rows (recorded is
// false in both cases; release tells them apart).
func (d *deliverer) markSkipped(ctx context.Context, r row, se *skippedIssueError) (recorded bool, err error) {
	res, err := d.db.SQL().ExecContext(context.WithoutCancel(ctx), `UPDATE outbox SET sent_at = ?, last_error = ?, next_attempt_at = '' WHERE id = ? AND sent_at = '' AND next_attempt_at = ?
		AND EXISTS (SELECT 1 FROM outbox o WHERE o.id = ? AND o.sent_at != '' AND o.last_error IN (?, ?))`,
		ts(d.opts.Now()), se.Error(), r.ID, d.claims[r.ID], se.open, SkipNote, skipNoteClaimed)
	if err != nil {
		return false, fmt.Errorf("outbox record skip: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// fail records a failed attempt: a compare-and-swap on this pass's claim.
// When the claim ran out and another process claimed the row, nothing is
// recorded (recorded is false): resetting next_attempt_at would end that
// process's claim and let a third pass send the row while it is in flight;
// the row's outcome is that process's to record.
func (d *deliverer) fail(ctx context.Context, r row, f failure) (recorded bool, err error) {
	next := ""
	if !f.until.IsZero() {
		next = ts(f.until)
	}
	res, err := d.db.SQL().ExecContext(context.WithoutCancel(ctx), `UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ? AND sent_at = '' AND next_attempt_at = ?`,
		d.red.redact(f.msg), next, r.ID, d.claims[r.ID])
	if err != nil {
		return false, fmt.Errorf("outbox record failure: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// noteAll records msg on rows without counting an attempt; until, when
// set, becomes their next attempt time unless they already wait longer:
// a global failure's wait (a rate limit, an outage) holds every row, a
// row that was already waiting for less included, so that no row is tried
// inside the window GitHub declared (the pass's hold, github_holds, keeps
// every pass from sending then anyway; the rows say so).
//
// rows are a snapshot, taken at or before now, of rows the caller has not
// claimed. Each update is a compare-and-swap on the snapshot's
// next_attempt_at: a row another process claimed (or recorded) since is
// left alone, so its live claim is never overwritten with an older value,
// an empty one included. A row not due at now is moved only when it waits
// on a recorded outcome (it has a last_error) for less than until, and
// keeps that last_error (a locked issue's says what to do, which "not
// attempted" would hide; only its next attempt moves) unless it is an
// earlier pass's "not attempted" note; one
// with none, or whose last_error carries claimMark, is being delivered by
// another process (its claim, as Pending reads it), whose outcome must
// still find its claim (and whose next request checks the hold first).
// Only a retry in flight under an older driftprobe's claim (a claimed row
// with an earlier error, unmarked) cannot be told from a waiting row:
// moving it leaves that process's outcome to the row's next attempt, as
// for any claim that ran out (Result.Lost): a delivery is still recorded,
// a failure is not, and the row waits for until and then looks for what
// that call made by its marker before sending anything. A due row whose
// last_error carries claimMark (its deliverer was killed, the claim ran
// out) gets msg, like any due row.
func noteAll(ctx context.Context, db *storage.DB, rows []row, msg string, until, now time.Time) error {
	return noteRows(ctx, db, rows, func(string) string { return msg }, until, now)
}

// noteRows is noteAll with each row's note made from its stored
// last_error (envNote keeps it).
func noteRows(ctx context.Context, db *storage.DB, rows []row, noteOf func(lastError string) string, until, now time.Time) error {
	return db.Tx(context.WithoutCancel(ctx), func(tx *sql.Tx) error {
		for _, r := range rows {
			next := r.NextAttempt
			var note string
			if next != "" && storage.ParseTime(next).After(now) {
				if until.IsZero() || !storage.ParseTime(next).Before(until) || claimedBy(r.LastError) {
					continue
				}
				if !strings.HasPrefix(r.LastError, "not attempted: ") {
					note = r.LastError // waiting on its own failure: only its wait moves
				}
			}
			if note == "" {
				note = noteOf(r.LastError)
			}
			if !until.IsZero() && (next == "" || storage.ParseTime(next).Before(until)) {
				next = ts(until)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE outbox SET last_error = ?, next_attempt_at = ? WHERE id = ? AND sent_at = '' AND next_attempt_at = ?`, note, next, r.ID, r.NextAttempt); err != nil {
				return fmt.Errorf("outbox note: %w", err)
			}
		}
		return nil
	})
}

// envNotePrefix starts the note a pass records on a due row when its own
// environment lacks the GitHub credential (envNote); envNoteBefore
// introduces the row's own last_error, kept after it.
const (
	envNotePrefix = "not attempted by "
	envNoteBefore = "; before: "
)

// envNote is what an unattended pass (serve's, run's) whose own
// environment lacks the GitHub credential (problem) records on a due row
// whose stored last_error is prev: the process (who) and the problem,
// then the row's own error, kept. A note an earlier such pass left is
// replaced, its kept error carried over, so notes never pile up.
func envNote(who, problem, prev string) string {
	prev, _ = unmarked(prev)
	if strings.HasPrefix(prev, envNotePrefix) {
		// who and problem are driftprobe's own words, never envNoteBefore:
		// the first one is the earlier note's.
		_, prev, _ = strings.Cut(prev, envNoteBefore)
	}
	note := envNotePrefix + who + ", whose environment has no usable GitHub credential: " + problem
	if prev != "" {
		note += envNoteBefore + prev
	}
	return note
}

// processName names this process for what rows and holds record of it:
// the command (caller, default "driftprobe"), its pid and its host.
func processName(caller string) string {
	if caller == "" {
		caller = "driftprobe"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown host"
	}
	return fmt.Sprintf("%s (pid %d on %s)", caller, os.Getpid(), host)
}

// deferred records in res that the pass sends nothing more because a
// GitHub wait is in force (d.held: GitHub asked to wait, or driftprobe
// backs off from an outage or an unreachable GitHub, worded by its kind),
// the rows rest left (counted as leave does, held the events already held
// back; the due ones in HeldByGitHub), and logs it. The wait is an error
// of the pass only when it kept due rows from going out; else (every row
// waits anyway: on its own failure, or on the wait's end, where the pass
// that met the failure moved it) a note.
func (d *deliverer) deferred(res *Result, rest []row, held map[int64]bool, now time.Time) {
	until := d.held.until
	res.HeldUntil = &until
	res.HeldKind = d.held.kind
	due := res.leave(rest, held, now)
	res.HeldByGitHub += due
	phrase := HoldPhrase(d.held.kind)
	msg := fmt.Sprintf("%s: no request before %s (%s); %d row(s) left queued", phrase, ts(until), d.held.reason, len(rest))
	if due > 0 {
		res.Errors = append(res.Errors, fmt.Sprintf("%s, %d of them due", msg, due))
	} else {
		res.Notes = append(res.Notes, msg+", none of them due yet")
	}
	d.log.Info("github delivery deferred: "+phrase, "kind", d.held.kind, "until", ts(until), "reason", d.held.reason, "deferred", len(rest), "due", due)
}

// answered deletes, once per pass, the holds of d.key that are over: a
// call GitHub answered with anything but an outage or a rate limit ends
// their spell, so the next one backs off from its first step.
func (d *deliverer) answered(ctx context.Context) error {
	if d.cleared || d.held.until.IsZero() && d.held.failures == 0 {
		return nil
	}
	d.cleared = true
	return clearHolds(ctx, d.db, d.key, d.opts.Now())
}

// minSecret is the shortest credential redacted, as for provider keys
// (probes/wire): a shorter one is no real GitHub credential, and replacing
// every such substring would mangle the messages ("tok" inside "token").
const minSecret = 4

func redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if len(secret) >= minSecret {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// redactor holds the credentials kept out of every message: the
// configured token or private key, and every credential an Authorization
// header carried (see authRecorder). Safe for concurrent use.
type redactor struct {
	mu      sync.Mutex
	secrets []string // longest first, so no secret is half-replaced by a shorter one inside it
}

// credentialHook, when set (SetCredentialHook), is told every credential
// a redactor registers.
var credentialHook atomic.Pointer[func(string)]

// SetCredentialHook has f told every credential delivery registers for
// redaction (the configured token or private key, each JWT and
// installation token an Authorization header carries), as it is
// registered: the process's other redaction learns them too (the
// standard library's logger, to which net/http writes the bytes a server
// sent past its Content-Length). nil stops it.
func SetCredentialHook(f func(string)) {
	if f == nil {
		credentialHook.Store(nil)
		return
	}
	credentialHook.Store(&f)
}

// add registers secrets (empty ones and repeats are ignored).
func (r *redactor) add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hook := credentialHook.Load()
	for _, s := range secrets {
		if s != "" && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
			if hook != nil {
				(*hook)(s)
			}
		}
	}
	slices.SortStableFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
}

// redact replaces every registered secret in s with [redacted].
func (r *redactor) redact(s string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return redact(s, r.secrets...)
}

// authRecorder registers the credential of every request's Authorization
// header with red before the request is sent: whatever goes out (an
// installation token as ghinstallation fetches or refreshes it, the app
// JWT it signs, a token) is redacted from anything GitHub echoes of it.
// It is also the last line of the origin rule (see apiOrigin): a request
// carrying credentials to another origin than the API root's is refused,
// not sent, whichever client or redirect made it.
type authRecorder struct {
	next http.RoundTripper
	red  *redactor
	api  *apiOrigin
}

func (t authRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	for hops := 0; ; hops++ {
		if h := req.Header.Get("Authorization"); h != "" {
			t.red.add(credential(h))
			if !t.api.allows(req.URL) {
				if req.Body != nil {
					_ = req.Body.Close() // a RoundTripper closes the body, even on error
				}
				return nil, &originError{root: t.api.String(), to: originOf(req.URL)}
			}
		}
		resp, err := t.next.RoundTrip(req)
		if err != nil || hops >= maxRepeats {
			return resp, err
		}
		again, ok := t.repeat(req, resp)
		if !ok {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		req = again
	}
}

// maxRepeats bounds the writes repeated after a redirect (repeat), as
// net/http bounds the redirects it follows.
const maxRepeats = 10

// repeat returns req to send again, verbatim, at the address resp
// redirected it to, when req is a write (not a GET or HEAD) that GitHub
// answered 301 or 302 within the API root's origin: GitHub moves an issue
// transferred to another repository (and a renamed repository's paths)
// with 301 Moved Permanently, writes included, and its documentation asks
// that a redirected request be repeated verbatim. net/http would instead
// follow a 301 or 302 after a POST or PATCH with a GET of the new address
// (a comment's POST reading the comments, an edit's PATCH reading the
// issue and taken for the edit done). A 307 or 308 net/http repeats
// itself; a 303 asks for a GET; a redirect to another origin is left to
// the client, which refuses it (apiOrigin.checkRedirect).
func (t authRecorder) repeat(req *http.Request, resp *http.Response) (*http.Request, bool) {
	if req.Method == http.MethodGet || req.Method == http.MethodHead ||
		(resp.StatusCode != http.StatusMovedPermanently && resp.StatusCode != http.StatusFound) {
		return nil, false
	}
	loc, err := resp.Location()
	if err != nil || !t.api.allows(loc) {
		return nil, false
	}
	again := req.Clone(req.Context())
	again.URL, again.Host = loc, ""
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, false // the body cannot be sent again: the client decides
		}
		body, err := req.GetBody()
		if err != nil {
			return nil, false
		}
		again.Body = body
	}
	return again, true
}

// apiOrigin is the origin (scheme, host and port) of the configured GitHub
// API root, the only one driftprobe sends credentials to. go-github's
// WithAuthToken and ghinstallation add the Authorization header in their
// transports, on every request a client sends, a followed redirect's
// included: net/http's rule of dropping it on a redirect to another host
// never applies to them. So a redirect to another origin (another host, a
// port, http after https) is not followed (checkRedirect), and
// authRecorder refuses any credentialed request to another origin. GitHub
// redirects within its API root (a renamed repository's 301 to
// /repositories/ID/...), which is still followed.
type apiOrigin struct {
	root *url.URL // set by newClient once the API root is known; nil allows nothing
}

func (o *apiOrigin) String() string {
	if o == nil || o.root == nil {
		return "(no GitHub API root)"
	}
	return originOf(o.root)
}

// allows reports whether u is on the API root's origin.
func (o *apiOrigin) allows(u *url.URL) bool {
	return o != nil && o.root != nil && u != nil && originOf(u) == originOf(o.root)
}

// checkRedirect is the CheckRedirect of every client that carries
// credentials: a redirect to another origin than the API root's is not
// followed (the call fails with an *originError, nothing is sent there);
// one within it is left to next (the caller's policy), else to net/http's
// default one (at most 10).
func (o *apiOrigin) checkRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if !o.allows(req.URL) {
			return &originError{root: o.String(), to: originOf(req.URL), redirect: true}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// originOf returns u's origin, scheme://host:port, the port made explicit
// (80 for http, 443 for https) and the scheme and host lower-cased.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// originError is a call refused because it would have sent driftprobe's
// credentials to another origin than the GitHub API root's: GitHub (or
// whatever answers at github.base_url: a proxy, an SSO gateway) redirected
// there (redirect), or a request was addressed there.
type originError struct {
	root, to string
	redirect bool
}

func (e *originError) Error() string {
	if e.redirect {
		return fmt.Sprintf("the GitHub API at %s redirected to %s, another origin: not followed, so the GitHub credentials are not sent there; set github.base_url to the API root itself (GitHub Enterprise: https://HOST/api/v3)", e.root, e.to)
	}
	return fmt.Sprintf("refused to send the GitHub credentials to %s: not the GitHub API root's origin %s (github.base_url)", e.to, e.root)
}

// credential returns the secret part of an Authorization value: what
// follows the scheme ("Bearer", "token"), or the whole value without one.
func credential(h string) string {
	h = strings.TrimSpace(h)
	if _, cred, ok := strings.Cut(h, " "); ok && strings.TrimSpace(cred) != "" {
		return strings.TrimSpace(cred)
	}
	return h
}

// setupProblem is what stops a pass before any request to GitHub.
type setupProblem struct {
	msg string
	// env is set for a problem of this process's own environment: the
	// credential's variable (github.token_env, github.private_key_env)
	// unset, blank, or holding no usable key. Another process on the same
	// database (serve, with its own environment) need not share it, so it
	// never replaces what a row recorded (see Options.Attended, envNote).
	// Unset: the configuration's (github.base_url), every process's.
	env bool
}

// newClient builds the GitHub client for g's auth mode. It returns the
// client delivery calls GitHub with, who authenticates (for messages), the
// redactor holding the secrets to keep out of every message (the
// configured token or key now, each credential as it is sent), whoami,
// which asks GitHub for the login the client posts as, and, instead of a
// client, the problem that stops the pass (nil if none).
func newClient(g *config.GitHub, hc *http.Client, getenv func(string) string) (client *github.Client, auth string, red *redactor, problem *setupProblem, whoami func(context.Context) (string, error)) {
	envProblem := func(format string, args ...any) *setupProblem {
		return &setupProblem{msg: fmt.Sprintf(format, args...), env: true}
	}
	red = &redactor{}
	if hc == nil {
		hc = &http.Client{}
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	// Every request, the installation token requests included, goes out
	// through the recorder, which sends credentials to the API root's
	// origin only; no client follows a redirect off it.
	api := &apiOrigin{}
	rec := authRecorder{next: base, red: red, api: api}
	var itr *ghinstallation.Transport
	var appKey string
	if g.AppAuth() {
		auth = fmt.Sprintf("GitHub App installation %d (app_id %d)", g.InstallationID, g.AppID)
		raw := getenv(g.PrivateKeyEnv)
		if raw == "" {
			return nil, auth, red, envProblem("GitHub App private key missing: environment variable %s (github.private_key_env) is not set", g.PrivateKeyEnv), nil
		}
		// Without surrounding white space (see the token below): a
		// one-line key read from a file ends in a real newline, which
		// must not stop the literal \n from being taken for line breaks.
		key := strings.TrimSpace(raw)
		if key == "" {
			return nil, auth, red, envProblem("GitHub App private key missing: environment variable %s (github.private_key_env) holds only white space", g.PrivateKeyEnv), nil
		}
		red.add(key)
		if !strings.Contains(key, "\n") && strings.Contains(key, `\n`) {
			// A PEM squeezed onto one line with literal \n (env files, CI secrets).
			key = strings.ReplaceAll(key, `\n`, "\n")
			red.add(key)
		}
		// Neither message quotes the parser's error: nothing of the key
		// may reach a row or a log.
		if blk, _ := pem.Decode([]byte(key)); blk == nil {
			return nil, auth, red, envProblem("GitHub App private key invalid: environment variable %s (github.private_key_env) does not hold a PEM-encoded private key (-----BEGIN RSA PRIVATE KEY-----)", g.PrivateKeyEnv), nil
		}
		var err error
		appKey = key
		if itr, err = ghinstallation.New(rec, g.AppID, g.InstallationID, []byte(key)); err != nil {
			return nil, auth, red, envProblem("GitHub App private key invalid: the PEM in environment variable %s (github.private_key_env) is not an RSA private key (PKCS#1 or PKCS#8)", g.PrivateKeyEnv), nil
		}
		// The token requests' own client (ghinstallation may send them
		// through it) follows the same rule.
		itr.Client = &http.Client{Transport: rec, Timeout: hc.Timeout, CheckRedirect: api.checkRedirect(nil)}
		hc2 := *hc
		hc2.Transport = itr
		hc2.CheckRedirect = api.checkRedirect(hc.CheckRedirect)
		client = github.NewClient(&hc2)
	} else {
		auth = "the token in $" + g.TokenEnv
		raw := getenv(g.TokenEnv)
		if raw == "" {
			return nil, auth, red, envProblem("GitHub token missing: environment variable %s (github.token_env) is not set", g.TokenEnv), nil
		}
		// Without surrounding white space, like a provider key
		// (config.Target.Key): a token read from a file (a Kubernetes
		// secret made with --from-file) ends in a newline, which no
		// header can carry. The trimmed token is what is sent, so it is
		// what is redacted (it is inside the raw value too).
		token := strings.TrimSpace(raw)
		if token == "" {
			return nil, auth, red, envProblem("GitHub token missing: environment variable %s (github.token_env) holds only white space", g.TokenEnv), nil
		}
		red.add(token)
		hc2 := *hc
		hc2.Transport = rec
		hc2.CheckRedirect = api.checkRedirect(hc.CheckRedirect)
		client = github.NewClient(&hc2).WithAuthToken(token)
	}
	if g.BaseURL != "" {
		var err error
		if client, err = client.WithEnterpriseURLs(g.BaseURL, g.BaseURL); err != nil {
			return nil, auth, red, &setupProblem{msg: red.redact(fmt.Sprintf("github.base_url %q: %v", g.BaseURL, err))}, nil
		}
		if itr != nil {
			// Installation tokens come from the same API root:
			// https://host/api/v3, without the trailing slash.
			itr.BaseURL = strings.TrimSuffix(client.BaseURL.String(), "/")
		}
	}
	api.root = client.BaseURL
	if itr != nil {
		atr, err := ghinstallation.NewAppsTransport(rec, g.AppID, []byte(appKey))
		if err == nil {
			atr.BaseURL = itr.BaseURL
			appClient := github.NewClient(&http.Client{Transport: atr, Timeout: hc.Timeout, CheckRedirect: api.checkRedirect(hc.CheckRedirect)})
			appClient.BaseURL = client.BaseURL
			whoami = func(ctx context.Context) (string, error) {
				app, _, err := appClient.Apps.Get(ctx, "")
				if err != nil || app.GetSlug() == "" {
					return "", err
				}
				return app.GetSlug() + "[bot]", nil // how GitHub names an app's comments
			}
		}
	} else {
		whoami = func(ctx context.Context) (string, error) {
			u, _, err := client.Users.Get(ctx, "")
			return u.GetLogin(), err
		}
	}
	return client, auth, red, nil, whoami
}

// call bounds one GitHub call by the per-call timeout. A call that timed
// out before any connection to the API root was made (GitHub's or the
// installation token's: a firewall dropping packets, a DNS server that
// does not answer, a TLS handshake that never ends) fails with a
// *noConnError: GitHub was not reached, which classify words as such, not
// as GitHub answering nothing in time.
func (d *deliverer) call(ctx context.Context, fn func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	var connected atomic.Bool
	cctx = httptrace.WithClientTrace(cctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }})
	err := fn(cctx)
	if err != nil && ctx.Err() == nil && !connected.Load() && isTimeout(err) {
		return &noConnError{err: err}
	}
	return err
}

// isTimeout reports whether err is a call's timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// noConnError is a call that timed out without a connection to GitHub.
type noConnError struct{ err error }

func (e *noConnError) Error() string { return e.err.Error() }
func (e *noConnError) Unwrap() error { return e.err }

// send is call for a call that creates or edits something on GitHub. When
// the pass's own context ends while it is in flight (a signal), its
// outcome is unknown: GitHub may have received it and still carry it out.
// d.unsure then makes the row wait before its next attempt (release).
func (d *deliverer) send(ctx context.Context, fn func(ctx context.Context) error) error {
	err := d.call(ctx, fn)
	if err != nil && ctx.Err() != nil {
		d.unsure = true
	}
	return err
}

func (d *deliverer) deliver(ctx context.Context, r row) error {
	ev, err := diff.GetEvent(ctx, d.db, r.EventID)
	if err != nil {
		return dbError{err}
	}
	ev2, err := LoadEvidence(ctx, d.db, ev)
	if err != nil {
		return dbError{err}
	}
	num, err := d.ensureIssue(ctx, r, ev, ev2)
	if err != nil {
		return err
	}
	if r.Action == ActionOpen {
		return nil
	}
	var upd *diff.EventUpdate
	for i := range ev.Updates {
		if ev.Updates[i].ID == r.UpdateID {
			upd = &ev.Updates[i]
		}
	}
	if upd == nil {
		return dbError{fmt.Errorf("outbox %d: update %d of event %d: %w", r.ID, r.UpdateID, r.EventID, storage.ErrNotFound)}
	}
	closing := r.Action == ActionRevert && d.cfg.CloseOnRevert
	if closing {
		// An issue already closed keeps its state and reason: a person
		// closed it (as not planned, say), or an earlier close of this
		// row's went through with its answer lost. The comment then
		// says nothing of closing it.
		closed, err := d.issueClosed(ctx, num)
		if err != nil {
			return d.issueErr(ctx, ev, err)
		}
		if closed {
			d.log.Info("github issue already closed; its state is kept", "event", ev.ID, "issue", num)
			closing = false
		}
	}
	if err := d.ensureComment(ctx, r, num, ev, *upd, ev2, closing); err != nil {
		return err
	}
	// The update may have changed what the title says (categories, kind,
	// direction, probe count, status) and the kind label; a revert with
	// close_on_revert closes the issue.
	return d.ensureState(ctx, num, ev, *upd, closing)
}

// ensureState keeps issue num in step with its event after an update, in
// one edit, and closes it when closing is set.
//
// The title names the event's categories, kind, direction, probe count
// and status, which the update may have changed (a category that arrived
// with more probes, above all). It is edited only when the one GitHub
// shows differs from Title(ev): GitHub's as this pass last saw it (listed,
// created, fetched for the comment check, or edited), else fetched now.
// So delivering a row again edits nothing when the title is already
// right: after an edit whose answer was lost, a crash before the row was
// recorded, or a pass that found its comment already posted.
//
// The labels change only when the event's kind did (see kindLabels): the
// kind label of a kind the event had before is replaced by the current
// one, every other label (a human's included) is kept.
//
// With closing, the close edit is sent (with the title: it ends
// [reverted] or [retracted] now). deliver sets closing only for an issue
// not closed already: a person's close keeps its state and reason (a "not
// planned" is never turned into "completed"), and an earlier close whose
// answer was lost needs nothing more; only the title is then corrected.
// An issue is never reopened.
//
// It runs after the comment is ensured, under the row's claim: when the
// edit fails (an outage, a rate limit), the row records the failure and
// is retried, the retry finds its comment by its marker (never posting it
// twice) and edits then.
func (d *deliverer) ensureState(ctx context.Context, num int, ev *diff.Event, u diff.EventUpdate, closing bool) error {
	want := Title(ev)
	req := &github.IssueRequest{}
	edit := false
	if closing {
		reason := CloseReason
		if u.Change == diff.ChangeRetracted {
			reason = RetractedReason
		}
		req.Title, req.State, req.StateReason = github.String(want), github.String("closed"), github.String(reason)
		edit = true
	} else {
		cur, err := d.issueTitle(ctx, num)
		if err != nil {
			return d.issueErr(ctx, ev, err)
		}
		if cur != want {
			req.Title = github.String(want)
			edit = true
		}
	}
	labels, newLabels, err := d.kindLabels(ctx, num, ev)
	if err != nil {
		return err
	}
	if newLabels {
		req.Labels = &labels
		edit = true
	}
	if !edit {
		return nil
	}
	err = d.send(ctx, func(ctx context.Context) error {
		_, _, err := d.gh.Issues.Edit(ctx, d.owner, d.repo, num, req)
		return err
	})
	if err != nil {
		return d.issueErr(ctx, ev, err)
	}
	if req.Title != nil {
		d.titles[num] = want
	}
	if closing {
		d.closed[num] = true
	}
	if newLabels {
		d.labels[num] = labels
		d.log.Info("github issue labels updated", "event", ev.ID, "issue", num, "kind", ev.Kind)
	}
	switch {
	case closing:
		d.log.Info("github issue closed", "event", ev.ID, "issue", num, "state_reason", req.GetStateReason())
	case req.Title != nil:
		d.log.Info("github issue title updated", "event", ev.ID, "issue", num)
	}
	return nil
}

// kindLabels returns the labels issue num should carry now that its event
// is of kind ev.Kind, and whether they differ from those it carries: the
// label of every kind the event had before (the kind it opened as, the
// kind after each update) gives way to ev.Kind's, which is added; any
// other label stays, a human's as much as the configured ones. Nothing
// changes when the event never had another kind, or when the issue lacks
// the driftprobe label (GitHub dropped the labels driftprobe asked for:
// the caller has no push access, and an edit's labels would be dropped
// too).
//
// The labels GitHub showed this pass decide whether a change is due; the
// new set is computed from the issue as GitHub answers just before the
// edit, since an edit replaces every label, so a label a human added
// since the listing is kept.
func (d *deliverer) kindLabels(ctx context.Context, num int, ev *diff.Event) ([]string, bool, error) {
	former, err := d.formerKinds(ctx, ev)
	if err != nil || len(former) == 0 {
		return nil, false, err
	}
	cur, err := d.issueLabels(ctx, num)
	if err != nil {
		return nil, false, d.issueErr(ctx, ev, err)
	}
	if !relabel(cur, former, ev.Kind) {
		return nil, false, nil
	}
	iss, err := d.fetchIssue(ctx, num)
	if err != nil {
		return nil, false, d.issueErr(ctx, ev, err)
	}
	cur = labelNames(iss)
	if !relabel(cur, former, ev.Kind) {
		return nil, false, nil
	}
	var out []string
	for _, l := range cur {
		if !slices.ContainsFunc(former, func(k string) bool { return strings.EqualFold(k, l) }) {
			out = append(out, l)
		}
	}
	if !slices.ContainsFunc(out, func(l string) bool { return strings.EqualFold(l, ev.Kind) }) {
		out = append(out, ev.Kind)
	}
	return out, true, nil
}

// relabel reports whether labels (an issue's) need the kind label
// changed: they carry the driftprobe label, and a label of a former kind
// or not the current kind's.
func relabel(labels, former []string, kind string) bool {
	has := func(name string) bool {
		return slices.ContainsFunc(labels, func(l string) bool { return strings.EqualFold(l, name) })
	}
	if !has(Label) {
		return false
	}
	return !has(kind) || slices.ContainsFunc(former, has)
}

// formerKinds returns the kinds ev had before its current one: the kind
// it opened as and the kinds its updates recorded (schema 14 on), other
// than ev.Kind; only known kinds (those driftprobe labels issues with).
func (d *deliverer) formerKinds(ctx context.Context, ev *diff.Event) ([]string, error) {
	rows, err := d.db.SQL().QueryContext(ctx, `SELECT opened_kind FROM events WHERE id = ? UNION SELECT kind FROM event_updates WHERE event_id = ?`, ev.ID, ev.ID)
	if err != nil {
		return nil, dbError{fmt.Errorf("kinds of event %d: %w", ev.ID, err)}
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, dbError{fmt.Errorf("kinds of event %d: %w", ev.ID, err)}
		}
		if _, known := kindTitles[k]; known && k != ev.Kind && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, dbError{fmt.Errorf("kinds of event %d: %w", ev.ID, err)}
	}
	return out, nil
}

// labelNames returns the names of iss's labels.
func labelNames(iss *github.Issue) []string {
	out := []string{}
	for _, l := range iss.Labels {
		if l.GetName() != "" {
			out = append(out, l.GetName())
		}
	}
	return out
}

// issueLabels returns issue num's labels as GitHub last showed them to
// this pass (see deliverer.labels, then the label listing), else as
// GitHub answers now.
func (d *deliverer) issueLabels(ctx context.Context, num int) ([]string, error) {
	if l, ok := d.labels[num]; ok {
		return l, nil
	}
	for _, iss := range d.index {
		if iss.GetNumber() == num && iss.Labels != nil {
			d.labels[num] = labelNames(iss)
			return d.labels[num], nil
		}
	}
	iss, err := d.fetchIssue(ctx, num)
	if err != nil {
		return nil, err
	}
	return labelNames(iss), nil
}

// issueClosed reports whether issue num is closed as GitHub last showed
// it to this pass (see deliverer.closed, then the label listing), else as
// GitHub answers now.
func (d *deliverer) issueClosed(ctx context.Context, num int) (bool, error) {
	if c, ok := d.closed[num]; ok {
		return c, nil
	}
	for _, iss := range d.index {
		if iss.GetNumber() == num && iss.State != nil {
			d.closed[num] = iss.GetState() == "closed"
			return d.closed[num], nil
		}
	}
	iss, err := d.fetchIssue(ctx, num)
	if err != nil {
		return false, err
	}
	return iss.GetState() == "closed", nil
}

// issueTitle returns issue num's title as GitHub last showed it to this
// pass (see deliverer.titles, then the label listing), else as GitHub
// answers now.
func (d *deliverer) issueTitle(ctx context.Context, num int) (string, error) {
	if t, ok := d.titles[num]; ok {
		return t, nil
	}
	for _, iss := range d.index {
		if iss.GetNumber() == num && iss.Title != nil {
			d.titles[num] = iss.GetTitle()
			return d.titles[num], nil
		}
	}
	iss, err := d.fetchIssue(ctx, num)
	if err != nil {
		return "", err
	}
	return iss.GetTitle(), nil
}

// lockedError is a call about one issue (a comment, an edit) that GitHub
// refused because the issue is locked: only collaborators with write
// access may comment on a locked conversation. It concerns that issue
// alone: the event's deliveries wait, every other event's go on.
type lockedError struct {
	num    int
	event  int64
	row    int64  // the outbox row, once known (its skip command)
	reason string // GitHub's active_lock_reason ("" when none was given)
	status int
	msg    string // GitHub's message
}

// Error says what to do first (the outbox listing shows 300 characters):
// unlock the issue, or skip the row; GitHub's own words come last.
func (e *lockedError) Error() string {
	why := ""
	if e.reason != "" {
		why = " (lock reason: " + e.reason + ")"
	}
	skip := "skip them with `driftprobe outbox --skip ID`"
	if e.row != 0 {
		skip = fmt.Sprintf("give this one up with `driftprobe outbox --skip %d`", e.row)
	}
	return fmt.Sprintf("issue #%d of event %d is locked on GitHub%s: only this event's deliveries wait; unlock the issue (or give driftprobe's login write access), or %s (GitHub: %d %s)",
		e.num, e.event, why, skip, e.status, e.msg)
}

// issuesOffError is GitHub refusing an issue call (410, or 404) because
// the repository has Issues disabled in its settings (its has_issues is
// false): no issue is gone, and every event of the repository is refused
// alike. A configuration problem: the pass stops, the rows keep their
// mappings and say why, and the next pass tries again; once Issues is
// enabled again the issues driftprobe opened are there as they were.
type issuesOffError struct {
	repo   string
	status int
	msg    string // GitHub's message
}

func (e *issuesOffError) Error() string {
	return fmt.Sprintf("Issues are disabled on repository %s (GitHub: %d %s): enable Issues in the repository's settings (Features); no issue is lost, every event waits and is delivered to its issue once Issues is enabled", e.repo, e.status, e.msg)
}

// repoAnswer asks GitHub for the repository after err, a 404 or 410
// answer to an issue call. It returns an *issuesOffError when the
// repository answers with Issues disabled; nil when it answers with
// Issues enabled (the issue itself is the problem); otherwise the error
// to report: err when the repository is not found either (the repository
// is the problem), the check's own error when it failed otherwise (an
// outage, a rate limit: classified as such, nothing concluded of the
// issue).
func (d *deliverer) repoAnswer(ctx context.Context, err error) error {
	var repo *github.Repository
	rerr := d.call(ctx, func(ctx context.Context) error {
		var err error
		repo, _, err = d.gh.Repositories.Get(ctx, d.owner, d.repo)
		return err
	})
	if rerr != nil {
		var er *github.ErrorResponse
		if errors.As(rerr, &er) && er.Response != nil && (er.Response.StatusCode == http.StatusNotFound || er.Response.StatusCode == http.StatusGone) {
			return err
		}
		return rerr
	}
	if repo.HasIssues != nil && !repo.GetHasIssues() {
		off := &issuesOffError{repo: d.owner + "/" + d.repo}
		var er *github.ErrorResponse
		if errors.As(err, &er) && er.Response != nil {
			off.status, off.msg = er.Response.StatusCode, er.Message
		}
		return off
	}
	return nil
}

// issuesOff returns err, unless it is a 410 answer of GitHub's (what
// GitHub answers every issue call while Issues is disabled) and the
// repository has Issues disabled (repoAnswer): then the *issuesOffError.
// For the calls that are not about one issue (the listings, the create),
// where a 404 already names the repository, and for checkMapping.
func (d *deliverer) issuesOff(ctx context.Context, err error) error {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusGone {
		return err
	}
	var off *issuesOffError
	if rerr := d.repoAnswer(ctx, err); errors.As(rerr, &off) {
		return off
	}
	return err
}

// issueErr handles an error on an issue-specific call:
//   - a deleted issue (410, or 404, while the repository answers with
//     Issues enabled) loses its mapping, so the next attempt finds the
//     issue by marker or opens a new one; when the repository has Issues
//     disabled (GitHub answers 410 to every issue call), the
//     *issuesOffError keeps the mapping: the issue is not gone;
//   - a 403 that is no rate limit on a locked issue is a *lockedError,
//     which holds back that event's deliveries only. GitHub's own word
//     decides: the issue's "locked" field, asked of GitHub now (a 403 from
//     a token without permission on the repository is refused the same
//     way, and must stay a repository-wide problem); only when GitHub does
//     not answer that (the call fails, or the answer lacks the field), the
//     error's documentation_url, which GitHub points at its "locking
//     conversations" article for a locked issue. The message text is
//     never read.
func (d *deliverer) issueErr(ctx context.Context, ev *diff.Event, err error) error {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil {
		return err
	}
	switch st := er.Response.StatusCode; {
	case st == http.StatusGone || st == http.StatusNotFound:
		if rerr := d.repoAnswer(ctx, err); rerr != nil {
			return rerr // Issues disabled, the repository itself, or the check failed: the mapping stays
		}
		if serr := diff.SetIssue(context.WithoutCancel(ctx), d.db, ev.ID, 0, ""); serr != nil {
			return dbError{serr}
		}
		return fmt.Errorf("issue #%d of event %d is gone (%d); it will be found again by its marker or reopened on the next attempt", ev.IssueNumber, ev.ID, st)
	case st == http.StatusForbidden && !rateLimited(er.Response) && ev.IssueNumber != 0:
		locked, reason := false, ""
		iss, gerr := d.fetchIssue(ctx, ev.IssueNumber)
		switch {
		case isRateLimit(gerr):
			return gerr // GitHub asks driftprobe to wait: that, not the 403, is what the pass must obey
		case gerr == nil && iss.Locked != nil:
			locked, reason = iss.GetLocked(), iss.GetActiveLockReason()
		default:
			locked = strings.Contains(strings.ToLower(er.DocumentationURL), "locking-conversations")
		}
		if locked {
			return &lockedError{num: ev.IssueNumber, event: ev.ID, reason: reason, status: st, msg: er.Message}
		}
	}
	return err
}

// isRateLimit reports whether err is GitHub's rate limit (primary or
// secondary; or go-github refusing a call itself while one it was told
// of lasts): a call whose failure a pass could go on without (which login
// posts, whether an issue is locked) is then not followed by more calls,
// and the limit is classified from GitHub's own answer.
func isRateLimit(err error) bool {
	var rle *github.RateLimitError
	var are *github.AbuseRateLimitError
	var er *github.ErrorResponse
	switch {
	case err == nil:
		return false
	case errors.As(err, &rle), errors.As(err, &are):
		return true
	case errors.As(err, &er) && er.Response != nil:
		st := er.Response.StatusCode
		return (st == http.StatusForbidden || st == http.StatusTooManyRequests) && rateLimited(er.Response)
	}
	return false
}

// rateLimited reports whether a 403 or 429 answer is a rate limit (its
// headers say so), not a refusal.
func rateLimited(r *http.Response) bool {
	return r.StatusCode == http.StatusTooManyRequests || r.Header.Get("Retry-After") != "" || r.Header.Get("X-Ratelimit-Remaining") == "0"
}

// ensureIssue returns the event's issue number: the mapping, else an
// issue found by its marker, else a new issue.
//
// The mapping (events.issue_number and issue_url) counts as it is when its
// URL names this repository on this GitHub's web host (webRoot). One into
// another repository's path (github.repo changed to another repository;
// or the repository was renamed, and GitHub's html_url names it by its
// new name while github.repo still names it by the old one, or the
// reverse) or on another host (github.base_url changed: another GitHub
// with a repository of the same name) is reused only when that number's
// issue here carries the event's marker (checkMapping: one GET of the
// issue, which GitHub redirects for a renamed repository, and which the
// comment check would fetch anyway); otherwise it is dropped and the
// issue looked up by its marker as below: driftprobe never comments on,
// retitles or closes an issue of another repository's or host's number
// that is not the event's, and never opens a second issue for an event
// whose issue a rename left under another path (the marker lookup alone
// would miss an issue GitHub dropped the label of, created long before
// the row).
//
// Looked up by marker: first among the repository's driftprobe-labelled
// issues (listed once per pass), then among the issues created since the
// row was queued (less clockSlack), labelled or not: GitHub silently drops
// the labels of a new issue when the caller lacks push access, so the
// label listing alone misses an issue created by an earlier attempt whose
// answer was lost, or one whose mapping a restored database lost (its rows
// never attempted). When an earlier attempt of r may have created the
// issue, that search is made afresh for r; otherwise one search per pass
// serves every row (recentIssue), so a pass that opens issues costs one
// more listing call (a page per 100 issues created in the window).
//
// When no issue is found and r is not the event's open row, while that
// open row was given up (outbox --skip), no issue is opened: the
// *skippedIssueError makes the pass record r skipped too. Nor while an
// earlier row of the event is pending again (outbox --unskip since r was
// claimed): the *heldBackError makes the pass release r, so that row goes
// first.
func (d *deliverer) ensureIssue(ctx context.Context, r row, ev *diff.Event, e *Evidence) (int, error) {
	if ev.IssueNumber != 0 {
		switch d.mappingHere(ev.IssueURL) {
		case mappingTrusted:
			return ev.IssueNumber, nil
		case mappingOtherHost, mappingOtherRepo:
			num, err := d.checkMapping(ctx, ev)
			if err != nil || num != 0 {
				return num, err
			}
		}
		ev.IssueNumber, ev.IssueURL = 0, ""
	}
	if err := d.list(ctx); err != nil {
		return 0, d.issuesOff(ctx, err)
	}
	if iss, ok := d.index[ev.Fingerprint]; ok {
		return d.adopt(ctx, ev, iss)
	}
	since := storage.ParseTime(r.CreatedAt)
	if !since.IsZero() {
		since = since.Add(-clockSlack)
	}
	var iss *github.Issue
	var err error
	if attempted(r) {
		iss, err = d.findRecent(ctx, ev.Fingerprint, since)
	} else {
		iss, err = d.recentIssue(ctx, ev.Fingerprint, since)
	}
	if err != nil {
		return 0, d.issuesOff(ctx, err)
	}
	if iss != nil {
		d.index[ev.Fingerprint] = iss
		return d.adopt(ctx, ev, iss)
	}
	if r.Action != ActionOpen {
		open, err := skippedOpen(ctx, d.db, ev.ID)
		if err != nil {
			return 0, dbError{err}
		}
		if open != 0 {
			return 0, &skippedIssueError{open: open}
		}
		// An earlier row of the event made pending again (Unskip) since
		// this row was claimed goes first: it opens the issue, or comments
		// before this row does.
		behind, err := earlierPending(ctx, d.db, r)
		if err != nil {
			return 0, dbError{err}
		}
		if behind != 0 {
			return 0, &heldBackError{behind: behind}
		}
	}
	labels := Labels(ev, d.cfg.Labels)
	req := &github.IssueRequest{Title: github.String(Title(ev)), Body: github.String(IssueBody(ev, e)), Labels: &labels}
	err = d.send(ctx, func(ctx context.Context) error {
		var err error
		iss, _, err = d.gh.Issues.Create(ctx, d.owner, d.repo, req)
		return err
	})
	if err != nil {
		return 0, d.issuesOff(ctx, err)
	}
	d.index[ev.Fingerprint] = iss
	if login := iss.GetUser().GetLogin(); login != "" {
		d.authors[iss.GetNumber()] = login
		d.self[login] = true
	}
	d.titles[iss.GetNumber()] = req.GetTitle()
	d.labels[iss.GetNumber()] = labelNames(iss)
	d.closed[iss.GetNumber()] = iss.GetState() == "closed"
	u := d.issueURL(iss)
	if err := diff.SetIssue(context.WithoutCancel(ctx), d.db, ev.ID, iss.GetNumber(), u); err != nil {
		return 0, dbError{err}
	}
	ev.IssueNumber, ev.IssueURL = iss.GetNumber(), u
	d.log.Info("github issue opened", "event", ev.ID, "issue", iss.GetNumber(), "url", u)
	return iss.GetNumber(), nil
}

// mapping says how far a stored issue URL can be trusted (mappingHere).
type mapping int

const (
	mappingTrusted   mapping = iota // this repository on this GitHub (or no URL: a mapping from before URLs were kept)
	mappingOtherRepo                // another repository's path (github.repo changed, or the repository renamed): counts only when the issue carries the marker
	mappingOtherHost                // this repository's path on another host: counts only when the issue carries the marker
)

// mappingHere says whether the stored issue URL u names an issue of this
// repository (its path holds /OWNER/REPO/issues/, case-insensitively) on
// this GitHub's web host (webRoot: github.com for api.github.com, the
// Enterprise host for https://HOST/api/v3/, the API root's host
// otherwise). A mapping without a URL (an early release stored an answer
// that lacked html_url as it came) names no host: it is checked as one on
// another host, once (the check stores this host's URL).
func (d *deliverer) mappingHere(u string) mapping {
	if u == "" {
		return mappingOtherHost
	}
	if !strings.Contains(strings.ToLower(u), "/"+strings.ToLower(d.owner+"/"+d.repo)+"/issues/") {
		return mappingOtherRepo
	}
	p, err := url.Parse(u)
	if err != nil || !strings.EqualFold(p.Host, d.webRoot().Host) {
		return mappingOtherHost
	}
	return mappingTrusted
}

// checkMapping checks a mapping to this repository's path on another host,
// or to another repository's path (see ensureIssue): issue ev.IssueNumber
// of this repository (github.repo) is the event's only when
// its body carries the event's marker (markerOf, the rule of the marker
// lookups). It returns the number, the mapping rewritten to this host's
// issue (adopt), when it is; 0 when it is not (or there is no such issue),
// after clearing the stored mapping so that the caller looks the issue up
// by its marker. Costs one GET of the issue per pass (fetchIssue, whose
// author, title and labels the comment and title checks then reuse).
func (d *deliverer) checkMapping(ctx context.Context, ev *diff.Event) (int, error) {
	num, old := ev.IssueNumber, ev.IssueURL
	if d.checked[ev.Fingerprint] == num {
		return num, nil
	}
	iss, err := d.fetchIssue(ctx, num)
	if err != nil {
		var er *github.ErrorResponse
		if !errors.As(err, &er) || er.Response == nil || (er.Response.StatusCode != http.StatusNotFound && er.Response.StatusCode != http.StatusGone) {
			return 0, err
		}
		if off := d.issuesOff(ctx, err); off != err {
			return 0, off // Issues disabled: nothing is known of that issue
		}
		// No such issue here (or the repository itself is missing: the
		// lookup that follows fails and says so).
		iss = nil
	}
	if iss != nil && !iss.IsPullRequest() && markerOf(iss.GetBody()) == ev.Fingerprint {
		d.checked[ev.Fingerprint] = num
		d.index[ev.Fingerprint] = iss
		d.log.Info("github issue mapping on another host or repository path checked: the issue here carries the event's marker", "event", ev.ID, "issue", num, "stored_url", old)
		return d.adopt(ctx, ev, iss)
	}
	if err := diff.SetIssue(context.WithoutCancel(ctx), d.db, ev.ID, 0, ""); err != nil {
		return 0, dbError{err}
	}
	d.log.Warn("github issue mapping ignored: it names another host or repository, and the issue of that number here does not carry the event's marker; looking the event's issue up by its marker", "event", ev.ID, "issue", num, "stored_url", old)
	return 0, nil
}

// skippedOpen returns the id of event's open row when the operator gave it
// up (driftprobe outbox --skip: SkipNote, or skipNoteClaimed), else 0.
func skippedOpen(ctx context.Context, db *storage.DB, event int64) (int64, error) {
	var id int64
	err := db.SQL().QueryRowContext(ctx, `SELECT id FROM outbox WHERE event_id = ? AND action = ? AND sent_at != '' AND last_error IN (?, ?) ORDER BY id LIMIT 1`,
		event, ActionOpen, SkipNote, skipNoteClaimed).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("outbox: open row of event %d: %w", event, err)
	}
	return id, nil
}

// earlierPending returns the first pending row of r's event before r,
// else 0. A pass never claims a row behind one (claim), so there is one
// only when a row was made pending again (Unskip) after the claim.
func earlierPending(ctx context.Context, db *storage.DB, r row) (int64, error) {
	var id int64
	err := db.SQL().QueryRowContext(ctx, `SELECT id FROM outbox WHERE sent_at = '' AND id < ? AND event_id = ? ORDER BY id LIMIT 1`, r.ID, r.EventID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("outbox: earlier rows of event %d: %w", r.EventID, err)
	}
	return id, nil
}

// heldBackError is a claimed row that must not go out yet: an earlier row
// of its event (behind) was made pending again (driftprobe outbox
// --unskip) since the pass claimed it. The pass releases the row (nothing
// was sent for it) and holds the event's later rows back, so the earlier
// row goes first, on the next pass.
type heldBackError struct{ behind int64 }

func (e *heldBackError) Error() string {
	return fmt.Sprintf("held back: outbox row %d of the same event was made pending again (driftprobe outbox --unskip) while this row was being delivered; it goes out first, this row after it", e.behind)
}

// skippedIssueError is a row of an event whose open row the operator gave
// up (outbox --skip) and which has no issue on GitHub (no mapping, none
// found by its marker): the row is not sent either (no issue is opened for
// it) but recorded done with skippedIssueNote, like the open row.
type skippedIssueError struct{ open int64 }

func (e *skippedIssueError) Error() string { return skippedIssueNote(e.open) }

// skippedIssueNote is the last_error recorded on a row given up because
// its event's open row (outbox row open) was skipped.
func skippedIssueNote(open int64) string {
	return fmt.Sprintf("skipped: the event's issue was skipped (its open row %d was given up with driftprobe outbox --skip) and no issue of the event was found on GitHub, so this update is recorded done, never delivered; no issue is opened for the event", open)
}

// adopt maps ev to iss, an issue found by its marker.
func (d *deliverer) adopt(ctx context.Context, ev *diff.Event, iss *github.Issue) (int, error) {
	u := d.issueURL(iss)
	if err := diff.SetIssue(context.WithoutCancel(ctx), d.db, ev.ID, iss.GetNumber(), u); err != nil {
		return 0, dbError{err}
	}
	ev.IssueNumber, ev.IssueURL = iss.GetNumber(), u
	d.log.Info("github issue found by marker", "event", ev.ID, "issue", iss.GetNumber())
	return iss.GetNumber(), nil
}

// maxIssueURL bounds the html_url kept as GitHub answers it.
const maxIssueURL = 2048

// issueURL returns the address stored for issue iss (events.issue_url,
// which `driftprobe events` and `run` print as it is): GitHub's html_url
// when it is a plain web address, an absolute http or https URL with a
// host, of printable ASCII without white space, at most maxIssueURL
// bytes. Anything else (an escape sequence that would reach the
// operator's terminal, a javascript: link, nothing) gives way to the
// issue's address built from the API root and github.repo, as GitHub
// forms it: https://github.com/OWNER/REPO/issues/N, or the Enterprise
// host's root (the API root without /api/v3/) followed by the same path.
func (d *deliverer) issueURL(iss *github.Issue) string {
	if u := iss.GetHTMLURL(); plainWebURL(u) {
		return u
	}
	web := d.webRoot()
	return web.String() + url.PathEscape(d.owner) + "/" + url.PathEscape(d.repo) + "/issues/" + strconv.Itoa(iss.GetNumber())
}

// webRoot returns the root of this GitHub's web pages, derived from the
// API root: https://github.com/ for api.github.com; for an Enterprise
// server's https://HOST/api/v3/, https://HOST/; for an API root on a host
// named api.X (GitHub Enterprise Cloud with data residency:
// api.SUBDOMAIN.ghe.com), https://X/; otherwise the API root's host.
func (d *deliverer) webRoot() url.URL {
	web := url.URL{Scheme: "https", Host: "github.com", Path: "/"}
	if b := d.gh.BaseURL; b != nil && !strings.EqualFold(b.Hostname(), "api.github.com") {
		web = url.URL{Scheme: b.Scheme, Host: b.Host, Path: strings.TrimSuffix(b.Path, "api/v3/")}
		if h, ok := strings.CutPrefix(strings.ToLower(b.Host), "api."); ok && !strings.HasSuffix(b.Path, "/api/v3/") && h != "" {
			web.Host = h
		}
		if !strings.HasSuffix(web.Path, "/") {
			web.Path += "/"
		}
	}
	return web
}

// plainWebURL reports whether s is an absolute http or https URL with a
// host, printable ASCII only (no control character, white space or
// anything beyond ASCII), at most maxIssueURL bytes.
func plainWebURL(s string) bool {
	if s == "" || len(s) > maxIssueURL {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Opaque == ""
}

// clockSlack widens the window of findRecent for clock skew between this
// host (the row's created_at) and GitHub (the issues' created_at).
const clockSlack = time.Hour

// attempted reports whether an earlier attempt of r may have reached
// GitHub: it failed (attempts), or it was claimed or deferred and never
// recorded (a crash between send and record leaves only the claim; an
// interrupted pass releases the claim to its claim time, never to empty).
func attempted(r row) bool { return r.Attempts > 0 || r.NextAttempt != "" }

// findRecent looks for the issue carrying fingerprint's marker among the
// repository's issues created at or after since, labelled or not (see
// scanRecent), listing them now.
func (d *deliverer) findRecent(ctx context.Context, fingerprint string, since time.Time) (*github.Issue, error) {
	found, err := d.scanRecent(ctx, since)
	if err != nil {
		return nil, err
	}
	return found[fingerprint], nil
}

// recentIssue is findRecent for a row no earlier attempt of which can
// have created the issue (not attempted): an issue carrying the marker
// then predates this pass (a database restored from a backup lost its
// mapping), so one listing serves the whole pass. It lists the issues
// created since the earliest since asked for so far, again only when a
// row asks for an earlier one (rows are delivered oldest first, so
// usually once per pass).
func (d *deliverer) recentIssue(ctx context.Context, fingerprint string, since time.Time) (*github.Issue, error) {
	if d.recent == nil || since.Before(d.recentSince) {
		found, err := d.scanRecent(ctx, since)
		if err != nil {
			return nil, err
		}
		d.recent, d.recentSince = found, since
	}
	return d.recent[fingerprint], nil
}

// scanRecent indexes by their marker the repository's issues created at
// or after since, labelled or not (state all, newest first; paging stops
// at the first issue created before since, so the listing is bounded by
// the issues opened since then). The marker rules of the label listing
// apply: the marker is the first one in the body (markerOf), pull requests
// do not count, and when several issues carry it the oldest wins (the one
// driftprobe opened; a human quoting it can only do so later).
func (d *deliverer) scanRecent(ctx context.Context, since time.Time) (map[string]*github.Issue, error) {
	opt := &github.IssueListByRepoOptions{State: "all", Since: since, Sort: "created", Direction: "desc"}
	found := map[string]*github.Issue{}
	err := d.eachIssue(ctx, opt, func(iss *github.Issue) bool {
		if iss.GetCreatedAt().Time.Before(since) {
			return false // older than the row: the rest is older still
		}
		if iss.IsPullRequest() {
			return true
		}
		if fp := markerOf(iss.GetBody()); fp != "" {
			if old, dup := found[fp]; !dup || iss.GetNumber() < old.GetNumber() {
				found[fp] = iss
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("looking for the event's issue among the issues created since %s: %w", ts(since), err)
	}
	return found, nil
}

// eachIssue calls fn with every issue the listing opt selects, page by
// page (100 per page), until fn returns false or the pages end.
func (d *deliverer) eachIssue(ctx context.Context, opt *github.IssueListByRepoOptions, fn func(*github.Issue) bool) error {
	opt.PerPage = 100
	for {
		var page []*github.Issue
		var resp *github.Response
		err := d.call(ctx, func(ctx context.Context) error {
			var err error
			page, resp, err = d.gh.Issues.ListByRepo(ctx, d.owner, d.repo, opt)
			return err
		})
		if err != nil {
			return err
		}
		for _, iss := range page {
			if !fn(iss) {
				return nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return nil
		}
		opt.Page = resp.NextPage
	}
}

// list indexes the repository's driftprobe issues (open and closed, every
// page) by their event marker, once per pass.
func (d *deliverer) list(ctx context.Context) error {
	if d.listed {
		return nil
	}
	opt := &github.IssueListByRepoOptions{State: "all", Labels: []string{Label}}
	err := d.eachIssue(ctx, opt, func(iss *github.Issue) bool {
		if iss.IsPullRequest() {
			return true
		}
		if fp := markerOf(iss.GetBody()); fp != "" {
			if old, dup := d.index[fp]; !dup || iss.GetNumber() < old.GetNumber() {
				d.index[fp] = iss // the oldest issue wins if a human copied the marker
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	d.listed = true
	return nil
}

// issueAuthor returns the login that opened issue num: known from the
// label listing or the creation, else asked of GitHub.
func (d *deliverer) issueAuthor(ctx context.Context, num int) (string, error) {
	if a, ok := d.authors[num]; ok {
		return a, nil
	}
	for _, iss := range d.index {
		if iss.GetNumber() == num && iss.GetUser().GetLogin() != "" {
			d.authors[num] = iss.GetUser().GetLogin()
			return d.authors[num], nil
		}
	}
	if _, err := d.fetchIssue(ctx, num); err != nil {
		return "", err
	}
	return d.authors[num], nil
}

// fetchIssue asks GitHub for issue num and remembers its author, title
// and labels.
func (d *deliverer) fetchIssue(ctx context.Context, num int) (*github.Issue, error) {
	var iss *github.Issue
	err := d.call(ctx, func(ctx context.Context) error {
		var err error
		iss, _, err = d.gh.Issues.Get(ctx, d.owner, d.repo, num)
		return err
	})
	if err != nil {
		return nil, err
	}
	d.authors[num] = iss.GetUser().GetLogin()
	d.titles[num] = iss.GetTitle()
	d.labels[num] = labelNames(iss)
	d.closed[num] = iss.GetState() == "closed"
	return iss, nil
}

// ensureComment posts the update's comment unless the issue already has
// it: a comment that starts with the update's marker, written by the
// issue's author (driftprobe, which opened it) or by the login this pass
// posts as. Anyone else's comment carrying the marker is ignored.
//
// The marker names the update by its id and a key (UpdateKey) that hashes
// the event's fingerprint with the update's run, change, target, detail
// and time: update ids are local to a database, and a database restored
// from a backup hands out again ids whose comments are already on the
// issue for changes the restored database never recorded. A comment whose
// key differs is another update's. A comment written before markers
// carried a key (legacy: the id alone) counts only when what it says
// matches the update (commentMatches): its run, its kind of change, its
// time and event.
//
// Before posting, an earlier row of r's event made pending again since r
// was claimed (outbox --unskip) holds r back (*heldBackError): that row's
// comment goes first.
func (d *deliverer) ensureComment(ctx context.Context, r row, num int, ev *diff.Event, u diff.EventUpdate, e *Evidence, closing bool) error {
	seen, ok := d.seen[num]
	if !ok {
		seen = map[int64][]seenComment{}
		if !d.askedWho && d.whoami != nil {
			d.askedWho = true
			var login string
			err := d.call(ctx, func(ctx context.Context) error {
				var err error
				login, err = d.whoami(ctx)
				return err
			})
			if isRateLimit(err) {
				// GitHub asks driftprobe to wait: no further call in this
				// pass (the next pass asks again).
				d.askedWho = false
				return err
			}
			if err == nil && login != "" {
				d.self[login] = true
			} else {
				d.log.Debug("github: could not tell which login posts", "error", d.red.redact(fmt.Sprint(err)))
			}
		}
		author, err := d.issueAuthor(ctx, num)
		if err != nil {
			return d.issueErr(ctx, ev, err)
		}
		opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
		for {
			var page []*github.IssueComment
			var resp *github.Response
			err := d.call(ctx, func(ctx context.Context) error {
				var err error
				page, resp, err = d.gh.Issues.ListComments(ctx, d.owner, d.repo, num, opt)
				return err
			})
			if err != nil {
				return d.issueErr(ctx, ev, err)
			}
			for _, c := range page {
				if login := c.GetUser().GetLogin(); login == "" || (login != author && !d.self[login]) {
					continue
				}
				if id, key, ok := parseUpdateMarker(c.GetBody()); ok {
					sc := seenComment{key: key}
					if key == "" {
						sc.body = c.GetBody() // a legacy marker: what it says decides
					}
					seen[id] = append(seen[id], sc)
				}
			}
			if resp == nil || resp.NextPage == 0 {
				break
			}
			opt.Page = resp.NextPage
		}
		d.seen[num] = seen
	}
	key := UpdateKey(ev, u)
	for _, c := range seen[u.ID] {
		if c.key == key || (c.key == "" && commentMatches(c.body, ev, u)) {
			d.log.Info("github comment already present", "event", ev.ID, "issue", num, "update", u.ID)
			return nil
		}
	}
	if len(seen[u.ID]) > 0 {
		d.log.Info("github comment with this update's id is another update's (a database restored from a backup reuses update ids): posting this one", "event", ev.ID, "issue", num, "update", u.ID)
	}
	behind, err := earlierPending(ctx, d.db, r)
	if err != nil {
		return dbError{err}
	}
	if behind != 0 {
		return &heldBackError{behind: behind}
	}
	body := CommentBody(ev, u, e, closing)
	var posted *github.IssueComment
	err = d.send(ctx, func(ctx context.Context) error {
		var err error
		posted, _, err = d.gh.Issues.CreateComment(ctx, d.owner, d.repo, num, &github.IssueComment{Body: github.String(body)})
		return err
	})
	if err != nil {
		return d.issueErr(ctx, ev, err)
	}
	if login := posted.GetUser().GetLogin(); login != "" {
		d.self[login] = true
	}
	seen[u.ID] = append(seen[u.ID], seenComment{key: key})
	d.log.Info("github comment posted", "event", ev.ID, "issue", num, "update", u.ID, "change", u.Change)
	return nil
}

// seenComment is an update comment driftprobe posted (by its author): the
// key of its marker, and its body when the marker has none (legacy).
type seenComment struct {
	key  string
	body string
}

// failure is a classified delivery error.
type failure struct {
	msg    string
	until  time.Time // next attempt; zero: on the next call
	global bool      // stop the pass and defer every pending row
	// kind, for a global failure with an until, is what the wait is for
	// (HoldRateLimit, HoldOutage, HoldUnreachable), classified here from
	// the error and the answer, never from msg: the pass records the wait
	// with it (writeHold, github_holds: a rate limit for the credential,
	// the others for the host), every pass of that scope sends nothing
	// before until, whichever row is due, and the texts that report the
	// wait are worded by it (HoldPhrase). '': no wait beyond the row's own.
	kind string
}

// backoff is the wait after the n-th failed attempt: 1m, 2m, 4m … 1h.
func backoff(n int) time.Duration {
	d := time.Minute
	for i := 1; i < n && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

// classify turns a failed call into the message recorded on its row and
// when to try again; now is the time of the failure, which waits count
// from. attempts is the row's, this one included: one row's failure backs
// off by it. A global failure (an outage, a rate limit without a stated
// end) backs off by the failures in a row in its scope when more (see
// hold): the step is GitHub's, not the row's, so a row queued during an
// outage does not restart it at a minute.
func (d *deliverer) classify(err error, attempts int, now time.Time) failure {
	repo := d.owner + "/" + d.repo
	global := max(attempts, d.held.failures+1)
	var rle *github.RateLimitError
	var are *github.AbuseRateLimitError
	var er *github.ErrorResponse
	var ie *ghinstallation.HTTPError
	var le *lockedError
	var oe *originError
	var off *issuesOffError
	switch {
	case errors.As(err, &off):
		// The repository's settings: every event is refused alike. As
		// for a token without permission, the pass stops and the next
		// one tries again.
		return failure{msg: off.Error(), global: true}
	case errors.As(err, &le):
		// One issue's problem: this event waits, the others go on.
		return failure{msg: le.Error(), until: now.Add(backoff(attempts))}
	case errors.As(err, &oe):
		// A configuration problem (github.base_url, or what answers
		// there): every call goes to the same root.
		return failure{msg: oe.Error(), global: true}
	case errors.As(err, &ie) && ie.Response != nil:
		// GitHub refused the app's installation token request
		// (ghinstallation leaves the body to the caller).
		st := ie.Response.StatusCode
		if ie.Response.Body != nil {
			_ = ie.Response.Body.Close()
		}
		switch {
		case st >= 500 && !fromGitHub(ie.Response):
			return d.notGitHub(ie.Response, now, global, " while fetching the installation token of "+d.auth)
		case st >= 500:
			until := now.Add(backoff(global))
			return failure{msg: fmt.Sprintf("GitHub unavailable (%d) while fetching the installation token of %s", st, d.auth), until: until, global: true, kind: HoldOutage}
		case st == http.StatusTooManyRequests || (st == http.StatusForbidden && (ie.Response.Header.Get("Retry-After") != "" || ie.Response.Header.Get("X-Ratelimit-Remaining") == "0")):
			until, note := d.secondaryUntil(ie.Response, now, global)
			return failure{msg: fmt.Sprintf("GitHub rate limit (%d) until %s%s while fetching the installation token of %s", st, ts(until), note, d.auth), until: until, global: true, kind: HoldRateLimit}
		case st == http.StatusUnauthorized:
			return failure{msg: fmt.Sprintf("GitHub rejected the app's JWT for %s (401): check github.app_id and that $%s holds that app's current private key", d.auth, d.cfg.PrivateKeyEnv), global: true}
		case st == http.StatusNotFound:
			return failure{msg: fmt.Sprintf("%s not found (404): check github.installation_id and that the app is installed on %s", d.auth, repo), global: true}
		default:
			return failure{msg: fmt.Sprintf("GitHub refused an installation token for %s (%d %s): check the app's installation and permissions", d.auth, st, http.StatusText(st)), global: true}
		}
	case errors.As(err, &rle):
		until, note := rle.Rate.Reset.Time, ""
		if until.IsZero() || !until.After(now) {
			until = now.Add(time.Minute)
		} else if until.After(now.Add(maxGitHubWait)) {
			until, note = d.capped(now, "x-ratelimit-reset "+ts(until))
		}
		return failure{msg: fmt.Sprintf("GitHub primary rate limit exhausted (x-ratelimit-remaining: 0) until %s%s: %s", ts(until), note, rle.Message), until: until, global: true, kind: HoldRateLimit}
	case errors.As(err, &are) && remembered(are):
		// A secondary limit GitHub stated on an earlier call of this pass
		// whose failure the pass went on without (asking which login
		// posts): go-github refused this call itself, without sending it,
		// with what is left of GitHub's wait (its answer's headers are
		// not carried over).
		wait := (*are.RetryAfter + time.Second - 1).Truncate(time.Second)
		until, note := now.Add(wait), ""
		if wait > maxGitHubWait {
			until, note = d.capped(now, fmt.Sprintf("retry-after %s", wait))
		}
		return failure{msg: fmt.Sprintf("GitHub secondary rate limit until %s%s: stated by GitHub on an earlier call of this pass (this one not sent)", ts(until), note), until: until, global: true, kind: HoldRateLimit}
	case errors.As(err, &are):
		until, note := d.secondaryUntil(are.Response, now, global)
		return failure{msg: fmt.Sprintf("GitHub secondary rate limit until %s%s: %s", ts(until), note, are.Message), until: until, global: true, kind: HoldRateLimit}
	case errors.As(err, &er) && er.Response != nil:
		st := er.Response.StatusCode
		h := er.Response.Header
		msg := er.Message
		if msg == "" {
			msg = http.StatusText(st)
		}
		switch {
		case (st == http.StatusForbidden || st == http.StatusTooManyRequests) && h.Get("X-Ratelimit-Remaining") == "0" && h.Get("Retry-After") == "":
			until, note := now.Add(time.Minute), ""
			if s, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-Ratelimit-Reset")), 10, 64); err == nil {
				if u, n, ok := d.resetUntil(s, now); ok {
					until, note = u, n
				}
			}
			return failure{msg: fmt.Sprintf("GitHub primary rate limit exhausted (%d, x-ratelimit-remaining: 0) until %s%s: %s", st, ts(until), note, msg), until: until, global: true, kind: HoldRateLimit}
		case st == http.StatusTooManyRequests || (st == http.StatusForbidden && (h.Get("Retry-After") != "" || strings.Contains(strings.ToLower(msg), "rate limit"))):
			until, note := d.secondaryUntil(er.Response, now, global)
			return failure{msg: fmt.Sprintf("GitHub secondary rate limit (%d) until %s%s: %s", st, ts(until), note, msg), until: until, global: true, kind: HoldRateLimit}
		case st >= 500 && !fromGitHub(er.Response):
			return d.notGitHub(er.Response, now, global, "")
		case st >= 500:
			until := now.Add(backoff(global))
			return failure{msg: fmt.Sprintf("GitHub unavailable (%d %s)", st, msg), until: until, global: true, kind: HoldOutage}
		case st == http.StatusUnauthorized:
			return failure{msg: fmt.Sprintf("GitHub rejected %s (401 %s): check that it is valid and not expired", d.auth, msg), global: true}
		case st == http.StatusForbidden:
			return failure{msg: fmt.Sprintf("%s has no permission on %s (403 %s): it needs Issues read and write access", d.auth, repo, msg), global: true}
		case st == http.StatusNotFound:
			return failure{msg: fmt.Sprintf("repository %s not found, or not visible to %s (404): check github.repo and its access", repo, d.auth), global: true}
		default:
			until := now.Add(backoff(attempts))
			return failure{msg: fmt.Sprintf("GitHub refused the request (%d %s %v)", st, msg, er.Errors), until: until}
		}
	}
	// No HTTP answer: GitHub was not reached (an unreachable host, named
	// with the error and where from: waiting does not fix a wrong base_url
	// or blocked egress), or it took the connection and answered nothing
	// in time (GitHub failing, as a 5xx). The hold and its backoff are the
	// same; only its kind differs.
	var nc *noConnError
	var ue *url.Error
	switch {
	case errors.As(err, &nc):
		return failure{msg: fmt.Sprintf("%s from %s: no connection to %s within %s (the call's limit); %s", unreachablePrefix, d.who, d.key.api, d.opts.Timeout, UnreachableHint), until: now.Add(backoff(global)), global: true, kind: HoldUnreachable}
	case isTimeout(err):
		return failure{msg: fmt.Sprintf("GitHub call timed out (limit %s): connected to %s, no answer came in time", d.opts.Timeout, d.key.api), until: now.Add(backoff(global)), global: true, kind: HoldOutage}
	case errors.As(err, &ue):
		return failure{msg: fmt.Sprintf("%s from %s: no HTTP answer from %s (%v); %s", unreachablePrefix, d.who, d.key.api, ue.Err, UnreachableHint), until: now.Add(backoff(global)), global: true, kind: HoldUnreachable}
	}
	return failure{msg: err.Error(), until: now.Add(backoff(attempts))}
}

// remembered reports whether are is go-github refusing a call itself,
// without sending it, because GitHub stated a secondary limit on an
// earlier call of the same client (its wait, RetryAfter, still running):
// the error then carries a response go-github made up, without a single
// header, where every answer that came over HTTP has some (GitHub's
// request id, its rate headers, a Content-Type).
func remembered(are *github.AbuseRateLimitError) bool {
	return are.RetryAfter != nil && *are.RetryAfter > 0 && are.Response != nil && len(are.Response.Header) == 0
}

// githubRequestID is the header every answer of GitHub's REST API
// carries (github.com's and GitHub Enterprise Server's), errors and 5xx
// included: GitHub's id of the request, which its support asks for.
const githubRequestID = "X-GitHub-Request-Id"

// fromGitHub reports whether r is GitHub's own answer: it carries
// GitHub's request id. One without it came from something on the way
// that answered in GitHub's place: an egress proxy, a load balancer or a
// gateway in front of a GitHub Enterprise host (a 502 Bad Gateway page
// of its own, none of GitHub's headers).
func fromGitHub(r *http.Response) bool {
	return strings.TrimSpace(r.Header.Get(githubRequestID)) != ""
}

// notGitHub is the failure of a 5xx answer that did not come from GitHub
// (fromGitHub): not GitHub failing (an outage) but GitHub not reached, as
// far as driftprobe can tell (HoldUnreachable: the host's wait and
// backoff, as for no HTTP answer at all). The message names what
// answered (the host called), its status and the process that called
// (the path to GitHub is that host's); during is what the call was for
// when not a delivery call (" while fetching …").
func (d *deliverer) notGitHub(r *http.Response, now time.Time, global int, during string) failure {
	host := ""
	if r.Request != nil && r.Request.URL != nil {
		host = r.Request.URL.Host
	}
	if host == "" {
		host = strings.TrimPrefix(strings.TrimPrefix(d.key.api, "https://"), "http://")
	}
	status := strconv.Itoa(r.StatusCode)
	if text := http.StatusText(r.StatusCode); text != "" {
		status += " " + text
	}
	msg := fmt.Sprintf("no answer from GitHub: %s answered %s without GitHub's request id (a proxy or load balancer on the way?)%s; called from %s; %s",
		host, status, during, d.who, UnreachableHint)
	return failure{msg: msg, until: now.Add(backoff(global)), global: true, kind: HoldUnreachable}
}

// maxGitHubWait bounds every wait GitHub states (a Retry-After, an
// x-ratelimit-reset), counted from the failure: GitHub's primary window
// is an hour at most, and its secondary limits ask for less. A longer
// stated wait is taken for a bogus answer (a proxy, an SSO gateway, a GHE
// appliance with a skewed clock, a reset in milliseconds) and capped: a
// hold sends no request while it lasts, so nothing GitHub answers could
// end it, and writeHold keeps the longest wait recorded.
const maxGitHubWait = time.Hour

// capped is the wait for a stated one (a Retry-After, a reset) past
// maxGitHubWait: now+maxGitHubWait, with a note for the failure's message
// saying what GitHub stated; a warning is logged.
func (d *deliverer) capped(now time.Time, stated string) (time.Time, string) {
	until := now.Add(maxGitHubWait)
	d.log.Warn("github stated an implausible wait: capped", "stated", stated, "until", ts(until), "max_wait", maxGitHubWait.String())
	return until, fmt.Sprintf(" (GitHub stated %s: implausible, capped at %s)", stated, maxGitHubWait)
}

// resetUntil is the end of the primary window x-ratelimit-reset (epoch
// seconds) names, capped at maxGitHubWait from now (compared as seconds,
// before time.Unix); ok is false when it is not after now.
func (d *deliverer) resetUntil(reset int64, now time.Time) (until time.Time, note string, ok bool) {
	if reset > now.Add(maxGitHubWait).Unix() {
		until, note = d.capped(now, fmt.Sprintf("x-ratelimit-reset %d", reset))
		return until, note, true
	}
	until = time.Unix(reset, 0).UTC()
	return until, "", until.After(now)
}

// secondaryUntil reads a secondary limit's wait from the response, counted
// from now (the injected clock when the answer came), as GitHub's
// documentation on rate limits advises: the retry-after seconds when the
// answer has them; else, when x-ratelimit-remaining is 0, until
// x-ratelimit-reset; else at least one minute, longer when it keeps
// happening: the backoff of attempts (1m, 2m, 4m … 1h; the row's, or the
// failures in a row of its hold when more, see classify). Every
// GitHub answer carries x-ratelimit-reset (the end of the primary window,
// up to an hour away), so it counts only when the primary limit is spent.
// A stated wait past maxGitHubWait is capped (capped; note says so).
func (d *deliverer) secondaryUntil(r *http.Response, now time.Time, attempts int) (until time.Time, note string) {
	if r != nil {
		if s, err := strconv.ParseInt(strings.TrimSpace(r.Header.Get("Retry-After")), 10, 64); err == nil && s >= 0 {
			// Bounded before the multiplication: past ~292 years it
			// overflows time.Duration, into the past.
			if s > int64(maxGitHubWait/time.Second) {
				return d.capped(now, fmt.Sprintf("retry-after %ds", s))
			}
			return now.Add(time.Duration(max(s, 1)) * time.Second), ""
		}
		if strings.TrimSpace(r.Header.Get("X-Ratelimit-Remaining")) == "0" {
			if s, err := strconv.ParseInt(strings.TrimSpace(r.Header.Get("X-Ratelimit-Reset")), 10, 64); err == nil {
				if until, note, ok := d.resetUntil(s, now); ok {
					return until, note
				}
			}
		}
	}
	return now.Add(backoff(attempts)), ""
}
