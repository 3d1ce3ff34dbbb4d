package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/evidence"
)

// rehashedFile writes r to a file with its record_sha256 recomputed the
// way a record is hashed (sha256 of its JSON with the field empty), as a
// hand edit that re-hashes would, and returns the file's path.
func rehashedFile(t *testing.T, r *evidence.Record) string {
	t.Helper()
	r.SHA256 = ""
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	r.SHA256 = hex.EncodeToString(sum[:])
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "e.json")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// A driftprobe-evidence/5 record whose observation was edited to be of
// another target, its hashes recomputed and no problem named, fails
// --verify (exit 1) naming the observation, whose it is and the flip's
// target and probe. A /4 record verifies with a note that it cannot be
// re-checked so.
func TestEvidenceVerifyChecksWhoseObservation(t *testing.T) {
	cfg, db := evidenceEnv(t, `targets:
  - {name: a, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}}
  - {name: b, provider: sim, model: m, sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}}
`, 4)
	ev := qaEventOfKind(t, cfg, db, "policy_change")
	stdout, stderr, code := runIn(t, "evidence", strconv.FormatInt(ev.ID, 10), "--json", "--config", cfg, "--db", db)
	if code != 0 {
		t.Fatalf("evidence: exit %d: %s", code, stderr)
	}
	read := func() *evidence.Record {
		var r evidence.Record
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	if out, stderr, code := runIn(t, "evidence", "--verify", rehashedFile(t, read())); code != 0 || strings.Contains(out, "note:") {
		t.Fatalf("--verify of an untouched record: exit %d: %s%s", code, out, stderr)
	}

	r := read()
	p := &r.Probes[0]
	other := map[string]string{"a": "b", "b": "a"}[p.Target]
	p.After.Target = other
	want := p.Target + "/" + p.ProbeID + ": after observation " + strconv.FormatInt(p.After.ID, 10) + ": it is an observation of target " + other +
		", probe " + p.ProbeID + ", not of the event's " + p.Target + "/" + p.ProbeID
	if _, stderr, code := runIn(t, "evidence", "--verify", rehashedFile(t, r)); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("--verify of a record whose observation is of target %s: exit %d (want 1): %s\nwant %q", other, code, stderr, want)
	}

	r = read()
	r.Format = evidence.FormatV4
	for i := range r.Probes {
		for _, o := range []*evidence.Observation{r.Probes[i].Before, r.Probes[i].After} {
			if o != nil {
				o.Target, o.ProbeID = "", ""
			}
		}
	}
	if out, stderr, code := runIn(t, "evidence", "--verify", rehashedFile(t, r)); code != 0 ||
		!strings.Contains(out, "note: format driftprobe-evidence/4 does not name each observation's target and probe") {
		t.Errorf("--verify of a format 4 record: exit %d: %s%s", code, out, stderr)
	}
}
