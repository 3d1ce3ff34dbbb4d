package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"modernc.org/sqlite"

	"github.com/driftprobe/driftprobe/probes"
)

// seedOld fills a database at schema version v (oldSchema) with the rows an
// older driftprobe wrote, through the columns that schema has: runs (one
// detected, one left undetected where the schema records it, one still
// running), two targets (one OpenAI's), their run rows, observations with
// stored bodies, a probe, and, where the schema has them, an event citing
// two observations with its targets, probe rows, update and outbox row,
// composition history, an input change, the run lease, a prune mark and
// its kept row, an attribution report and a GitHub hold.
func seedOld(t *testing.T, p string, v int) {
	t.Helper()
	raw, err := sql.Open("sqlite", fileURI(p)+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.Exec(q, args...); err != nil {
			t.Fatalf("schema %d: %s: %v", v, q, err)
		}
	}
	const at = "2026-11-01T10:00:00Z"
	for id, status := range map[int]string{1: "complete", 2: "complete", 3: "running"} {
		exec(`INSERT INTO runs (id, started_at, finished_at, status, corpus_name, corpus_version, corpus_hash, config_hash, host, version, note)
			VALUES (?, ?, ?, ?, 'default', '2026.11.1', 'ch', 'cfg', 'host-a', 'v0', '')`, id, at, at, status)
	}
	if v >= 13 {
		exec(`UPDATE runs SET detected = 0 WHERE id = 2`) // finished, its detection cut off
	}
	exec(`INSERT INTO targets (id, name, provider, model, endpoint, first_seen) VALUES (1, 'sim-a', 'sim', 'sim-large', 'chat', ?), (2, 'oa', 'openai', 'gpt-4o', 'chat', ?)`, at, at)
	for _, r := range []int{1, 2} {
		for _, tg := range []int{1, 2} {
			exec(`INSERT INTO run_targets (run_id, target_id, status, observations, verdicts, requests, requests_sha256, tokens_in, cost_usd, duration_ms)
				VALUES (?, ?, 'complete', 2, 2, 2, 'rs', 10, 0.5, 12.5)`, r, tg)
		}
	}
	exec(`INSERT INTO probes (sha256, probe_id, corpus_version, role, expect, tags, canonical) VALUES ('ps', 'p1', '2026.11.1', 'benign', 'allowed', 'a,b', '{}')`)
	id := 0
	for _, r := range []int{1, 2, 3} {
		for _, tg := range []int{1, 2} {
			for _, probe := range []string{"p1", "p2"} {
				id++
				req := fmt.Appendf(nil, `{"model":"m","messages":[{"role":"user","content":"%s"}],"pad":"%s"}`, probe, strings.Repeat("r", 1500*(id%2)))
				answer := fmt.Appendf(nil, `{"answer":%d,"pad":"%s"}`, id, strings.Repeat("a", 2000*(id%3)))
				sum := sha256.Sum256(answer)
				exec(`INSERT INTO observations (id, run_id, target_id, probe_id, probe_sha256, sample, request_sha256, request_method, request_path, request_body,
					class, stage, categories, signals, http_status, model_id, latency_ms, tokens_in, attempts, body_sha256, body, observed_at)
					VALUES (?, ?, ?, ?, 'ps', 0, ?, 'POST', '/v1/chat/completions', ?, 'allowed', '', '', '[]', 200, 'm-1', 3.5, 7, 1, ?, ?, ?)`,
					id, r, tg, probe, probes.Fingerprint("POST", "/v1/chat/completions", req, ""), encodeBody(req), hex.EncodeToString(sum[:]), encodeBody(answer), at)
			}
		}
	}
	if v < 2 {
		return
	}
	exec(`INSERT INTO target_categories (target_id, category, first_run) VALUES (1, 'violence', 1)`)
	exec(`INSERT INTO input_changes (id, run_id, target_id, probe_id, old_sha256, new_sha256) VALUES (1, 2, 1, 'p1', 'o', 'n')`)
	exec(`INSERT INTO events (id, fingerprint, target_id, provider, kind, direction, opened_kind, opened_direction, new_categories, first_run, confirmed_run, last_run,
		corpus_version, corpus_hash, created_at, updated_at, issue_number, issue_url)
		VALUES (1, 'fp1', 1, 'sim', 'policy_change', 'tightened', 'policy_change', 'tightened', 'violence', 1, 2, 2, '2026.11.1', 'ch', ?, ?, 7, 'https://github.example/o/r/issues/7')`, at, at)
	exec(`INSERT INTO event_targets (event_id, target_id, joined_run) VALUES (1, 1, 2)`)
	exec(`INSERT INTO event_probes (event_id, target_id, probe_id, request_sha256, before, after, before_obs, after_obs, first_run, confirmed_run, flip_rate)
		SELECT 1, 1, 'p1', request_sha256, 'allowed', 'blocked_output:violence', 1, 5, 1, 2, 0.25 FROM observations WHERE id = 1`)
	exec(`INSERT INTO event_updates (id, event_id, run_id, change, detail, at) VALUES (1, 1, 2, 'opened', 'opened on sim-a', ?)`, at)
	exec(`INSERT INTO outbox (id, event_id, update_id, action, created_at, attempts, last_error) VALUES (1, 1, 1, 'open', ?, 2, 'rate limited')`, at)
	exec(`INSERT INTO target_models (target_id, model, prev_model, since_run) VALUES (1, 'm-1|fp', '', 1)`)
	if v >= 3 {
		exec(`INSERT INTO run_lock (id, holder, host, pid, command, acquired_at, expires_at) VALUES (1, 'h/1/x', 'host-a', 1, 'driftprobe run', ?, ?)`, at, at)
	}
	if v >= 6 {
		exec(`UPDATE runs SET pruned = 'bodies' WHERE id = 1`)
		exec(`INSERT INTO pruned_kept (observation_id, run_id) VALUES (1, 1)`)
	}
	if v >= 7 {
		exec(`INSERT INTO attribution_reports (id, run_id, created_at, report, error) VALUES (1, 2, ?, '{"changes":[]}', '')`, at)
	}
	if v >= 21 {
		exec(`INSERT INTO github_holds (api, credential, until, failures, reason, at) VALUES ('https://api.github.com', 'token $GITHUB_TOKEN', ?, 1, 'rate limit', ?)`, at, at)
	}
}

