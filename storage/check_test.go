package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
)

// checkedObservations are testObservations with true fingerprints, as a
// run records them: request_sha256 over method, path, body and (for a
// quarter of them) pinned headers, and body_sha256 of the response body
// (none without one).
func checkedObservations(runID, targetID int64, n int) []*Observation {
	obs := testObservations(runID, targetID, n)
	for _, o := range obs {
		o.RequestSHA256 = probes.Fingerprint(o.RequestMethod, o.RequestPath, o.RequestBody, o.RequestPinned)
		o.BodySHA256 = ""
		if o.Body != nil {
			s := sha256.Sum256(o.Body)
			o.BodySHA256 = hex.EncodeToString(s[:])
		}
	}
	return obs
}

func TestCheckSoundDatabase(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	run, tgt := setupRun(t, d)
	if err := d.InsertObservations(ctx, checkedObservations(run, tgt, 1200)); err != nil {
		t.Fatal(err)
	}
	// A probe the target could not render: nothing was sent, nothing to
	// verify.
	rendErr := checkedObservations(run, tgt, 1)[0]
	rendErr.ProbeID, rendErr.RequestSHA256, rendErr.RequestMethod, rendErr.RequestPath, rendErr.RequestBody = "unrenderable", RenderError, "", "", nil
	rendErr.Body, rendErr.BodySHA256, rendErr.HTTPStatus = nil, "", 0
	if err := d.InsertObservations(ctx, []*Observation{rendErr}); err != nil {
		t.Fatal(err)
	}
	// Retention removed some bodies: nothing to verify there, no problem.
	if _, err := d.db.ExecContext(ctx, `UPDATE observations SET request_body = NULL, body = NULL, bodies_pruned = 1 WHERE id <= 100`); err != nil {
		t.Fatal(err)
	}
	for _, full := range []bool{false, true} {
		rep, err := d.Check(ctx, CheckOptions{Full: full})
		if err != nil {
			t.Fatal(err)
		}
		// 1 in 10 test observations has no answer (a transport error).
		if !rep.OK || rep.Full != full || rep.Observations != 1201 || rep.BodiesPruned != 100 || rep.BodiesChecked != 990 || rep.ProblemCount != 0 ||
			len(rep.Structure) != 0 || len(rep.ForeignKeys) != 0 {
			t.Errorf("full=%v: %+v", full, rep)
		}
	}
	rep, err := d.Check(ctx, CheckOptions{SkipBodies: true})
	if err != nil || !rep.OK || !rep.BodiesSkipped || rep.Observations != 0 {
		t.Errorf("skip bodies: %+v, %v", rep, err)
	}
}

