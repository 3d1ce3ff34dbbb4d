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

// A token with a line break inside (a secret file of two lines) can be
// sent in no Authorization header: every delivery would fail. config check
// warns, without repeating it; a GitHub App's PEM key holds line breaks.
func TestGitHubTokenControlCharacterWarns(t *testing.T) {
	const token = "ghp_first-half-SECRET\nsecond-half"
	getenv := func(string) string { return token }
	c := &Config{GitHub: &GitHub{Repo: "o/n", TokenEnv: "GITHUB_TOKEN"}}
	w := c.KeyWarnings(getenv)
	if len(w) != 1 || !strings.Contains(w[0], "github.token_env: environment variable GITHUB_TOKEN holds a control character (U+000A) inside the token") {
		t.Fatalf("want one warning naming the control character, got %q", w)
	}
	if strings.Contains(w[0], "SECRET") {
		t.Errorf("the token is echoed: %s", w[0])
	}
	app := &Config{GitHub: &GitHub{Repo: "o/n", AppID: 1, InstallationID: 2, PrivateKeyEnv: "GITHUB_APP_PRIVATE_KEY"}}
	if w := app.KeyWarnings(getenv); len(w) != 0 {
		t.Errorf("a GitHub App key with line breaks warned: %q", w)
	}
}
