package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// db check --from-run N reads back the bodies of runs N and later only and
// says so; a negative run id is a usage error.
func TestDBCheckFromRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "d.db")
	for i := 0; i < 2; i++ {
		if _, stderr, code := runIn(t, "run", "--no-progress", "--db", db); code != 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
	}
	type report struct {
		OK           bool  `json:"ok"`
		Observations int64 `json:"observations"`
		FromRun      int64 `json:"from_run"`
	}
	var whole, rep report
	if stdout, stderr, code := runIn(t, "db", "check", "--json", "--db", db); code != 0 || json.Unmarshal([]byte(stdout), &whole) != nil || !whole.OK || whole.FromRun != 0 {
		t.Fatalf("db check: exit %d %+v\n%s%s", code, whole, stdout, stderr)
	}
	// Run 1 stored one observation per probe (62); run 2 the rest.
	stdout, stderr, code := runIn(t, "db", "check", "--from-run", "2", "--json", "--db", db)
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || !rep.OK || rep.FromRun != 2 || rep.Observations != whole.Observations-62 {
		t.Fatalf("db check --from-run 2: exit %d %+v (whole: %d)\n%s%s", code, rep, whole.Observations, stdout, stderr)
	}
	if stdout, _, code := runIn(t, "db", "check", "--from-run", "2", "--db", db); code != 0 || !strings.Contains(stdout, "observation(s) of runs 2 and later") {
		t.Errorf("text output: exit %d\n%s", code, stdout)
	}
	if _, stderr, code := runIn(t, "db", "check", "--from-run", "-1", "--db", db); code != 2 || !strings.Contains(stderr, "--from-run -1: want a run id") {
		t.Errorf("--from-run -1: exit %d %s", code, stderr)
	}
}
