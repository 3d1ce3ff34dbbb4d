package main

import (
	"context"
	"encoding/json"
	"fmt"
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
	cfg, db, check := citationsDB(t, "a")
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
	if !strings.Contains(stdout, "3 cited observation(s) missing or of another target or probe, below") || !strings.Contains(stdout, "\ncitation: event 1, ") {
		t.Errorf("text report:\n%s", stdout)
	}
}

// db check finds what evidence would: an observation an event or a
// detection state cites that the database holds, but as another target's
// or another probe's answer than the one citing it. It is no evidence of
// the flip, however alike its bytes and verdict.
func TestDBCheckFindsCitedObservationsOfAnotherTargetOrProbe(t *testing.T) {
	cfg, db, check := citationsDB(t, "a", "b")
	if rep, code := check(); code != 0 || len(rep.Citations) != 0 {
		t.Fatalf("untouched: exit %d, citations %q (want 0)", code, rep.Citations)
	}
	st, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	// Event 1's first probe of target a: its before side now cites b's
	// answer of the same probe in the same run (same bytes, same verdict).
	var eid, before, after, foreign int64
	var probe string
	if err := st.SQL().QueryRow(`SELECT ep.event_id, ep.probe_id, ep.before_obs, ep.after_obs FROM event_probes ep JOIN targets t ON t.id = ep.target_id
		WHERE t.name = 'a' ORDER BY ep.event_id, ep.probe_id LIMIT 1`).Scan(&eid, &probe, &before, &after); err != nil {
		t.Fatal(err)
	}
	if err := st.SQL().QueryRow(`SELECT o.id FROM observations o JOIN targets t ON t.id = o.target_id
		WHERE t.name = 'b' AND o.probe_id = ? AND o.sample = 0 AND o.run_id = (SELECT run_id FROM observations WHERE id = ?)`, probe, before).Scan(&foreign); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().Exec(`UPDATE event_probes SET before_obs = ? WHERE event_id = ? AND probe_id = ? AND target_id = (SELECT id FROM targets WHERE name = 'a')`, foreign, eid, probe); err != nil {
		t.Fatal(err)
	}
	// Its after answer (also the probe's baseline now) moved to another
	// probe id: the event and the detection state cite another probe's.
	if _, err := st.SQL().Exec(`UPDATE observations SET probe_id = 'someone-else' WHERE id = ?`, after); err != nil {
		t.Fatal(err)
	}
	st.Close()
	rep, code := check()
	if code != 1 || rep.OK {
		t.Fatalf("citations of another target and probe: exit %d, ok %v, citations %q (want exit 1)", code, rep.OK, rep.Citations)
	}
	for _, want := range []string{
		fmt.Sprintf("event %d, a/%s: its before observation %d is an observation of target b, probe %s, not of the event's a/%s", eid, probe, foreign, probe, probe),
		fmt.Sprintf("event %d, a/%s: its after observation %d is an observation of target a, probe someone-else, not of the event's a/%s", eid, probe, after, probe),
		fmt.Sprintf("detection state of target a: probe %s's baseline observation %d is an observation of target a, probe someone-else", probe, after),
	} {
		found := false
		for _, c := range rep.Citations {
			found = found || strings.HasPrefix(c, want)
		}
		if !found {
			t.Errorf("citations %q: none starts %q", rep.Citations, want)
		}
	}
	stdout, stderr, _ := runIn(t, "db", "check", "--no-bodies", "--config", cfg, "--db", db)
	if !strings.Contains(stdout, fmt.Sprintf("%d cited observation(s) missing or of another target or probe, below", len(rep.Citations))) ||
		!strings.Contains(stdout, "is an observation of target b") || !strings.Contains(stderr, "citation problem(s) (cited observations missing or of another target or probe)") {
		t.Errorf("text report:\n%s\n%s", stdout, stderr)
	}
}

// citationsDB runs four runs of the config targets into a fresh database
// (each sim target tightening violence at run 3, so run 4 confirms flips)
// and returns the config, the database and a db check --json of it.
func citationsDB(t *testing.T, targets ...string) (cfg, db string, check func() (storage.CheckReport, int)) {
	t.Helper()
	dir := t.TempDir()
	cfg, db = filepath.Join(dir, "c.yaml"), filepath.Join(dir, "x.db")
	y := "targets:\n"
	for _, name := range targets {
		y += "  - {name: " + name + ", provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.05}}]}}\n"
	}
	if err := os.WriteFile(cfg, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, stderr, code := runIn(t, "run", "--no-progress", "--config", cfg, "--db", db); code != 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
	}
	return cfg, db, func() (storage.CheckReport, int) {
		t.Helper()
		stdout, stderr, code := runIn(t, "db", "check", "--json", "--no-bodies", "--config", cfg, "--db", db)
		var rep storage.CheckReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("db check --json: exit %d: %v\n%s\n%s", code, err, stdout, stderr)
		}
		return rep, code
	}
}
