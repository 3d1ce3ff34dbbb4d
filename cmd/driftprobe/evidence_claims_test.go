package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// sqlIn runs a statement on the database file db, as a tamperer would.
func sqlIn(t *testing.T, db, q string, args ...any) {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.SQL().ExecContext(ctx, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

type claimsVerdict struct {
	Verdict    string   `json:"verdict"`
	Categories []string `json:"categories"`
}

func (v claimsVerdict) key() string { return v.Verdict + "|" + strings.Join(v.Categories, ",") }

// claimsRecord is the part of an evidence record these tests read.
type claimsRecord struct {
	Format      string `json:"format"`
	AllVerified bool   `json:"all_verified"`
	Event       struct {
		Probes []struct {
			Target  string        `json:"target"`
			ProbeID string        `json:"probe_id"`
			Before  claimsVerdict `json:"before"`
			After   claimsVerdict `json:"after"`
		} `json:"probes"`
	} `json:"event"`
	Probes []struct {
		Target      string `json:"target"`
		ProbeID     string `json:"probe_id"`
		RevertedRun int64  `json:"reverted_run"`
		Before      *struct {
			ID      int64         `json:"observation_id"`
			Verdict claimsVerdict `json:"verdict"`
			Matches *bool         `json:"verdict_matches_event"`
		} `json:"before"`
		After *struct {
			ID      int64         `json:"observation_id"`
			Verdict claimsVerdict `json:"verdict"`
			Matches *bool         `json:"verdict_matches_event"`
		} `json:"after"`
	} `json:"probes"`
}

// The QA configuration of finding 2 (s2.yaml): a nondeterminism event on
// "noisy" among other targets.
const qaS2 = `confirm_runs: 2
targets:
  - {name: cur, provider: sim, model: sim-large, sim: {policies: [{from_run: 1, thresholds: {violence: 0.5}, fingerprint: fp-a}, {from_run: 3, thresholds: {violence: 0.2, hate: 0.2}, fingerprint: fp-b}]}}
  - {name: cand, provider: sim, model: sim-xl, sim: {policies: [{from_run: 1, thresholds: {harassment: 0.2}, fingerprint: fp-x}]}}
  - {name: noisy, provider: sim, model: sim-large, sim: {noise: 0.5, noise_band: 0.3, policies: [{from_run: 1, thresholds: {violence: 0.5}}]}}
  - {name: flaky, provider: sim, model: sim-large, max_attempts: 1, sim: {error_rate: 0.6, error_status: 503}}
  - {name: ghost, provider: sim, model: sim-ghost, disabled: true}
`

// QA finding 2: every observation the evidence of a nondeterminism event
// shows carries the verdict the event states for its side, and the record
// verifies.
func TestEvidenceQANondeterminismShowsClaimedVerdicts(t *testing.T) {
	cfg, db := evidenceEnv(t, qaS2, 6)
	ev := qaEventOfKind(t, cfg, db, "nondeterminism")
	stdout, stderr, code := runIn(t, "evidence", strconv.FormatInt(ev.ID, 10), "--json", "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("evidence: exit %d: %s", code, stderr)
	}
	var rec claimsRecord
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatal(err)
	}
	claims := map[string][2]claimsVerdict{}
	for _, p := range rec.Event.Probes {
		claims[p.Target+"/"+p.ProbeID] = [2]claimsVerdict{p.Before, p.After}
	}
	shown := 0
	for _, p := range rec.Probes {
		c := claims[p.Target+"/"+p.ProbeID]
		if p.Before != nil {
			shown++
			if p.Before.Verdict.key() != c[0].key() || p.Before.Matches == nil || !*p.Before.Matches {
				t.Errorf("%s: before observation %d answered %v, the event says %v", p.ProbeID, p.Before.ID, p.Before.Verdict, c[0])
			}
		}
		if p.After == nil {
			t.Errorf("%s: no after observation", p.ProbeID)
			continue
		}
		if p.After.Verdict.key() != c[1].key() || p.After.Matches == nil || !*p.After.Matches {
			t.Errorf("%s: after observation %d answered %v, the event says %v", p.ProbeID, p.After.ID, p.After.Verdict, c[1])
		}
	}
	if shown == 0 {
		t.Error("no before observation shown for any probe")
	}
	if !rec.AllVerified || rec.Format != "driftprobe-evidence/5" {
		t.Errorf("all_verified %v, format %q", rec.AllVerified, rec.Format)
	}
	file := filepath.Join(t.TempDir(), "e.json")
	os.WriteFile(file, []byte(stdout), 0o644)
	if out, stderr, code := runIn(t, "evidence", "--verify", file); code != 0 {
		t.Fatalf("--verify: exit %d: %s%s", code, out, stderr)
	}
}

const qaViolence = "targets:\n  - name: a\n    provider: sim\n    model: m\n    sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}\n"

// QA findings 3 and 7: an observation edited to another verdict, an event
// whose claimed verdict was edited, and observations the event cites
// deleted: exit 1, the message naming the probe and the observation, for
// the text, --json and --verify of that JSON.
func TestEvidenceQATamperedDatabaseDoesNotVerify(t *testing.T) {
	for _, c := range []struct {
		name, want string
		tamper     func(db string, ev qaEvent)
	}{
		{"observation verdict", "recorded verdict allowed, but the event claims after", func(db string, ev qaEvent) {
			sqlIn(t, db, `UPDATE observations SET class = 'allowed', categories = '' WHERE id = ?`, ev.Probes[0].AfterObs)
		}},
		{"event claim", "but the event claims after blocked_input[hate]", func(db string, ev qaEvent) {
			sqlIn(t, db, `UPDATE event_probes SET after = 'blocked_input|hate' WHERE probe_id = ?`, ev.Probes[0].ProbeID)
		}},
		{"observations deleted", "which the event cites as its before observation, is not in the database", func(db string, ev qaEvent) {
			sqlIn(t, db, `DELETE FROM observations WHERE id IN (SELECT before_obs FROM event_probes UNION SELECT after_obs FROM event_probes)`)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, db := evidenceEnv(t, qaViolence, 4)
			ev := qaEventOfKind(t, cfg, db, "policy_change")
			c.tamper(db, ev)
			id := strconv.FormatInt(ev.ID, 10)
			stdout, stderr, code := runIn(t, "evidence", id, "--json", "--config", cfg, "--db", db)
			if code != 1 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, ev.Probes[0].ProbeID) {
				t.Fatalf("evidence --json: exit %d (want 1), stderr %q", code, stderr)
			}
			var rec claimsRecord
			if err := json.Unmarshal([]byte(stdout), &rec); err != nil || rec.AllVerified {
				t.Fatalf("record: %v, all_verified %v", err, rec.AllVerified)
			}
			file := filepath.Join(t.TempDir(), "e.json")
			os.WriteFile(file, []byte(stdout), 0o644)
			if _, stderr, code := runIn(t, "evidence", "--verify", file); code != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("--verify: exit %d (want 1): %s", code, stderr)
			}
			text, _, code := runIn(t, "evidence", id, "--config", cfg, "--db", db)
			if code != 1 || !strings.Contains(text, "record verifies (all_verified): false") || !strings.Contains(text, "DOES NOT VERIFY") {
				t.Errorf("text: exit %d (want 1)\n%s", code, text)
			}
		})
	}
}

