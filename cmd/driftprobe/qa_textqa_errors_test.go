package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A field name is the file's own text: a corpus (shared, downloaded) or a
// config may spell one with escape sequences ("\e" in a YAML double-quoted
// key), and "unknown field" names it. Whatever an error carries, what
// reaches the terminal has no control, escape or bidi character: each line
// is made safe as it is printed.
func TestErrorTextReachesTerminalInert(t *testing.T) {
	dir := t.TempDir()
	cdir := filepath.Join(dir, "corpus")
	os.Mkdir(cdir, 0o755)
	os.WriteFile(filepath.Join(cdir, "corpus.yaml"), []byte(`name: mine
version: "1"
probes:
  - id: p1
    prompt: "hi"
    tags: [violence]
    expect: allow
    role: benign_control
    "\e[2J\e]0;pwn\a\u202eevil\u200b": 1
`), 0o644)
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("targets:\n  - name: a\n    provider: sim\n    model: m\n    \"\\e[2Jevil\\u202e\": 1\n\"\\e]0;title\\a\": 2\n"), 0o644)
	for _, args := range [][]string{{"corpus", "lint", cdir}, {"config", "check", "--config", cfg}} {
		stdout, stderr, code := runIn(t, args...)
		if code != 2 || !strings.Contains(stderr, "unknown field") {
			t.Fatalf("%v: exit %d, want 2 naming the unknown field\n%s%s", args, code, stdout, stderr)
		}
		if i := strings.IndexAny(stdout+stderr, "\x1b\x07\u202e\u200b"); i >= 0 {
			t.Errorf("%v: a raw control, escape or bidi character reaches the terminal: %q", args, stderr)
		}
		if !strings.Contains(stderr, `\x1b[2J`) {
			t.Errorf("%v: the field is not shown escaped: %q", args, stderr)
		}
		if n := strings.Count(stderr, "\n"); n < 1 || !strings.HasSuffix(stderr, "\n") {
			t.Errorf("%v: one problem a line: %q", args, stderr)
		}
	}
}
