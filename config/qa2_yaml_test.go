package config

// QA round 2: black-box checks of the config contract (README
// "Configuration reference": strict decoding, FILE:LINE: FIELD: problem,
// numbers outside their bounds refused).

import (
	"errors"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/internal/yamlx"
)

func qa2Load(t *testing.T, src string) error {
	t.Helper()
	c, err := Parse("q.yaml", []byte(src))
	if err != nil {
		return err
	}
	return c.Validate(false)
}

// README: "numbers outside their bounds ... are reported as FILE:LINE:
// FIELD: problem with exit code 2". sim.noise and sim.error_rate are
// probabilities in [0, 1]; NaN is not in that range. Every other float
// field (thresholds, score_shift, noise_band, input_margin, temperature,
// price, detection.*, attribution.*) refuses .nan; these two accept it
// (probes/sim/sim.go:70-75 test `x < 0 || x > 1`, false for NaN), and the
// simulator then silently behaves as if they were 0 (no noise, no
// scripted failures).
func TestQA2SimProbabilityNaNRefused(t *testing.T) {
	for _, field := range []string{"noise: .nan", "error_status: 503, error_rate: .nan"} {
		src := "targets:\n  - {name: a, provider: sim, model: m, sim: {" + field + "}}\n"
		err := qa2Load(t, src)
		if err == nil {
			t.Errorf("sim {%s}: accepted, want q.yaml:2: targets[0].sim.%s: ... must be between 0 and 1", field, strings.SplitN(strings.TrimPrefix(field, "error_status: 503, "), ":", 2)[0])
		}
	}
}

// YAML 1.2 (and the README, which refuses YAML 1.1's yes/no/on/off rather
// than reading them) reads `010` as ten. The decoder reads a leading-zero
// integer as YAML 1.1 octal: `seed: 010` becomes 8 and `max_tokens: 0100`
// becomes 64, silently, in fields that are part of the fingerprinted
// request bytes. It should be either 10 or refused, never 8.
func TestQA2LeadingZeroIntegerNotOctal(t *testing.T) {
	c, err := Parse("q.yaml", []byte("confirm_runs: 010\ntargets:\n  - {name: a, provider: sim, model: m, seed: 010, max_tokens: 0100}\n"))
	if err != nil {
		return // refused: acceptable
	}
	if err := c.Validate(false); err != nil {
		return // refused: acceptable
	}
	if c.ConfirmRuns == 8 {
		t.Errorf("confirm_runs: 010 read as 8 (octal), want 10 or a refusal")
	}
	tg := c.Targets[0]
	if tg.Seed != nil && *tg.Seed == 8 {
		t.Errorf("targets[0].seed: 010 read as 8 (octal), want 10 or a refusal")
	}
	if tg.MaxTokens == 64 {
		t.Errorf("targets[0].max_tokens: 0100 read as 64 (octal), want 100 or a refusal")
	}
}

// README: "A key supplied through a YAML merge key (`<<: *defaults`) is as
// given as one written in place", and problems name FILE:LINE: FIELD. An
// unknown key that a merge brings into a mapping is reported under the
// path of the anchored mapping it came from, not where it was merged:
// merging a target's anchor into `sim:` of the next target is reported as
// "targets[0].name: unknown field" (a field that is valid) and never names
// targets[1].sim; an unknown key in an anchored target merged into a
// second target is reported twice as targets[0].bogus.
func TestQA2MergedUnknownFieldNamesMergeSite(t *testing.T) {
	err := qa2Load(t, "targets:\n  - &d {name: a, provider: sim, model: m}\n  - {<<: *d, name: b, sim: {<<: *d}}\n")
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	if strings.Contains(msg, "targets[0].name: unknown field") || !strings.Contains(msg, "targets[1].sim.") {
		t.Errorf("problems name the anchor's fields, not the merge site targets[1].sim:\n%s", msg)
	}

	err = qa2Load(t, "targets:\n  - &d {name: a, provider: sim, model: m, bogus: 1}\n  - {<<: *d, name: b}\n")
	if err == nil {
		t.Fatal("accepted")
	}
	if !strings.Contains(err.Error(), "targets[1].bogus: unknown field") {
		t.Errorf("the merged unknown key in targets[1] is not named targets[1].bogus:\n%s", err)
	}
}

// Contract: every configuration problem is FILE:LINE: FIELD: problem. A
// merge key with a scalar value is reported without a line or a field
// ("q.yaml: invalid YAML: map merge requires ...").
func TestQA2BadMergeValueHasLine(t *testing.T) {
	err := qa2Load(t, "targets:\n  - {name: a, provider: sim, model: m}\n  - {<<: \"str\", name: b, provider: sim, model: m}\n")
	if err == nil {
		t.Fatal("accepted")
	}
	var l yamlx.List
	if !errors.As(err, &l) || len(l) == 0 {
		t.Fatalf("not a yamlx.List: %v", err)
	}
	for _, e := range l {
		if e.Line == 0 {
			t.Errorf("problem without a line: %q (want q.yaml:3: targets[1]...)", e.Error())
		}
	}
}

// An integer too large for its field is reported as a "decimal number"
// with the advice "write a whole number, without a decimal point or
// exponent" — advice the value already follows. The problem is its size;
// the message should say it is out of range (as `max_body_bytes:
// 9223372036854775807` gets: "must be at most 67108864").
func TestQA2HugeIntegerMessage(t *testing.T) {
	err := qa2Load(t, "confirm_runs: 99999999999999999999999\ntargets:\n  - {name: a, provider: sim, model: m}\n")
	if err == nil {
		t.Fatal("accepted")
	}
	if strings.Contains(err.Error(), "without a decimal point") {
		t.Errorf("a whole number out of range is told to drop its decimal point:\n%s", err)
	}
}
