package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes/sim"
	"github.com/driftprobe/driftprobe/storage"
)

// `replay` re-reads stored answers offline: a clean run reads as recorded
// (exit 0); a tampered verdict and a tampered body hash are each reported
// (exit 1).
func TestReplay(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	mustRun(t, 1, "--db", db)
	stdout, stderr, code := runIn(t, "replay", "--json", "--db", db)
	if code != 0 {
		t.Fatalf("replay of an untouched run: exit %d: %s\n%s", code, stderr, stdout)
	}
	var rep app.ReplayReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.RunID != 1 || rep.Replayed != 62 || rep.Same != 62 || len(rep.Diffs) != 0 {
		t.Fatalf("report: %+v", rep)
	}

	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var blocked, other int64
	if err := st.SQL().QueryRowContext(ctx, `SELECT id FROM observations WHERE class = 'blocked_output' ORDER BY id LIMIT 1`).Scan(&blocked); err != nil {
		t.Fatal(err)
	}
	if err := st.SQL().QueryRowContext(ctx, `SELECT id FROM observations WHERE class = 'allowed' ORDER BY id LIMIT 1`).Scan(&other); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().ExecContext(ctx, `UPDATE observations SET class = 'allowed', categories = '' WHERE id = ?`, blocked); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().ExecContext(ctx, `UPDATE observations SET body_sha256 = 'deadbeef' WHERE id = ?`, other); err != nil {
		t.Fatal(err)
	}
	st.Close()

	stdout, _, code = runIn(t, "replay", "--json", "--db", db, "--run", "1")
	if code != 1 {
		t.Fatalf("replay of a tampered run: exit %d, want 1\n%s", code, stdout)
	}
	rep = app.ReplayReport{}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Diffs) != 2 || rep.Same != 60 {
		t.Fatalf("diffs: %+v", rep)
	}
	for _, d := range rep.Diffs {
		switch d.ObservationID {
		case blocked:
			if d.Stored.Verdict != "allowed" || d.Replayed.Verdict != "blocked_output" || !d.BodyIntact {
				t.Errorf("tampered verdict: %+v", d)
			}
		case other:
			if d.BodyIntact || d.Stored.Verdict != d.Replayed.Verdict {
				t.Errorf("tampered hash: %+v", d)
			}
		default:
			t.Errorf("unexpected diff %+v", d)
		}
	}
	text, _, _ := runIn(t, "replay", "--db", db, "--target", "sim-a")
	if !strings.Contains(text, "2 differ") || !strings.Contains(text, "blocked_output") {
		t.Errorf("text report:\n%s", text)
	}
	if _, stderr, code := runIn(t, "replay", "--db", db, "--target", "nope"); code != 2 || !strings.Contains(stderr, `no target "nope" in the configuration or the database (run 1 has sim-a)`) {
		t.Errorf("unknown target: exit %d, want 2 naming the run's targets: %s", code, stderr)
	}
}

