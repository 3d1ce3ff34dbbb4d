package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

// `db stats`, `db prune` and `db backup` through the CLI: a dry run
// changes nothing, a prune drops what it said it would and keeps the
// baselines detection needs, replay reports pruned bodies as pruned (not
// as tampered), and a backup is a database every command can read.
func TestDBCommands(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	mustRun(t, 3, "--db", db)
	stats := func() storage.Stats {
		t.Helper()
		stdout, stderr, code := runIn(t, "db", "stats", "--json", "--db", db)
		if code != 0 {
			t.Fatalf("db stats: exit %d: %s", code, stderr)
		}
		var s storage.Stats
		if err := json.Unmarshal([]byte(stdout), &s); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		return s
	}
	before := stats()
	// Run 2 establishes the baselines, each answer screened with two more
	// samples: 62 + 3×62 + 62 observations.
	if before.Runs != 3 || before.Observations != 5*62 || before.WithBodies != before.Observations {
		t.Fatalf("stats before: %+v", before)
	}
	// The runs just made are a few milliseconds old: 1ns takes them all.
	prune := func(args ...string) storage.PruneResult {
		t.Helper()
		stdout, stderr, code := runIn(t, append([]string{"db", "prune", "--json", "--db", db}, args...)...)
		if code != 0 {
			t.Fatalf("db prune %v: exit %d: %s", args, code, stderr)
		}
		var r storage.PruneResult
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		return r
	}
	dry := prune("--bodies", "1ns", "--dry-run")
	// Run 3 is the latest complete run (kept); run 2 holds every probe's
	// baseline observation (pinned); run 1's bodies and run 2's screening
	// samples go.
	if !dry.DryRun || dry.BodiesDropped != 3*62 || dry.Runs != 2 || dry.PinnedKept != 62 || stats() != before {
		t.Fatalf("dry run: %+v, want run 1's 62 bodies and run 2's 124 screening samples, its 62 baselines pinned; nothing may change", dry)
	}
	got := prune("--bodies", "1ns")
	got.DryRun = dry.DryRun
	if !reflect.DeepEqual(got, dry) {
		t.Fatalf("prune %+v, dry run said %+v", got, dry)
	}
	after := stats()
	if after.WithBodies != before.WithBodies-got.BodiesDropped || after.BodyBytes != before.BodyBytes-got.StoredBytes {
		t.Errorf("stats after: %+v, before %+v, pruned %+v", after, before, got)
	}
	pruned := 0
	for run, observations := range map[string]int{"1": 62, "2": 3 * 62} {
		stdout, stderr, code := runIn(t, "replay", "--run", run, "--json", "--db", db)
		if code != 0 {
			t.Fatalf("replay of run %s: exit %d: %s\n%s", run, code, stderr, stdout)
		}
		var rep app.ReplayReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Diffs) != 0 || rep.Pruned+rep.Replayed != observations {
			t.Errorf("replay of run %s: %+v %v", run, rep, err)
		}
		pruned += rep.Pruned
	}
	if pruned != 3*62 {
		t.Errorf("replay found %d observations with pruned bodies, want %d", pruned, 3*62)
	}
	// Detection still works after pruning: the next run reads as before.
	if _, stderr, code := runIn(t, "run", "--db", db, "--no-progress"); code != 0 {
		t.Fatalf("run after prune: exit %d: %s", code, stderr)
	}

	backup := filepath.Join(dir, "copy.db")
	if stdout, stderr, code := runIn(t, "db", "backup", backup, "--db", db); code != 0 || !strings.Contains(stdout, "copy.db") {
		t.Fatalf("db backup: exit %d: %s %s", code, stdout, stderr)
	}
	if _, stderr, code := runIn(t, "db", "backup", backup, "--db", db); code != 2 || !strings.Contains(stderr, "file exists") {
		t.Errorf("backup over an existing file: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := runIn(t, "events", "--json", "--db", backup)
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(stdout), "[") {
		t.Errorf("events on the backup: exit %d: %s %s", code, stdout, stderr)
	}
	if _, err := os.Stat(backup); err != nil {
		t.Fatal(err)
	}

	// Flags replace the config's retention whole: --bodies alone deletes
	// nothing even when the config would delete every observation.
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("retention: {observations: 1ns}\n"+twoSims), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runIn(t, "db", "prune", "--config", cfg, "--db", db, "--bodies", "1ns", "--vacuum", "--json")
	var r storage.PruneResult
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || r.ObservationsDeleted != 0 {
		t.Errorf("db prune --bodies with observations retention configured: exit %d %s %s", code, stdout, stderr)
	}
	stdout, stderr, code = runIn(t, "db", "prune", "--config", cfg, "--db", db, "--dry-run", "--json")
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || r.ObservationsDeleted == 0 {
		t.Errorf("db prune by the config's retention (dry run): exit %d %s %s", code, stdout, stderr)
	}

	// Observations deleted: replay says so instead of reporting nothing.
	if _, stderr, code := runIn(t, "db", "prune", "--db", db, "--observations", "1ns"); code != 0 {
		t.Fatalf("db prune --observations: exit %d %s", code, stderr)
	}
	stdout, stderr, code = runIn(t, "replay", "--run", "2", "--db", db)
	if code != 0 || !strings.Contains(stdout, "retention deleted this run's observations") {
		t.Errorf("replay of a pruned run: exit %d %q %s", code, stdout, stderr)
	}
	if _, stderr, code := runIn(t, "replay", "--run", "99", "--db", db); code != 2 || !strings.Contains(stderr, "run 99: not found") {
		t.Errorf("replay of a run that does not exist: exit %d %s", code, stderr)
	}

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"db", "prune"}, "nothing to prune"},
		{[]string{"db", "prune", "--bodies", "soon"}, `--bodies "soon": want a positive duration`},
		{[]string{"db", "prune", "--observations", "0d"}, "want a positive duration"},
		{[]string{"db", "backup"}, "accepts 1 arg"},
		{[]string{"db", "backup", ""}, `"": want a file path`},
		{[]string{"db", "backup", ":memory:"}, `":memory:": want a file path`},
		{[]string{"db", "backup", "file::memory:"}, `"file::memory:": want a file path`},
		{[]string{"db", "backup", "file:x.db"}, `"file:x.db": want a file path (a name beginning with file: reads as an SQLite URI: write ./file:x.db for a file of that name)`},
	} {
		_, stderr, code := runIn(t, append(c.args, "--db", db)...)
		if code != 2 || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d %q, want 2 and %q", c.args, code, stderr, c.msg)
		}
	}
}

