package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

// queryIntIn returns the integer q selects from the database db.
func queryIntIn(t *testing.T, db, q string, args ...any) int64 {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var n int64
	if err := st.SQL().QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// checkJSON runs db check --full --json on db and returns its report and
// exit code.
func checkJSON(t *testing.T, db string) (storage.CheckReport, string, int) {
	t.Helper()
	stdout, stderr, code := runIn(t, "db", "check", "--full", "--json", "--db", db)
	var rep storage.CheckReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("db check --json: exit %d, %v: %q %s", code, err, stdout, stderr)
	}
	return rep, stderr, code
}

// problemOf returns the problem db check reported for observation id.
func problemOf(rep storage.CheckReport, id int64) (storage.BodyProblem, bool) {
	for _, p := range rep.Problems {
		if p.ObservationID == id {
			return p, true
		}
	}
	return storage.BodyProblem{}, false
}

// QA (1): one row with a damaged column. db check reports it (exit 1, the
// report in text and JSON naming the observation, the column and what it
// holds) instead of stopping with exit 3 and no report; db prune goes on.
func TestDamagedRowQADBCheckReportsIt(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sc.db")
	mustRun(t, 3, "--db", db)
	if rep, stderr, code := checkJSON(t, db); code != 0 || !rep.OK {
		t.Fatalf("sound database: exit %d: %+v %s", code, rep, stderr)
	}
	total := queryIntIn(t, db, `SELECT COUNT(*) FROM observations`)
	sqlIn(t, db, `UPDATE observations SET bodies_pruned = 'garbage' WHERE id = 5`)
	const want = `damaged row: column bodies_pruned holds text "garbage", not 0 or 1`

	rep, stderr, code := checkJSON(t, db)
	p, ok := problemOf(rep, 5)
	if code != 1 || rep.OK || !ok || p.Problem != want || len(p.Columns) != 1 || p.Columns[0].Column != "bodies_pruned" || p.RunID != 1 || p.Target != "sim-a" ||
		rep.ProblemCount != 1 || rep.Observations != total || strings.Contains(stderr, "Scan error") {
		t.Fatalf("db check --json: exit %d (want 1): %+v\n%s", code, rep, stderr)
	}
	stdout, stderr, code := runIn(t, "db", "check", "--full", "--db", db)
	if code != 1 || !strings.Contains(stdout, want) || !strings.Contains(stdout, "1 do not verify") || !strings.Contains(stderr, "does not verify") {
		t.Fatalf("db check: exit %d (want 1):\n%s%s", code, stdout, stderr)
	}
	// Retention reads the damaged flag as "not pruned" (it was: exit 3,
	// "prune run 1: sql: Scan error").
	stdout, stderr, code = runIn(t, "db", "prune", "--bodies", "1ns", "--json", "--db", db)
	var res storage.PruneResult
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || res.BodiesDropped == 0 {
		t.Fatalf("db prune: exit %d (want 0): %s%s", code, stdout, stderr)
	}
}

// qaDamage is one column damaged the way QA did.
var qaDamage = []struct{ set, want string }{
	{`http_status = 'x'`, `column http_status holds text "x", not an integer`},
	{`sample = 'x'`, `column sample holds text "x", not an integer`},
	{`body_truncated = 'x'`, `column body_truncated holds text "x", not 0 or 1`},
	{`latency_ms = 'abc'`, `column latency_ms holds text "abc", not a number`},
}

