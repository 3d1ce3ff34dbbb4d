package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/app"
)

func newEvidenceCmd(g *globals) *cobra.Command {
	var asJSON bool
	var verify string
	c := &cobra.Command{
		Use:   "evidence EVENT",
		Short: "A self-contained, hash-verifiable record of an event for incident reviews",
		Long: `Print the evidence of one event: for every flipped probe, the exact request bytes
with their SHA-256 (recomputed and checked against the stored fingerprint), the
probe's canonical corpus form, and the before and after observations (provider
request ids, timestamps, model fingerprints, verdicts, categories, signals and the
stored response bodies with their hashes). --json emits the record with a
record_sha256 over its own content; --verify FILE checks such a record.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if verify != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if verify != "" {
				b, err := os.ReadFile(verify)
				if err != nil {
					return app.Usage(err)
				}
				var r evidence.Record
				if err := json.Unmarshal(b, &r); err != nil {
					return app.Usage(fmt.Errorf("%s: not an evidence record: %w", verify, err))
				}
				if err := evidence.Verify(&r); err != nil {
					return &gateError{fmt.Sprintf("%s: verification failed: %v", verify, err)}
				}
				fmt.Fprintf(g.stdout, "%s: ok (event %d, %d probes, record sha256 %s)\n", verify, r.Event.ID, len(r.Probes), r.SHA256)
				return nil
			}
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return app.Usage(fmt.Errorf("evidence: %q is not an event id", args[0]))
			}
			ctx := cmd.Context()
			sess, err := app.Open(ctx, g.config, g.db, false, app.NoCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			st := sess.Store
			rec, err := evidence.Build(ctx, st, id, time.Now())
			if err != nil {
				return app.Usage(err)
			}
			if asJSON {
				return writeJSON(g.stdout, rec)
			}
			evidence.WriteMarkdown(g.stdout, rec)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON record (with record_sha256)")
	c.Flags().StringVar(&verify, "verify", "", "verify a JSON evidence record file (exit 1 when it does not verify)")
	return c
}
