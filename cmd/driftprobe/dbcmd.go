package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/termtext"
	"github.com/driftprobe/driftprobe/storage"
)

func newDBCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "db",
		Short: "Database upkeep: size and contents, retention pruning, online backup, verification, migration",
		Long: `  driftprobe db stats     size, runs, observations and stored body bytes
  driftprobe db prune     prune old observations (the config's retention, or flags)
  driftprobe db backup F  a consistent copy of the database, safe while runs write
  driftprobe db check     SQLite's structure check, foreign keys, and every stored
                          body read back against its fingerprint
  driftprobe db migrate   upgrade the database to this driftprobe's schema (runs
                          do it too; commands that only read never do)`,
		Args: cobra.NoArgs,
	}
	c.AddCommand(newDBStatsCmd(g), newDBPruneCmd(g), newDBBackupCmd(g), newDBCheckCmd(g), newDBMigrateCmd(g))
	return c
}

func newDBStatsCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "stats",
		Short: "Database size, runs, observations and stored body bytes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sess, err := app.OpenRead(cmd.Context(), g.config, g.db, app.NoCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			st, err := sess.Store.Stats(cmd.Context())
			if err != nil {
				return fmt.Errorf("%s: %w", sess.Store.Path(), err)
			}
			if asJSON {
				return writeJSON(g.stdout, st)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "database\t%s\n", sess.Store.Path())
			fmt.Fprintf(tw, "file\t%s (%s free)\n", bytesText(st.FileBytes), bytesText(st.FreeBytes))
			fmt.Fprintf(tw, "runs\t%d (%s … %s)\n", st.Runs, timeText(st.OldestRun), timeText(st.NewestRun))
			fmt.Fprintf(tw, "observations\t%d, %d with bodies (oldest from %s, pinned evidence in pruned runs aside)\n", st.Observations, st.WithBodies, timeText(st.OldestBodies))
			fmt.Fprintf(tw, "stored bodies\t%s\n", bytesText(st.BodyBytes))
			r := sess.Config.Retention
			fmt.Fprintf(tw, "retention\tbodies %s, observations %s\n", keepText(r.Bodies), keepText(r.Observations))
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newDBPruneCmd(g *globals) *cobra.Command {
	var asJSON, dryRun, vacuum bool
	var bodies, observations string
	c := &cobra.Command{
		Use:   "prune",
		Short: "Prune old observations or their bodies (the config's retention, or flags)",
		Long: `Deletes the observations of runs older than --observations, and drops the stored
request and response bodies of runs older than --bodies (their verdicts,
categories, signals and hashes stay). Durations are Go durations, days or weeks:
90d, 2w, 720h. Without flags, the config's retention block decides; with flags,
only the flags do. A run with retention configured prunes by itself after it is
stored.

Kept whatever their age: the observations events cite as evidence (before and
after each flip, and the answer of each flip's last run before), the
observations detection state points at (each probe's
baseline and pending candidate), and the latest complete run of each target on
each corpus version (compare reads it). Runs, events and detection state are
never pruned. A target whose detection state, or a state parked at an
endpoint it left, does not decode keeps every observation, bodies included:
what that state pins cannot be read. The output names it, the row and the
DELETE that removes it (as db check does); the other targets are pruned as
usual, and the first prune after the row is removed prunes the target too.

It takes the run lease, so it runs when no run does, and a run scheduled
meanwhile is skipped (serve counts it in driftprobe_run_lock_skips_total). Each
run is walked once per level and marked; later prunes only re-check what was
kept because it was pinned (or its target kept whole). Each batch is its own
transaction, so an interrupted prune leaves a consistent database and the next
prune finishes the job. Freed pages are reused by later runs; --vacuum also
shrinks the file (it needs as much free disk as the database, and holds the
lease while it runs).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			// Flags, when given, replace the config's retention whole: a
			// prune asked for on the command line does only what it says.
			// Decided before the database is opened: a prune refused
			// never migrates it. A dry run only reads: it never migrates.
			var r config.Retention
			sess, err := openSessionChecked(ctx, g, !dryRun, false, app.NoCorpus, func(cfg *config.Config) error {
				r = cfg.Retention
				if bodies != "" || observations != "" {
					r = config.Retention{}
				}
				for _, f := range []struct {
					name, v string
					d       *config.Duration
				}{{"bodies", bodies, &r.Bodies}, {"observations", observations, &r.Observations}} {
					if f.v == "" {
						continue
					}
					d, err := config.ParseDuration(f.v)
					if err != nil || d <= 0 {
						return cobraUsage{fmt.Errorf("%s: --%s %q: want a positive duration such as 90d or 720h", cmd.CommandPath(), f.name, f.v)}
					}
					*f.d = config.Duration(d)
				}
				if !r.Enabled() {
					return cobraUsage{fmt.Errorf("%s: nothing to prune: give --bodies or --observations, or set retention in the config", cmd.CommandPath())}
				}
				return nil
			})
			if err != nil {
				return err
			}
			defer sess.Close()
			st := sess.Store
			// A dry run changes nothing: it needs no lease, so it can
			// answer while a run or the daemon holds it.
			held, release := ctx, func() error { return nil }
			if !dryRun {
				if held, release, err = app.HoldLease(ctx, st, app.NewLease("driftprobe db prune"), sess.Config.LockTTL.D(), app.Logger(g.logLevel)); err != nil {
					return err
				}
			}
			res, err := app.Prune(held, st, r, dryRun)
			vacuumed := vacuumNone
			if err == nil && vacuum && !dryRun {
				// Still holding the lease, extended to cover the vacuum
				// (no renewal lands while it runs): a scheduled run
				// meanwhile is skipped cleanly instead of timing out on
				// the busy database.
				err = app.Vacuum(held, st)
				vacuumed = vacuumShrunk
				if errors.Is(err, storage.ErrNotShrunk) {
					// The vacuum stands; the file shrinks later.
					app.Logger(g.logLevel).Warn("db prune --vacuum: the file keeps its size for now", "err", err)
					err, vacuumed = nil, vacuumNotShrunk
				}
			}
			if rerr := release(); err == nil {
				err = rerr
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, res)
			}
			return printPrune(g.stdout, res, r, vacuumed)
		},
	}
	f := c.Flags()
	f.StringVar(&bodies, "bodies", "", "drop the bodies of observations older than this (e.g. 30d)")
	f.StringVar(&observations, "observations", "", "delete observations older than this (e.g. 365d)")
	f.BoolVar(&dryRun, "dry-run", false, "count what would be pruned; change nothing")
	f.BoolVar(&vacuum, "vacuum", false, "then rebuild the file to return the freed space")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// What db prune --vacuum did: nothing asked (or a dry run), the file
// rebuilt and cut to size, or rebuilt with its file cut only at a later
// checkpoint (storage.ErrNotShrunk: another connection kept reading).
const (
	vacuumNone = iota
	vacuumShrunk
	vacuumNotShrunk
)

func printPrune(w io.Writer, res storage.PruneResult, r config.Retention, vacuumed int) error {
	verb := "pruned"
	if res.DryRun {
		verb = "would prune"
	}
	fmt.Fprintf(w, "retention: bodies %s, observations %s\n", keepText(r.Bodies), keepText(r.Observations))
	fmt.Fprintf(w, "%s %d runs: %d observations deleted, %d observations' bodies dropped, %s of stored bodies; %d pinned observations kept (event evidence, detection baselines)\n",
		verb, res.Runs, res.ObservationsDeleted, res.BodiesDropped, bytesText(res.StoredBytes), res.PinnedKept)
	for _, k := range res.KeptTargets {
		name := k.Target
		if name == "" {
			name = "(no name)"
		}
		fmt.Fprintf(w, "kept whole: target %s (id %d), %d observations that would have been pruned: %s\n",
			termtext.Clean(name), k.TargetID, k.Observations, termtext.SafeLong(k.Reason))
	}
	switch vacuumed {
	case vacuumShrunk:
		fmt.Fprintln(w, "vacuumed: the file now holds only what is kept")
	case vacuumNotShrunk:
		fmt.Fprintln(w, "vacuumed: the database holds only what is kept, but another connection kept reading it, so the file keeps its size until a later checkpoint (nothing is lost)")
	}
	return nil
}

func newDBBackupCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the database to FILE (never overwrites)",
		Long: `Writes a consistent snapshot of the database to FILE with SQLite's VACUUM INTO:
safe while a run or the daemon writes, compacted, and readable by any driftprobe
command with --db FILE. FILE must not exist, and is never replaced.

The copy is written as FILE.tmp-NNN beside FILE, flushed to disk and only then
named FILE, so FILE is always complete: an interrupted backup removes its
temporary file, and one killed outright leaves only FILE.tmp-NNN (and its
-journal), which may be deleted. Any schema is copied as it is, a newer one too.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A backup that writes no file must not report success (an
			// unset $DEST in a cron line, SQLite's special names).
			if d := strings.TrimSpace(args[0]); d == "" || d == ":memory:" || strings.HasPrefix(d, "file:") {
				hint := ""
				if strings.HasPrefix(d, "file:") && d != "file::memory:" {
					// As the docs say: the name is kept, never guessed at.
					hint = fmt.Sprintf(" (a name beginning with file: reads as an SQLite URI: write ./%s for a file of that name)", d)
				}
				return cobraUsage{fmt.Errorf("%s: %q: want a file path%s", cmd.CommandPath(), args[0], hint)}
			}
			// Read-only and any schema: a backup before an upgrade must not
			// upgrade the database it copies.
			sess, err := app.OpenReadOnly(cmd.Context(), g.config, g.db)
			if err != nil {
				return err
			}
			defer sess.Close()
			if err := sess.Store.Backup(cmd.Context(), args[0]); err != nil {
				if errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrNewerSchema) {
					return cobraUsage{fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
				}
				return err
			}
			fmt.Fprintf(g.stdout, "backed up %s to %s\n", sess.Store.Path(), args[0])
			return nil
		},
	}
}

func newDBMigrateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Upgrade the database to this driftprobe's schema (back it up first)",
		Long: `Applies the migrations this driftprobe has and the database lacks. Commands
that write migrate too (run, serve, compare --run, db prune, outbox --send);
commands that only read (events, evidence, diff, replay, db stats, compare,
attribute, outbox, db prune --dry-run) never do, and refuse an older
schema instead, so looking at a production database with a newer driftprobe
cannot lock out the older one still writing it. A migrated database cannot be
opened by an older driftprobe: back it up first (driftprobe db backup FILE).
No command migrates a database while another process holds a live run lease
on it (an older driftprobe's run in progress): it exits 3 naming the holder,
the database left as it was; run it again once that run has finished.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			ro, err := app.OpenReadOnly(ctx, g.config, g.db)
			if err != nil {
				return err
			}
			read, err := ro.Store.SchemaVersion(ctx)
			ro.Close()
			if err != nil {
				return err
			}
			sess, err := app.Open(ctx, g.config, g.db, false, app.NoCorpus)
			if err != nil {
				return err
			}
			defer sess.Close()
			// What this process's Open applied: another `db migrate` (or
			// run, or serve) opening the database at the same time may
			// have migrated it between the read above and the write lock
			// Open's migrations take.
			from, to := sess.Store.Migrated()
			switch {
			case from != to:
				fmt.Fprintf(g.stdout, "%s: schema %d → %d\n", sess.Store.Path(), from, to)
			case read != to:
				fmt.Fprintf(g.stdout, "%s: schema already at %d (migrated by another process since this one read schema %d)\n", sess.Store.Path(), to, read)
			default:
				fmt.Fprintf(g.stdout, "%s: schema %d, already this driftprobe's\n", sess.Store.Path(), to)
			}
			return nil
		},
	}
}

func newDBCheckCmd(g *globals) *cobra.Command {
	var (
		opts   storage.CheckOptions
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "check",
		Short: "Verify the database: structure, foreign keys, and the stored evidence against its fingerprints",
		Long: `Verifies the database without changing it:

  structure     SQLite's own quick_check (--full: integrity_check, which also
                checks every index entry against its table; slower), listed as
                "sqlite:", and apart from it driftprobe's own findings: typed
                columns that do not hold what the schema means, detection
                states that do not decode ("structure:"); the structure line
                says whether SQLite's check passed
  foreign keys  every row's parent row exists
  evidence      every stored request and response body decompresses, the request
                bytes (method, path, body, pinned headers) hash to its request_sha256
                and the response body to its body_sha256; bodies retention pruned
                are counted, not checked (--no-bodies skips this part)