// Every kind of damage to the evidence is found and named, by observation.
func TestCheckFindsTamperedEvidence(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	run, tgt := setupRun(t, d)
	if err := d.InsertObservations(ctx, checkedObservations(run, tgt, 40)); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := d.db.ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	// Observation 4 (i=3) and 6 (i=5) carry full answers, 14 (i=13) a
	// large, compressed request; 11 (i=10) recorded no answer.
	exec(`UPDATE observations SET body = ? WHERE id = 4`, encodeBody([]byte(`{"choices":[{"finish_reason":"stop"}]}`)))
	exec(`UPDATE observations SET body = ? WHERE id = 6`, append(append([]byte(nil), s2Magic...), "garbage"...))
	exec(`UPDATE observations SET request_body = ? WHERE id = 14`, encodeBody([]byte(`{"model":"other"}`)))
	exec(`UPDATE observations SET request_path = '/v2/chat' WHERE id = 8`)
	exec(`UPDATE observations SET body = ? WHERE id = 11`, []byte(`an answer appeared`))
	// Pinned headers are part of the fingerprint: 2 (i=1) and 10 (i=9)
	// pinned one, 3 (i=2) none.
	exec(`UPDATE observations SET request_pinned = 'anthropic-version: 1999-01-01'||char(10) WHERE id = 2`)
	exec(`UPDATE observations SET request_pinned = '' WHERE id = 10`)
	exec(`UPDATE observations SET request_pinned = 'anthropic-version: 2023-06-01'||char(10) WHERE id = 3`)
	// A row whose parent is gone (written with foreign keys off).
	exec(`PRAGMA foreign_keys = OFF`)
	exec(`INSERT INTO run_targets (run_id, target_id, status) VALUES (?, 999, 'complete')`, run)
	exec(`PRAGMA foreign_keys = ON`)

	rep, err := d.Check(ctx, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	for _, p := range rep.Problems {
		got[p.ObservationID] = p.Problem
		if p.RunID != run || p.TargetID != tgt || p.Target != "sim" || p.ProbeID == "" {
			t.Errorf("problem without its observation's identity: %+v", p)
		}
	}
	want := map[int64]string{
		4:  ProblemResponseMismatch,
		6:  ProblemResponseUnreadable,
		14: ProblemRequestMismatch,
		8:  ProblemRequestMismatch,
		11: ProblemResponseMismatch + " (none recorded)",
		2:  ProblemRequestMismatch,
		10: ProblemRequestMismatch,
		3:  ProblemRequestMismatch,
	}
	for id, w := range want {
		if !strings.HasPrefix(got[id], w) {
			t.Errorf("observation %d: problem %q, want %q", id, got[id], w)
		}
	}
	if rep.OK || rep.ProblemCount != 8 || len(got) != 8 {
		t.Errorf("report: %+v", rep)
	}
	if len(rep.ForeignKeys) != 1 || rep.ForeignKeys[0].Table != "run_targets" || rep.ForeignKeys[0].Parent != "targets" {
		t.Errorf("foreign keys: %+v", rep.ForeignKeys)
	}

	// The list is capped; the count is not.
	rep, err = d.Check(ctx, CheckOptions{MaxProblems: 2})
	if err != nil || len(rep.Problems) != 2 || rep.ProblemCount != 8 || rep.Problems[0].ObservationID != 2 {
		t.Errorf("capped: %+v, %v", rep, err)
	}
}

// A damaged page is SQLite's structure check's to find: Check reports its
// messages rather than failing.
func TestCheckReportsDamagedStructure(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "t.db")
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	run, tgt := setupRun(t, d)
	if err := d.InsertObservations(ctx, checkedObservations(run, tgt, 600)); err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	if err := d.db.QueryRowContext(ctx, `SELECT rootpage, (SELECT page_size FROM pragma_page_size()) FROM sqlite_master WHERE name = 'sqlite_autoindex_observations_1'`).Scan(&root, &pageSize); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil { // checkpoints: every page is in the file
		t.Fatal(err)
	}
	// Scramble the second half of the index's root page, where its cells are.
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte(strings.Repeat("\xa5\x5a", int(pageSize/4)))
	if _, err := f.WriteAt(junk, (root-1)*pageSize+pageSize/2); err != nil {
		t.Fatal(err)
	}
	f.Close()

	d, err = Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, full := range []bool{false, true} {
		rep, err := d.Check(ctx, CheckOptions{Full: full, SkipBodies: true})
		if err != nil {
			t.Fatalf("full=%v: %v", full, err)
		}
		if rep.OK || len(rep.Structure) == 0 {
			t.Errorf("full=%v: damage not reported: %+v", full, rep)
		}
		t.Logf("full=%v: %s", full, strings.Join(rep.Structure, "; "))
	}
}

