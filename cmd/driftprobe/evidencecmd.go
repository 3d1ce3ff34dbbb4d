package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

func newEvidenceCmd(g *globals) *cobra.Command {
	var asJSON bool
	var verify string
	c := &cobra.Command{
		Use:   "evidence EVENT | --verify FILE",
		Short: "A self-contained, hash-verifiable record of an event for incident reviews",
		Long: `Print the evidence of one event: for every flipped probe, the exact request bytes
with their SHA-256 (recomputed and checked against the stored fingerprint), the
probe's canonical corpus form, and the before and after observations (provider
request ids, timestamps, model fingerprints, verdicts, categories, signals and the
stored response bodies with their hashes). --json emits the record with a
record_sha256 over its own content; --verify FILE checks such a record (and
takes no EVENT).

What the database does not hold is said, not counted as a mismatch: a side of a
flip with no stored observation (before_absent, after_absent: e.g. a probe marked
nondeterministic before any baseline held), request bytes no stored observation
holds any more (request.missing), bodies retention dropped
(response_body_absent). Stored bytes that cannot be read or do not hash to their
fingerprint are problems: the record is still written, with the observation's
problem, all_verified false, and exit 1.

Exit codes: 0 the record verifies; 1 it does not (evidence EVENT: the record is
written all the same; --verify: tampered, or intact but recording evidence that
did not verify); 2 usage error (no such event, FILE is not an evidence record);
3 database or I/O failure.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if verify != "" {
				if len(args) > 0 {
					return fmt.Errorf("--verify takes the record FILE and no event id (got %s): use 'driftprobe evidence --verify FILE'", strings.Join(args, " "))
				}
				return nil
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if verify != "" {
				b, err := os.ReadFile(verify)
				if err != nil {
					return app.Usage(err)
				}
				r, err := evidence.VerifyJSON(b)
				var nr *evidence.NotRecordError
				switch {
				case errors.As(err, &nr):
					return app.Usage(fmt.Errorf("%s: %w", verify, err))
				case err != nil:
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
			sess, err := app.OpenRead(ctx, g.config, g.db, app.NoCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			st := sess.Store
			rec, err := evidence.Build(ctx, st, id, time.Now())
			if errors.Is(err, storage.ErrNotFound) {
				return app.Usage(err)
			}
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(g.stdout, rec); err != nil {
					return err
				}
			} else {
				evidence.WriteMarkdown(g.stdout, rec)
			}
			if !rec.AllVerified {
				return &gateError{fmt.Sprintf("evidence of event %d does not verify: %s", id, strings.Join(rec.Problems(), "; "))}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON record (with record_sha256)")
	c.Flags().StringVar(&verify, "verify", "", "verify a JSON evidence record file instead (no EVENT; exit 1 when it does not verify, 2 when FILE is not a record)")
	return c
}
