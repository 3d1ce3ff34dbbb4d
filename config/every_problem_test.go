package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/problems"
	"github.com/driftprobe/driftprobe/internal/yamlx"
)

// The sim's categories, as its unknown-category message lists them.
const simCategories = "hate, harassment, self_harm, sexual, violence, illicit, weapons, privacy, jailbreak"

// Every problem of a config file is reported at once, one per line in
// file order (by column on one line): an unknown field, a value the
// decoder cannot read, an empty entry or a duplicate key hides none of
// the value problems (a user fixing one would otherwise rerun to meet the
// next). A value the decoder could not read is reported once, as
// written, not again as the zero value validation was given ("required",
// "0: must be at least 1"), and the list items after an unreadable or
// empty one keep their own indices.
func TestLoadReportsEveryProblem(t *testing.T) {
	for _, tt := range []struct {
		file string // under testdata, without "invalid-" and ".yaml"
		want []string
	}{
		// The QA report: the empty threshold was reported alone, and the
		// four others only once it was fixed.
		{"every-sim-qa", []string{
			`9: targets[0].sim.noise_band: 0: must be above 0 (omit it for the default 0.12; a tiny value such as 0.000001 is as good as 0)`,
			`11: targets[0].sim.policies[0].thresholds.violense: unknown category (want one of ` + simCategories + `)`,
			`11: targets[0].sim.policies[0].thresholds.hate: empty: give a threshold from 0 to 1 (above 1 never blocks), or remove the line`,
			`12: targets[0].sim.policies[1].from_run: 1: policies must be in increasing from_run order`,
			`13: targets[0].sim.policies[1].thresholds.violence: -0.1: must be >= 0 (above 1 never blocks)`,
		}},
		// Decoder problems (a wrong type, an unknown field, a duration
		// that does not parse, an unreadable list item) beside value
		// problems; a policy after an empty one is validated, under its
		// own index.
		{"every-decode", []string{
			`2: confirm_runs: wrong type: string "two" where an integer expected`,
			`3: concurency: unknown field`,
			`4: timeout: "soon": not a duration (e.g. 30s, 5m, 90d)`,
			`5: max_attempts: 0: must be at least 1 (omit it for the default 3)`,
			`6: schedule: "@every banana": bad interval: time: invalid duration "banana"`,
			`8: targets[0]: wrong type: string "just a ..." where a mapping expected`,
			`11: targets[1].model: wrong type: list where a string expected`,
			`12: targets[1].max_tokens: 0: must be at least 1 (omit it for the default 64)`,
			`13: targets[1].colour: unknown field`,
			`16: targets[1].sim.policies[0]: empty entry: a policy needs from_run and thresholds`,
			`17: targets[1].sim.policies[1].from_run: 0: run ids start at 1`,
			`18: targets[1].sim.policies[1].thresholds.gore: unknown category (want one of ` + simCategories + `)`,
			`19: targets[2].name: duplicate target name "b" (first at targets[1])`,
			`20: targets[2].provider: unknown provider "nope" (want one of anthropic, azure, bedrock, gemini, mistral, openai, openai_compatible, sim)`,
			`22: github.repo: "just-a-name": want owner/name`,
			`23: github.labels[1]: wrong type: list where a string expected`,
			`23: github.labels[2]: "a,b": a GitHub label is 1–50 characters, no comma`,
			`24: github.kinds[0]: "policy-change": want one of policy_change, model_change, score_drift, nondeterminism`,
		}},
		// What the decoder could not read makes no follow-on noise: an
		// unreadable timeout, lock_ttl or window_runs is not also "0",
		// an unreadable api_key_env not also "required", a target
		// holding a duplicate key nothing of what is in it, an unreadable
		// app_id not also missing, an unreadable step not also "0s".
		{"every-unread", []string{
			`1: timeout: wrong type: list where a duration (e.g. 30s, 5m) expected`,
			`2: lock_ttl: "10": not a duration (e.g. 30s, 5m, 90d)`,
			`4: detection.window_runs: wrong type: decimal number "2.5" where an integer expected (write a whole number, without a decimal point or exponent)`,
			`9: targets[0].api_key_env: wrong type: list where a string expected`,
			`11: targets[1].name: duplicate key (first at line 10)`,
			`13: targets[2]: empty entry: a target needs at least name, provider and model`,
			`17: targets[3].concurrency: 0: must be at least 1 (omit it for the default 4)`,
			`20: github.app_id: wrong type: string "x" where an integer expected`,
			`26: attribution.step: "soon": not a duration (e.g. 30s, 5m, 90d)`,
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			t.Setenv(setKeyVar, "test-key")
			file := "testdata/invalid-" + tt.file + ".yaml"
			_, err := Load(file, true)
			var l yamlx.List
			if !errors.As(err, &l) || !yamlx.IsInputError(err) {
				t.Fatalf("Load = %T %v, want a yamlx.List", err, err)
			}
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = file + ":" + w
			}
			if got := err.Error(); got != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}

// Parse reports the decoder's problems and the empty entries together,
// in file order: neither hides the other.
func TestParseReportsEveryDecodeProblem(t *testing.T) {
	const src = "targets:\n  - ~\n  - {name: a, provider: sim, model: m, bogus: 1}\n"
	_, err := Parse("p.yaml", []byte(src))
	want := "p.yaml:2: targets[0]: empty entry: a target needs at least name, provider and model\n" +
		"p.yaml:3: targets[1].bogus: unknown field"
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

// An unset key variable is reported with the file's other problems,
// an unknown field included, when keys are needed; without keys the
// unknown field alone.
func TestLoadEveryProblemWithMissingKey(t *testing.T) {
	unsetenv(t, unsetKeyVar)
	file := filepath.Join(t.TempDir(), "k.yaml")
	writeConfig(t, file, "concurency: 3\ntargets:\n  - {name: a, provider: openai, model: gpt-4o, api_key_env: "+unsetKeyVar+"}\n")
	_, err := Load(file, true)
	want := file + ":1: concurency: unknown field\n" +
		file + ":3: targets[0].api_key_env: environment variable " + unsetKeyVar + " is not set"
	if err == nil || err.Error() != want {
		t.Errorf("needKeys: got\n%v\nwant\n%s", err, want)
	}
	if _, err := Load(file, false); err == nil || err.Error() != file+":1: concurency: unknown field" {
		t.Errorf("without keys: %v", err)
	}
}

// A file with more problems than problems.Max lists that many and counts
// the rest.
func TestLoadCapsProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("targets:\n  - {name: a, provider: sim, model: m}\n")
	for i := range problems.Max + 5 {
		b.WriteString("bogus" + strings.Repeat("x", i) + ": 1\n")
	}
	file := filepath.Join(t.TempDir(), "many.yaml")
	writeConfig(t, file, b.String())
	_, err := Load(file, false)
	var l yamlx.List
	if !errors.As(err, &l) || len(l) != problems.Max+1 {
		t.Fatalf("got %d problems, want %d", len(l), problems.Max+1)
	}
	if got, want := l[problems.Max].Error(), file+": and 5 more problems, from line 103 on"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

// writeConfig writes src to file.
func writeConfig(t *testing.T, file, src string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A check reading other fields than the one it reports on is left out
// when the decoder did not read one of them: every target disabled, when
// a target's disabled (or the whole target) could not be read; Bedrock's
// AWS variables, when an api_key_env is written but could not be read.
func TestLoadUnreadNoFollowOn(t *testing.T) {
	unsetenv(t, awsKeyIDVar)
	unsetenv(t, awsSecretVar)
	dir := t.TempDir()
	for _, tt := range []struct{ src, want string }{
		{"targets:\n  - {name: a, provider: sim, model: m, disabled: yes}\n",
			`2: targets[0].disabled: wrong type: string "yes" where a boolean expected`},
		{"targets:\n  - {name: a, provider: sim, model: m, disabled: true}\n  - just a name\n",
			`3: targets[1]: wrong type: string "just a ..." where a mapping expected`},
		{"targets:\n  - {name: a, provider: bedrock, model: m, options: {region: us-east-1}, api_key_env: [K]}\n",
			`2: targets[0].api_key_env: wrong type: list where a string expected`},
	} {
		file := filepath.Join(dir, "u.yaml")
		writeConfig(t, file, tt.src)
		_, err := Load(file, true)
		if err == nil || !strings.HasPrefix(err.Error(), file+":"+tt.want) || strings.Count(err.Error(), "\n") != 0 {
			t.Errorf("%q: got\n%v\nwant one problem, %s", tt.src, err, tt.want)
		}
	}
}
