package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/storage"
)

// TestMain lets tests run the real CLI in a separate process: the test
// binary re-executes itself with DRIFTPROBE_ARGS set.
func TestMain(m *testing.M) {
	if a := os.Getenv("DRIFTPROBE_ARGS"); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			panic(err)
		}
		os.Exit(runWithSignals(args, os.Stdout, os.Stderr))
	}
	os.Exit(withFixtureRoot(m.Run))
}

// runProc runs the CLI in a new process and returns stdout, stderr and
// the exit code.
func runProc(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "DRIFTPROBE_ARGS="+string(a)), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// runIn runs the CLI in this process.
// corruptS2Body flips a byte past the header of the first stored response
// body that is an S2 stream (bodies from 1 KB), among the observations ids
// names (any observation when none), and returns that observation's id.
func corruptS2Body(t *testing.T, db string, ids ...int64) int64 {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := `SELECT id, body FROM observations WHERE HEX(SUBSTR(body, 1, 10)) = 'FF06000053327354774F'`
	var args []any
	if len(ids) > 0 {
		q += ` AND id IN (` + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + `)`
		for _, id := range ids {
			args = append(args, id)
		}
	}
	var id int64
	var body []byte
	if err := st.SQL().QueryRowContext(ctx, q+` ORDER BY id LIMIT 1`, args...).Scan(&id, &body); err != nil {
		t.Fatalf("no S2-compressed body to corrupt: %v", err)
	}
	body[len(body)/2] ^= 0xff
	if _, err := st.SQL().ExecContext(ctx, `UPDATE observations SET body = ? WHERE id = ?`, body, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// mustRun makes n runs with args (flags for `run`: --config, --db), failing
// the test on any exit but 0.
func mustRun(t *testing.T, n int, args ...string) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, stderr, code := runIn(t, append([]string{"run", "--no-progress"}, args...)...); code != 0 {
			t.Fatalf("run %d of %d %v: exit %d: %s", i+1, n, args, code, stderr)
		}
	}
}

func runIn(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

type runOut struct {
	RunID         int64  `json:"run_id"`
	Status        string `json:"status"`
	CorpusVersion string `json:"corpus_version"`
	Targets       []struct {
		Target         string         `json:"target"`
		Observations   int            `json:"observations"`
		Verdicts       map[string]int `json:"verdicts"`
		RequestsSHA256 string         `json:"requests_sha256"`
	} `json:"targets"`
	Events []json.RawMessage `json:"events"`
}

const twoSims = `
targets:
  - {name: sim-a, provider: sim, model: sim-large}
  - {name: sim-b, provider: sim, model: sim-small, max_tokens: 32, seed: 7}
`

// The core guarantee: two separate processes render byte-identical
// requests for every probe of every target.
func TestRequestsIdenticalAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(twoSims), 0o644)
	var outs []runOut
	for i, db := range []string{"one.db", "two.db"} {
		stdout, stderr, code := runProc(t, nil, "run", "--json", "--config", cfg, "--db", filepath.Join(dir, db))
		if code != 0 {
			t.Fatalf("process %d exit %d: %s", i, code, stderr)
		}
		var o runOut
		if err := json.Unmarshal([]byte(stdout), &o); err != nil {
			t.Fatalf("process %d: bad JSON: %v\n%s", i, err, stdout)
		}
		outs = append(outs, o)
	}
	if len(outs[0].Targets) != 2 {
		t.Fatalf("targets: %+v", outs[0].Targets)
	}
	for i := range outs[0].Targets {
		a, b := outs[0].Targets[i], outs[1].Targets[i]
		if a.Target != b.Target || a.RequestsSHA256 == "" || a.RequestsSHA256 != b.RequestsSHA256 {
			t.Errorf("%s: requests_sha256 %q vs %q", a.Target, a.RequestsSHA256, b.RequestsSHA256)
		}
		if a.Observations != 62 || a.Verdicts["allowed"] == 0 || a.Verdicts["blocked_input"] == 0 || a.Verdicts["blocked_output"] == 0 {
			t.Errorf("%s: observations %d verdicts %v", a.Target, a.Observations, a.Verdicts)
		}
	}
	if outs[0].Targets[0].RequestsSHA256 == outs[0].Targets[1].RequestsSHA256 {
		t.Error("different targets rendered identical requests")
	}
}

