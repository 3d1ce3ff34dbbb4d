package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// config check warns (exit 0) when the github block's token variable is
// unset or blank — runs still record their events, but no issue opens —
// and says nothing with --no-keys or once the variable holds a token; a
// GitHub App's private_key_env is the variable checked for app auth.
func TestConfigCheckWarnsOnMissingGitHubToken(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("database: "+filepath.Join(dir, "d.db")+"\ngithub:\n  repo: acme/drift\n  token_env: QA_GH_TOKEN\ntargets:\n  - {name: a, provider: sim, model: sim-1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const warn = "c.yaml:4: github.token_env: environment variable QA_GH_TOKEN " // is not set or empty / holds only white space
	for _, c := range []struct {
		env   string
		args  []string
		warns bool
	}{
		{"", nil, true},
		{"  ", nil, true},
		{"", []string{"--no-keys"}, false},
		{"ghp_x", nil, false},
	} {
		t.Setenv("QA_GH_TOKEN", c.env)
		_, stderr, code := runIn(t, append([]string{"config", "check", "--config", cfg}, c.args...)...)
		if code != 0 || strings.Contains(stderr, warn) != c.warns {
			t.Errorf("token %q %v: exit %d, stderr %q; want exit 0, warning %v", c.env, c.args, code, stderr, c.warns)
		}
	}

	app := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(app, []byte("database: "+filepath.Join(dir, "d.db")+"\ngithub:\n  repo: acme/drift\n  app_id: 1\n  installation_id: 2\n  private_key_env: QA_GH_PEM\ntargets:\n  - {name: a, provider: sim, model: sim-1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("QA_GH_PEM", "")
	if _, stderr, code := runIn(t, "config", "check", "--config", app); code != 0 || !strings.Contains(stderr, "app.yaml:6: github.private_key_env: environment variable QA_GH_PEM is not set") {
		t.Errorf("app auth without its key: exit %d, stderr %q", code, stderr)
	}
}
