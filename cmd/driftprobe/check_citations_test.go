package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// db check finds what evidence would: an observation an event cites, or a
// baseline detection holds, that the database lost (retention never
// deletes them).
func TestDBCheckFindsMissingCitedObservations(t *testing.T) {
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "x.db")
	if err := os.WriteFile(cfg, []byte("targets:\n  - {name: a, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.05}}]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, stderr, code := runIn(t, "run", "--no-progress", "--config", cfg, "--db", db); code != 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
	}
	check := func() (storage.CheckReport, int) {
		t.Helper()
		stdout, stderr, code := runIn(t, "db", "check", "--json", "--no-bodies", "--config", cfg, "--db", db)
		var rep storage.CheckReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("db check --json: exit %d: %v\n%s\n%s", code, err, stdout, stderr)
		}
		return rep, code
	}
	if rep, code := check(); code != 0 || len(rep.Citations) != 0 || rep.Citations == nil {
		t.Fatalf("untouched: exit %d, citations %q (want 0 and [])", code, rep.Citations)
	}
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var eid, after int64
	var probe string
	if err := st.SQL().QueryRow(`SELECT event_id, probe_id, after_obs FROM event_probes ORDER BY event_id, probe_id LIMIT 1`).Scan(&eid, &probe, &after); err != nil {
		t.Fatal(err)
	}
	var baseline int64 // a probe's baseline that no event cites: the latest run's answer of an unflipped probe
	if err := st.SQL().QueryRow(`SELECT MIN(id) FROM observations WHERE id NOT IN (SELECT before_obs FROM event_probes UNION SELECT after_obs FROM event_probes)
		AND run_id = 2`).Scan(&baseline); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().Exec(`DELETE FROM observations WHERE id IN (?, ?)`, after, baseline); err != nil {
		t.Fatal(err)
	}
	st.Close()
	rep, code := check()
	// The flip's after answer is also the probe's baseline now: three.
	if code != 1 || rep.OK || len(rep.Citations) != 3 {
		t.Fatalf("after deleting cited observations: exit %d, ok %v, citations %q (want exit 1 and three)", code, rep.OK, rep.Citations)
	}
	if !strings.Contains(rep.Citations[0], "event 1, a/"+probe+": its after observation") {
		t.Errorf("citations %q: want event 1's after observation first", rep.Citations)
	}
	for _, p := range []string{probe, ""} {
		found := false
		for _, c := range rep.Citations[1:] {
			found = found || (strings.HasPrefix(c, "detection state of target a: probe ") && strings.Contains(c, "baseline observation") && (p == "" || strings.Contains(c, "probe "+p+"'s")))
		}
		if !found {
			t.Errorf("citations %q: want the baseline of %q", rep.Citations, p)
		}
	}
	stdout, _, _ := runIn(t, "db", "check", "--no-bodies", "--config", cfg, "--db", db)
	if !strings.Contains(stdout, "3 cited observation(s) missing, below") || !strings.Contains(stdout, "\ncitation: event 1, ") {
		t.Errorf("text report:\n%s", stdout)
	}
}
