package ghissue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/storage"
)

// Hold kinds (Hold.Kind, Result.HeldKind, failure.kind, the kind column
// of github_holds): what a wait is for, so what it is called and what it
// applies to. Only a rate limit is GitHub asking driftprobe to wait; the
// others are driftprobe's own backoff (the same, 1 minute doubling to an
// hour, by failures in a row). classify gives every global failure its
// kind where it has the facts (the error's type, the answer's status and
// headers), and writeHold records it beside the reason: no kind is read
// back from a message (except a row an older driftprobe recorded, see
// storedKind).
const (
	// HoldRateLimit: a primary or secondary rate limit of the credential
	// (scope "credential": GitHub limits the caller, a token's user or an
	// App installation, not a repository or a row): GitHub asked
	// driftprobe to wait.
	HoldRateLimit = "rate_limit"
	// HoldOutage: GitHub failing (scope "host"): GitHub answered 5xx (the
	// answer carries GitHub's request id, fromGitHub), or took the
	// connection and answered nothing within the call's limit.
	HoldOutage = "outage"
	// HoldUnreachable: no answer from GitHub (scope "host"): no HTTP
	// answer came (a DNS failure, a refused or reset connection, a TLS
	// failure, no connection within the call's limit), or what answered
	// was not GitHub (a 5xx without GitHub's request id: an egress proxy
	// or a load balancer on the way answered for it). GitHub said
	// nothing; waiting does not fix a wrong github.base_url or blocked
	// egress.
	HoldUnreachable = "unreachable"
)

// holdScopeHost reports whether a wait of kind applies to every
// credential on the GitHub host (github_holds.credential empty): an outage,
// or GitHub not reached; a rate limit applies to its credential alone.
func holdScopeHost(kind string) bool { return kind != HoldRateLimit }

// unreachablePrefix starts the message of a failure that got no HTTP
// answer at all (classify), as it did in earlier releases ("GitHub
// unreachable (dial tcp …)"). It is wording only: the kind is carried by
// the failure (failure.kind) and recorded with the hold; only a hold an
// older driftprobe recorded, without a kind, is read by it (storedKind).
const unreachablePrefix = "GitHub unreachable"

// UnreachableHint ends what driftprobe says of an unreachable GitHub.
const UnreachableHint = "waiting does not fix a wrong github.base_url or blocked egress (DNS, firewall, proxy, TLS)"

// storedKind is the kind of a github_holds row: its kind column, recorded
// from the failure's classification (writeHold). A row recorded before
// that column (schema 24) has none (empty): an older driftprobe recorded no
// kind, so its row is read as that release read it, by its credential (a
// rate limit's row names one) and its reason (every unreachable message
// of that release started with unreachablePrefix, an outage's never).
// This text reading is for such rows only: a hold lasts an hour at most,
// and a database migrated to schema 24 is written by no older driftprobe.
func storedKind(credential, kind, reason string) string {
	switch {
	case kind != "":
		return kind
	case credential != "":
		return HoldRateLimit
	case strings.HasPrefix(reason, unreachablePrefix):
		return HoldUnreachable
	}
	return HoldOutage
}

// HoldPhrase says what a wait of kind means for delivery, for the texts
// that report one ("<phrase>: no request before T", "… not sent while
// <phrase>").
func HoldPhrase(kind string) string {
	switch kind {
	case HoldRateLimit:
		return "GitHub asked driftprobe to wait"
	case HoldUnreachable:
		return "driftprobe backs off after GitHub could not be reached"
	}
	return "driftprobe backs off from a GitHub outage"
}

// holdKey names the holds a pass obeys: its API root's origin, and its
// credential (credentialKey).
type holdKey struct {
	api        string // scheme://host[:port] of the API root
	credential string // credentialKey; '' is the host's (outage) row
}

// credentialKey names the caller of g for github_holds, never a secret:
// the token's variable, or the App installation. A token rotated in the
// same variable is taken for the same caller until the hold ends (what
// GitHub said, or a backoff step of an hour at most).
func credentialKey(g *config.GitHub) string {
	if g.AppAuth() {
		return fmt.Sprintf("app %d installation %d", g.AppID, g.InstallationID)
	}
	return "token $" + g.TokenEnv
}

