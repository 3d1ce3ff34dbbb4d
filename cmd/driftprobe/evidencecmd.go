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

Every observation shown is checked against the verdict the event claims for its
side (verdict_matches_event); one that does not carry it is a problem. The record
also gives each probe's revert (reverted_run, withdrawn) and the event's history
(event.updates). For a nondeterminism event the observations shown are the
answers of the identical bytes that carried the two verdicts (samples or runs
that disagreed): where the event cites an observation with the other verdict,
or none, the one shown says which it replaces and why (cited_observation_id,
selected_because).

What the database legitimately lacks is said, not counted as a mismatch: a
side the event cites no observation for (before_absent, after_absent: e.g. a
nondeterminism event whose other answer retention deleted), request bytes no
stored observation holds any more (request.missing), bodies retention dropped
(response_body_absent). An observation the event cites that the database does
not hold is a problem (before_problem, after_problem): retention keeps every
observation an event cites. Stored bytes that cannot be read or do not hash to
their fingerprint are problems too. With a problem the record is still written,
with all_verified false, and exit 1.

--verify re-hashes the record and its bytes, checks each observation's verdict
against the event's claim and (format driftprobe-evidence/5) that each
observation is of its flip's own target and probe (target, probe_id), and
rejects content record_sha256 does not cover (unknown fields, duplicate keys,
keys spelt otherwise). Records of earlier formats are still read: /2 to /4
with their writer's checks only (they do not name each observation's target
and probe: an observation of another one is caught only where their writer
named it); /1 with its hashes verified as before and its verdicts checked
against its event, which its writer did not.

Exit codes: 0 the record verifies; 1 it does not (evidence EVENT: the record is
written all the same; --verify: tampered, duplicate or unknown keys, or intact
but recording evidence that did not verify); 2 usage error (no such event, FILE
is not an evidence record); 3 database or I/O failure.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if verify != "" {
				if len(args) > 0 {
					return fmt.Errorf("--verify takes the record FILE and no event id (got %s): use 'driftprobe evidence --verify FILE'", strings.Join(args, " "))
				}
				return nil
			}
			if len(args) != 1 {
				return fmt.Errorf("accepts one event id, received %d: use 'driftprobe evidence EVENT' to write a record (ids: driftprobe events) or 'driftprobe evidence --verify FILE' to check one", len(args))
			}
			return nil
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
				if r.Format == evidence.FormatV1 {
					fmt.Fprintf(g.stdout, "%s: note: format %s, written by an older driftprobe: its hashes verify, its observations carry its event's verdicts and every observation its event cites was in the database\n",
						verify, evidence.FormatV1)
				}
				if r.Format != evidence.Format {
					fmt.Fprintf(g.stdout, "%s: note: format %s does not name each observation's target and probe: an observation of another target or probe than its flip's is caught only where its writer named it (a %s record is re-checked; build one with 'driftprobe evidence ID --json')\n",
						verify, r.Format, evidence.Format)
				}
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
