package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

func newEventsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var target string
	var since int64
	c := &cobra.Command{
		Use:   "events",
		Short: "List confirmed change events",
		Long: `List events (confirmed changes) as a table, or with --json as a JSON array: id,
target, targets, kind (policy_change | model_change | score_drift | nondeterminism),
direction (tightened | loosened | recategorized | mixed), probes (target, probe_id,
request_sha256, before and after verdicts with categories), new_categories,
first_run, confirmed_run, issue_url and more.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --since 0 is every event (a poller's first query); below 0
			// is no run id.
			if since != 0 {
				if err := checkRunID(cmd, "since", since, "for every event"); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			sess, err := app.OpenRead(ctx, g.config, g.db, app.NoCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			st := sess.Store
			if target != "" {
				if err := knownTarget(ctx, "events", sess.Config, st, target); err != nil {
					return err
				}
			}
			evs, err := diff.ListEvents(ctx, st, diff.Filter{Target: target, Since: since})
			if err != nil {
				return err
			}
			if asJSON {
				if evs == nil {
					evs = []*diff.Event{}
				}
				return writeJSON(g.stdout, evs)
			}
			if len(evs) == 0 {
				_, err := g.stdout.Write([]byte("no events\n"))
				return err
			}
			// WriteEvents leads each event with a blank line (its separator
			// from a run's summary); the listing opens with its first event.
			var b bytes.Buffer
			app.WriteEvents(&b, evs, nil)
			_, err = g.stdout.Write(bytes.TrimPrefix(b.Bytes(), []byte("\n")))
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON array output")
	c.Flags().StringVar(&target, "target", "", "only events involving this target")
	c.Flags().Int64Var(&since, "since", 0, "only events updated in this run or later")
	return c
}

// knownTarget returns a usage error (led by cmd) unless name is a target of
// the config or one the database has recorded: a target removed from the
// config keeps its history, and its events and runs stay readable.
func knownTarget(ctx context.Context, cmd string, cfg *config.Config, st *storage.DB, name string) error {
	if cfg.Target(name) != nil {
		return nil
	}
	_, err := st.TargetByName(ctx, name)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return app.Usage(fmt.Errorf("%s: target %q is not in the config (nor in the database)", cmd, name))
	default:
		return err
	}
}