// hold is the wait in force for a pass: no request to GitHub before until.
type hold struct {
	until    time.Time // the latest until of the pass's holds (zero: none recorded)
	reason   string    // the failure that set it
	kind     string    // its kind (storedKind)
	failures int       // global failures in a row in the pass's scopes (the most of its holds)
}

// active reports whether h forbids requests at now.
func (h hold) active(now time.Time) bool { return h.until.After(now) }

// readHold returns the holds of k merged: the host's (an outage) and the
// credential's (a rate limit).
func readHold(ctx context.Context, db *storage.DB, k holdKey) (hold, error) {
	rows, err := db.SQL().QueryContext(ctx, `SELECT credential, until, failures, reason, kind FROM github_holds WHERE api = ? AND credential IN ('', ?)`, k.api, k.credential)
	if err != nil {
		return hold{}, fmt.Errorf("github holds: %w", err)
	}
	defer rows.Close()
	var h hold
	for rows.Next() {
		var cred, until, reason, kind string
		var failures int
		if err := rows.Scan(&cred, &until, &failures, &reason, &kind); err != nil {
			return hold{}, fmt.Errorf("github holds: %w", err)
		}
		if t := storage.ParseTime(until); t.After(h.until) {
			h.until, h.reason, h.kind = t, reason, storedKind(cred, kind, reason)
		}
		h.failures = max(h.failures, failures)
	}
	if err := rows.Err(); err != nil {
		return hold{}, fmt.Errorf("github holds: %w", err)
	}
	return h, nil
}

// writeHold records f's wait in its scope (by its kind: the credential's
// for a rate limit, else the host's): no request before f.until there,
// with f's reason and kind. A later until already recorded (another
// process's, a longer limit) is kept, with its reason and kind; failures
// counts one more global failure in a row.
func writeHold(ctx context.Context, db *storage.DB, k holdKey, f failure, at time.Time) error {
	if f.kind == "" || f.until.IsZero() {
		return nil
	}
	cred := k.credential
	if holdScopeHost(f.kind) {
		cred = ""
	}
	ctx = context.WithoutCancel(ctx) // recorded even when the pass is being cancelled
	return db.Tx(ctx, func(tx *sql.Tx) error {
		var until, reason, kind string
		var failures int
		err := tx.QueryRowContext(ctx, `SELECT until, failures, reason, kind FROM github_holds WHERE api = ? AND credential = ?`, k.api, cred).Scan(&until, &failures, &reason, &kind)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("github hold: %w", err)
		}
		next := f.until
		if t := storage.ParseTime(until); until != "" && t.After(next) {
			next = t // a longer wait stands, with its reason and kind
			kind = storedKind(cred, kind, reason)
		} else {
			reason, kind = f.msg, f.kind
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO github_holds (api, credential, until, failures, reason, at, kind) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (api, credential) DO UPDATE SET until = excluded.until, failures = excluded.failures, reason = excluded.reason, at = excluded.at, kind = excluded.kind`,
			k.api, cred, ts(next), failures+1, reason, ts(at), kind)
		if err != nil {
			return fmt.Errorf("github hold: %w", err)
		}
		return nil
	})
}

// clearHolds deletes k's holds that are over at now: GitHub answered, so
// the next outage or limit backs off from its first step again. A hold
// still in force (another process recorded it meanwhile) stays.
func clearHolds(ctx context.Context, db *storage.DB, k holdKey, now time.Time) error {
	ctx = context.WithoutCancel(ctx)
	return db.Tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT credential, until FROM github_holds WHERE api = ? AND credential IN ('', ?)`, k.api, k.credential)
		if err != nil {
			return fmt.Errorf("github holds: %w", err)
		}
		type over struct{ cred, until string }
		var done []over
		for rows.Next() {
			var o over
			if err := rows.Scan(&o.cred, &o.until); err != nil {
				rows.Close()
				return fmt.Errorf("github holds: %w", err)
			}
			if !storage.ParseTime(o.until).After(now) {
				done = append(done, o)
			}
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return fmt.Errorf("github holds: %w", err)
		}
		rows.Close()
		for _, o := range done {
			if _, err := tx.ExecContext(ctx, `DELETE FROM github_holds WHERE api = ? AND credential = ? AND until = ?`, k.api, o.cred, o.until); err != nil {
				return fmt.Errorf("github holds: %w", err)
			}
		}
		return nil
	})
}