// QA finding 9: the text says which probes reverted and when, and gives
// the event's history; the JSON has each probe's reverted_run.
func TestEvidenceQAReverts(t *testing.T) {
	cfg, db := evidenceEnv(t, `targets:
  - {name: p1, provider: sim, model: m, sim: {policies: [{from_run: 1, thresholds: {violence: 0.5}}, {from_run: 3, thresholds: {violence: 0.1}}, {from_run: 6, thresholds: {violence: 0.5}}]}}
  - {name: p2, provider: sim, model: m, sim: {policies: [{from_run: 1, thresholds: {violence: 0.5}}, {from_run: 3, thresholds: {violence: 0.1}}]}}
`, 7)
	ev := qaEventOfKind(t, cfg, db, "policy_change")
	id := strconv.FormatInt(ev.ID, 10)
	text, stderr, code := runIn(t, "evidence", id, "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("evidence: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"partially reverted", "**reverted in run 7**", "## History", "`partially_reverted`, target `p1`"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	stdout, _, _ := runIn(t, "evidence", id, "--json", "--config", cfg, "--db", db)
	var rec claimsRecord
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatal(err)
	}
	for _, p := range rec.Probes {
		if want := map[string]int64{"p1": 7, "p2": 0}[p.Target]; p.RevertedRun != want {
			t.Errorf("%s/%s: reverted_run %d, want %d", p.Target, p.ProbeID, p.RevertedRun, want)
		}
	}
}

// QA finding 12: --verify rejects a record with a duplicate key (exit 1,
// like any content record_sha256 does not cover).
func TestEvidenceQAVerifyDuplicateKey(t *testing.T) {
	cfg, db := evidenceEnv(t, qaViolence, 4)
	ev := qaEventOfKind(t, cfg, db, "policy_change")
	stdout, _, code := runIn(t, "evidence", strconv.FormatInt(ev.ID, 10), "--json", "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("evidence: exit %d", code)
	}
	i := strings.LastIndex(stdout, `"all_verified": true`)
	file := filepath.Join(t.TempDir(), "e.json")
	os.WriteFile(file, []byte(stdout[:i]+`"all_verified": false,`+"\n  "+stdout[i:]), 0o644)
	if _, stderr, code := runIn(t, "evidence", "--verify", file); code != 1 || !strings.Contains(stderr, `duplicate key "all_verified"`) {
		t.Errorf("--verify of a record with a duplicate key: exit %d (want 1): %s", code, stderr)
	}
}
