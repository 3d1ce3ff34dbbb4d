package probestest

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

// Fixture is the exact reading of one recorded body under testdata/.
type Fixture struct {
	// Prober builds the adapter for the replay server's base URL (the
	// endpoint the body answers).
	Prober func(t *testing.T, baseURL string) probes.Prober
	Status int               // default 200
	Header map[string]string // response headers (the meta file's, where it gives them)

	Class      probes.Class
	Stage      probes.Stage // compared exactly: "" means none
	Reason     string       // compared exactly
	Categories []string     // compared exactly: nil means none fired
	RetryAfter time.Duration
}

// FixtureBodies lists the recorded bodies under testdata/: every regular
// file but the .meta.yaml files beside them (the fuzz and golden
// directories are not fixtures).
func FixtureBodies(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatalf("testdata: %v", err)
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), ".meta.yaml") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// metaFor names the meta file of a fixture body: X.json → X.meta.yaml,
// X.sse.txt → X.sse.meta.yaml.
func metaFor(name string) string {
	return strings.TrimSuffix(name, filepath.Ext(name)) + ".meta.yaml"
}

// Fixtures pins every recorded body under testdata/: each must be listed in
// want (a fixture copied in without a test fails), must have a meta file
// naming its source, and is replayed over real HTTP on loopback and read
// exactly as want says — class, stage (none included), reason and
// categories, and the wait when RetryAfter is set. Whatever the fixture,
// a block carries a stage and is never retried, and a non-block carries
// none.
func Fixtures(t *testing.T, p probes.Probe, want map[string]Fixture) {
	t.Helper()
	bodies := FixtureBodies(t)
	have := map[string]bool{}
	for _, name := range bodies {
		have[name] = true
		if _, ok := want[name]; !ok {
			t.Errorf("testdata/%s is not replayed by any case", name)
		}
		meta, err := os.ReadFile(filepath.Join("testdata", metaFor(name)))
		if err != nil {
			t.Errorf("testdata/%s: no meta file naming its source: %v", name, err)
		} else if !bytes.Contains(meta, []byte("\nsource:")) && !bytes.HasPrefix(meta, []byte("source:")) {
			t.Errorf("testdata/%s: the meta file names no source", metaFor(name))
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		w := want[name]
		if !have[name] {
			t.Errorf("case %s: no such fixture in testdata/", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			if w.Prober == nil {
				t.Fatal("no Prober")
			}
			srv := NewReplay(t, Case{Fixture: name, Status: w.Status, Header: w.Header})
			_, got := Do(t, w.Prober(t, srv.URL), p)
			if srv.Requests() != 1 {
				t.Errorf("the replay server saw %d requests, want 1", srv.Requests())
			}
			if got.Class != w.Class {
				t.Errorf("class = %q, want %q (reason %q, message %q)", got.Class, w.Class, got.Reason, got.Message)
			}
			if got.Stage != w.Stage {
				t.Errorf("stage = %q, want %q", got.Stage, w.Stage)
			}
			if got.Reason != w.Reason {
				t.Errorf("reason = %q, want %q", got.Reason, w.Reason)
			}
			if strings.Join(got.Categories, ",") != strings.Join(w.Categories, ",") {
				t.Errorf("categories = %v, want %v", got.Categories, w.Categories)
			}
			if w.RetryAfter != 0 && got.RetryAfter != w.RetryAfter {
				t.Errorf("retry after = %v, want %v", got.RetryAfter, w.RetryAfter)
			}
			switch {
			case got.Class.IsBlock() && (got.Stage == probes.StageNone || got.Class.Retryable()):
				t.Errorf("block %s: stage %q, retryable %v: a block carries a stage and is never retried", got.Class, got.Stage, got.Class.Retryable())
			case !got.Class.IsBlock() && got.Stage != probes.StageNone:
				t.Errorf("%s carries stage %q: only a block has one", got.Class, got.Stage)
			}
		})
	}
}
