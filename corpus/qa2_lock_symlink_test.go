package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A corpus directory whose corpus.lock is a symlink (a lock shared between
// checkouts, or kept in another directory under version control): `corpus
// lock` (WriteLock) writes a temporary file and renames it over the name,
// which replaces the symlink with a regular file. The file the link
// pointed to never receives the new version's hash, and the link is gone
// without a word.
func TestQA2WriteLockKeepsSymlinkedLock(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "name: qa\nversion: \"1\"\nprobes:\n  - id: p1\n    prompt: hello\n    tags: [violence]\n    expect: allow\n    role: benign_control\n"
	if err := os.WriteFile(filepath.Join(dir, "corpus.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(root, "shared.lock")
	if err := os.WriteFile(real, []byte("name: qa\nversions: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../shared.lock", filepath.Join(dir, LockName)); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLock(c); err != nil {
		t.Fatalf("WriteLock: %v", err)
	}
	fi, err := os.Lstat(filepath.Join(dir, LockName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("corpus.lock was a symlink to ../shared.lock; after `corpus lock` it is a regular file")
	}
	b, _ := os.ReadFile(real)
	if !strings.Contains(string(b), `"1":`) {
		t.Errorf("the symlink's target never got version 1:\n%s", b)
	}
}