Runs may write meanwhile (no lock is held). Use it after restoring a backup
(driftprobe --db BACKUP db check) or before citing a database as evidence.
Any schema is checked as it is; a newer one than this driftprobe's gets the
structure and foreign key checks only (a newer driftprobe checks its evidence).
Exit 0 when everything verifies, 1 when something does not (listed, the
first --max-problems observations by id) or the file is too damaged to open
(an interrupted write, such as a killed backup, left it incomplete), 2 when it
is not a driftprobe database (empty, another program's) or this driftprobe
cannot read its newer schema, 3 when the database cannot be read otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.MaxProblems < 1 {
				return cobraUsage{fmt.Errorf("%s: --max-problems must be at least 1", cmd.CommandPath())}
			}
			if err := checkRunID(cmd, "from-run", opts.FromRun, "to check every run"); err != nil {
				return err
			}
			sess, err := app.OpenReadOnly(cmd.Context(), g.config, g.db)
			var notSQLite *storage.NotSQLiteError
			if errors.As(err, &notSQLite) {
				// Its header is not SQLite's: nothing of it can be read,
				// let alone verified.
				return &gateError{fmt.Sprintf("db check: the database does not verify: %s is not an SQLite database: another program's file, or one damaged past reading (restore a backup if it was driftprobe's): %v", notSQLite.Path, notSQLite.Err)}
			}
			if storage.IsDamaged(err) {
				// Too damaged to open, or left incomplete by an
				// interrupted write, is a finding, not a failure to check.
				return &gateError{fmt.Sprintf("db check: the database does not verify: %v", err)}
			}
			if err != nil {
				return err
			}
			defer sess.Close()
			rep, err := sess.Store.Check(cmd.Context(), opts)
			if errors.Is(err, storage.ErrNewerSchema) {
				return cobraUsage{fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
			}
			if err != nil {
				if p := sess.Store.Path(); !strings.Contains(err.Error(), p) {
					err = fmt.Errorf("%s: %w", p, err)
				}
				return err
			}
			// Detection state this driftprobe can read (not a newer
			// schema's): a blob that does not decode stops the target's
			// detection.
			if v, verr := sess.Store.SchemaVersion(cmd.Context()); verr == nil && v <= storage.SchemaLatest() {
				msgs, serr := diff.CheckStates(cmd.Context(), sess.Store.SQL())
				if serr != nil {
					msgs = append(msgs, "detection state: "+serr.Error())
				}
				if len(msgs) > 0 {
					rep.Structure = append(rep.Structure, msgs...)
					rep.OK = false
				}
				// Observations events and detection cite: retention keeps
				// them, so one missing was deleted or lost; one of another
				// target or probe than the citing one is no evidence of it.
				cites, cerr := diff.CheckCitations(cmd.Context(), sess.Store.SQL())
				if cerr != nil {
					rep.Structure = append(rep.Structure, "citations: "+cerr.Error())
					rep.OK = false
				}
				if len(cites) > 0 {
					rep.Citations = append(rep.Citations, cites...)
					rep.OK = false
				}
			}
			if asJSON {
				err = writeJSON(g.stdout, rep)
			} else {
				err = writeCheck(g.stdout, sess.Store.Path(), rep)
			}
			if err != nil {
				return err
			}
			if !rep.OK {
				return &gateError{fmt.Sprintf("db check: %s does not verify: %d message(s) of SQLite's own check (%s), %d structure finding(s) of driftprobe's, %d foreign key problem(s), %d citation problem(s) (cited observations missing or of another target or probe), %d observation(s) whose evidence does not verify",
					sess.Store.Path(), len(rep.SQLite), sqliteVerdict(rep), rep.OwnFindings(), len(rep.ForeignKeys), len(rep.Citations), rep.ProblemCount)}
			}
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&opts.Full, "full", false, "integrity_check instead of quick_check")
	f.BoolVar(&opts.SkipBodies, "no-bodies", false, "skip reading back the stored bodies")
	f.IntVar(&opts.MaxProblems, "max-problems", storage.DefaultMaxProblems, "observations with problems to list (all are counted)")
	f.Int64Var(&opts.FromRun, "from-run", 0, "read back the stored bodies of runs RUN and later only (the runs a previous check verified are skipped; structure, foreign keys and citations are still checked whole)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func writeCheck(w io.Writer, path string, rep *storage.CheckReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "database\t%s\n", path)
	check := "quick_check"
	if rep.Full {
		check = "integrity_check"
	}
	fmt.Fprintf(tw, "structure\t%s\n", structureText(rep, check))
	if len(rep.ForeignKeys) == 0 {
		fmt.Fprintf(tw, "foreign keys\tok\n")
	} else {
		fmt.Fprintf(tw, "foreign keys\t%d row(s) without their parent, below\n", len(rep.ForeignKeys))
	}
	if len(rep.Citations) == 0 {
		fmt.Fprintf(tw, "citations\tok (every observation events and detection cite is stored, and is of the citing target and probe)\n")
	} else {
		fmt.Fprintf(tw, "citations\t%d cited observation(s) missing or of another target or probe, below\n", len(rep.Citations))
	}
	switch {
	case rep.BodiesSkippedWhy != "":
		fmt.Fprintf(tw, "evidence\tnot checked: %s\n", rep.BodiesSkippedWhy)
	case rep.BodiesSkipped:
		fmt.Fprintf(tw, "evidence\tnot checked (--no-bodies)\n")
	case rep.FromRun > 1 && rep.Observations == 0 && rep.LatestRun < rep.FromRun:
		latest := "none has run yet"
		if rep.LatestRun > 0 {
			latest = fmt.Sprintf("the latest is run %d", rep.LatestRun)
		}
		fmt.Fprintf(tw, "evidence	nothing to read back: no run %d or later yet (%s)\n", rep.FromRun, latest)
	default:
		of := ""
		if rep.FromRun > 1 {
			of = fmt.Sprintf(" of runs %d and later", rep.FromRun)
		}
		fmt.Fprintf(tw, "evidence\t%d observation(s)%s: %d with bodies checked, %d pruned by retention, %d do not verify\n",
			rep.Observations, of, rep.BodiesChecked, rep.BodiesPruned, rep.ProblemCount)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// SQLite's own messages first, then driftprobe's findings.
	sqlite, own := splitStructure(rep)
	for _, m := range sqlite {
		fmt.Fprintf(w, "\nsqlite: %s", m)
	}
	for _, m := range own {
		fmt.Fprintf(w, "\nstructure: %s", m)
	}
	if len(rep.Structure) > 0 {
		fmt.Fprintln(w)
	}
	for _, m := range rep.Citations {
		fmt.Fprintf(w, "\ncitation: %s", m)
	}
	if len(rep.Citations) > 0 {
		fmt.Fprintln(w)
	}
	if len(rep.ForeignKeys) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TABLE\tROWID\tMISSING PARENT IN")
		for _, p := range rep.ForeignKeys {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", p.Table, p.RowID, p.Parent)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Problems) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "OBSERVATION\tRUN\tTARGET\tPROBE\tPROBLEM")
		for _, p := range rep.Problems {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", p.ObservationID, p.RunID, p.Target, p.ProbeID, p.Problem)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if more := rep.ProblemCount - int64(len(rep.Problems)); more > 0 {
			fmt.Fprintf(w, "… and %d more (--max-problems, or --json)\n", more)
		}
	}
	return nil
}

// structureText is db check's structure line: SQLite's own verdict
// (check: quick_check or integrity_check) kept apart from driftprobe's
// findings (column types, detection states), so that a finding of
// driftprobe's is never read as SQLite calling the file damaged.
func structureText(rep *storage.CheckReport, check string) string {
	own := rep.OwnFindings()
	if len(rep.Structure) == 0 {
		return fmt.Sprintf("ok (SQLite's %s ok, and no finding of driftprobe's)", check)
	}
	var sqlite string
	switch {
	case !rep.SQLiteCheckOK:
		sqlite = fmt.Sprintf("DAMAGED: SQLite's %s failed (%d message(s))", check, len(rep.SQLite))
	case len(rep.SQLite) > 0:
		sqlite = fmt.Sprintf("DAMAGED: SQLite's %s ok, but SQLite found a damaged page while reading (%d message(s))", check, len(rep.SQLite))
	default:
		sqlite = fmt.Sprintf("SQLite's %s ok (SQLite finds the file sound)", check)
	}
	switch {
	case own == 0:
		return sqlite + ", below"
	case len(rep.SQLite) == 0:
		return fmt.Sprintf("%s; driftprobe's own checks found %d problem(s) (column types, detection states), below", sqlite, own)
	}
	return fmt.Sprintf("%s; driftprobe's own checks found %d more problem(s), below", sqlite, own)
}

// sqliteVerdict names SQLite's own check and its answer.
func sqliteVerdict(rep *storage.CheckReport) string {
	check := "quick_check"
	if rep.Full {
		check = "integrity_check"
	}
	if rep.SQLiteCheckOK {
		return check + " ok"
	}
	return check + " failed"
}

// splitStructure returns the report's structure messages that are
// SQLite's own (rep.SQLite, added in the same order) and the others,
// driftprobe's findings.
func splitStructure(rep *storage.CheckReport) (sqlite, own []string) {
	j := 0
	for _, m := range rep.Structure {
		if j < len(rep.SQLite) && m == rep.SQLite[j] {
			sqlite = append(sqlite, m)
			j++
			continue
		}
		own = append(own, m)
	}
	return sqlite, own
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func keepText(d config.Duration) string {
	switch {
	case d <= 0:
		return "kept forever"
	case d.D()%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d.D()/(24*time.Hour))
	}
	return d.D().String()
}