// BenchmarkCheck is `db check` over 5,000 observations with bodies:
// quick_check, foreign keys, and every body read back and hashed.
func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()
	d := openTestDB(b)
	run, tgt := setupRun(b, d)
	const n = 5000
	if err := d.InsertObservations(ctx, checkedObservations(run, tgt, n)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := d.Check(ctx, CheckOptions{})
		if err != nil || !rep.OK {
			b.Fatal(rep, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/obs")
}

// OpenReadOnly reads without writing: nothing can be written through it.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "t.db")
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	setupRun(t, d)
	d.Close()
	ro, err := OpenReadOnly(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.BeginRun(ctx, Run{CorpusName: "c", CorpusVersion: "1"}); err == nil {
		t.Error("wrote through a read-only handle")
	}
	ro.Close()
}

// A database a newer driftprobe wrote (schema 99) is read as it is by
// Check and Backup, which only read, and left byte for byte as it was:
// Check verifies the structure and foreign keys and says why the evidence
// is not checked; Backup copies it, schema and all. The commands for one
// schema (OpenReadCurrent) refuse it. When this binary's SQLite cannot
// even read the newer schema, both say so (ErrNewerSchema), not damage.
func TestNewerSchemaCheckedAndBackedUp(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "t.db")
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	run, tgt := setupRun(t, d)
	if err := d.InsertObservations(ctx, checkedObservations(run, tgt, 20)); err != nil {
		t.Fatal(err)
	}
	// A newer driftprobe's table and column, of a newer fingerprint this
	// one cannot reproduce.
	for _, q := range []string{`ALTER TABLE observations ADD COLUMN request_salt TEXT NOT NULL DEFAULT ''`, `UPDATE observations SET request_salt = 'x', request_sha256 = 'new-' || request_sha256`,
		`CREATE TABLE future (id INTEGER PRIMARY KEY, observation_id INTEGER REFERENCES observations(id))`, `INSERT INTO future (observation_id) VALUES (1)`, `PRAGMA user_version = 99`} {
		if _, err := d.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	before := mustRead(t, p)

	if _, err := OpenReadCurrent(ctx, p); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("OpenReadCurrent of schema 99: %v, want ErrNewerSchema", err)
	}
	ro, err := OpenReadOnly(ctx, p)
	if err != nil {
		t.Fatalf("OpenReadOnly of schema 99: %v", err)
	}
	rep, err := ro.Check(ctx, CheckOptions{Full: true})
	if err != nil || !rep.OK || !rep.BodiesSkipped || rep.Observations != 0 || !strings.Contains(rep.BodiesSkippedWhy, "schema 99 is newer than this driftprobe's") {
		t.Errorf("check of schema 99: %+v %v", rep, err)
	}
	dst := filepath.Join(t.TempDir(), "b.db")
	if err := ro.Backup(ctx, dst); err != nil {
		t.Errorf("backup of schema 99: %v", err)
	}
	ro.Close()
	if !bytes.Equal(mustRead(t, p), before) {
		t.Error("reading schema 99 changed it")
	}
	b, err := OpenReadOnly(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := b.SchemaVersion(ctx); v != 99 {
		t.Errorf("the backup has schema %d, want 99", v)
	}
	if rep, err := b.Check(ctx, CheckOptions{}); err != nil || !rep.OK {
		t.Errorf("check of the backup: %+v %v", rep, err)
	}
	b.Close()

	// A newer schema this SQLite cannot parse.
	d, err = Open(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	p = d.Path()
	for _, q := range []string{`PRAGMA writable_schema = ON`, `INSERT INTO sqlite_master VALUES ('table', 'fut', 'fut', 0, 'CREATE TABLE fut (a INTEGER) FUTURE SYNTAX')`, `PRAGMA user_version = 99`} {
		if _, err := d.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	ro, err = OpenReadOnly(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if rep, err := ro.Check(ctx, CheckOptions{}); !errors.Is(err, ErrNewerSchema) || !strings.Contains(fmt.Sprint(err), "use a driftprobe at least as new as the database") {
		t.Errorf("check of an unparsable schema 99: %+v %v, want ErrNewerSchema", rep, err)
	}
	if err := ro.Backup(ctx, filepath.Join(filepath.Dir(dst), "c.db")); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("backup of an unparsable schema 99: %v, want ErrNewerSchema", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), "c.db*")); len(left) != 0 {
		t.Errorf("a failed backup left %v", left)
	}
}

// Two backups to one path: exactly one writes it, the other is refused
// with ErrExists, and the file left is a sound copy.
func TestConcurrentBackupsToOnePath(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	run, tgt := setupRun(t, d)
	if err := d.InsertObservations(ctx, checkedObservations(run, tgt, 300)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "b.db")
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { errs <- d.Backup(ctx, p) }()
	}
	var ok, exists int
	for i := 0; i < 2; i++ {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, ErrExists):
			exists++
		default:
			t.Errorf("backup: %v", err)
		}
	}
	if ok != 1 || exists != 1 {
		t.Fatalf("%d backups written, %d refused; want 1 and 1", ok, exists)
	}
	b, err := OpenReadOnly(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if rep, err := b.Check(ctx, CheckOptions{Full: true}); err != nil || !rep.OK || rep.Observations != 300 {
		t.Errorf("the backup: %+v %v", rep, err)
	}
}

// IsDamaged: what db check calls damage when a file will not open read-only.
func TestIsDamaged(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("x"), false},
		{fmt.Errorf("p: %w", ErrIncomplete), true},
		{errors.New("p: read schema version: attempt to write a readonly database (776)"), true},
		{walUnreadable("p", "dir", errors.New("attempt to write a readonly database (1544)")), false},
		{fmt.Errorf("p: %w", ErrNotDriftprobe), false},
	} {
		if got := IsDamaged(c.err); got != c.want {
			t.Errorf("IsDamaged(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// Check with FromRun reads back only the bodies of runs FromRun and later:
// damage in an earlier run is not seen (a previous check covered it), damage
// in a later one is, and the report says which runs it covered.
func TestCheckFromRun(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	run1, tgt := setupRun(t, d)
	if err := d.InsertObservations(ctx, checkedObservations(run1, tgt, 20)); err != nil {
		t.Fatal(err)
	}
	run2, err := d.BeginRun(ctx, Run{CorpusName: "c", CorpusVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.InsertObservations(ctx, checkedObservations(run2, tgt, 20)); err != nil {
		t.Fatal(err)
	}
	// Observation 4 carries a full answer (see TestCheckFindsTamperedEvidence):
	// tamper with it in run 1.
	if _, err := d.db.ExecContext(ctx, `UPDATE observations SET body = ? WHERE id = 4`, encodeBody([]byte(`{"choices":[{"finish_reason":"stop"}]}`))); err != nil {
		t.Fatal(err)
	}
	whole, err := d.Check(ctx, CheckOptions{})
	if err != nil || whole.OK || whole.Observations != 40 || whole.FromRun != 0 {
		t.Fatalf("whole check: %+v %v, want the tampered body found in 40 observations", whole, err)
	}
	later, err := d.Check(ctx, CheckOptions{FromRun: run2})
	if err != nil || !later.OK || later.Observations != 20 || later.FromRun != run2 {
		t.Fatalf("check from run %d: %+v %v, want 20 sound observations", run2, later, err)
	}
	// Tamper with the same answer in run 2 (ids 21–40): found.
	if _, err := d.db.ExecContext(ctx, `UPDATE observations SET body = ? WHERE id = 24`, encodeBody([]byte(`{"choices":[{"finish_reason":"stop"}]}`))); err != nil {
		t.Fatal(err)
	}
	later, err = d.Check(ctx, CheckOptions{FromRun: run2})
	if err != nil || later.OK || later.ProblemCount != 1 {
		t.Fatalf("check from run %d after tampering in it: %+v %v, want 1 problem", run2, later, err)
	}
	none, err := d.Check(ctx, CheckOptions{FromRun: run2 + 5})
	if err != nil || none.Observations != 0 {
		t.Fatalf("check from a run not recorded yet: %+v %v, want nothing read", none, err)
	}
}
