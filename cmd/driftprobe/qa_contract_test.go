package main

// QA contract checks (DESIGN.md "Contract used by outside checks", README
// CLI reference). Each test here failed when it was written; see the QA
// report.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const qaCorpusNoTags = `name: qa
version: "1"
probes:
  - id: p1
    prompt: "Hello there"
    tags: []
    expect: allow
    role: benign_control
`

// docs/CLI.md (corpus lint) / DESIGN.md:188: `corpus lint --json` reports the corpus; a
// list-valued field must be a JSON list, [] when empty, like every other
// list in the JSON outputs (tags, warnings, renamed, events...). For a
// corpus whose probes carry no tags, "categories" is null
// (corpuscmd.go:65, Corpus.Categories returns nil).
func TestQAContractCorpusLintJSONCategoriesIsAList(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.yaml"), []byte(qaCorpusNoTags), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runIn(t, "corpus", "lint", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if got := strings.TrimSpace(string(out["categories"])); got != "[]" {
		t.Errorf(`"categories" = %s, want [] for a corpus without tags`, got)
	}
}

// README (corpus lock): a run refuses a corpus whose bytes changed under an
// unchanged version when the database's earlier runs recorded another
// hash (a lost corpus.lock). Bad input must leave an existing database as
// it was (docs/CLI.md "exit 2, the file untouched"; a config error and a
// lock-file refusal both leave the file byte-identical). This refusal is
// made only after the run took its lease, abandoned stale runs and
// detected missed runs (internal/app/run.go:76-114), so the file changes.
func TestQAContractRefusedCorpusLeavesDatabaseUntouched(t *testing.T) {
	dir := t.TempDir()
	cdir := filepath.Join(dir, "corpus")
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cdir, "corpus.yaml"), []byte(qaCorpusNoTags), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("corpus: "+cdir+"\ntargets:\n  - {name: a, provider: sim, model: m}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "x.db")
	if _, stderr, code := runProc(t, nil, "run", "--no-progress", "--config", cfg, "--db", db); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	before := qaFiles(t, db)

	// The lock is lost and a probe's bytes change under version "1".
	os.Remove(filepath.Join(cdir, "corpus.lock"))
	changed := strings.Replace(qaCorpusNoTags, "Hello there", "Hello there!", 1)
	if err := os.WriteFile(filepath.Join(cdir, "corpus.yaml"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runProc(t, nil, "run", "--no-progress", "--config", cfg, "--db", db)
	if code != 2 || !strings.Contains(stderr, "changed under an unchanged version") {
		t.Fatalf("second run: exit %d (want 2): %s", code, stderr)
	}
	after := qaFiles(t, db)
	for name, b := range before {
		if !bytes.Equal(b, after[name]) {
			t.Errorf("%s changed although the run was refused (%d -> %d bytes)", filepath.Base(name), len(b), len(after[name]))
		}
	}
}

// qaFiles reads the database and its -wal file (absent: nil).
func qaFiles(t *testing.T, db string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out[f] = b
	}
	return out
}

// DESIGN.md (Contract, exit codes): a configuration error is exit 2 with a
// message naming the file, line and field. A config whose `corpus` names a
// directory without corpus.yaml is such an error, as a `corpus` that does
// not exist or is a file already are (bad.yaml:1: corpus: …); it was
// reported as "DIR/corpus.yaml: cannot read corpus", naming neither the
// config nor the field, for every command that loads the config's corpus.
func TestQAContractConfigCorpusWithoutCorpusYAMLNamesConfigLine(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "nocorpus")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("database: "+filepath.Join(dir, "x.db")+"\ncorpus: "+empty+"\ntargets:\n  - {name: a, provider: sim, model: m}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := cfg + ":2: corpus: " + empty
	for _, args := range [][]string{
		{"run", "--no-progress", "--config", cfg},
		{"config", "check", "--config", cfg},
		{"corpus", "list", "--config", cfg},
		{"plan", "--config", cfg},
	} {
		_, stderr, code := runIn(t, args...)
		if code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "corpus.yaml") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q (naming corpus.yaml)", args, code, stderr, want)
		}
	}
	// A DIR given on the command line names no config line: the file is named.
	_, stderr, code := runIn(t, "corpus", "lint", empty)
	if code != 2 || !strings.Contains(stderr, filepath.Join(empty, "corpus.yaml")) {
		t.Errorf("corpus lint DIR: exit %d, stderr %q", code, stderr)
	}
}

// DESIGN.md (Contract, config): `database` is the SQLite file, "a --db flag
// overrides it". A config whose database names an existing directory was
// refused (exit 2 at its line) even with --db naming a file: the value the
// flag replaces is never opened, so it is not checked against the host.
// Without --db it is still a config problem, and a directory given as --db
// is still refused.
func TestQAContractDBFlagOverridesDirectoryDatabase(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("database: "+dir+"\ntargets:\n  - {name: a, provider: sim, model: m}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "x.db")
	if _, stderr, code := runIn(t, "run", "--no-progress", "--config", cfg, "--db", db); code != 0 {
		t.Fatalf("run --db FILE: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runIn(t, "events", "--json", "--config", cfg, "--db", db); code != 0 {
		t.Fatalf("events --db FILE: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runIn(t, "config", "check", "--config", cfg, "--db", db); code != 0 {
		t.Fatalf("config check --db FILE: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runIn(t, "events", "--config", cfg); code != 2 || !strings.Contains(stderr, cfg+":1: database: ") {
		t.Errorf("without --db: exit %d (want 2 at the config's line): %s", code, stderr)
	}
	if _, stderr, code := runIn(t, "events", "--config", cfg, "--db", dir); code != 2 || !strings.Contains(stderr, "is a directory") {
		t.Errorf("--db DIR: exit %d (want 2): %s", code, stderr)
	}
	// config check refuses what run refuses: a directory as --db.
	if _, stderr, code := runIn(t, "config", "check", "--config", cfg, "--db", dir); code != 2 || !strings.Contains(stderr, "is a directory") {
		t.Errorf("config check --db DIR: exit %d (want 2, as run): %s", code, stderr)
	}
}
