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

// config check reports a missing corpus together with unset key variables
// (one round of fixes, not two); a config whose other fields are wrong
// reports those, as before, without reading the corpus.
func TestConfigCheckReportsCorpusWithMissingKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("database: "+filepath.Join(dir, "d.db")+"\ncorpus: ./no/such/corpus\ntargets:\n  - {name: a, provider: openai, model: gpt-4o-mini, api_key_env: QA_OPENAI_KEY}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("QA_OPENAI_KEY", "")
	_, stderr, code := runIn(t, "config", "check", "--config", cfg)
	for _, want := range []string{"c.yaml:4: targets[0].api_key_env: environment variable QA_OPENAI_KEY is empty", "c.yaml:2: corpus: ./no/such/corpus does not exist"} {
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, want)
		}
	}
	if err := os.WriteFile(cfg, []byte("database: "+filepath.Join(dir, "d.db")+"\ncorpus: ./no/such/corpus\nconcurency: 3\ntargets:\n  - {name: a, provider: openai, model: gpt-4o-mini, api_key_env: QA_OPENAI_KEY}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runIn(t, "config", "check", "--config", cfg); code != 2 || !strings.Contains(stderr, "c.yaml:3: concurency") || strings.Contains(stderr, "corpus:") {
		t.Errorf("a misspelt field: exit %d, stderr %q; want exit 2 naming line 3 and not the corpus", code, stderr)
	}
}

// A database that does not exist at a relative path names the working
// directory it was looked for in; evidence without an event id says both
// of its forms.
func TestNewcomerMessages(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := os.Getwd()
	if _, stderr, code := runIn(t, "events", "--db", "rel.db"); code != 2 || !strings.Contains(stderr, "database rel.db does not exist") || !strings.Contains(stderr, "a relative path is read from the working directory, "+wd) {
		t.Errorf("events on a missing relative database: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := runIn(t, "events", "--db", filepath.Join(wd, "abs.db")); code != 2 || strings.Contains(stderr, "working directory") {
		t.Errorf("events on a missing absolute database: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := runIn(t, "evidence"); code != 2 || !strings.Contains(stderr, "driftprobe evidence EVENT") || !strings.Contains(stderr, "driftprobe evidence --verify FILE") {
		t.Errorf("evidence without arguments: exit %d, stderr %q", code, stderr)
	}
}