// `db check` verifies a sound database (pruned bodies counted, not
// flagged), and a backup; a tampered answer and request make it exit 1 and
// name the observations.
func TestDBCheck(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	mustRun(t, 3, "--db", db)
	if _, stderr, code := runIn(t, "db", "prune", "--db", db, "--bodies", "1ns"); code != 0 {
		t.Fatalf("db prune: exit %d: %s", code, stderr)
	}
	check := func(wantCode int, args ...string) storage.CheckReport {
		t.Helper()
		stdout, stderr, code := runIn(t, append([]string{"db", "check", "--json"}, args...)...)
		var rep storage.CheckReport
		if code != wantCode || json.Unmarshal([]byte(stdout), &rep) != nil {
			t.Fatalf("db check %v: exit %d (want %d): %s\n%s", args, code, wantCode, stderr, stdout)
		}
		return rep
	}
	// Run 2 screened the baselines it established (two more samples each):
	// its samples and run 1's bodies are pruned, its baselines pinned.
	if rep := check(0, "--db", db, "--full"); !rep.OK || rep.Observations != 5*62 || rep.BodiesPruned != 3*62 || rep.BodiesChecked != 2*62 {
		t.Errorf("sound database: %+v", rep)
	}
	backup := filepath.Join(dir, "copy.db")
	if _, stderr, code := runIn(t, "db", "backup", backup, "--db", db); code != 0 {
		t.Fatalf("db backup: exit %d: %s", code, stderr)
	}
	before, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if rep := check(0, "--db", backup); !rep.OK || rep.Observations != 5*62 {
		t.Errorf("backup: %+v", rep)
	}
	// Checking changes nothing: same bytes, no WAL switch, no files beside.
	if after, err := os.ReadFile(backup); err != nil || !bytes.Equal(before, after) {
		t.Errorf("db check changed the backup (%v)", err)
	}
	if m, _ := filepath.Glob(backup + "-*"); len(m) != 0 {
		t.Errorf("db check left %v beside the backup", m)
	}
	// A database of an older schema (before bodies_pruned, migration
	// 0005) is checked as it is, not migrated.
	old := filepath.Join(dir, "old.db")
	if _, stderr, code := runIn(t, "db", "backup", old, "--db", db); code != 0 {
		t.Fatalf("db backup: exit %d: %s", code, stderr)
	}
	ost, err := storage.Open(context.Background(), old)
	if err != nil {
		t.Fatal(err)
	}
	// (Schema 4 had no pruning: the pruned rows go too.)
	for _, q := range []string{`DELETE FROM observations WHERE bodies_pruned = 1`, `ALTER TABLE observations DROP COLUMN bodies_pruned`, `PRAGMA user_version = 4`} {
		if _, err := ost.SQL().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	ost.Close()
	if rep := check(0, "--db", old); !rep.OK || rep.Observations != 2*62 || rep.BodiesPruned != 0 || rep.BodiesChecked != 2*62 {
		t.Errorf("schema 4: %+v", rep)
	}
	vst, err := storage.OpenReadOnly(context.Background(), old)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := vst.SchemaVersion(context.Background()); v != 4 {
		t.Errorf("db check migrated the old database to schema %d", v)
	}
	vst.Close()

	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE observations SET body = CAST('{"choices":[]}' AS BLOB) WHERE id = (SELECT MAX(id) FROM observations)`,
		`UPDATE observations SET request_path = '/v1/other' WHERE id = (SELECT MAX(id) - 1 FROM observations)`,
	} {
		if _, err := st.SQL().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	rep := check(1, "--db", db)
	if rep.OK || rep.ProblemCount != 2 || len(rep.Problems) != 2 || rep.Problems[0].Problem != storage.ProblemRequestMismatch ||
		rep.Problems[1].Problem != storage.ProblemResponseMismatch || rep.Problems[1].Target != "sim-a" {
		t.Errorf("tampered: %+v", rep)
	}
	stdout, stderr, code := runIn(t, "db", "check", "--db", db, "--max-problems", "1")
	if code != 1 || !strings.Contains(stdout, "request bytes do not match request_sha256") || !strings.Contains(stdout, "… and 1 more") ||
		!strings.Contains(stderr, "2 observation(s) whose evidence does not verify") {
		t.Errorf("text: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, stderr, code := runIn(t, "db", "check", "--db", db, "--no-bodies"); code != 0 {
		t.Errorf("--no-bodies on a sound structure: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runIn(t, "db", "check", "--db", db, "--max-problems", "0"); code != 2 || !strings.Contains(stderr, "--max-problems must be at least 1") {
		t.Errorf("--max-problems 0: exit %d: %s", code, stderr)
	}
	// A file too damaged to open (a truncated copy, not a database at all)
	// does not verify: exit 1, like any other damage, not 3.
	data, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"truncated.db": data[:5000], "text.db": []byte(strings.Repeat("not a database ", 20))} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := runIn(t, "db", "check", "--db", p); code != 1 || !strings.Contains(stderr, "does not verify") {
			t.Errorf("%s: exit %d: %s", name, code, stderr)
		}
	}
}

// Commands that only read never create a database: a mistyped --db is a
// usage error, not an empty database that checks out.
func TestMissingDatabaseIsUsage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "typo.db")
	for _, args := range [][]string{{"db", "check"}, {"db", "stats"}, {"events"}, {"replay"}, {"diff", "--target", "sim-a"}, {"evidence", "1"}, {"outbox"}, {"db", "prune", "--bodies", "1d"}} {
		_, stderr, code := runIn(t, append(args, "--db", db)...)
		if code != 2 || !strings.Contains(stderr, "typo.db does not exist (driftprobe run creates it") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("%v created %s", args, db)
		}
	}
	// An empty file is no database: maintenance that writes (prune,
	// outbox --send) used to create the schema in it, exit 0.
	empty := filepath.Join(t.TempDir(), "empty.db")
	os.WriteFile(empty, nil, 0o644)
	for _, args := range [][]string{{"db", "prune", "--observations", "1s"}, {"outbox", "--send"}, {"events"}, {"db", "check"}} {
		_, stderr, code := runIn(t, append(args, "--db", empty)...)
		if code != 2 || !strings.Contains(stderr, "is an empty file, not a driftprobe database") {
			t.Errorf("%v on an empty file: exit %d: %s", args, code, stderr)
		}
	}
	if fi, _ := os.Stat(empty); fi.Size() != 0 {
		t.Errorf("a command wrote %d bytes into the empty file", fi.Size())
	}
	// An empty file with a rollback journal beside it is a creation
	// killed half-way (a first run killed at once): db check calls it
	// incomplete (exit 1), not "not a driftprobe database" (exit 2).
	magic := []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7}
	os.WriteFile(empty+"-journal", append(magic, make([]byte, 504)...), 0o644)
	if _, stderr, code := runIn(t, "db", "check", "--db", empty); code != 1 || !strings.Contains(stderr, "a first run killed while creating the database? run again") {
		t.Errorf("db check on an empty file with a journal: exit %d: %s", code, stderr)
	}
	// A directory in its place (a --db given the folder) says so, exit 2,
	// not "read schema version: disk I/O error" with exit 3. (compare
	// --run is not among them: the built-in config has one target, and a
	// target it cannot probe is refused before the database is opened.)
	dir := t.TempDir()
	for _, args := range [][]string{{"db", "check"}, {"events"}, {"replay"}, {"diff", "--target", "sim-a"}, {"evidence", "1"}, {"outbox"}, {"compare", "--from", "a", "--to", "b"}, {"run"}, {"db", "prune", "--observations", "1d"}} {
		_, stderr, code := runIn(t, append(args, "--db", dir)...)
		if code != 2 || !strings.Contains(stderr, "is a directory, not a database file") {
			t.Errorf("%v on a directory: exit %d: %s", args, code, stderr)
		}
	}
}

// Commands that only read never migrate a database an older driftprobe
// wrote: they refuse it (exit 2, saying how to upgrade) and leave its bytes
// alone; db backup copies it as it is; db migrate upgrades it.
func TestReadCommandsNeverMigrate(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	mustRun(t, 2, "--db", db)
	schema7(t, db)
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"events"}, {"evidence", "1"}, {"diff", "--target", "sim-a"}, {"replay"}, {"db", "stats"}, {"compare", "--from", "sim-a", "--to", "sim-a2"},
		{"outbox"}, {"db", "prune", "--dry-run", "--bodies", "1d"}} {
		_, stderr, code := runIn(t, append(args, "--db", db)...)
		if code != 2 || !strings.Contains(stderr, fmt.Sprintf("the database schema is older than this driftprobe's (schema 7, this driftprobe's %d)", storage.SchemaLatest())) ||
			!strings.Contains(stderr, "driftprobe db migrate") {
			t.Errorf("%v on schema 7: exit %d: %s", args, code, stderr)
		}
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Error("a read command changed the schema-7 database")
	}
	backup := filepath.Join(dir, "b.db")
	if _, stderr, code := runIn(t, "db", "backup", backup, "--db", db); code != 0 {
		t.Fatalf("db backup of schema 7: exit %d: %s", code, stderr)
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Error("db backup changed the schema-7 database")
	}
	stdout, stderr, code := runIn(t, "db", "migrate", "--db", db)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("schema 7 → %d", storage.SchemaLatest())) {
		t.Fatalf("db migrate: exit %d: %s%s", code, stdout, stderr)
	}
	if stdout, _, code := runIn(t, "db", "migrate", "--db", db); code != 0 || !strings.Contains(stdout, fmt.Sprintf("schema %d, already", storage.SchemaLatest())) {
		t.Errorf("db migrate again: exit %d: %s", code, stdout)
	}
	if _, stderr, code := runIn(t, "events", "--db", db); code != 0 {
		t.Errorf("events after migrate: exit %d: %s", code, stderr)
	}
	// An empty file is not a driftprobe database (not "an older schema").
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o644)
	for _, args := range [][]string{{"events"}, {"db", "check"}} {
		if _, stderr, code := runIn(t, append(args, "--db", empty)...); code != 2 || !strings.Contains(stderr, "empty.db is an empty file, not a driftprobe database") {
			t.Errorf("%v on an empty file: exit %d: %s", args, code, stderr)
		}
	}
}

// schema7 makes the database at db a schema-7 one, as a driftprobe before
// migration 0008 left it.
func schema7(t *testing.T, db string) {
	t.Helper()
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, q := range []string{`ALTER TABLE event_probes DROP COLUMN score_moves`, `ALTER TABLE observations DROP COLUMN request_pinned`, `ALTER TABLE event_updates DROP COLUMN target_id`, `ALTER TABLE event_probes DROP COLUMN withdrawn`, `ALTER TABLE runs DROP COLUMN detected`, `ALTER TABLE event_updates DROP COLUMN kind`, `ALTER TABLE run_targets DROP COLUMN origin`, `ALTER TABLE input_changes DROP COLUMN cause`, `ALTER TABLE probe_states DROP COLUMN origin`, `DROP TABLE parked_states`, `ALTER TABLE event_probes DROP COLUMN origin`, `ALTER TABLE run_targets DROP COLUMN model`, `DROP TABLE github_holds`, `DROP TABLE origin_scope_unnamed`, `ALTER TABLE run_targets DROP COLUMN detected`, `PRAGMA user_version = 7`} {
		if _, err := st.SQL().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// Another program's SQLite database, or a file that is not SQLite at all,
// is refused by every command with exit 2 and left byte for byte as it
// was: run and db migrate never add driftprobe's tables beside another
// program's. A path SQLite cannot open is named.
func TestForeignDatabaseIsRefusedUnchanged(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.db")
	sdb, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdb.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO accounts (name) VALUES ('x')`); err != nil {
		t.Fatal(err)
	}
	sdb.Close()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not sqlite "), 500), 0o644); err != nil {
		t.Fatal(err)
	}
	for db, want := range map[string]string{
		other:   "other.db: not a driftprobe database (it holds a table, index or view driftprobe did not create",
		garbage: "garbage.db: not a driftprobe database (not an SQLite database: another program's file, or a damaged one",
	} {
		before, _ := os.ReadFile(db)
		for _, args := range [][]string{{"run"}, {"db", "migrate"}, {"events"}, {"db", "check"}} {
			wantCode := 2
			if db == garbage && args[0] == "db" && args[1] == "check" {
				wantCode = 1 // damage as far as db check can tell (TestDBCheck)
				want = "does not verify"
			}
			if _, stderr, code := runIn(t, append(args, "--db", db)...); code != wantCode || !strings.Contains(stderr, want) {
				t.Errorf("%v on %s: exit %d: %s", args, filepath.Base(db), code, stderr)
			}
		}
		if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
			t.Errorf("%s was changed", filepath.Base(db))
		}
	}
	missing := filepath.Join(dir, "no", "such", "dir", "x.db")
	if _, stderr, code := runIn(t, "run", "--db", missing); code != 3 || !strings.Contains(stderr, missing+": cannot open the database") {
		t.Errorf("run in a missing directory: exit %d: %s", code, stderr)
	}
}

