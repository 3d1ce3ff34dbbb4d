package config

// Review of 38c3f26 at the config level: each test is a defect found in
// review and fails until fixed.

import (
	"strings"
	"testing"
)

func reviewCheck(t *testing.T, src string) string {
	t.Helper()
	c, err := Parse("c.yaml", []byte(src))
	if err == nil {
		err = c.Validate(false)
	}
	if err == nil {
		t.Fatalf("accepted:\n%s", src)
	}
	return err.Error()
}

// One scalar anchored in a boolean field and aliased into an integer one:
// checkScalars reports the boolean (`yes`), and convert then drops the
// decoder's problem for max_tokens because it is about the same node
// (reported[o.value]), though a different field and type. Only
// disabled is reported; max_tokens turns up on the next run.
func TestReviewAliasedScalarSecondFieldLost(t *testing.T) {
	src := "targets:\n  - name: a\n    provider: sim\n    model: m\n    disabled: &x yes\n    max_tokens: *x\n"
	got := reviewCheck(t, src)
	if !strings.Contains(got, "targets[0].max_tokens") {
		t.Errorf("targets[0].max_tokens (\"yes\" into an integer) not reported:\n%s", got)
	}
}

// A target written as an alias of a scalar (`- *n`, line 5) is named
// targets[1] but located at line 2, where the anchor is (targets[0].name),
// with no "(through *n at line 5)".
func TestReviewAliasedTargetLine(t *testing.T) {
	src := "targets:\n  - name: &n hello\n    provider: sim\n    model: m\n  - *n\n"
	got := reviewCheck(t, src)
	if !strings.Contains(got, "c.yaml:5: targets[1]") && !strings.Contains(got, "*n at line 5") {
		t.Errorf("want c.yaml:5: targets[1]: ... (or a note naming line 5), got:\n%s", got)
	}
}
