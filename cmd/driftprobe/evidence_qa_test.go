package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// evidenceEnv writes cfg, runs it n times and returns the config and
// database paths.
func evidenceEnv(t *testing.T, cfg string, n int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	c, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "x.db")
	if err := os.WriteFile(c, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same runs for every test that asks: built once, copied.
	cachedDB(t, fmt.Sprintf("evidenceEnv %d %q", n, cfg), db, func(db string) {
		for i := 0; i < n; i++ {
			if _, stderr, code := runIn(t, "run", "--config", c, "--db", db, "--no-progress"); code != 0 {
				t.Fatalf("run %d: exit %d: %s", i+1, code, stderr)
			}
		}
	})
	return c, db
}

type qaEvent struct {
	ID     int64  `json:"id"`
	Kind   string `json:"kind"`
	Probes []struct {
		ProbeID   string `json:"probe_id"`
		BeforeObs int64  `json:"before_observation"`
		AfterObs  int64  `json:"after_observation"`
	} `json:"probes"`
}

func qaEventOfKind(t *testing.T, cfg, db, kind string) qaEvent {
	t.Helper()
	stdout, stderr, code := runIn(t, "events", "--json", "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("events: exit %d: %s", code, stderr)
	}
	var evs []qaEvent
	if err := json.Unmarshal([]byte(stdout), &evs); err != nil {
		t.Fatalf("events: %v\n%s", err, stdout)
	}
	for _, ev := range evs {
		if ev.Kind == kind {
			return ev
		}
	}
	t.Fatalf("no %s event: %s", kind, stdout)
	return qaEvent{}
}

// qaRecord is the part of an evidence record these tests read.
type qaRecord struct {
	AllVerified bool   `json:"all_verified"`
	SHA256      string `json:"record_sha256"`
	Probes      []struct {
		ProbeID string `json:"probe_id"`
		Request struct {
			SHA256   string `json:"sha256"`
			Verified bool   `json:"verified"`
		} `json:"request"`
		Before *struct {
			ID int64 `json:"observation_id"`
		} `json:"before"`
		BeforeAbsent string `json:"before_absent"`
		After        *struct {
			ID      int64  `json:"observation_id"`
			Problem string `json:"problem"`
		} `json:"after"`
		AfterAbsent string `json:"after_absent"`
	} `json:"probes"`
}

// Finding 1: the evidence of a nondeterminism event, whose probes may cite
// no before observation, passes its own --verify; absent sides are said in
// the JSON and the text, and no request is blank.
func TestEvidenceQANondeterminismVerifies(t *testing.T) {
	cfg, db := evidenceEnv(t, "targets:\n  - {name: n, provider: sim, model: m, sim: {noise: 0.5, noise_band: 0.3}}\n", 6)
	ev := qaEventOfKind(t, cfg, db, "nondeterminism")
	id := strconv.FormatInt(ev.ID, 10)
	absentInEvent := 0
	for _, p := range ev.Probes {
		if p.BeforeObs == 0 {
			absentInEvent++
		}
		if p.AfterObs == 0 {
			absentInEvent++
		}
	}

	stdout, stderr, code := runIn(t, "evidence", id, "--json", "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("evidence --json: exit %d: %s", code, stderr)
	}
	file := filepath.Join(t.TempDir(), "e.json")
	os.WriteFile(file, []byte(stdout), 0o644)
	if out, stderr, code := runIn(t, "evidence", "--verify", file); code != 0 || !strings.Contains(out, ": ok") {
		t.Fatalf("--verify of the record evidence just wrote: exit %d: %s%s", code, out, stderr)
	}
	var rec qaRecord
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatal(err)
	}
	absent := 0
	for _, p := range rec.Probes {
		if p.Request.SHA256 == "" {
			t.Errorf("%s: blank request sha256", p.ProbeID)
		}
		if (p.Before == nil) != (p.BeforeAbsent != "") || (p.After == nil) != (p.AfterAbsent != "") {
			t.Errorf("%s: a missing side must say why (before_absent %q, after_absent %q)", p.ProbeID, p.BeforeAbsent, p.AfterAbsent)
		}
		if p.Before == nil {
			absent++
		}
		if p.After == nil {
			absent++
		}
	}
	// A side the event cites no observation for shows the stored answer
	// that carried its verdict, when there is one (see
	// TestEvidenceQANondeterminismShowsClaimedVerdicts); it is never
	// absent when the event cites one.
	if absent > absentInEvent {
		t.Errorf("%d sides absent in the record, only %d observation ids 0 in the event", absent, absentInEvent)
	}
	if !rec.AllVerified {
		t.Error("absent observations made the record unverified")
	}

	text, stderr, code := runIn(t, "evidence", id, "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("evidence: exit %d: %s", code, stderr)
	}
	if !strings.Contains(text, "all request and response hashes verified: true") || strings.Contains(text, "sha256  (") || strings.Contains(text, "request  ,") {
		t.Errorf("text shows a blank request or says it does not verify:\n%s", text)
	}
	if absent > 0 && !strings.Contains(text, "no observation in this record") {
		t.Errorf("text does not say which observations are absent:\n%s", text)
	}
}