// `run` with no config at all uses the built-in simulator config.
func TestRunWithoutConfig(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := runIn(t, "run", "--db", filepath.Join(dir, "x.db"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"run 1 complete", "sim-a", "BLOCKED_IN"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("targets:\n  - name: x\n    provider: nope\n    model: m\n"), 0o644)
	noCorpus := filepath.Join(dir, "nocorpus.yaml")
	os.WriteFile(noCorpus, []byte("corpus: ./no/such/corpus\ntargets:\n  - {name: x, provider: sim, model: m}\n"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--config", bad}, 2, "bad.yaml:3: targets[0].provider: unknown provider"},
		{[]string{"config", "check", "--config", bad}, 2, "unknown provider"},
		{[]string{"run", "--bogus-flag"}, 2, "unknown flag"},
		{[]string{"nosuchcommand"}, 2, "unknown command"},
		// A mistyped subcommand of a group is no help page with exit 0:
		// a scheduled "db backpu" must fail, not back nothing up.
		{[]string{"db", "backpu", filepath.Join(dir, "bk.db")}, 2, `unknown command "backpu" for "driftprobe db"; did you mean backup?`},
		{[]string{"config", "chek", "--config", bad}, 2, `unknown command "chek" for "driftprobe config"`},
		{[]string{"corpus", "lnit"}, 2, `unknown command "lnit" for "driftprobe corpus"`},
		{[]string{"events", "--db", ""}, 2, "events: --db is empty"},
		{[]string{"config", "check", "--config", " "}, 2, "--config is empty"},
		{[]string{"run", "--config", filepath.Join(dir, "missing.yaml")}, 2, "missing.yaml"},
		{[]string{"diff"}, 2, "--target is required"},
		{[]string{"events", "--since", "-3"}, 2, "events: --since -3: want a run id"},
		{[]string{"replay", "--run", "-1"}, 2, "replay: --run -1: want a run id"},
		{[]string{"compare", "--from", "a"}, 2, "--from and --to are required"},
		{[]string{"corpus", "lint", filepath.Join(dir, "nocorpus")}, 2, "nocorpus does not exist"},
		{[]string{"corpus", "lint", bad}, 2, "bad.yaml is not a directory (a corpus is a directory"},
		{[]string{"config", "check", "--config", noCorpus}, 2, "nocorpus.yaml:1: corpus: ./no/such/corpus does not exist (a relative path is read from the working directory"},
		{[]string{"version"}, 0, "driftprobe"},
		{[]string{"config", "check"}, 0, "ok"},
		{[]string{"corpus", "lint"}, 0, "62 probes"},
	}
	for _, c := range cases {
		stdout, stderr, code := runIn(t, c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("%v: exit %d (want %d), output %q (want %q)", c.args, code, c.code, stdout+stderr, c.want)
		}
	}
}

func TestMissingKeyNamesVariable(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("targets:\n  - name: o\n    provider: openai\n    model: gpt-4o\n    api_key_env: DRIFTPROBE_TEST_UNSET_KEY\n"), 0o644)
	os.Unsetenv("DRIFTPROBE_TEST_UNSET_KEY")
	_, stderr, code := runIn(t, "run", "--config", cfg, "--db", filepath.Join(dir, "x.db"))
	if code != 2 || !strings.Contains(stderr, "c.yaml:5: targets[0].api_key_env: environment variable DRIFTPROBE_TEST_UNSET_KEY is not set") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func TestCompareGateExitCode(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(`
targets:
  - {name: current, provider: sim, model: m}
  - name: candidate
    provider: sim
    model: m2
    sim: {policies: [{from_run: 1, thresholds: {harassment: 0.25}}]}
`), 0o644)
	db := filepath.Join(dir, "x.db")
	if _, stderr, code := runIn(t, "run", "--config", cfg, "--db", db); code != 0 {
		t.Fatal(stderr)
	}
	stdout, _, code := runIn(t, "compare", "--config", cfg, "--db", db, "--from", "current", "--to", "candidate", "--json")
	var cmp struct {
		OverBlocking int `json:"over_blocking"`
		NewBlocks    []struct {
			ProbeID string `json:"probe_id"`
		} `json:"new_blocks"`
		Categories []struct {
			Category string `json:"category"`
			From     struct{ Blocked, Total int }
			To       struct{ Blocked, Total int }
		} `json:"categories"`
	}
	if err := json.Unmarshal([]byte(stdout), &cmp); err != nil {
		t.Fatal(err, stdout)
	}
	// The three harassment borderline probes (scores 0.27-0.32) are newly blocked.
	if cmp.OverBlocking != 3 || code != 1 {
		t.Fatalf("over_blocking %d exit %d, want 3 and 1: %s", cmp.OverBlocking, code, stdout)
	}
	for _, c := range cmp.Categories {
		if c.Category == "harassment" && (c.From.Blocked != 4 || c.To.Blocked != 7 || c.To.Total != 7) {
			t.Errorf("harassment %+v", c)
		}
	}
	if _, _, code := runIn(t, "compare", "--config", cfg, "--db", db, "--from", "current", "--to", "candidate", "--max-new-blocks", "3"); code != 0 {
		t.Errorf("gate with --max-new-blocks 3: exit %d, want 0", code)
	}
	if out, _, code := runIn(t, "compare", "--config", cfg, "--db", db, "--from", "current", "--to", "candidate", "--format", "markdown", "--max-new-blocks", "5"); code != 0 || !strings.Contains(out, "| `harassment` |") {
		t.Errorf("markdown: exit %d\n%s", code, out)
	}
}

func TestDemo(t *testing.T) {
	stdout, stderr, code := runIn(t, "demo")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"run 5", "POLICY_CHANGE", "NEW CATEGORIES", "privacy", "driftprobe diff --target sim-prod", "SAME_BYTES", "over-blocking",
		"1 provider, 1 traffic, 0 inconclusive", "sim-prod/violence PROVIDER: event 1", "sim-prod/hate TRAFFIC", "sexual_minors"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	// --dir keeps the files; a directory that already holds a demo is
	// refused rather than continued on a clock that starts over.
	dir := t.TempDir()
	if _, stderr, code := runIn(t, "demo", "--runs", "1", "--dir", dir); code != 0 {
		t.Fatalf("demo --dir: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runIn(t, "demo", "--runs", "1", "--dir", dir); code != 2 || !strings.Contains(stderr, "already holds a demo database") {
		t.Errorf("second demo in %s: exit %d: %s", dir, code, stderr)
	}
	// A relative --dir (with a space in it) writes a config that works
	// from any working directory: it names the database by absolute path.
	base := t.TempDir()
	t.Chdir(base)
	if _, stderr, code := runIn(t, "demo", "--runs", "1", "--dir", "my demo"); code != 0 {
		t.Fatalf("demo --dir 'my demo': exit %d: %s", code, stderr)
	}
	t.Chdir(filepath.Join(base, "my demo"))
	if stdout, stderr, code := runIn(t, "-c", "demo.yaml", "events", "--json"); code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("events from inside the demo directory: exit %d: %s%s", code, stdout, stderr)
	}
}

// A second process is refused while another holds the run lease, and says
// who holds it.
func TestSecondProcessRefusedByLease(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AcquireLock(context.Background(), storage.Lease{Holder: "other", Host: "node-7", PID: 4242, Command: "driftprobe serve"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, stderr, code := runProc(t, nil, "run", "--db", db)
	if code != 3 || !strings.Contains(stderr, "driftprobe serve (pid 4242 on node-7)") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// A prune needs the lease; its dry run changes nothing and does not.
	if _, stderr, code := runIn(t, "db", "prune", "--db", db, "--bodies", "1ns"); code != 3 || !strings.Contains(stderr, "pid 4242 on node-7") {
		t.Errorf("db prune under another's lease: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runIn(t, "db", "prune", "--db", db, "--bodies", "1ns", "--dry-run"); code != 0 {
		t.Errorf("db prune --dry-run under another's lease: exit %d: %s", code, stderr)
	}
}

func TestMetricsTextfileAndPushgateway(t *testing.T) {
	dir := t.TempDir()
	var pushed []byte
	var path string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		pushed, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer gw.Close()
	tf := filepath.Join(dir, "metrics", "driftprobe.prom")
	_, stderr, code := runIn(t, "run", "--db", filepath.Join(dir, "x.db"), "--metrics-textfile", tf, "--pushgateway", gw.URL)
	if code != 0 {
		t.Fatal(stderr)
	}
	b, err := os.ReadFile(tf)
	if err != nil || !strings.Contains(string(b), `driftprobe_runs_total{status="complete"} 1`) || !strings.Contains(string(b), `driftprobe_requests_total{outcome="allowed",target="sim-a"}`) {
		t.Fatalf("textfile: %v\n%s", err, b)
	}
	if path != "/metrics/job/driftprobe/instance/"+app.DefaultPushInstance() || len(pushed) == 0 {
		t.Fatalf("pushgateway got %q (%d bytes)", path, len(pushed))
	}
}

// A metrics export that fails after a run completed neither fails the run
// (a CronJob would send and pay for the whole corpus again) nor hides its
// result: the JSON is printed, the failure logged, exit 0.
func TestFailedExportKeepsTheRunsResult(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close() // nothing listens there any more
	gw500 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }))
	defer gw500.Close()
	for _, gw := range []string{url, gw500.URL} {
		stdout, stderr, code := runProc(t, nil, "run", "--json", "--db", filepath.Join(t.TempDir(), "x.db"), "--pushgateway", gw)
		var out runOut
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || out.Status != "complete" || !strings.Contains(stderr, "metrics not exported") {
			t.Errorf("push to %s failing: exit %d, stdout %q, stderr %s", gw, code, stdout, stderr)
		}
	}
}

// An interrupted run (SIGTERM from a CronJob's deadline) still pushes its
// metrics: the aborted run's counts reach the Pushgateway.
func TestInterruptedRunStillPushes(t *testing.T) {
	pushed := make(chan []byte, 1)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case pushed <- b:
		default:
		}
	}))
	defer gw.Close()
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "x.db")
	os.WriteFile(cfg, []byte("targets:\n  - {name: s, provider: sim, model: m, concurrency: 2, sim: {error_status: 503, fail_first: 1, retry_after: 120}}\n"), 0o644)
	cmd := startRunning(t, db, nil, "run", "--config", cfg, "--db", db, "--pushgateway", gw.URL)
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	select {
	case b := <-pushed:
		if !strings.Contains(string(b), "driftprobe_runs_total") {
			t.Errorf("push without driftprobe_runs_total: %.300s", b)
		}
	default:
		t.Fatal("the interrupted run pushed nothing")
	}
}