// A backup an interrupted write left half-written (a partial file and the
// hot journal of the write that never finished: what a killed `db backup`
// used to leave as FILE) does not verify: exit 1 naming the journal, not
// exit 3 for "attempt to write a readonly database".
func TestDBCheckInterruptedWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	mustRun(t, 1, "--db", db)
	bk := filepath.Join(dir, "b.db")
	if _, stderr, code := runIn(t, "db", "backup", bk, "--db", db); code != 0 {
		t.Fatalf("db backup: exit %d: %s", code, stderr)
	}
	// A write to the backup (a rollback-journal file) large enough to
	// spill changed pages into it, copied before it commits.
	sdb, err := sql.Open("sqlite", "file:"+bk+"?_pragma=cache_size(2)")
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	tx, err := sdb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE observations SET body = zeroblob(3000)`); err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(dir, "partial.db")
	for _, s := range []string{"", "-journal"} {
		b, err := os.ReadFile(bk + s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(partial+s, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tx.Rollback()
	stdout, stderr, code := runIn(t, "db", "check", "--db", partial)
	want := "db check: the database does not verify: " + partial + ": an interrupted write left " + partial + "-journal: the file is incomplete (an interrupted backup?"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("db check of an interrupted write: exit %d: %s%s\nwant exit 1 and %q", code, stdout, stderr, want)
	}
	if _, stderr, code := runIn(t, "events", "--db", partial); code != 3 || !strings.Contains(stderr, "the file is incomplete") {
		t.Errorf("events on an interrupted write: exit %d: %s", code, stderr)
	}
}

// A database a newer driftprobe wrote: db backup copies it as it is, db
// check verifies what does not depend on the schema (structure, foreign
// keys) and says the evidence is left to a newer driftprobe; neither
// changes a byte. Commands for one schema still refuse it.
func TestDBBackupAndCheckNewerSchema(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	mustRun(t, 1, "--db", db)
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runIn(t, "db", "check", "--db", db)
	if code != 0 || !strings.Contains(stdout, "structure     ok") || !strings.Contains(stdout, fmt.Sprintf("evidence      not checked: schema 99 is newer than this driftprobe's %d", storage.SchemaLatest())) {
		t.Errorf("db check of schema 99: exit %d: %s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runIn(t, "db", "check", "--json", "--db", db)
	var rep storage.CheckReport
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || !rep.OK || !rep.BodiesSkipped || rep.BodiesSkippedWhy == "" {
		t.Errorf("db check --json of schema 99: exit %d: %s%s", code, stdout, stderr)
	}
	backup := filepath.Join(dir, "b.db")
	if stdout, stderr, code := runIn(t, "db", "backup", backup, "--db", db); code != 0 {
		t.Fatalf("db backup of schema 99: exit %d: %s%s", code, stdout, stderr)
	}
	b, err := sql.Open("sqlite", backup)
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if err := b.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != 99 {
		t.Errorf("the backup's schema: %d %v, want 99", v, err)
	}
	b.Close()
	if _, stderr, code := runIn(t, "events", "--db", db); code != 3 || !strings.Contains(stderr, "database schema is newer than this driftprobe (schema 99") {
		t.Errorf("events on schema 99: exit %d: %s", code, stderr)
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Error("db check or db backup changed the schema-99 database")
	}

	// A newer schema this driftprobe's SQLite cannot even parse: exit 2
	// saying so, rather than calling the file damaged (1).
	fut := filepath.Join(dir, "fut.db")
	if err := os.WriteFile(fut, before, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := sql.Open("sqlite", fut)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`PRAGMA writable_schema = ON`, `INSERT INTO sqlite_master VALUES ('table', 'fut', 'fut', 0, 'CREATE TABLE fut (a INTEGER) FUTURE SYNTAX')`} {
		if _, err := f.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	for _, args := range [][]string{{"db", "check"}, {"db", "backup", filepath.Join(dir, "fut-copy.db")}} {
		_, stderr, code := runIn(t, append(args, "--db", fut)...)
		if code != 2 || !strings.Contains(stderr, "database schema is newer than this driftprobe (schema 99") || !strings.Contains(stderr, "use a driftprobe at least as new as the database") {
			t.Errorf("%v on a schema 99 this SQLite cannot parse: exit %d: %s", args, code, stderr)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "fut-copy.db*")); len(left) != 0 {
		t.Errorf("a refused backup left %v", left)
	}
}

// runUnprivileged runs the CLI as a user file modes apply to: in this
// process when it is not root; as root, in a new one as user nobody
// (through setpriv), the test skipped when that cannot be done.
func runUnprivileged(t *testing.T, exe string, args ...string) (string, string, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		return runIn(t, args...)
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("file modes do not apply to root, and setpriv is not there to run as nobody")
	}
	a, _ := json.Marshal(args)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "DRIFTPROBE_ARGS="+string(a), "HOME="+os.TempDir())
	cmd.Dir = os.TempDir()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errb.String(), "setpriv:") {
		t.Skipf("cannot run as nobody: %s", errb.String())
	}
	return out.String(), errb.String(), code
}

// openTo makes dir and its parents up to the temporary directory
// traversable by any user (t.TempDir makes them 0700).
func openTo(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(dir); strings.HasPrefix(d, os.TempDir()) && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// dirListing is dir's files with their modes and sizes.
func dirListing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %o %d", e.Name(), fi.Mode().Perm(), fi.Size()))
	}
	return strings.Join(out, "; ")
}

// Read commands work where their user cannot write: a database copied into
// a read-only directory, a read-only database file in a writable one. No
// file is left beside the database. A -wal file holding commits that
// cannot be read there is named, with what to do.
func TestReadCommandsWithoutWriteAccess(t *testing.T) {
	src := filepath.Join(t.TempDir(), "d.db")
	mustRun(t, 2, "--db", src)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	exe := os.Args[0]
	if os.Geteuid() == 0 {
		// The test binary sits where only root may enter.
		bin := t.TempDir()
		openTo(t, bin, 0o755)
		exe = filepath.Join(bin, "driftprobe.test")
		b, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	openTo(t, out, 0o777)
	// place copies files (the database, and its -wal and -shm when given)
	// into a new directory, then takes write access away from lock (the
	// directory or the database file), owned by the user commands run as.
	place := func(t *testing.T, files map[string][]byte, lockFile bool) string {
		dir := t.TempDir()
		for name, b := range files {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if os.Geteuid() == 0 {
				os.Chown(p, 65534, 65534)
			}
		}
		db := filepath.Join(dir, "d.db")
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		if lockFile {
			openTo(t, dir, 0o777)
			os.Chmod(db, 0o444)
		} else {
			openTo(t, dir, 0o555)
		}
		if os.Geteuid() != 0 {
			if f, err := os.OpenFile(db, os.O_WRONLY, 0); lockFile && err == nil {
				f.Close()
				t.Skip("this user writes a file of mode 0444")
			}
			if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o644); !lockFile && err == nil {
				t.Skip("this user writes a directory of mode 0555")
			}
		}
		return db
	}
	for _, c := range []struct {
		name     string
		lockFile bool
	}{{"read-only directory", false}, {"read-only file", true}} {
		t.Run(c.name, func(t *testing.T) {
			db := place(t, map[string][]byte{"d.db": data}, c.lockFile)
			before := dirListing(t, filepath.Dir(db))
			for i, args := range [][]string{{"events"}, {"db", "stats"}, {"db", "check"}, {"replay"}, {"db", "backup", filepath.Join(out, strings.ReplaceAll(c.name, " ", "-")+".db")}} {
				stdout, stderr, code := runUnprivileged(t, exe, append(args, "--db", db)...)
				if code != 0 {
					t.Errorf("%v: exit %d: %s%s", args, code, stdout, stderr)
				}
				if after := dirListing(t, filepath.Dir(db)); after != before {
					t.Fatalf("%v (command %d) changed the database's directory:\nbefore %s\nafter  %s", args, i, before, after)
				}
			}
		})
	}
	t.Run("unreadable -wal", func(t *testing.T) {
		// A copy taken while a writer held commits in its -wal file.
		st, err := storage.Open(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.SQL().Exec(`PRAGMA wal_autocheckpoint = 0`); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SQL().Exec(`UPDATE runs SET host = host || '.'`); err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		for _, s := range []string{"", "-wal"} {
			if files["d.db"+s], err = os.ReadFile(src + s); err != nil {
				t.Fatal(err)
			}
		}
		db := place(t, files, false)
		for _, args := range [][]string{{"db", "check"}, {"events"}} {
			_, stderr, code := runUnprivileged(t, exe, append(args, "--db", db)...)
			want := db + "-wal holds committed data SQLite cannot read without write access to " + filepath.Dir(db) + "; copy the three files (d.db, -wal, -shm) somewhere writable"
			if code != 3 || !strings.Contains(stderr, want) {
				t.Errorf("%v: exit %d: %s\nwant exit 3 and %q", args, code, stderr, want)
			}
		}
	})
}

// db prune --vacuum beside a connection that keeps reading through the
// busy timeout rebuilds the database, but its file shrinks only at a later
// checkpoint: the logged warning says so, and so must the summary, rather than
// "the file now holds only what is kept" beside a file of its old size.
func TestDBPruneVacuumBesideReaderSaysFileNotShrunk(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the 10 s busy timeout")
	}
	db := filepath.Join(t.TempDir(), "d.db")
	mustRun(t, 2, "--db", db)
	ctx := context.Background()
	r, err := storage.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tx, err := r.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM observations`).Scan(&n); err != nil { // the read snapshot starts
		t.Fatal(err)
	}
	stdout, stderr, code := runIn(t, "db", "prune", "--bodies", "1ns", "--vacuum", "--db", db)
	if code != 0 {
		t.Fatalf("db prune --vacuum: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "the file now holds only what is kept") || !strings.Contains(stdout, "the file keeps its size until a later checkpoint") {
		t.Errorf("the summary of a vacuum whose file was not cut to size:\n%s", stdout)
	}
}
