package config

import (
	"strings"
	"testing"
)

// README (Configuration reference): "`config check` (without `--no-keys`)
// also warns when the `github` block's token variable ... is unset or
// blank". For a target's api_key_env the two cases are told apart ("is
// not set" / "is empty"); the github warning says "is not set" for a
// variable that is set to white space, sending the operator to look for a
// missing variable that `env` shows is there.
func TestQA3GitHubTokenBlankIsNotReportedAsUnset(t *testing.T) {
	c := &Config{GitHub: &GitHub{Repo: "o/n", TokenEnv: "GITHUB_TOKEN"}}
	w := c.KeyWarnings(func(name string) string {
		if name == "GITHUB_TOKEN" {
			return "  \n"
		}
		return ""
	})
	if len(w) != 1 {
		t.Fatalf("want one warning for a blank token, got %q", w)
	}
	if strings.Contains(w[0], "is not set") {
		t.Errorf("a blank (set) GITHUB_TOKEN is reported as unset: %s", w[0])
	}
}