// Hold is a recorded GitHub wait (github_holds): no delivery pass of its
// scope sends anything to GitHub before Until.
type Hold struct {
	API string `json:"api"` // the API root's origin
	// Scope is "host" (an outage or GitHub unreachable: every credential
	// on API) or "credential" (a rate limit of Credential on API).
	Scope string `json:"scope"`
	// Kind is what the wait is for (HoldRateLimit: GitHub asked to wait;
	// HoldOutage: GitHub failing; HoldUnreachable: no answer from GitHub,
	// none at all or another server's in its place), as recorded with it
	// (storedKind).
	Kind       string    `json:"kind"`
	Credential string    `json:"credential,omitempty"` // who called, never a secret; '' for a host hold
	Until      time.Time `json:"until"`
	Reason     string    `json:"reason"` // the failure that set it
	Failures   int       `json:"failures"`
	At         time.Time `json:"at"` // when it was recorded
}

// Active reports whether h forbids requests at now.
func (h Hold) Active(now time.Time) bool { return h.Until.After(now) }

// Holds lists the recorded GitHub waits, over or not (one over is
// deleted by the next pass GitHub answers), latest until first.
func Holds(ctx context.Context, db *storage.DB) ([]Hold, error) {
	return listHolds(ctx, db.SQL())
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func listHolds(ctx context.Context, q querier) ([]Hold, error) {
	rows, err := q.QueryContext(ctx, `SELECT api, credential, until, reason, failures, at, kind FROM github_holds ORDER BY until DESC, api, credential`)
	if err != nil {
		return nil, fmt.Errorf("github holds: %w", err)
	}
	defer rows.Close()
	out := []Hold{}
	for rows.Next() {
		var h Hold
		var until, at, kind string
		if err := rows.Scan(&h.API, &h.Credential, &until, &h.Reason, &h.Failures, &at, &kind); err != nil {
			return nil, fmt.Errorf("github holds: %w", err)
		}
		h.Until, h.At = storage.ParseTime(until), storage.ParseTime(at)
		h.Scope = "credential"
		if h.Credential == "" {
			h.Scope = "host"
		}
		h.Kind = storedKind(h.Credential, kind, h.Reason)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("github holds: %w", err)
	}
	return out, nil
}

// ClearHolds is the operator's escape (outbox --clear-holds): it deletes
// every recorded GitHub wait and returns what it deleted, and makes due at
// once the pending rows a hold had deferred (those whose next attempt is
// exactly a deleted hold's until: noteAll moves them there); their
// last_error is kept. A hold GitHub really meant is recorded again by the
// next request it refuses.
func ClearHolds(ctx context.Context, db *storage.DB) ([]Hold, error) {
	var out []Hold
	now := ts(db.Now())
	err := db.Tx(ctx, func(tx *sql.Tx) error {
		hs, err := listHolds(ctx, tx)
		if err != nil {
			return err
		}
		for _, h := range hs {
			if _, err := tx.ExecContext(ctx, `DELETE FROM github_holds WHERE api = ? AND credential = ?`, h.API, h.Credential); err != nil {
				return fmt.Errorf("github holds: %w", err)
			}
			if h.Active(db.Now()) {
				if _, err := tx.ExecContext(ctx, `UPDATE outbox SET next_attempt_at = ? WHERE sent_at = '' AND next_attempt_at = ?`, now, ts(h.Until)); err != nil {
					return fmt.Errorf("outbox: %w", err)
				}
			}
		}
		out = hs
		return nil
	})
	return out, err
}
