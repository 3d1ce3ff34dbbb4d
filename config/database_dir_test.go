package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A database naming an existing directory is a problem at its line; a
// path that does not exist yet (run creates it), or an existing file, is
// fine.
func TestDatabaseIsADirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "d.db")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		db, want string
	}{
		{dir, "c.yaml:2: database: " + dir + " is a directory, not a database file"},
		{filepath.Join(dir, "new.db"), ""},
		{file, ""},
		{":memory:", ""},
	} {
		cfg, err := Parse("c.yaml", []byte("targets: [{name: s, provider: sim, model: sim-large}]\ndatabase: \""+c.db+"\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate(false)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.db, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.db, err, c.want)
		}
	}
}
