package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/termtext"
	"github.com/driftprobe/driftprobe/storage"
)

func newOutboxCmd(g *globals) *cobra.Command {
	var asJSON, send, dryRun, all, backfill, clearHolds bool
	var dir string
	var skip, unskip []int64
	c := &cobra.Command{
		Use:   "outbox",
		Short: "GitHub deliveries still owed: list them and why, send them now, or render them",
		Long: `Every change to an event (opened, more probes, another target, reverted) queues
a GitHub delivery in the same transaction that records the change: open the
event's issue, or comment on it (and close it on a revert with
github.close_on_revert). Deliveries are sent after each run, in order, exactly
once; failures (GitHub down, rate limited, token or repository problems) stay
queued with their error and next attempt time.

  driftprobe outbox              list pending deliveries and why they are pending
  driftprobe outbox --json       the same as a JSON array
  driftprobe outbox --send       deliver what is due now, then list what is left
                                 (exit 3 when a row failed, or a failure or
                                 a recorded wait kept due rows from going
                                 out; rows not due yet are no failure; a
                                 shell without the GitHub credential says so
                                 and leaves the rows' errors as they are)
  driftprobe outbox --dry-run    print the issue and comment bodies that would be
                                 sent, sending nothing (--dir D: one file each).
                                 Without a github block, or with --all, renders
                                 every event's issue and comments instead.
  driftprobe outbox --backfill   queue an issue for every open event that has
                                 none: events recorded before the github block
                                 was configured (or while github.kinds left
                                 their kind out) are otherwise never filed.
  driftprobe outbox --skip ID    give up pending row ID (repeatable): it is
                                 recorded done without being sent, and its
                                 event's later rows go out in turn; for a
                                 delivery that cannot go out, such as a
                                 comment on an issue a maintainer keeps locked.
  driftprobe outbox --unskip ID  undo --skip of row ID (repeatable): it is
                                 pending again (delivered in turn, --send: now);
                                 for an event's open row, the event's later
                                 rows skipped because it was are pending again
                                 too, so the issue is opened and they follow
                                 in order. Only rows skipped with --skip.
  driftprobe outbox --clear-holds
                                 delete every recorded GitHub wait ("no request
                                 before T", after a rate limit, an outage or
                                 GitHub unreachable) and say which; the rows
                                 they deferred are due
                                 again (with --send: delivered now). For a wait
                                 that is wrong; GitHub's real one is recorded
                                 again by the next request it refuses.

A row that fails waits (backing off) and holds back the later rows of its
event, never those of other events; a repository-wide problem (token, rate
limit, outage, GitHub unreachable) defers every row, and a rate limit, an
outage or an unreachable GitHub records a wait (at most an hour from the
failure, whatever GitHub stated) during which nothing is sent; the listing
shows the waits in force and what each is: GitHub asked driftprobe to wait
(a rate limit), or driftprobe backs off from GitHub failing (an outage: a
5xx GitHub answered, or no answer in time on a connection it took) or not
reached at all (unreachable: no answer from GitHub, either no HTTP answer
or a 5xx without GitHub's request id, which a proxy or load balancer on the
way sent; waiting does not fix a wrong github.base_url or blocked egress).

The token comes from the environment variable named by github.token_env
(default GITHUB_TOKEN), or a GitHub App installation authenticates
(github.app_id, github.installation_id, and the PEM key in the environment
variable named by github.private_key_env).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if send && dryRun {
				return cobraUsage{fmt.Errorf("%s: --send and --dry-run exclude each other", cmd.CommandPath())}
			}
			if asJSON && dryRun {
				return cobraUsage{fmt.Errorf("%s: --json and --dry-run exclude each other (a dry run prints the Markdown bodies; --dir writes one file each)", cmd.CommandPath())}
			}
			if dir != "" && !dryRun {
				return cobraUsage{fmt.Errorf("%s: --dir needs --dry-run", cmd.CommandPath())}
			}
			if all && !dryRun {
				return cobraUsage{fmt.Errorf("%s: --all needs --dry-run", cmd.CommandPath())}
			}
			if backfill && dryRun {
				return cobraUsage{fmt.Errorf("%s: --backfill and --dry-run exclude each other (--dry-run --all renders every event)", cmd.CommandPath())}
			}
			if len(skip) > 0 && dryRun {
				return cobraUsage{fmt.Errorf("%s: --skip and --dry-run exclude each other", cmd.CommandPath())}
			}
			if len(unskip) > 0 && dryRun {
				return cobraUsage{fmt.Errorf("%s: --unskip and --dry-run exclude each other", cmd.CommandPath())}
			}
			if both := bothSkipped(skip, unskip); len(both) > 0 {
				return cobraUsage{fmt.Errorf("%s: --skip and --unskip both name outbox row(s) %s: give each row one of them", cmd.CommandPath(), idList(both))}
			}
			if clearHolds && dryRun {
				return cobraUsage{fmt.Errorf("%s: --clear-holds and --dry-run exclude each other", cmd.CommandPath())}
			}
			// Listing and rendering only read (never migrate); --send,
			// --backfill, --skip, --unskip and --clear-holds write.
			// A command refused for want of a github block is refused
			// before the database is opened: it changes nothing (no skip
			// done before the refusal, no migration).
			sess, err := openSessionChecked(ctx, g, send || backfill || len(skip) > 0 || len(unskip) > 0 || clearHolds, false, app.NoCorpus, func(cfg *config.Config) error {
				switch {
				case cfg.GitHub != nil || dryRun:
				case backfill:
					return app.Usage(fmt.Errorf("%s: no github block in the config: there is nowhere to file issues", configName(cfg.File)))
				case send:
					return app.Usage(fmt.Errorf("%s: no github block in the config: nothing to send (try --dry-run)", configName(cfg.File)))
				}
				return nil
			})
			if err != nil {
				return err
			}
			defer sess.Close()
			cfg, st := sess.Config, sess.Store
			log := app.Logger(g.logLevel)

			if dryRun {
				pending, err := ghissue.Pending(ctx, st)
				if err != nil {
					return err
				}
				var n int
				if all || cfg.GitHub == nil || len(pending) == 0 {
					evs, err := diff.ListEvents(ctx, st, diff.Filter{})
					if err != nil {
						return err
					}
					n, err = ghissue.RenderEvents(ctx, st, cfg.GitHub, evs, 0, g.stdout, dir)
					if err != nil {
						return err
					}
				} else {
					res, err := ghissue.Deliver(ctx, st, cfg, ghissue.Options{Logger: log, DryRun: g.stdout, DryRunDir: dir})
					if err != nil {
						return err
					}
					n = res.Rendered
				}
				if dir != "" {
					fmt.Fprintf(g.stdout, "rendered %d issue/comment bodies into %s (nothing sent)\n", n, dir)
				} else if n == 0 {
					fmt.Fprintln(g.stdout, "nothing to render: no events")
				}
				return nil
			}

			file := app.DetectionParams(cfg).Enqueue // nil without a github block
			// --unskip before --skip: a row --unskip brings back with its
			// open row can be skipped on its own in the same command.
			var notSkipped []int64
			if len(unskip) > 0 {
				done, not, err := ghissue.Unskip(ctx, st, unskip)
				if err != nil {
					return err
				}
				w := g.stdout // on stderr with --json, as --skip's note
				if asJSON {
					w = g.stderr
				}
				for _, u := range done {
					fmt.Fprintf(w, "outbox row %d (event %d, %s) is pending again: its skip is undone", u.ID, u.EventID, u.Action)
					if len(u.Later) > 0 {
						fmt.Fprintf(w, ", with the event's later row(s) %s, recorded skipped because it was", idList(u.Later))
					}
					if u.ClaimedUntil != nil {
						// Skipped while a delivery had it: that delivery
						// still has it, and its outcome is recorded.
						fmt.Fprintf(w, "; still being delivered by the delivery that had it claimed when it was skipped (claimed until %s)\n", u.ClaimedUntil.UTC().Format(time.RFC3339))
						continue
					}
					fmt.Fprintln(w, "; delivered in turn (after the next run, or now with --send)")
				}
				for _, n := range not {
					notSkipped = append(notSkipped, n.ID)
					fmt.Fprintf(w, "outbox row %d not unskipped: %s\n", n.ID, n.Reason)
				}
			}
			var notPending []int64
			if len(skip) > 0 {
				done, err := ghissue.Skip(ctx, st, skip)
				if err != nil {
					return err
				}
				for _, id := range skip {
					if !slices.Contains(done, id) && !slices.Contains(notPending, id) {
						notPending = append(notPending, id)
					}
				}
				// On stderr with --json, whose stdout stays one document.
				w := g.stdout
				if asJSON {
					w = g.stderr
				}
				if len(done) > 0 {
					fmt.Fprintf(w, "skipped outbox row(s) %s: recorded done, never delivered; their events' later rows go out in turn\n", idList(done))
				}
				if len(notPending) > 0 {
					fmt.Fprintf(w, "outbox row(s) %s not pending (unknown, or delivered already): nothing skipped for them\n", idList(notPending))
				}
			}
			if clearHolds {
				cleared, err := ghissue.ClearHolds(ctx, st)
				if err != nil {
					return err
				}
				w := g.stdout // on stderr with --json, as --skip's note
				if asJSON {
					w = g.stderr
				}
				if len(cleared) == 0 {
					fmt.Fprintln(w, "no GitHub wait recorded: nothing cleared")
				} else {
					fmt.Fprintf(w, "cleared %d GitHub wait(s); the rows they deferred are due again:\n", len(cleared))
					for _, h := range cleared {
						fmt.Fprintf(w, "  %s\n", termtext.Safe(holdLine(h, st.Now())))
					}
				}
			}
			var backfilled []int64
			if backfill {
				ids, err := ghissue.QueueUnfiled(ctx, st, file)
				if err != nil {
					return err
				}
				backfilled = append([]int64{}, ids...)
				if !asJSON {
					fmt.Fprintf(g.stdout, "queued an issue for %d open event(s) that had none%s\n", len(ids), eventList(ids))
				}
			}
			var res *ghissue.Result
			if send {
				// Attended: a shell without the prober's credential
				// reports it here and leaves the rows' errors as they are.
				if res, err = ghissue.Deliver(ctx, st, cfg, ghissue.Options{Logger: log, Caller: "driftprobe outbox --send", Attended: true}); err != nil {
					return err
				}
			}
			pending, err := ghissue.Pending(ctx, st)
			if err != nil {
				return err
			}
			holds, err := activeHolds(ctx, st)
			if err != nil {
				return err
			}
			if asJSON {
				if backfill && res == nil {
					// An object, as with --send: what was queued, and what
					// is pending now.
					if err := writeJSON(g.stdout, struct {
						Backfilled []int64              `json:"backfilled"`
						Pending    []ghissue.PendingRow `json:"pending"`
						Holds      []ghissue.Hold       `json:"holds"`
					}{backfilled, pending, holds}); err != nil {
						return err
					}
				} else if res != nil {
					// errors and notes are always arrays, empty or not.
					out := *res
					if out.Errors == nil {
						out.Errors = []string{}
					}
					if out.Notes == nil {
						out.Notes = []string{}
					}
					res = &out
					// backfilled: present (an array, empty or not) exactly
					// when --backfill was given.
					var bf *[]int64
					if backfill {
						bf = &backfilled
					}
					if err := writeJSON(g.stdout, struct {
						*ghissue.Result
						Backfilled *[]int64             `json:"backfilled,omitempty"`
						Pending    []ghissue.PendingRow `json:"pending"`
						Holds      []ghissue.Hold       `json:"holds"`
					}{res, bf, pending, holds}); err != nil {
						return err
					}
				} else {
					if err := writeJSON(g.stdout, pending); err != nil {
						return err
					}
					// The array stays the rows; the waits go to stderr.
					noteHolds(g.stderr, holds, st.Now())
				}
				if err := noteUnfiled(ctx, g.stderr, cfg.GitHub != nil && !backfill, st, file); err != nil {
					return err
				}
			} else {
				w := g.stdout
				if res != nil {
					fmt.Fprintf(w, "sent %d, failed %d, deferred %d", res.Sent, res.Failed, res.Deferred)
					if why := deferredWhy(res); len(why) > 0 {
						fmt.Fprintf(w, " (%s)", strings.Join(why, ", "))
					}
					if res.Lost > 0 {
						fmt.Fprintf(w, ", %d left to another process", res.Lost)
					}
					if res.Skipped > 0 {
						fmt.Fprintf(w, ", %d skipped (their event's issue was skipped)", res.Skipped)
					}
					fmt.Fprintln(w)
					for _, e := range res.Errors {
						fmt.Fprintf(w, "  %s\n", termtext.Safe(e))
					}
					for _, n := range res.Notes {
						fmt.Fprintf(w, "  %s\n", termtext.Safe(n))
					}
				}
				switch {
				case cfg.GitHub == nil && len(pending) == 0:
					fmt.Fprintln(w, "GitHub issues are not configured (no github block): nothing is queued. `driftprobe outbox --dry-run` shows what would be filed.")
				case cfg.GitHub == nil:
					// Queued while a github block was configured: without
					// one they wait, and keep driftprobe_outbox_pending up.
					fmt.Fprintf(w, "GitHub issues are not configured (no github block), but %d delivery(ies) below were queued while they were: they are not sent until a github block is back (then `driftprobe outbox --send`).\n", len(pending))
				}
				noteHolds(w, holds, st.Now())
				switch {
				case len(pending) == 0 && cfg.GitHub == nil:
					// Said above: nothing is queued, nothing was delivered.
				case len(pending) == 0:
					fmt.Fprintln(w, "outbox empty: every queued event change has been delivered")
				default:
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tEVENT\tTARGET\tACTION\tCHANGE\tRUN\tISSUE\tATTEMPTS\tREASON")
					for _, p := range pending {
						issue := "-"
						if p.IssueNumber != 0 {
							issue = fmt.Sprintf("#%d", p.IssueNumber)
						}
						fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%d\t%s\t%d\t%s\n", p.ID, p.EventID, p.Target, p.Action, p.Change, p.RunID, issue, p.Attempts, termtext.Safe(p.Reason)) // GitHub's words
					}
					tw.Flush()
				}
				// Events detection never queued: say so, or an empty outbox
				// reads as "every event has its issue".
				if err := noteUnfiled(ctx, w, cfg.GitHub != nil && !backfill, st, file); err != nil {
					return err
				}
			}
			if res != nil && res.Incomplete() {
				return incomplete(res, len(pending))
			}
			switch {
			case len(notPending) > 0 && len(notSkipped) > 0:
				return fmt.Errorf("--skip: outbox row(s) %s are not pending; --unskip: outbox row(s) %s were not skipped", idList(notPending), idList(notSkipped))
			case len(notPending) > 0:
				return fmt.Errorf("--skip: outbox row(s) %s are not pending", idList(notPending))
			case len(notSkipped) > 0:
				return fmt.Errorf("--unskip: outbox row(s) %s were not skipped with --skip (see above)", idList(notSkipped))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON output (an array of pending rows; with --send an object with sent, failed, deferred (and why: not_due, claimed_elsewhere, held_back, stopped, held_by_github), skipped, rendered (dry runs only: 0), lost, held_until and held_kind (when a GitHub wait was in force: rate_limit, outage or unreachable), errors, notes, pending and holds (the GitHub waits in force, each with its kind); with --backfill also backfilled, the events queued)")
	c.Flags().BoolVar(&send, "send", false, "deliver pending rows that are due now")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "render what would be sent instead of sending")
	c.Flags().StringVar(&dir, "dir", "", "with --dry-run: write one markdown file per issue/comment into this directory")
	c.Flags().BoolVar(&all, "all", false, "with --dry-run: render every event's issue and comments, not just pending deliveries")
	c.Flags().Int64SliceVar(&skip, "skip", nil, "give up these pending outbox rows (ids from the listing; repeatable or comma-separated): recorded done without being sent, so their events' later rows go out in turn")
	c.Flags().Int64SliceVar(&unskip, "unskip", nil, "undo --skip of these outbox rows (repeatable or comma-separated): pending again, delivered in turn; an open row brings back the later rows of its event skipped because it was")
	c.Flags().BoolVar(&clearHolds, "clear-holds", false, "delete every recorded GitHub wait (rate limit, outage, GitHub unreachable) and say which; the rows they deferred are due again (with --send, delivered now)")
	c.Flags().BoolVar(&backfill, "backfill", false, "queue an issue for every open event that has none (recorded before the github block was configured); with --send, deliver them now")
	return c
}

// deferredWhy names, with their counts, the causes that left res's
// deferred rows queued, only those that applied.
func deferredWhy(res *ghissue.Result) []string {
	var why []string
	for _, c := range []struct {
		n    int
		what string
	}{
		{res.Stopped, "not attempted after a failure that stopped the pass"},
		{res.HeldByGitHub, "due but not sent while " + ghissue.HoldPhrase(res.HeldKind)},
		{res.NotDue, "not due yet"},
		{res.ClaimedElsewhere, "claimed by another delivery"},
		{res.HeldBack, "held back behind an earlier row of their event"},
	} {
		if c.n > 0 {
			why = append(why, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return why
}

// incomplete is outbox --send's error (exit 3) for a pass that left work
// undone (ghissue.Result.Incomplete): what failed or kept due rows from
// going out, then the rows deferred as scheduled, each only when it
// applied; queued rows stay pending.
func incomplete(res *ghissue.Result, queued int) error {
	var why []string
	if res.Failed > 0 {
		why = append(why, fmt.Sprintf("%d row(s) failed", res.Failed))
	}
	if res.Stopped > 0 {
		why = append(why, fmt.Sprintf("%d due row(s) not attempted after a failure that stopped the pass", res.Stopped))
	}
	if res.HeldByGitHub > 0 {
		w := fmt.Sprintf("%d due row(s) not sent while %s", res.HeldByGitHub, ghissue.HoldPhrase(res.HeldKind))
		var when []string
		if res.HeldUntil != nil {
			when = append(when, "no request before "+res.HeldUntil.UTC().Format(time.RFC3339Nano))
		}
		if res.HeldKind == ghissue.HoldUnreachable {
			when = append(when, ghissue.UnreachableHint)
		}
		if len(when) > 0 {
			w += " (" + strings.Join(when, "; ") + ")"
		}
		why = append(why, w)
	}
	if len(why) == 0 {
		// A problem that stopped the pass while nothing was due yet (a
		// missing token): Errors has it.
		why = append(why, "the pass stopped at a problem (see above)")
	}
	var later []string
	for _, c := range []struct {
		n    int
		what string
	}{
		{res.NotDue, "not due yet"},
		{res.ClaimedElsewhere, "claimed by another delivery"},
		{res.HeldBack, "held back behind an earlier row of their event"},
	} {
		if c.n > 0 {
			later = append(later, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	msg := "GitHub delivery incomplete: " + strings.Join(why, ", ")
	if len(later) > 0 {
		msg += "; also deferred: " + strings.Join(later, ", ")
	}
	return fmt.Errorf("%s; %d row(s) stay queued (see above)", msg, queued)
}

// bothSkipped returns the ids both --skip and --unskip name, in --skip's
// order, each once.
func bothSkipped(skip, unskip []int64) []int64 {
	var both []int64
	for _, id := range skip {
		if slices.Contains(unskip, id) && !slices.Contains(both, id) {
			both = append(both, id)
		}
	}
	return both
}

// activeHolds is the GitHub waits in force at the store's clock.
func activeHolds(ctx context.Context, st *storage.DB) ([]ghissue.Hold, error) {
	hs, err := ghissue.Holds(ctx, st)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(hs, func(h ghissue.Hold) bool { return !h.Active(st.Now()) }), nil
}

// noteHolds writes to w the GitHub waits in force (holds), which keep
// every delivery from sending anything, what they are (GitHub asked to
// wait, or driftprobe backs off from an outage or an unreachable GitHub),
// and the escape.
func noteHolds(w io.Writer, holds []ghissue.Hold, now time.Time) {
	if len(holds) == 0 {
		return
	}
	var why []string
	for _, h := range holds {
		if p := ghissue.HoldPhrase(h.Kind); !slices.Contains(why, p) {
			why = append(why, p)
		}
	}
	fmt.Fprintf(w, "%s: nothing is sent before the end of %d recorded wait(s) (`driftprobe outbox --clear-holds` deletes them, if one is wrong):\n", strings.Join(why, "; "), len(holds))
	for _, h := range holds {
		fmt.Fprintf(w, "  %s\n", termtext.Safe(holdLine(h, now)))
	}
}

// holdLine is one wait: until, scope and kind, reason.
func holdLine(h ghissue.Hold, now time.Time) string {
	var scope string
	switch h.Kind {
	case ghissue.HoldRateLimit:
		scope = h.Credential + " on " + h.API + " (rate limit)"
	case ghissue.HoldUnreachable:
		scope = "every credential on " + h.API + " (unreachable: no answer from GitHub"
		if !strings.Contains(h.Reason, ghissue.UnreachableHint) {
			scope += "; " + ghissue.UnreachableHint // recorded by an older driftprobe
		}
		scope += ")"
	default:
		scope = "every credential on " + h.API + " (outage)"
	}
	left := "over"
	if h.Active(now) {
		left = "in " + h.Until.Sub(now).Round(time.Second).String()
	}
	return fmt.Sprintf("until %s (%s), %s: %s", h.Until.UTC().Format(time.RFC3339), left, scope, h.Reason)
}

// noteUnfiled writes to w, when check is set, how many open events have
// no issue and nothing queued (ghissue.Unfiled), and how to file them.
func noteUnfiled(ctx context.Context, w io.Writer, check bool, st *storage.DB, file func(string) bool) error {
	if !check {
		return nil
	}
	ids, err := ghissue.Unfiled(ctx, st, file)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		fmt.Fprintf(w, "%d open event(s) have no issue and nothing queued%s: recorded before the github block was configured (or while github.kinds left their kind out), they are never filed on their own; `driftprobe outbox --backfill` queues them.\n", len(ids), eventList(ids))
	}
	return nil
}

// idList is "1, 3" for ids.
func idList(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ", ")
}

// eventList is " (events 1, 3)" for ids, "" for none.
func eventList(ids []int64) string {
	if len(ids) == 0 {
		return ""
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return " (events " + strings.Join(s, ", ") + ")"
}

func configName(file string) string {
	if file == "" {
		return "(built-in config)"
	}
	return file
}