// Finding 2: a corrupt stored body yields a complete record naming the
// observation and why, all_verified false, and exit 1 (does not verify),
// for the text, --json, and --verify of that JSON.
func TestEvidenceQACorruptBody(t *testing.T) {
	cfg, db := evidenceEnv(t, "targets:\n  - name: a\n    provider: sim\n    model: m\n    sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}\n", 4)
	ev := qaEventOfKind(t, cfg, db, "policy_change")
	var afters []int64
	for _, p := range ev.Probes {
		afters = append(afters, p.AfterObs)
	}
	obs := corruptS2Body(t, db, afters...)
	id, obsID := strconv.FormatInt(ev.ID, 10), strconv.FormatInt(obs, 10)

	stdout, stderr, code := runIn(t, "evidence", id, "--json", "--config", cfg, "--db", db)
	if code != 1 || !strings.Contains(stderr, "does not verify") || !strings.Contains(stderr, "observation "+obsID) {
		t.Fatalf("evidence --json: exit %d (want 1, the record does not verify), stderr %q", code, stderr)
	}
	var rec qaRecord
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil || rec.SHA256 == "" {
		t.Fatalf("no complete record written: %v\n%s", err, stdout)
	}
	if rec.AllVerified {
		t.Error("all_verified true with a corrupt body")
	}
	marked := false
	for _, p := range rec.Probes {
		if p.After != nil && p.After.ID == obs {
			marked = strings.Contains(p.After.Problem, "unreadable")
		}
	}
	if !marked {
		t.Errorf("observation %d not marked unreadable:\n%s", obs, stdout)
	}
	file := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(file, []byte(stdout), 0o644)
	if _, stderr, code := runIn(t, "evidence", "--verify", file); code != 1 || !strings.Contains(stderr, "observation "+obsID) {
		t.Errorf("--verify of a record that does not verify: exit %d (want 1): %s", code, stderr)
	}
	text, _, code := runIn(t, "evidence", id, "--config", cfg, "--db", db)
	if code != 1 || !strings.Contains(text, "all request and response hashes verified: false") || !strings.Contains(text, "observation "+obsID) {
		t.Errorf("text: exit %d (want 1)\n%s", code, text)
	}
}

// Finding 3: --verify on JSON that is not an evidence record is a usage
// error saying so; --verify with an event id says it takes none.
func TestEvidenceQAVerifyUsage(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte("{}\n"), 0o644)
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte(`{"run_id": 3, "status": "complete"}`), 0o644)
	for _, f := range []string{empty, other} {
		_, stderr, code := runIn(t, "evidence", "--verify", f)
		if code != 2 || !strings.Contains(stderr, f+": not an evidence record (") || strings.Contains(stderr, "record_sha256 mismatch") {
			t.Errorf("--verify %s: exit %d (want 2): %s", filepath.Base(f), code, stderr)
		}
	}
	_, stderr, code := runIn(t, "evidence", "1", "--verify", empty)
	if code != 2 || !strings.Contains(stderr, "--verify takes the record FILE and no event id") || strings.Contains(stderr, "unknown command") {
		t.Errorf("evidence 1 --verify FILE: exit %d (want 2): %s", code, stderr)
	}
}