// tableDump is every row of every table of a database, each column named,
// rows sorted: what a migration must keep.
type tableDump map[string]map[string][]string // table → column → values, in row order

func dumpTables(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) tableDump {
	t.Helper()
	ctx := context.Background()
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	out := tableDump{}
	for _, tbl := range tables {
		// Ordered by every column: the same rows read in the same order
		// whatever columns a later schema adds after them.
		cols := tableColumns(t, q, tbl)
		order := make([]string, len(cols))
		for i := range cols {
			order[i] = strconv.Itoa(i + 1)
		}
		rows, err := q.QueryContext(ctx, `SELECT * FROM "`+tbl+`" ORDER BY `+strings.Join(order, ", "))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, c := range cols {
				got[c] = append(got[c], fmt.Sprintf("%T:%v", vals[i], vals[i]))
			}
		}
		rows.Close()
		for _, c := range cols {
			if got[c] == nil {
				got[c] = []string{}
			}
		}
		out[tbl] = got
	}
	return out
}

func tableColumns(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, tbl string) []string {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), `SELECT name FROM pragma_table_info(?) ORDER BY cid`, tbl)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	return cols
}

// rawDump reads the database at p through a plain read-only connection.
func rawDump(t *testing.T, p string) (tableDump, int) {
	t.Helper()
	raw, err := sql.Open("sqlite", fileURI(p)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	var v int
	if err := raw.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return dumpTables(t, raw), v
}

// kept reports every table and column of old whose values differ in now
// (columns now adds aside).
func keptDiff(old, now tableDump) []string {
	var diffs []string
	for tbl, cols := range old {
		nc, ok := now[tbl]
		if !ok {
			diffs = append(diffs, "table "+tbl+" is gone")
			continue
		}
		for c, vals := range cols {
			nv, ok := nc[c]
			if !ok {
				diffs = append(diffs, tbl+"."+c+" is gone")
				continue
			}
			if strings.Join(vals, "\x00") != strings.Join(nv, "\x00") {
				diffs = append(diffs, fmt.Sprintf("%s.%s: %q, now %q", tbl, c, vals, nv))
			}
		}
	}
	sort.Strings(diffs)
	return diffs
}

// A database an older driftprobe left, at every schema version from 1 on,
// holding rows of every table it has: Open upgrades it to the latest
// schema keeping every row and value (columns added take their documented
// values), db check finds it sound, a second Open changes nothing and
// applies nothing, and a database of a newer schema is refused, unchanged.
func TestUpgradeFromEverySchemaKeepsData(t *testing.T) {
	ctx := context.Background()
	latest := SchemaLatest()
	for v := 1; v < latest; v++ {
		t.Run(fmt.Sprintf("schema%d", v), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "old.db")
			oldSchema(t, p, v)
			seedOld(t, p, v)
			before, _ := rawDump(t, p)

			d, err := Open(ctx, p)
			if err != nil {
				t.Fatalf("open schema %d: %v", v, err)
			}
			if from, to := d.Migrated(); from != v || to != latest {
				t.Errorf("Migrated %d → %d, want %d → %d", from, to, v, latest)
			}
			if got, err := d.SchemaVersion(ctx); err != nil || got != latest {
				t.Errorf("user_version %d (%v), want %d", got, err, latest)
			}
			rep, err := d.Check(ctx, CheckOptions{Full: true})
			if err != nil || !rep.OK {
				t.Errorf("check of the upgraded database: %v\n%+v", err, rep)
			}
			d.Close()

			after, _ := rawDump(t, p)
			if diffs := keptDiff(before, after); len(diffs) > 0 {
				t.Errorf("the upgrade from schema %d changed what the database held:\n%s", v, strings.Join(diffs, "\n"))
			}
			// Columns added take the values their migrations document.
			want := map[string][]string{
				"observations.bodies_pruned":     repeat("int64:0", 12),
				"run_targets.detected":           {"int64:1", "int64:1", "int64:1", "int64:1"},
				"origin_scope_unnamed.target_id": {"int64:2"},
			}
			if v < 13 {
				want["runs.detected"] = repeat("int64:1", 3)
			} else if v < 23 {
				// Run 2 was left undetected: so are its targets' rows.
				want["run_targets.detected"] = []string{"int64:1", "int64:1", "int64:0", "int64:0"}
			}
			if v >= 22 {
				want["origin_scope_unnamed.target_id"] = []string{} // seeded after 0022 ran: none listed
			}
			for k, w := range want {
				tbl, col, _ := strings.Cut(k, ".")
				if got := after[tbl][col]; strings.Join(got, ",") != strings.Join(w, ",") {
					t.Errorf("%s after the upgrade from schema %d: %q, want %q", k, v, got, w)
				}
			}

			// Again: nothing to apply, nothing changed.
			d, err = Open(ctx, p)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			if from, to := d.Migrated(); from != latest || to != latest {
				t.Errorf("reopened: Migrated %d → %d, want none applied (%d → %d)", from, to, latest, latest)
			}
			d.Close()
			again, _ := rawDump(t, p)
			if diffs := keptDiff(after, again); len(diffs) > 0 || len(again) != len(after) {
				t.Errorf("reopening the upgraded database changed it:\n%s", strings.Join(diffs, "\n"))
			}
		})
	}

	// A newer driftprobe's database: refused, naming both versions, and
	// left as it was.
	p := filepath.Join(t.TempDir(), "new.db")
	oldSchema(t, p, latest)
	seedOld(t, p, latest)
	raw, err := sql.Open("sqlite", fileURI(p))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, latest+1)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	before, _ := rawDump(t, p)
	_, err = Open(ctx, p)
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), fmt.Sprintf("schema %d, this binary knows %d", latest+1, latest)) {
		t.Errorf("open of schema %d: %v, want ErrNewerSchema naming both versions", latest+1, err)
	}
	after, v := rawDump(t, p)
	if diffs := keptDiff(before, after); len(diffs) > 0 || v != latest+1 {
		t.Errorf("refusing a newer schema changed the database (user_version %d):\n%s", v, strings.Join(diffs, "\n"))
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// An upgrade that fails before it commits — a migration's statement
// failing, the commit refused — leaves the database at its old version
// with every table as it was, never half-migrated; the next Open
// upgrades it whole.
func TestUpgradeInterruptedLeavesOldSchema(t *testing.T) {
	ctx := context.Background()
	latest := SchemaLatest()
	for _, v := range []int{1, 12, latest - 1} {
		p := filepath.Join(t.TempDir(), fmt.Sprintf("s%d.db", v))
		oldSchema(t, p, v)
		seedOld(t, p, v)
		before, _ := rawDump(t, p)
		onConnect(t, func(c sqlite.ExecQuerierContext, dsn string) error {
			if writerConn(dsn, p) {
				c.(sqlite.HookRegisterer).RegisterCommitHook(func() int32 { return 1 }) // every commit rolls back
			}
			return nil
		})
		if d, err := Open(ctx, p); err == nil {
			d.Close()
			t.Fatalf("schema %d: the upgrade committed although its commit was refused", v)
		}
		connectHook.Store(nil)
		leftAsItWas(t, p, v, before, "a failed upgrade")
		d, err := Open(ctx, p)
		if err != nil {
			t.Fatalf("schema %d: open after the failed upgrade: %v", v, err)
		}
		if from, to := d.Migrated(); from != v || to != latest {
			t.Errorf("schema %d: then Migrated %d → %d", v, from, to)
		}
		d.Close()
	}
}

// A process killed outright (SIGKILL) while its upgrade commits leaves the
// database at its old version, sound; the next Open upgrades it.
func TestUpgradeKilledLeavesOldSchema(t *testing.T) {
	if p := os.Getenv("DRIFTPROBE_TEST_KILLED_UPGRADE"); p != "" {
		// The child: die as the upgrade's transaction commits.
		onConnect(t, func(c sqlite.ExecQuerierContext, dsn string) error {
			if writerConn(dsn, p) {
				c.(sqlite.HookRegisterer).RegisterCommitHook(func() int32 {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {}
				})
			}
			return nil
		})
		Open(context.Background(), p)
		t.Fatal("the child outlived its upgrade")
	}
	const v = 9
	p := filepath.Join(t.TempDir(), "s.db")
	oldSchema(t, p, v)
	seedOld(t, p, v)
	before, _ := rawDump(t, p)
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpgradeKilledLeavesOldSchema$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DRIFTPROBE_TEST_KILLED_UPGRADE="+p)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed: %v\n%s", err, out)
	}
	leftAsItWas(t, p, v, before, "a killed upgrade")
	d, err := Open(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if from, to := d.Migrated(); from != v || to != SchemaLatest() {
		t.Errorf("then Migrated %d → %d", from, to)
	}
	if rep, err := d.Check(context.Background(), CheckOptions{Full: true}); err != nil || !rep.OK {
		t.Errorf("check after the killed upgrade and a complete one: %v %+v", err, rep)
	}
}

// leftAsItWas fails t unless the database at p still has schema v and
// every row and table of before (a rawDump taken before what happened).
func leftAsItWas(t *testing.T, p string, v int, before tableDump, what string) {
	t.Helper()
	after, got := rawDump(t, p)
	if got != v {
		t.Errorf("schema %d: after %s user_version is %d", v, what, got)
	}
	if diffs := keptDiff(before, after); len(diffs) > 0 || len(after) != len(before) {
		t.Errorf("schema %d: %s changed the database (%d tables, was %d):\n%s", v, what, len(after), len(before), strings.Join(diffs, "\n"))
	}
}
