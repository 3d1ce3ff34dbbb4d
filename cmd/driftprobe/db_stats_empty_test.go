package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// `db stats --json` of a database without runs omits the times it cannot
// know instead of printing year 1 as the oldest and newest run; with runs,
// they are there.
func TestDBStatsJSONOmitsTimesWithoutRuns(t *testing.T) {
	db := filepath.Join(t.TempDir(), "d.db")
	st, err := storage.Open(context.Background(), db) // the schema, no run
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	keys := func() map[string]any {
		t.Helper()
		stdout, stderr, code := runIn(t, "db", "stats", "--json", "--db", db)
		if code != 0 {
			t.Fatalf("db stats: exit %d: %s", code, stderr)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(stdout), &m); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		return m
	}
	m := keys()
	for _, k := range []string{"oldest_run", "newest_run", "oldest_bodies"} {
		if v, ok := m[k]; ok {
			t.Errorf("no run yet, yet %s is %v", k, v)
		}
	}
	if m["runs"] != float64(0) {
		t.Errorf("runs = %v", m["runs"])
	}
	mustRun(t, 1, "--db", db)
	m = keys()
	for _, k := range []string{"oldest_run", "newest_run", "oldest_bodies"} {
		if s, _ := m[k].(string); len(s) < 20 || s[:4] == "0001" {
			t.Errorf("after a run, %s = %v", k, m[k])
		}
	}
}