// A Pushgateway that accepts and never answers gives up when the context
// (or PushTimeout) ends instead of holding a finished run open.
func TestPushGivesUp(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := app.ExportMetrics(ctx, prometheus.NewRegistry(), "", hang.URL); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("push to a hanging gateway: %v", err)
	}
}

// A Pushgateway's password (user:password@ in --pushgateway) is never
// repeated in the error that gets logged when the push fails.
func TestPushErrorMasksPassword(t *testing.T) {
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<!DOCTYPE HTML> not implemented", http.StatusNotImplemented)
	}))
	defer gw.Close()
	u := strings.Replace(gw.URL, "http://", "http://pguser:PGPASS%2Fqa123@", 1)
	err := app.ExportMetrics(context.Background(), prometheus.NewRegistry(), "", u)
	if err == nil || !strings.Contains(err.Error(), "501") {
		t.Fatalf("push to a failing gateway: %v", err)
	}
	if strings.Contains(err.Error(), "PGPASS") || strings.Contains(err.Error(), "pguser") || !strings.Contains(err.Error(), "xxxxx@") {
		t.Fatalf("credentials in the error: %v", err)
	}
	// A token as the user name, or in the query, is masked as well.
	for _, u := range []string{strings.Replace(gw.URL, "http://", "http://PGTOKENqa123456@", 1), gw.URL + "/?token=PGQTOKqa999"} {
		if err := app.ExportMetrics(context.Background(), prometheus.NewRegistry(), "", u); err == nil || strings.Contains(err.Error(), "PGTOKEN") || strings.Contains(err.Error(), "PGQTOK") {
			t.Fatalf("token in the error: %v", err)
		}
	}
	for _, bad := range []string{"ftp://pguser:PGPASS@host", "pguser:PGPASS@pushgw:9091", "http:/pguser:PGPASS@127.0.0.1:1"} {
		if got := checkPushgateway(bad); got == nil || strings.Contains(got.Error(), "PGPASS") {
			t.Fatalf("usage error for %q repeats the password: %v", bad, got)
		}
	}
}

