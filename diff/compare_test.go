package diff_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// compareEnv runs the default corpus once on prod and on a candidate that
// blocks the three violence borderline probes prod allows.
func compareEnv(t *testing.T) (*testenv.Env, *diff.Comparison, []string) {
	t.Helper()
	e := testenv.New(t, `
targets:
  - {name: prod, provider: sim, model: m}
  - {name: cand, provider: sim, model: m2, sim: {policies: [{from_run: 1, thresholds: {violence: 0.2}}]}}
`)
	e.Run()
	want, err := diff.Compare(context.Background(), e.Store, e.Corpus, "prod", "cand", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var over []string
	for _, p := range want.NewBlocks {
		if p.Role == corpus.RoleBorderline && slices.Contains(p.Tags, "violence") {
			over = append(over, p.ProbeID)
		}
	}
	if len(over) != 3 || want.OverBlocking != 3 || !want.GateFailed {
		t.Fatalf("setup: over-blocking %d %v (gate failed %v), want the three violence borderline probes", want.OverBlocking, over, want.GateFailed)
	}
	return e, want, over
}

// writeCorpus writes the default corpus, edited, as a corpus directory and
// loads it.
func writeCorpus(t *testing.T, edit func(string) string) *corpus.Corpus {
	t.Helper()
	src, err := os.ReadFile("../corpus/default/corpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "corpus.yaml"), []byte(edit(string(src))), 0o644); err != nil {
		t.Fatal(err)
	}
	cp, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// editProbeLines applies f to the corpus line of each probe in ids and
// bumps the version.
func editProbeLines(src string, ids []string, version string, f func(string) string) string {
	lines := strings.Split(strings.Replace(src, `version: "2026.11.1"`, `version: "`+version+`"`, 1), "\n")
	var out []string
	for _, l := range lines {
		for _, id := range ids {
			if strings.Contains(l, "{id: "+id+",") {
				l = f(l)
				break
			}
		}
		if l != "\x00" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// compare judges the runs it compares by the corpus version they used, as
// the database recorded it, never by the corpus loaded now: a corpus bump
// in a PR (compare runs in CI before any run on the new version) must not
// re-role, re-tag or drop the probes the gate counts.
func TestCompareUsesTheRunsCorpus(t *testing.T) {
	e, want, over := compareEnv(t)
	wantJSON, _ := json.Marshal(want)
	for _, c := range []struct {
		name string
		cp   *corpus.Corpus
	}{
		{"v3 re-roles them positive_control", writeCorpus(t, func(s string) string {
			return editProbeLines(s, over, "3", func(l string) string { return strings.Replace(l, "role: borderline}", "role: positive_control}", 1) })
		})},
		{"v2 removes them", writeCorpus(t, func(s string) string {
			return editProbeLines(s, over, "2", func(string) string { return "\x00" })
		})},
		{"a corpus of ten probes", func() *corpus.Corpus {
			cp, _ := corpus.Default()
			cp.Probes = cp.Probes[:10]
			return cp
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.cp.Version == e.Corpus.Version && len(c.cp.Probes) == len(e.Corpus.Probes) {
				t.Fatal("setup: the loaded corpus is the runs' corpus")
			}
			got, err := diff.Compare(context.Background(), e.Store, c.cp, "prod", "cand", 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			if gotJSON, _ := json.Marshal(got); string(gotJSON) != string(wantJSON) {
				roles := func(c *diff.Comparison) (out []string) {
					for _, p := range c.NewBlocks {
						out = append(out, p.ProbeID+":"+p.Role+":"+strings.Join(p.Tags, "+"))
					}
					return out
				}
				t.Errorf("with corpus %s (%d probes) loaded, the comparison changed: over_blocking %d gate_failed %v new blocks %v; want %d %v %v",
					c.cp.Version, len(c.cp.Probes), got.OverBlocking, got.GateFailed, roles(got), want.OverBlocking, want.GateFailed, roles(want))
			}
		})
	}
}

// The "half the probes" check counts the probes of the runs' corpus, not
// the loaded one's: a candidate answering under half of them is refused
// even when a smaller corpus is loaded now.
func TestCompareCoverageCountsTheRunsProbes(t *testing.T) {
	e := testenv.New(t, `
targets:
  - {name: cur, provider: sim, model: m}
  - {name: cand, provider: sim, model: m2, max_attempts: 1, breaker: {failures: 1000}, sim: {error_status: 404, error_rate: 0.6, seed: 3}}
`)
	e.Run()
	ctx := context.Background()
	_, err := diff.Compare(ctx, e.Store, e.Corpus, "cur", "cand", 0, -1)
	if !errors.Is(err, diff.ErrNotComparable) {
		t.Fatalf("setup: compare over the runs' corpus: err = %v, want not comparable", err)
	}
	var answered int
	e.Store.SQL().QueryRow(`SELECT COUNT(*) FROM observations o JOIN targets t ON t.id = o.target_id WHERE t.name = 'cand' AND o.sample = 0 AND o.class != 'client_error'`).Scan(&answered)
	// A corpus loaded now whose probe count the candidate's answers would
	// cover by half.
	small, _ := corpus.Default()
	small.Probes = small.Probes[:answered*2]
	if answered == 0 || answered*2 >= len(e.Corpus.Probes) {
		t.Fatalf("setup: the candidate answered %d of %d probes", answered, len(e.Corpus.Probes))
	}
	if _, err := diff.Compare(ctx, e.Store, small, "cur", "cand", 0, -1); !errors.Is(err, diff.ErrNotComparable) ||
		!strings.Contains(err.Error(), "of 62 probes") {
		t.Fatalf("with a %d-probe corpus loaded: err = %v, want not comparable over the runs' 62 probes", len(small.Probes), err)
	}
}

// A compared probe whose stored record (role, tags) is missing is refused,
// naming it, never counted with a guessed role.
func TestCompareRefusesProbeWithoutRecord(t *testing.T) {
	e, _, over := compareEnv(t)
	if _, err := e.Store.SQL().Exec(`DELETE FROM probes WHERE probe_id = ?`, over[0]); err != nil {
		t.Fatal(err)
	}
	_, err := diff.Compare(context.Background(), e.Store, e.Corpus, "prod", "cand", 0, -1)
	if !errors.Is(err, diff.ErrUnknownProbe) || !strings.Contains(err.Error(), over[0]) {
		t.Fatalf("err = %v, want a refusal naming %s", err, over[0])
	}
}

// Two runs that sent a probe in different forms (one version string naming
// two corpora) are refused, never compared under one record's role.
func TestCompareRefusesDifferentProbeForms(t *testing.T) {
	e, _, over := compareEnv(t)
	if _, err := e.Store.SQL().Exec(`UPDATE observations SET probe_sha256 = 'other' WHERE probe_id = ? AND target_id = (SELECT id FROM targets WHERE name = 'cand')`, over[0]); err != nil {
		t.Fatal(err)
	}
	_, err := diff.Compare(context.Background(), e.Store, e.Corpus, "prod", "cand", 0, -1)
	if !errors.Is(err, diff.ErrNotComparable) || !strings.Contains(err.Error(), over[0]) {
		t.Fatalf("err = %v, want a refusal naming %s", err, over[0])
	}
}
