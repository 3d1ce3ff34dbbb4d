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

// holdScope says what a global failure's wait applies to (the
// github_holds table, migration 0021).
type holdScope int

const (
	holdNone holdScope = iota // no wait recorded beyond the row's own (a configuration problem, one row's failure)
	// holdHost: an outage (5xx, a timeout) or GitHub unreachable (no HTTP
	// answer) — every credential on the GitHub host waits.
	holdHost
	// holdCredential: a primary or secondary rate limit — GitHub limits
	// the caller (a token's user, an App installation), not a
	// repository or a row: that credential waits on that host.
	holdCredential
)

// Hold kinds (Hold.Kind, Result.HeldKind): what a wait is for, so what it
// is called. Only a rate limit is GitHub asking driftprobe to wait; the
// others are driftprobe's own backoff (the same, 1 minute doubling to an
// hour, by failures in a row).
const (
	// HoldRateLimit: a primary or secondary rate limit of the credential
	// (scope "credential"): GitHub asked driftprobe to wait.
	HoldRateLimit = "rate_limit"
	// HoldOutage: GitHub failing: it answered 5xx, or took the connection
	// and answered nothing within the call's limit (scope "host").
	HoldOutage = "outage"
	// HoldUnreachable: no HTTP answer came (scope "host"): a DNS failure,
	// a refused or reset connection, a TLS failure, no connection within
	// the call's limit. GitHub said nothing; waiting does not fix a wrong
	// github.base_url or blocked egress.
	HoldUnreachable = "unreachable"
)

// unreachablePrefix starts the message of every failure that got no HTTP
// answer (classify), as it did in earlier releases ("GitHub unreachable
// (dial tcp …)"): a host hold's kind is read from its reason (holdKind),
// so a hold an older driftprobe recorded is worded right too.
const unreachablePrefix = "GitHub unreachable"

// UnreachableHint ends what driftprobe says of an unreachable GitHub.
const UnreachableHint = "waiting does not fix a wrong github.base_url or blocked egress (DNS, firewall, proxy, TLS)"

// holdKind is the kind of the github_holds row of credential and reason.
func holdKind(credential, reason string) string {
	switch {
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
	kind     string    // its kind (holdKind)
	failures int       // global failures in a row in the pass's scopes (the most of its holds)
}

// active reports whether h forbids requests at now.
func (h hold) active(now time.Time) bool { return h.until.After(now) }

// readHold returns the holds of k merged: the host's (an outage) and the
// credential's (a rate limit).
func readHold(ctx context.Context, db *storage.DB, k holdKey) (hold, error) {
	rows, err := db.SQL().QueryContext(ctx, `SELECT credential, until, failures, reason FROM github_holds WHERE api = ? AND credential IN ('', ?)`, k.api, k.credential)
	if err != nil {
		return hold{}, fmt.Errorf("github holds: %w", err)
	}
	defer rows.Close()
	var h hold
	for rows.Next() {
		var cred, until, reason string
		var failures int
		if err := rows.Scan(&cred, &until, &failures, &reason); err != nil {
			return hold{}, fmt.Errorf("github holds: %w", err)
		}
		if t := storage.ParseTime(until); t.After(h.until) {
			h.until, h.reason, h.kind = t, reason, holdKind(cred, reason)
		}
		h.failures = max(h.failures, failures)
	}
	if err := rows.Err(); err != nil {
		return hold{}, fmt.Errorf("github holds: %w", err)
	}
	return h, nil
}

// writeHold records f's wait in its scope: no request before f.until
// there. A later until already recorded (another process's, a longer
// limit) is kept; failures counts one more global failure in a row.
func writeHold(ctx context.Context, db *storage.DB, k holdKey, f failure, at time.Time) error {
	if f.hold == holdNone || f.until.IsZero() {
		return nil
	}
	cred := k.credential
	if f.hold == holdHost {
		cred = ""
	}
	ctx = context.WithoutCancel(ctx) // recorded even when the pass is being cancelled
	return db.Tx(ctx, func(tx *sql.Tx) error {
		var until, reason string
		var failures int
		err := tx.QueryRowContext(ctx, `SELECT until, failures, reason FROM github_holds WHERE api = ? AND credential = ?`, k.api, cred).Scan(&until, &failures, &reason)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("github hold: %w", err)
		}
		next := f.until
		if t := storage.ParseTime(until); until != "" && t.After(next) {
			next = t // a longer wait stands, with its reason
		} else {
			reason = f.msg
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO github_holds (api, credential, until, failures, reason, at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (api, credential) DO UPDATE SET until = excluded.until, failures = excluded.failures, reason = excluded.reason, at = excluded.at`,
			k.api, cred, ts(next), failures+1, reason, ts(at))
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
	// HoldOutage: GitHub failing; HoldUnreachable: GitHub not reached).
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
	rows, err := q.QueryContext(ctx, `SELECT api, credential, until, reason, failures, at FROM github_holds ORDER BY until DESC, api, credential`)
	if err != nil {
		return nil, fmt.Errorf("github holds: %w", err)
	}
	defer rows.Close()
	out := []Hold{}
	for rows.Next() {
		var h Hold
		var until, at string
		if err := rows.Scan(&h.API, &h.Credential, &until, &h.Reason, &h.Failures, &at); err != nil {
			return nil, fmt.Errorf("github holds: %w", err)
		}
		h.Until, h.At = storage.ParseTime(until), storage.ParseTime(at)
		h.Scope = "credential"
		if h.Credential == "" {
			h.Scope = "host"
		}
		h.Kind = holdKind(h.Credential, h.Reason)
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
