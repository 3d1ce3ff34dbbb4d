package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// corpus lint|lock|list on the config's corpus locate a problem with its
// directory at the config's corpus line (FILE:LINE:), as run, plan and
// config check do (QA 4); a DIR given on the command line is no config
// line.
func TestCorpusCommandsLocateConfigCorpus(t *testing.T) {
	dir := t.TempDir()
	// Relative: read from the working directory, where it does not exist.
	missing := writeFile(t, dir, "missing.yaml", "targets:\n  - {name: sim-a, provider: sim, model: sim-large}\ncorpus: no-such-corpus-dir-qa4\n")
	want := missing + ":3: corpus: no-such-corpus-dir-qa4 does not exist"
	expectExit(t, 2, want, "config", "check", "--config", missing)
	for _, sub := range []string{"lint", "lock", "list"} {
		expectExit(t, 2, want, "corpus", sub, "--config", missing)
		expectExit(t, 2, want, "corpus", sub, "-c", missing, "--json")
	}
	// lint --json carries the located error in its document too.
	stdout, _, code := runIn(t, "corpus", "lint", "--config", missing, "--json")
	var doc struct {
		OK     bool     `json:"ok"`
		Errors []string `json:"errors"`
	}
	if code != 2 || json.Unmarshal([]byte(stdout), &doc) != nil || doc.OK || len(doc.Errors) == 0 || !strings.HasPrefix(doc.Errors[0], want) {
		t.Errorf("corpus lint --json: exit %d: %s", code, stdout)
	}
	// A file where the corpus directory should be.
	notDir := writeFile(t, dir, "notdir.yaml", "corpus: "+missing+"\ntargets:\n  - {name: sim-a, provider: sim, model: sim-large}\n")
	expectExit(t, 2, notDir+":1: corpus: "+missing+" is not a directory", "corpus", "list", "--config", notDir)
	// DIR given: no config line to name.
	out := expectExit(t, 2, "corpus: no-such-corpus-dir-qa4 does not exist", "corpus", "list", "no-such-corpus-dir-qa4", "--config", missing)
	if strings.Contains(out, missing+":") {
		t.Errorf("a DIR argument is located in the config: %s", out)
	}
}

// help with an unknown topic and completion for an unknown shell are usage
// errors (exit 2), as an unknown subcommand of db or config is, instead of
// printing help and exiting 0 (QA 6); the known ones still work.
func TestHelpAndCompletionRefuseUnknown(t *testing.T) {
	expectExit(t, 2, `driftprobe help: unknown help topic "bogus"`, "help", "bogus")
	expectExit(t, 2, `driftprobe help: unknown help topic "evnts"; did you mean events?`, "help", "evnts")
	expectExit(t, 2, `driftprobe help: unknown help topic "db bogus"`, "help", "db", "bogus")
	expectExit(t, 2, `driftprobe completion: unknown shell "tcsh": want bash, fish, powershell, zsh`, "completion", "tcsh")
	expectExit(t, 0, "Usage:", "help")
	expectExit(t, 0, "driftprobe db backup FILE", "help", "db", "backup")
	expectExit(t, 0, "driftprobe events [flags]", "help", "events")
	expectExit(t, 0, "Available Commands:", "completion")
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		stdout, stderr, code := runIn(t, "completion", sh)
		if code != 0 || !strings.Contains(stdout, "driftprobe") || stderr != "" {
			t.Errorf("completion %s: exit %d, %d bytes on stdout, stderr %q", sh, code, len(stdout), stderr)
		}
	}
}