// A run killed outright (SIGKILL, the OOM killer) cannot release its
// lease. The next run on the same machine sees that the holder has ended
// and takes the lease over at once instead of failing (exit 3) until the
// lease expires; the killed run is recorded aborted.
func TestKilledRunsLeaseTakenOver(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("holder liveness is read from /proc")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	db := filepath.Join(dir, "x.db")
	os.WriteFile(cfg, []byte("lock_ttl: 1h\ntargets:\n  - {name: s, provider: sim, model: m, concurrency: 2, sim: {error_status: 503, fail_first: 1, retry_after: 120}}\n"), 0o644)
	cmd := startRunning(t, db, nil, "run", "--config", cfg, "--db", db)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	ok := filepath.Join(dir, "ok.yaml")
	os.WriteFile(ok, []byte("lock_ttl: 1h\ntargets:\n  - {name: s, provider: sim, model: m}\n"), 0o644)
	_, stderr, code := runProc(t, nil, "run", "--config", ok, "--db", db)
	if code != 0 || !strings.Contains(stderr, "taking over the run lease of a process that ended") {
		t.Fatalf("run after the kill: exit %d: %s", code, stderr)
	}
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r, err := st.Run(context.Background(), 1); err != nil || r.Status != storage.RunAborted {
		t.Fatalf("killed run: %+v %v", r, err)
	}
	if r, err := st.Run(context.Background(), 2); err != nil || r.Status != storage.RunComplete {
		t.Fatalf("next run: %+v %v", r, err)
	}
}