// QA (2): an observation an event cites, damaged. db check said clean
// (exit 0) while replay and evidence failed with exit 3 on a Scan error;
// now db check flags it (exit 1), replay lists it and goes on (exit 1),
// and evidence writes the record with the problem named for that
// observation, all_verified false (exit 1; --verify of it: exit 1).
func TestDamagedRowQACitedObservation(t *testing.T) {
	for _, c := range qaDamage {
		t.Run(c.set, func(t *testing.T) {
			cfg, db := evidenceEnv(t, qaViolence, 4)
			ev := qaEventOfKind(t, cfg, db, "policy_change")
			id := strconv.FormatInt(ev.ID, 10)
			if rep, stderr, code := checkJSON(t, db); code != 0 || !rep.OK {
				t.Fatalf("sound database with events: exit %d: %+v %s", code, rep, stderr)
			}
			obs := ev.Probes[0].AfterObs
			run := queryIntIn(t, db, `SELECT run_id FROM observations WHERE id = ?`, obs)
			sqlIn(t, db, `UPDATE observations SET `+c.set+` WHERE id = ?`, obs)

			rep, stderr, code := checkJSON(t, db)
			if p, ok := problemOf(rep, obs); code != 1 || !ok || p.Problem != storage.ProblemDamagedRow+": "+c.want || p.ProbeID != ev.Probes[0].ProbeID || rep.ProblemCount != 1 {
				t.Errorf("db check --json: exit %d (want 1): %+v %s", code, rep.Problems, stderr)
			}
			if stdout, _, code := runIn(t, "db", "check", "--db", db); code != 1 || !strings.Contains(stdout, strconv.FormatInt(obs, 10)) || !strings.Contains(stdout, c.want) {
				t.Errorf("db check: exit %d (want 1):\n%s", code, stdout)
			}

			wantProblem := fmt.Sprintf("observation %d, which the event cites as its after observation, is damaged (%s)", obs, c.want)
			stdout, stderr, code := runIn(t, "evidence", id, "--json", "--config", cfg, "--db", db)
			var rec qaRecord
			if code != 1 || json.Unmarshal([]byte(stdout), &rec) != nil || rec.AllVerified || !strings.Contains(stderr, wantProblem) {
				t.Fatalf("evidence --json: exit %d (want 1), all_verified %v: %s", code, rec.AllVerified, stderr)
			}
			var raw struct {
				Probes []struct {
					ProbeID      string          `json:"probe_id"`
					After        json.RawMessage `json:"after"`
					AfterProblem string          `json:"after_problem"`
				} `json:"probes"`
			}
			json.Unmarshal([]byte(stdout), &raw)
			found := false
			for _, p := range raw.Probes {
				if p.ProbeID == ev.Probes[0].ProbeID {
					found = string(p.After) == "null" && strings.HasPrefix(p.AfterProblem, wantProblem)
				}
			}
			if !found {
				t.Errorf("the record does not name the damaged observation: %s", stdout)
			}
			file := filepath.Join(t.TempDir(), "e.json")
			os.WriteFile(file, []byte(stdout), 0o644)
			if _, stderr, code := runIn(t, "evidence", "--verify", file); code != 1 || !strings.Contains(stderr, wantProblem) {
				t.Errorf("--verify: exit %d (want 1): %s", code, stderr)
			}
			if text, _, code := runIn(t, "evidence", id, "--config", cfg, "--db", db); code != 1 || !strings.Contains(text, "DOES NOT VERIFY") || !strings.Contains(text, c.want) {
				t.Errorf("evidence: exit %d (want 1):\n%s", code, text)
			}

			stdout, stderr, code = runIn(t, "replay", "--run", strconv.FormatInt(run, 10), "--json", "--config", cfg, "--db", db)
			var rr app.ReplayReport
			if code != 1 || json.Unmarshal([]byte(stdout), &rr) != nil || rr.Damaged != 1 || len(rr.Diffs) != 1 || rr.Diffs[0].ObservationID != obs ||
				rr.Diffs[0].Unreadable != storage.ProblemDamagedRow+": "+c.want || rr.Same != rr.Replayed-1 || rr.Same == 0 {
				t.Errorf("replay --json: exit %d (want 1): %+v %s", code, rr, stderr)
			}
			if stdout, _, code := runIn(t, "replay", "--run", strconv.FormatInt(run, 10), "--config", cfg, "--db", db); code != 1 || !strings.Contains(stdout, c.want) {
				t.Errorf("replay: exit %d (want 1):\n%s", code, stdout)
			} else if f := strings.Fields(lineWith(stdout, c.want)); len(f) < 2 || f[len(f)-1] != "-" || f[len(f)-2] != "-" {
				// Nothing of a damaged row was checked: not "no", "no".
				t.Errorf("replay: the damaged row's intact columns: %q", f)
			}
		})
	}
}

// A typed column of another table, damaged: db check names the table, the
// row and the column (a structure message), exit 1.
func TestDamagedRowQAOtherTables(t *testing.T) {
	cfg, db := evidenceEnv(t, qaViolence, 4)
	ev := qaEventOfKind(t, cfg, db, "policy_change")
	p := ev.Probes[0]
	sqlIn(t, db, `UPDATE event_probes SET before_obs = 'x' WHERE event_id = ? AND probe_id = ?`, ev.ID, p.ProbeID)
	sqlIn(t, db, `UPDATE runs SET detected = 7 WHERE id = 2`)
	rep, stderr, code := checkJSON(t, db)
	tgt := queryIntIn(t, db, `SELECT id FROM targets WHERE name = 'a'`)
	want := []string{
		"runs row 2: column detected holds integer 7, not 0 or 1",
		fmt.Sprintf(`event_probes row (event_id %d, target_id %d, probe_id %q): column before_obs holds text "x", not an integer`, ev.ID, tgt, p.ProbeID),
	}
	if code != 1 || rep.OK || strings.Join(rep.Structure, "\n") != strings.Join(want, "\n") {
		t.Fatalf("db check --json: exit %d (want 1): %q %s", code, rep.Structure, stderr)
	}
	if stdout, _, code := runIn(t, "db", "check", "--db", db); code != 1 || !strings.Contains(stdout, want[1]) {
		t.Errorf("db check: exit %d (want 1):\n%s", code, stdout)
	}
}