// plan --probes --json always carries render_error, "" for a probe that
// renders (QA 7): README documents it as a field.
func TestPlanProbesRenderErrorAlwaysPresent(t *testing.T) {
	stdout, stderr, code := runIn(t, "plan", "--probes", "--json", "--no-keys")
	var out struct {
		Targets []struct {
			ProbeRequests []map[string]any `json:"probe_requests"`
		} `json:"targets"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Targets) == 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	for _, tg := range out.Targets {
		if len(tg.ProbeRequests) == 0 {
			t.Fatalf("no probe_requests: %s", stdout)
		}
		for _, p := range tg.ProbeRequests {
			if v, ok := p["render_error"]; !ok || v != "" {
				t.Fatalf("probe %v: render_error %v (present %v), want \"\"", p["probe_id"], v, ok)
			}
		}
	}
}

// An empty --production file (or one with only blank lines and comments)
// is reported like a Prometheus query matching nothing (QA 8): 0 series
// and a warning, exit 0; only a --fail-on gate over it exits 2.
func TestAttributeEmptyProductionFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "a.db")
	cfg := writeFile(t, dir, "c.yaml", "targets:\n  - {name: sim-a, provider: sim, model: sim-large}\n")
	mustRun(t, 1, "--config", cfg, "--db", db)
	for _, c := range []struct{ name, content string }{
		{"empty.jsonl", ""},
		{"comments.jsonl", "\xef\xbb\xbf# production counts\n\n   \r\n  # none yet\n"},
	} {
		prod := writeFile(t, dir, c.name, c.content)
		warn := prod + ": no production data (empty, or every line blank or a # comment): nothing to attribute"
		base := []string{"attribute", "--config", cfg, "--db", db, "--production", prod}
		stdout, stderr, code := runIn(t, append(base, "--json")...)
		if code != 0 {
			t.Fatalf("%s --json: exit %d: %s", c.name, code, stderr)
		}
		r := attrJSON(t, stdout)
		if r.Series != 0 || len(r.Changes) != 0 || len(r.Warnings) != 1 || r.Warnings[0] != warn {
			t.Errorf("%s --json: %+v", c.name, r)
		}
		if !strings.Contains(stderr, "driftprobe: warning: "+warn) {
			t.Errorf("%s --json: stderr %q", c.name, stderr)
		}
		stdout, stderr, code = runIn(t, base...)
		if code != 0 || !strings.Contains(stdout, "attribute · 0 series · 0 change(s)") || !strings.Contains(stderr, warn) {
			t.Errorf("%s table: exit %d\n%s\n%s", c.name, code, stdout, stderr)
		}
		for _, gate := range []string{"provider", "traffic", "any-change"} {
			stdout, stderr, code = runIn(t, append(base, "--json", "--fail-on", gate)...)
			if code != 2 || !strings.Contains(stderr, "attribute: --fail-on "+gate+": no series matched, so nothing was checked") || !strings.Contains(stderr, warn) {
				t.Errorf("%s --fail-on %s: exit %d\n%s", c.name, gate, code, stderr)
			}
			if r := attrJSON(t, stdout); r.Series != 0 {
				t.Errorf("%s --fail-on %s: %s", c.name, gate, stdout)
			}
		}
	}
	// Anything else than white space and comments keeps its FILE:LINE error.
	for _, c := range []struct{ content, want string }{
		{"# a comment\n{\n", ":2: "},
		{"\xef\xbb\n", ":1: "},
	} {
		prod := writeFile(t, dir, "bad.jsonl", c.content)
		expectExit(t, 2, prod+c.want, "attribute", "--config", cfg, "--db", db, "--production", prod, "--json")
	}
}

// An explicit run id 0 is refused (QA 9), as a negative one is: runs are
// numbered from 1, and the flags' 0 default would otherwise silently read
// the default runs. Left out, the defaults still apply.
func TestRunIDZeroRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	cfg := writeFile(t, dir, "c.yaml", "targets:\n  - {name: sim-a, provider: sim, model: sim-large}\n")
	mustRun(t, 2, "--config", cfg, "--db", db)
	base := []string{"--config", cfg, "--db", db}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"diff", "--target", "sim-a", "--from", "0"}, "diff: --from 0: want a run id (runs are numbered from 1; omit it for the run before --to)"},
		{[]string{"diff", "--target", "sim-a", "--from=0", "--to", "2"}, "diff: --from 0: want a run id (runs are numbered from 1"},
		{[]string{"diff", "--target", "sim-a", "--to", "0"}, "diff: --to 0: want a run id (runs are numbered from 1; omit it for the latest run of the target)"},
		{[]string{"diff", "--target", "sim-a", "--from", "-1", "--to", "2"}, "diff: --from -1: want a run id (runs are numbered from 1"},
		{[]string{"replay", "--run", "0"}, "replay: --run 0: want a run id (runs are numbered from 1; omit it for the latest finished run)"},
		{[]string{"replay", "--run", "-2"}, "replay: --run -2: want a run id (runs are numbered from 1"},
		{[]string{"events", "--since", "-1"}, "events: --since -1: want a run id (runs are numbered from 1"},
		{[]string{"db", "check", "--from-run", "0"}, "db check: --from-run 0: want a run id (runs are numbered from 1; omit it to check every run)"},
		{[]string{"db", "check", "--from-run", "-1"}, "db check: --from-run -1: want a run id (runs are numbered from 1"},
	} {
		out := expectExit(t, 2, c.want, append(c.args, base...)...)
		if strings.Contains(out, "run 1 → run 2") || strings.Contains(out, "replayed") {
			t.Errorf("%v ran anyway: %s", c.args, out)
		}
	}
	expectExit(t, 0, "sim-a: run 1 → run 2", append([]string{"diff", "--target", "sim-a"}, base...)...)
	expectExit(t, 0, "sim-a: run 1 → run 2", append([]string{"diff", "--target", "sim-a", "--from", "1", "--to", "2"}, base...)...)
	expectExit(t, 0, "", append([]string{"replay"}, base...)...)
	expectExit(t, 0, "", append([]string{"replay", "--run", "1"}, base...)...)
	expectExit(t, 0, "no events", append([]string{"events"}, base...)...)
	expectExit(t, 0, "no events", append([]string{"events", "--since", "1"}, base...)...)
	expectExit(t, 0, "no events", append([]string{"events", "--since", "0"}, base...)...) // every event: a poller's first query
	expectExit(t, 0, "of runs 2 and later", append([]string{"db", "check", "--from-run", "2"}, base...)...)
	// Past the latest run (an incremental check with no new run since):
	// nothing to read back, said so, not an error.
	expectExit(t, 0, "no run 3 or later yet (the latest is run 2)", append([]string{"db", "check", "--from-run", "3"}, base...)...)
	// Run 3 exists but stored nothing (killed at once): no "not yet".
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.BeginRun(context.Background(), storage.Run{CorpusName: "default", CorpusVersion: "x"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if out := expectExit(t, 0, "0 observation(s) of runs 3 and later", append([]string{"db", "check", "--from-run", "3"}, base...)...); strings.Contains(out, "yet") {
		t.Errorf("db check --from-run 3 with run 3 stored empty: %s", out)
	}
}

// compare --run --json whose run was degraded for a target prints a JSON
// document on stdout, the one run --json prints for a failed run
// (run_id, status, error), and still exits 3.
func TestCompareRunJSONDegradedPrintsDocument(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	failing := writeFile(t, dir, "bad.yaml", "targets:\n  - {name: cur, provider: sim, model: sim-large}\n  - {name: flaky, provider: sim, model: sim-large, max_attempts: 1, sim: {error_rate: 1, error_status: 503}}\n")
	for i, format := range [][]string{{"--json"}, {"--format", "json"}} {
		args := append([]string{"compare", "--config", failing, "--db", db, "--from", "cur", "--to", "flaky", "--run"}, format...)
		stdout, stderr, code := runIn(t, args...)
		var doc map[string]any
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("%v: exit %d, stdout is no JSON document (%v): %q\n%s", format, code, err, stdout, stderr)
		}
		want := float64(i + 1)
		msg, _ := doc["error"].(string)
		if code != 3 || len(doc) != 3 || doc["run_id"] != want || doc["status"] != "partial" ||
			!strings.HasPrefix(msg, fmt.Sprintf("compare --run: target flaky: run %d was degraded for it", i+1)) {
			t.Errorf("%v: exit %d (want 3): %v", format, code, doc)
		}
		if !strings.Contains(stderr, msg) {
			t.Errorf("%v: stderr lacks the error: %s", format, stderr)
		}
	}
}
