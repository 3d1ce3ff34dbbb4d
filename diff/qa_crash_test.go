package diff_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// QA (crash consistency and concurrency): `db check` is documented to run
// beside serve ("It holds no lock, so it can run beside serve"), and a run
// with retention prunes, under its lease, the observations detection no
// longer cites. CheckCitations reads every detection state in one query and
// then looks each cited observation up in a separate query (a separate
// read snapshot). When a run commits in between — its detection moves a
// citation from observation X to a new one, and its prune deletes X — the
// check reports X as a "missing cited observation" and `db check` exits 1
// on a database that was consistent at every instant.
//
// The test reproduces it deterministically: the database is at state A
// (after run 4); a hook in the reader's driver commits state B (after run 5
// plus the prune retention would make: the observations only A cited are
// deleted) right before the first existence query, exactly as a concurrent
// `driftprobe run` would. Both A and B verify on their own.
func TestQACheckCitationsBesideARunThatPrunes(t *testing.T) {
	ctx := context.Background()
	e := testenv.New(t, `targets:
  - name: a
    provider: sim
    model: m
    sim: {noise: 0.5, seed: 3}
`)
	e.Runs(4)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	if err := e.Store.Backup(ctx, a); err != nil {
		t.Fatal(err)
	}
	e.Run() // run 5: detection moves candidate and baseline citations
	if err := e.Store.Backup(ctx, b); err != nil {
		t.Fatal(err)
	}
	citedA, citedB := qaCited(t, a), qaCited(t, b)
	var victims []string
	for id := range citedA {
		if !citedB[id] {
			victims = append(victims, strconv.FormatInt(id, 10))
		}
	}
	if len(victims) == 0 {
		t.Fatal("scenario: run 5 moved no citation; pick another seed")
	}
	sort.Strings(victims)
	// B as retention leaves it: what only A cited is pruned.
	qaExec(t, b, "DELETE FROM observations WHERE id IN ("+strings.Join(victims, ",")+")")
	for _, p := range []string{a, b} {
		if got := qaCitations(t, qaOpen(t, "sqlite", p)); len(got) != 0 {
			t.Fatalf("scenario: %s does not verify on its own: %q", filepath.Base(p), got)
		}
	}

	live := filepath.Join(dir, "live.db")
	qaCopy(t, a, live)
	qaExec(t, live, "PRAGMA journal_mode=WAL")
	var once sync.Once
	ran := false
	qaSetHook(func(query string) {
		// The lookup of each observation a state cites (its existence,
		// target and probe).
		if !strings.Contains(query, "FROM observations o LEFT JOIN targets t ON t.id = o.target_id WHERE o.id = ?") {
			return
		}
		once.Do(func() {
			ran = true
			// A concurrent run (detection + prune) commits B.
			w := qaOpen(t, "sqlite", live)
			c, err := w.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, q := range []string{"PRAGMA foreign_keys=OFF", "ATTACH DATABASE '" + b + "' AS b", "BEGIN IMMEDIATE"} {
				if _, err := c.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			rows, err := c.QueryContext(ctx, "SELECT name FROM b.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
			if err != nil {
				t.Fatal(err)
			}
			var tables []string
			for rows.Next() {
				var n string
				rows.Scan(&n)
				tables = append(tables, n)
			}
			rows.Close()
			for _, tb := range tables {
				for _, q := range []string{`DELETE FROM main."` + tb + `"`, `INSERT INTO main."` + tb + `" SELECT * FROM b."` + tb + `"`} {
					if _, err := c.ExecContext(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
			}
			if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
				t.Fatal(err)
			}
		})
	})
	defer qaSetHook(nil)
	r := qaOpen(t, qaDriverName, "file:"+live+"?mode=ro")
	got := qaCitations(t, r)
	if !ran {
		t.Fatal("the concurrent run never happened: CheckCitations looked no cited observation up")
	}
	if len(got) != 0 {
		t.Errorf("CheckCitations beside a run that pruned reports %d missing cited observation(s) on a database consistent at every instant (db check exits 1):\n%s",
			len(got), strings.Join(got, "\n"))
	}
}

// qaCited returns the observation ids the database at p cites (events and
// detection states): CheckCitations on a scratch copy without observations
// names every one.
func qaCited(t *testing.T, p string) map[int64]bool {
	t.Helper()
	s := filepath.Join(t.TempDir(), "scratch.db")
	qaCopy(t, p, s)
	db := qaOpen(t, "sqlite", s)
	if _, err := db.Exec("PRAGMA foreign_keys=OFF"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DELETE FROM observations"); err != nil {
		t.Fatal(err)
	}
	out := map[int64]bool{}
	re := regexp.MustCompile(`observation (\d+) is not in the database`)
	for _, m := range qaCitations(t, db) {
		if x := re.FindStringSubmatch(m); x != nil {
			id, _ := strconv.ParseInt(x[1], 10, 64)
			out[id] = true
		}
	}
	return out
}

func qaCitations(t *testing.T, db *sql.DB) []string {
	t.Helper()
	got, err := diff.CheckCitations(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func qaOpen(t *testing.T, drv, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(drv, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func qaExec(t *testing.T, p, q string) {
	t.Helper()
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func qaCopy(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// qaDriverName is modernc's sqlite driver with a hook called before every
// statement a connection prepares: the test's stand-in for another process
// committing between two of the reader's statements.
const qaDriverName = "sqlite-qa-hook"

var (
	qaHookMu sync.Mutex
	qaHookFn func(string)
)

func qaSetHook(f func(string)) {
	qaHookMu.Lock()
	qaHookFn = f
	qaHookMu.Unlock()
}

func init() {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	sql.Register(qaDriverName, qaDriver{db.Driver()})
	db.Close()
}

type qaDriver struct{ base driver.Driver }

func (d qaDriver) Open(name string) (driver.Conn, error) {
	c, err := d.base.Open(name)
	if err != nil {
		return nil, err
	}
	return qaConn{c}, nil
}

type qaConn struct{ driver.Conn }

func (c qaConn) Prepare(query string) (driver.Stmt, error) {
	qaCall(query)
	return c.Conn.Prepare(query)
}

func (c qaConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	qaCall(query)
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.Conn.Prepare(query)
}

func (c qaConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return c.Conn.Begin() //nolint:staticcheck
}

func qaCall(query string) {
	qaHookMu.Lock()
	f := qaHookFn
	qaHookMu.Unlock()
	if f != nil {
		f(query)
	}
}