// A small max_body_bytes caps the evidence stored, never the verdict: the
// run reads the same verdicts as with the default, stores the first bytes
// (marked truncated, hashes of what is stored, so db check verifies), and
// replay counts those observations instead of reporting them.
func TestSmallMaxBodyKeepsVerdicts(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	os.WriteFile(small, []byte("max_body_bytes: 256\ntargets:\n  - {name: sim-a, provider: sim, model: sim-large}\n"), 0o644)
	verdicts := func(args ...string) map[string]int {
		t.Helper()
		stdout, stderr, code := runIn(t, append([]string{"run", "--json", "--no-progress"}, args...)...)
		var out struct {
			Status  string `json:"status"`
			Targets []struct {
				Verdicts map[string]int `json:"verdicts"`
			} `json:"targets"`
		}
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || out.Status != "complete" || len(out.Targets) != 1 {
			t.Fatalf("run %v: exit %d %s\n%s", args, code, stderr, stdout)
		}
		return out.Targets[0].Verdicts
	}
	smallDB := filepath.Join(dir, "small.db")
	got, want := verdicts("--config", small, "--db", smallDB), verdicts("--db", filepath.Join(dir, "default.db"))
	if !reflect.DeepEqual(got, want) || got["transient"] != 0 {
		t.Fatalf("verdicts with max_body_bytes 256: %v, with the default: %v", got, want)
	}
	ctx := context.Background()
	st, err := storage.Open(ctx, smallDB)
	if err != nil {
		t.Fatal(err)
	}
	var truncated, longest int
	if err := st.SQL().QueryRowContext(ctx, `SELECT COUNT(*), MAX(LENGTH(body)) FROM observations WHERE body_truncated = 1`).Scan(&truncated, &longest); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if truncated == 0 || longest > 256 {
		t.Fatalf("%d bodies stored truncated, longest %d bytes: want some, at most 256", truncated, longest)
	}
	if _, stderr, code := runIn(t, "db", "check", "--db", smallDB); code != 0 {
		t.Errorf("db check: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := runIn(t, "replay", "--json", "--config", small, "--db", smallDB)
	var rep app.ReplayReport
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Truncated != truncated || rep.Replayed+rep.Truncated+rep.Skipped != 62 || len(rep.Diffs) != 0 {
		t.Errorf("replay: exit %d %s\n%s", code, stderr, stdout)
	}
}

// A damaged stored body is a finding replay lists (exit 1), naming the
// observation, while it replays the rest; it does not abort the replay.
func TestReplayDamagedBody(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	mustRun(t, 1, "--db", db)
	id := corruptS2Body(t, db)
	stdout, stderr, code := runIn(t, "replay", "--json", "--db", db)
	var rep app.ReplayReport
	if code != 1 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Replayed != 62 || rep.Same != 61 || len(rep.Diffs) != 1 {
		t.Fatalf("replay: exit %d %s\n%s", code, stderr, stdout)
	}
	// Only the response body is damaged: the stored request still hashes
	// to its fingerprint, and replay says so (db check names only the body).
	if d := rep.Diffs[0]; d.ObservationID != id || d.BodyIntact || !d.RequestIntact || !strings.Contains(d.Unreadable, "stored body unreadable") {
		t.Errorf("diff: %+v", d)
	}
	stdout, _, _ = runIn(t, "replay", "--db", db)
	if !strings.Contains(stdout, "unreadable: response body: stored body unreadable") {
		t.Errorf("text:\n%s", stdout)
	}
	if row := replayTextRow(stdout, id); !strings.HasSuffix(row, "  yes             no") {
		t.Errorf("text row of observation %d: %q, want REQUEST INTACT yes, BODY INTACT no", id, row)
	}
}

// replayTextRow returns the row of observation id in replay's text table.
func replayTextRow(stdout string, id int64) string {
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == strconv.FormatInt(id, 10) {
			return strings.TrimRight(l, " ")
		}
	}
	return ""
}

// A damaged stored request is told apart from the response body: the
// response still hashes to body_sha256 (BodyIntact), the request does
// not read back (RequestIntact false), and nothing is re-classified from
// a request that cannot be read.
func TestReplayDamagedRequestBody(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	mustRun(t, 1, "--db", db)
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := st.SQL().QueryRowContext(ctx, `SELECT id FROM observations WHERE http_status != 0 ORDER BY id LIMIT 1`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// An S2 stream header followed by bytes that are no S2 stream.
	if _, err := st.SQL().ExecContext(ctx, `UPDATE observations SET request_body = X'FF06000053327354774F' || X'0102030405060708' WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	st.Close()
	stdout, stderr, code := runIn(t, "replay", "--json", "--db", db)
	var rep app.ReplayReport
	if code != 1 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Replayed != 62 || rep.Same != 61 || len(rep.Diffs) != 1 {
		t.Fatalf("replay: exit %d %s\n%s", code, stderr, stdout)
	}
	if d := rep.Diffs[0]; d.ObservationID != id || !d.BodyIntact || d.RequestIntact || !strings.Contains(d.Unreadable, "request body: stored body unreadable") || d.Replayed.Verdict != "" {
		t.Errorf("diff: %+v", d)
	}
	stdout, _, _ = runIn(t, "replay", "--db", db)
	if row := replayTextRow(stdout, id); !strings.HasSuffix(row, "  no              yes") {
		t.Errorf("text row of observation %d: %q, want REQUEST INTACT no, BODY INTACT yes\n%s", id, row, stdout)
	}
}

// A replay that can replay nothing (its targets are not in the config)
// is a usage error, never a pass.
func TestReplayUnconfiguredTargets(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	mustRun(t, 1, "--db", db)
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte("targets:\n  - {name: sim-z, provider: sim, model: m}\n"), 0o644)
	for _, args := range [][]string{{}, {"--target", "sim-a"}} {
		_, stderr, code := runIn(t, append([]string{"replay", "--config", other, "--db", db, "--run", "1"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "nothing replayed: run 1's target(s) sim-a are not in the config") {
			t.Errorf("replay %v with another config: exit %d: %s", args, code, stderr)
		}
	}
}

// replay sends nothing, so it needs no provider key: a run made with a key
// replays on a machine without it.
func TestReplayNeedsNoKeys(t *testing.T) {
	up := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer up.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	db := filepath.Join(dir, "r.db")
	os.WriteFile(cfg, []byte("targets:\n  - {name: c, provider: openai_compatible, model: m, api_key_env: DRIFTPROBE_TEST_REPLAY_KEY, base_url: \""+up.URL+"/v1\"}\n"), 0o644)
	t.Setenv("DRIFTPROBE_TEST_REPLAY_KEY", "sk-replay-test")
	if _, stderr, code := runIn(t, "run", "--config", cfg, "--db", db); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	os.Unsetenv("DRIFTPROBE_TEST_REPLAY_KEY")
	stdout, stderr, code := runIn(t, "replay", "--json", "--config", cfg, "--db", db)
	var rep app.ReplayReport
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Replayed != 62 || rep.Same != 62 {
		t.Fatalf("replay without the key: exit %d: %s\n%s", code, stderr, stdout)
	}
}

// Right after a crash the latest run is still marked running (until the
// next run marks it aborted): replay without --run reads the latest
// finished run instead of refusing (exit 2).
func TestReplayDefaultsToLatestFinishedRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	mustRun(t, 1, "--db", db)
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.BeginRun(context.Background(), storage.Run{CorpusName: "c", CorpusVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	stdout, stderr, code := runIn(t, "replay", "--json", "--db", db)
	if code != 0 || !strings.Contains(stdout, `"run_id": 1`) {
		t.Errorf("replay after a crash: exit %d: %s%s", code, stdout, stderr)
	}
	if _, stderr, code := runIn(t, "replay", "--db", db, "--run", "2"); code != 2 || !strings.Contains(stderr, "still running") {
		t.Errorf("replay --run of the running run: exit %d: %s", code, stderr)
	}
}