// startRunning starts the CLI in a child process with args, its stderr
// to stderr (when not nil), and waits (bounded) until run 1 is recorded
// running in db.
func startRunning(t *testing.T, db string, stderr io.Writer, args ...string) *exec.Cmd {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DRIFTPROBE_ARGS="+string(a))
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, err := storage.Open(context.Background(), db); err == nil {
			r, err := st.Run(context.Background(), 1)
			st.Close()
			if err == nil && r.Status == storage.RunRunning {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("run never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SIGINT during a run: the process stops cleanly, the run is recorded
// aborted with what it stored, and the exit code says it did not complete.
func TestInterruptedRunIsAborted(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	db := filepath.Join(dir, "x.db")
	// Every first attempt gets a 503 asking to wait two minutes: the run sits in
	// its backoff until interrupted.
	os.WriteFile(cfg, []byte("targets:\n  - {name: s, provider: sim, model: m, concurrency: 2, sim: {error_status: 503, fail_first: 1, retry_after: 120}}\n"), 0o644)
	var errb bytes.Buffer
	cmd := startRunning(t, db, &errb, "run", "--config", cfg, "--db", db)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 3 || !strings.Contains(errb.String(), "aborted") {
		t.Fatalf("exit %v: %s", err, errb.String())
	}
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.Run(context.Background(), 1)
	if err != nil || r.Status != storage.RunAborted {
		t.Fatalf("run %+v %v", r, err)
	}
	if h, _ := st.LockHolder(context.Background()); h != nil {
		t.Fatalf("lease left behind: %+v", h)
	}
	// What the interrupted run stored is sound and verifies.
	if rep, err := st.Check(context.Background(), storage.CheckOptions{Full: true}); err != nil || !rep.OK {
		t.Fatalf("db check after the interrupt: %+v %v", rep, err)
	}
}

// Commands that read no configuration or database refuse --config and
// --db instead of ignoring them (demo --db x.db used to run and leave x.db
// uncreated); DRIFTPROBE_CONFIG in the environment is not a flag given.
func TestUnusedGlobalFlagsRefused(t *testing.T) {
	for _, args := range [][]string{{"demo", "--db", "x.db"}, {"version", "--config", "nope.yaml"}, {"providers", "-c", "a.yaml"}, {"sim", "--db", "x.db", "--help"}} {
		_, stderr, code := runIn(t, args...)
		if args[len(args)-1] == "--help" {
			// Help is always answered.
			if code != 0 {
				t.Errorf("%v: exit %d: %s", args, code, stderr)
			}
			continue
		}
		if code != 2 || !strings.Contains(stderr, "is not used by this command") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	// Their help does not offer the flags they refuse; other commands'
	// help still does (the flags are hidden only while one help prints).
	for _, cmd := range []string{"providers", "version", "demo", "sim", "providers"} {
		stdout, _, _ := runIn(t, cmd, "--help")
		_, flags, _ := strings.Cut(stdout, "Usage:")
		if strings.Contains(flags, "--db string") || strings.Contains(flags, "--config string") || !strings.Contains(flags, "--log-level") {
			t.Errorf("%s --help offers --db/--config it refuses (or lost --log-level):\n%s", cmd, stdout)
		}
	}
	if stdout, _, _ := runIn(t, "events", "--help"); !strings.Contains(stdout, "--db string") || !strings.Contains(stdout, "--config string") {
		t.Errorf("events --help lost --db/--config:\n%s", stdout)
	}
	t.Setenv("DRIFTPROBE_CONFIG", filepath.Join(t.TempDir(), "absent.yaml"))
	if stdout, stderr, code := runIn(t, "version"); code != 0 || !strings.Contains(stdout, "driftprobe") {
		t.Errorf("version with DRIFTPROBE_CONFIG set: exit %d: %s%s", code, stdout, stderr)
	}
}

// A command interrupted (SIGINT/SIGTERM cancel its context) before it
// could say more reports the interruption, not a bare "context canceled".
func TestInterruptedBeforeStartSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"run", "--db", filepath.Join(t.TempDir(), "d.db"), "--no-progress"}, &out, &errb)
	if code != 3 || !strings.Contains(errb.String(), "interrupted by a signal before it finished") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

// SIGHUP stops a command other than serve as SIGTERM does (exit 3, the
// run recorded aborted or never begun), instead of killing the process
// outright; serve reloads on it instead (TestServe*).
func TestHangupStopsRun(t *testing.T) {
	hup := make(chan os.Signal, 1)
	hup <- syscall.SIGHUP
	var out, errb bytes.Buffer
	db := filepath.Join(t.TempDir(), "d.db")
	code := runHUP(context.Background(), []string{"run", "--db", db, "--no-progress"}, &out, &errb, hup)
	if code != 3 {
		t.Fatalf("run after SIGHUP: exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(db); err == nil {
		st, err := storage.OpenReadOnly(context.Background(), db)
		if errors.Is(err, storage.ErrNotDriftprobe) {
			return // stopped before the schema was written: nothing ran
		}
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if id, _ := st.LatestRunID(context.Background()); id > 0 {
			if r, err := st.Run(context.Background(), id); err != nil || r.Status == storage.RunComplete {
				t.Errorf("run %d: %+v %v: completed despite the hangup", id, r, err)
			}
		}
	}
}
