package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/yamlx"
)

// The problems of corpus/testdata/bad-every-problem, after "FILE:".
var everyCorpusProblem = []string{
	`10: probes[0].bogus: unknown field`,
	`11: probes[1].id: duplicate id "p-one" (first at probes[0])`,
	`13: probes[1].tags[1]: unknown category "gore"`,
	`19: probes[2].expect: "maybe": want allow, block or either`,
	`25: probes[3].role: "nonsense": want benign_control, borderline or positive_control`,
	`26: probes[4].id: "has space": use letters, digits`,
}

// corpus lint, lint --json and a run on a corpus directory report every
// problem of its corpus.yaml at once (exit 2), not only its unknown field.
func TestCorpusEveryProblemReported(t *testing.T) {
	cdir := filepath.Join("..", "..", "corpus", "testdata", "bad-every-problem")
	file := filepath.Join(cdir, "corpus.yaml")
	has := func(what, out string) {
		t.Helper()
		for _, p := range everyCorpusProblem {
			if !strings.Contains(out, file+":"+p) {
				t.Errorf("%s: %q missing from:\n%s", what, file+":"+p, out)
			}
		}
	}
	_, stderr, code := runIn(t, "corpus", "lint", cdir)
	if code != 2 {
		t.Errorf("corpus lint: exit %d, want 2", code)
	}
	has("corpus lint", stderr)

	stdout, _, code := runIn(t, "corpus", "lint", "--json", cdir)
	var got struct {
		OK     bool     `json:"ok"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 2 || got.OK || len(got.Errors) != len(everyCorpusProblem) {
		t.Errorf("corpus lint --json: exit %d, %d errors (want %d), %v:\n%s", code, len(got.Errors), len(everyCorpusProblem), err, stdout)
	}
	has("corpus lint --json", strings.Join(got.Errors, "\n"))

	dir := t.TempDir()
	abs, err := filepath.Abs(cdir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, dir, "c.yaml", "corpus: "+abs+"\ntargets:\n  - {name: a, provider: sim, model: m}\n")
	db := filepath.Join(dir, "x.db")
	_, stderr, code = runIn(t, "run", "--no-progress", "--config", cfg, "--db", db)
	if code != 2 {
		t.Errorf("run: exit %d, want 2", code)
	}
	file = filepath.Join(abs, "corpus.yaml")
	has("run", stderr)
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run on a refused corpus created the database: %v", err)
	}
}

// --sim-config reports every problem of its file at once: an unknown
// field beside an out-of-range value (in the order written, also on one
// line), a value the decoder cannot read beside the others, and a
// policy after an unreadable or empty one under its own index.
func TestSimConfigEveryProblem(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, src string
		want      []string // after "FILE:"
	}{
		{"wrapped.yaml", "sim: {noise: 2, bogus: 1}\n", []string{
			"1: sim.noise: 2: must be between 0 and 1",
			"1: sim.bogus: unknown field",
		}},
		{"bare.yaml", "noise: 2\nbogus: 1\nfail_first: -1\n", []string{
			"1: noise: 2: must be between 0 and 1",
			"2: bogus: unknown field",
			"3: fail_first: -1: must be at least 0",
		}},
		{"policies.yaml", "policies:\n  - just a string\n  - from_run: 0\n    thresholds: {violence: 0.2, gore: 0.1}\n    colour: red\nseed: 010\nerror_rate: [1]\n", []string{
			`2: policies[0]: wrong type: string "just a ..." where a mapping expected`,
			"3: policies[1].from_run: 0: run ids start at 1",
			"4: policies[1].thresholds.gore: unknown category (want one of hate, harassment, self_harm, sexual, violence, illicit, weapons, privacy, jailbreak)",
			"5: policies[1].colour: unknown field",
			`6: seed: "010" has a leading zero: YAML 1.1 reads it as octal 8, YAML 1.2 as 10 (write 10, or 0o10 for octal)`,
			"7: error_rate: wrong type: list where a number expected",
		}},
		// An empty policy hides neither the policies after it (under
		// their own indices) nor a decoder problem.
		{"empty-policy.yaml", "policies:\n  - ~\n  - from_run: 0\n    thresholds: {hate: 0.5}\n    colour: red\n", []string{
			"2: policies[0]: empty entry: a policy needs from_run and thresholds",
			"3: policies[1].from_run: 0: run ids start at 1",
			"5: policies[1].colour: unknown field",
		}},
		{"empty-policy-only.yaml", "policies:\n  - ~\n  - from_run: 0\n    thresholds: {hate: 0.5}\n", []string{
			"2: policies[0]: empty entry: a policy needs from_run and thresholds",
			"3: policies[1].from_run: 0: run ids start at 1",
		}},
	} {
		f := writeFile(t, dir, tt.name, tt.src)
		_, err := loadSimConfig(f)
		var l yamlx.List
		want := make([]string, len(tt.want))
		for i, w := range tt.want {
			want[i] = f + ":" + w
		}
		if !errors.As(err, &l) || err.Error() != strings.Join(want, "\n") {
			t.Errorf("%s: got\n%v\nwant\n%s", tt.name, err, strings.Join(want, "\n"))
		}
	}
	// Through the command: exit 2 before listening, both problems said.
	bad := writeFile(t, dir, "bad.yaml", "sim: {noise: 2, bogus: 1}\n")
	out := expectExit(t, 2, "bad.yaml:1: sim.noise: 2: must be between 0 and 1", "sim", "--listen", "127.0.0.1:0", "--sim-config", bad)
	if !strings.Contains(out, "bad.yaml:1: sim.bogus: unknown field") {
		t.Errorf("sim --sim-config: the unknown field is not reported:\n%s", out)
	}
}

// config check, run and plan report every problem of a config file at
// once, in file order (exit 2): the QA file's empty threshold hides none
// of its four other problems, and run creates no database for it.
func TestConfigEveryProblem(t *testing.T) {
	file := filepath.Join("..", "..", "config", "testdata", "invalid-every-sim-qa.yaml")
	lines := []string{
		file + ":9: targets[0].sim.noise_band: 0: must be above 0",
		file + ":11: targets[0].sim.policies[0].thresholds.violense: unknown category",
		file + ":11: targets[0].sim.policies[0].thresholds.hate: empty: give a threshold",
		file + ":12: targets[0].sim.policies[1].from_run: 1: policies must be in increasing from_run order",
		file + ":13: targets[0].sim.policies[1].thresholds.violence: -0.1: must be >= 0",
	}
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = regexp.QuoteMeta(l)
	}
	// Each a line of its own, in this order.
	re := regexp.MustCompile(`(?m)` + strings.Join(quoted, `.*\n`))
	want := strings.Join(lines, "\n")
	db := filepath.Join(t.TempDir(), "x.db")
	for _, args := range [][]string{
		{"config", "check", "--config", file},
		{"run", "--no-progress", "--config", file, "--db", db},
		{"plan", "--config", file, "--db", db},
	} {
		_, stderr, code := runIn(t, args...)
		if code != 2 || !re.MatchString(stderr) {
			t.Errorf("%v: exit %d (want 2), stderr:\n%s\nwant, in order:\n%s", args, code, stderr, want)
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run on a refused config created the database: %v", err)
	}
}