// QA (1), the byte flip: a leaf page of the observations table in the
// middle of the file scrambled on disk. db check reports what SQLite's
// integrity_check says and every row of the page it cannot read, goes on
// past it (every other row is read and verified), and exits 1.
func TestDamagedRowQAByteFlip(t *testing.T) {
	db := filepath.Join(t.TempDir(), "flip.db")
	mustRun(t, 3, "--db", db)
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var pages []int64
	rows, err := st.SQL().QueryContext(ctx, `SELECT pageno FROM dbstat WHERE name = 'observations' AND pagetype = 'leaf' ORDER BY path`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p int64
		rows.Scan(&p)
		pages = append(pages, p)
	}
	rows.Close()
	var total, pageSize int64
	if err := st.SQL().QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM observations), (SELECT page_size FROM pragma_page_size())`).Scan(&total, &pageSize); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil { // checkpoints: every page is in the file
		t.Fatal(err)
	}
	if len(pages) < 4 {
		t.Fatalf("%d leaf pages", len(pages))
	}
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, pageSize/2)
	off := (pages[len(pages)/2]-1)*pageSize + pageSize/2
	if _, err := f.ReadAt(buf, off); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] ^= 0xff
	}
	if _, err := f.WriteAt(buf, off); err != nil {
		t.Fatal(err)
	}
	f.Close()

	rep, stderr, code := checkJSON(t, db)
	unreadable := 0
	for _, p := range rep.Problems {
		if strings.HasPrefix(p.Problem, storage.ProblemRowUnreadable+": ") || strings.HasPrefix(p.Problem, storage.ProblemDamagedRow+": ") {
			unreadable++
		}
	}
	if code != 1 || rep.OK || len(rep.Structure) == 0 || unreadable == 0 || rep.Observations != total || strings.Contains(stderr, "Scan error") {
		t.Fatalf("db check --json: exit %d (want 1): %d of %d observations, structure %q, problems %+v\n%s", code, rep.Observations, total, rep.Structure, rep.Problems, stderr)
	}
	// SQLite's own check finds the damage, and the text says so.
	if !strings.Contains(strings.Join(rep.SQLite, "\n"), "stopped") && rep.SQLiteCheckOK {
		t.Errorf("db check --json: sqlite_check_ok with a scrambled page, sqlite %q", rep.SQLite)
	}
	if stdout, _, code := runIn(t, "db", "check", "--full", "--db", db); code != 1 || !strings.Contains(stdout, "structure     DAMAGED: SQLite's integrity_check failed") ||
		!strings.Contains(stdout, "\nsqlite: ") || !strings.Contains(stdout, "row unreadable") {
		t.Errorf("db check: exit %d (want 1):\n%s", code, stdout)
	}
}

// lineWith returns the first line of s containing sub ("" if none).
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// A damaged row an event cites no longer stops GitHub delivery (every
// pass stopped on a raw Scan error, holding up every event's issue): the
// issue is rendered without it.
func TestDamagedRowDoesNotStopDelivery(t *testing.T) {
	_, db, withGH, _ := outboxConfigs(t)
	for i := 0; i < 4; i++ {
		runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	}
	// A connection without foreign keys, as a stray tool would write.
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE observations SET run_id = 'r' WHERE id = (SELECT after_obs FROM event_probes LIMIT 1)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if stdout, stderr, code := runIn(t, "outbox", "--config", withGH, "--db", db, "--dry-run"); code != 0 || !strings.Contains(stdout, "would open an issue") {
		t.Errorf("outbox --dry-run over a damaged cited row: exit %d\n%s%s", code, stdout, stderr)
	}
}

// diff over a run holding a damaged row is a database failure (exit 3,
// naming the row), not a usage error (exit 2).
func TestDiffOnDamagedRowIsRuntime(t *testing.T) {
	db := filepath.Join(t.TempDir(), "d.db")
	mustRun(t, 2, "--db", db)
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE observations SET class = 'allowee' WHERE id = (SELECT MAX(id) FROM observations)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, stderr, code := runIn(t, "diff", "--target", "sim-a", "--db", db); code != 3 || !strings.Contains(stderr, "damaged row") {
		t.Errorf("diff over a damaged row: exit %d: %s", code, stderr)
	}
}

// compare over a run holding a damaged row gates instead of failing: the
// row's probe reads as not observed (not compared), and the damage is
// counted and warned about.
func TestCompareGoesOnPastADamagedRow(t *testing.T) {
	dir := t.TempDir()
	db, cfg := filepath.Join(dir, "d.db"), filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("targets:\n  - {name: sim-a, provider: sim, model: sim-large}\n  - {name: sim-b, provider: sim, model: sim-large}\n"), 0o644)
	mustRun(t, 2, "--config", cfg, "--db", db)
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE observations SET class = 'allowee' WHERE id = (SELECT MAX(o.id) FROM observations o JOIN targets t ON t.id = o.target_id WHERE t.name = 'sim-b' AND o.sample = 0)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	stdout, stderr, code := runIn(t, "compare", "--from", "sim-a", "--to", "sim-b", "--json", "--config", cfg, "--db", db)
	var c struct {
		ToSide struct {
			DamagedRows int `json:"damaged_rows"`
		} `json:"to_side"`
		NotCompared int      `json:"not_compared"`
		Warnings    []string `json:"warnings"`
	}
	if code == 3 || json.Unmarshal([]byte(stdout), &c) != nil || c.ToSide.DamagedRows != 1 || c.NotCompared < 1 || !strings.Contains(strings.Join(c.Warnings, "\n"), "damaged observation row") {
		t.Errorf("compare over a damaged row: exit %d: %s\n%s", code, stdout, stderr)
	}
}
