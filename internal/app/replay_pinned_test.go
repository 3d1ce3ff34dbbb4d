package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// anthropicUpstream is a loopback Anthropic Messages API answering with the
// anthropic package's recorded fixtures: end_turn (allowed) until
// tightened, then a streaming-classifier refusal (blocked_output) for
// about a quarter of the probes, chosen by their body bytes.
type anthropicUpstream struct {
	*httptest.Server
	tighten atomic.Bool
	n       atomic.Int64

	mu       sync.Mutex
	versions map[string]int // anthropic-version header → requests
}

func newAnthropicUpstream(t *testing.T) *anthropicUpstream {
	t.Helper()
	fixture := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "probes", "anthropic", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	allowed, refusal := fixture("message_200_end_turn_docs.json"), fixture("stop_reason_refusal_docs.json")
	u := &anthropicUpstream{versions: map[string]int{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.versions[r.Header.Get("anthropic-version")]++
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", fmt.Sprintf("req_test_%06d", u.n.Add(1)))
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") == "" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"type":"error","error":{"type":"not_found_error","message":"not found"}}`))
			return
		}
		if sum := sha256.Sum256(body); u.tighten.Load() && sum[0] < 0x40 {
			w.Write(refusal)
			return
		}
		w.Write(allowed)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *anthropicUpstream) seen() map[string]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]int{}
	for k, v := range u.versions {
		out[k] = v
	}
	return out
}

// anthropicEnv is a system with one Anthropic target on up.
func anthropicEnv(t *testing.T, up *anthropicUpstream) *testenv.Env {
	t.Helper()
	t.Setenv("DRIFTPROBE_TEST_ANTHROPIC_KEY", "sk-ant-test-0123456789")
	return testenv.New(t, `
targets:
  - name: claude
    provider: anthropic
    model: claude-sonnet-4-5
    api_key_env: DRIFTPROBE_TEST_ANTHROPIC_KEY
    base_url: "`+up.URL+`"
`)
}

const pinnedVersion = "anthropic-version: 2023-06-01\n"

// A real run of an Anthropic target, whose requests pin the
// anthropic-version header (part of the fingerprint), stores evidence that
// verifies end to end: db check finds every stored request hashing to its
// fingerprint, the evidence record of the provider change it detects
// verifies, and replay reads every stored answer as recorded with its
// request intact. Without the pinned header stored beside method, path and
// body, every one of those would call the new observations damaged.
func TestAnthropicPinnedEvidenceEndToEnd(t *testing.T) {
	ctx := context.Background()
	up := newAnthropicUpstream(t)
	e := anthropicEnv(t, up)
	e.Runs(2)
	up.tighten.Store(true)
	last := e.Runs(2)

	if v := up.seen(); len(v) != 1 || v["2023-06-01"] == 0 {
		t.Fatalf("anthropic-version headers sent: %v", v)
	}
	obs, err := e.Store.Observations(ctx, last.Summary.RunID, 0)
	if err != nil || len(obs) == 0 {
		t.Fatalf("observations: %d, %v", len(obs), err)
	}
	blocked := 0
	for _, o := range obs {
		if o.RequestPinned != pinnedVersion {
			t.Fatalf("observation %d: request_pinned %q, want %q", o.ID, o.RequestPinned, pinnedVersion)
		}
		rq, _, err := e.Store.ObservationBodies(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.Request(rq); got.SHA256() != o.RequestSHA256 || got.Header.Get("anthropic-version") != "2023-06-01" {
			t.Fatalf("observation %d: rebuilt request hashes to %s, recorded %s", o.ID, got.SHA256(), o.RequestSHA256)
		}
		if o.RequestSHA256 == probes.Fingerprint(o.RequestMethod, o.RequestPath, rq, "") {
			t.Fatalf("observation %d: fingerprint without the pinned header", o.ID)
		}
		if o.Result.Class == probes.BlockedOutput {
			blocked++
		}
	}
	if blocked == 0 || blocked == len(obs) {
		t.Fatalf("%d of %d answers blocked after tightening; the upstream should block some", blocked, len(obs))
	}

	// db check (full): every stored request re-hashes to its fingerprint.
	rep, err := e.Store.Check(ctx, storage.CheckOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.ProblemCount != 0 || rep.BodiesChecked == 0 || rep.BodiesChecked != rep.Observations {
		t.Fatalf("db check: %+v", rep)
	}

	// The evidence of the event verifies, as `driftprobe evidence --verify`
	// reads a written record.
	evs, err := diff.ListEvents(ctx, e.Store, diff.Filter{})
	if err != nil || len(evs) != 1 || evs[0].Kind != diff.KindPolicy {
		t.Fatalf("events: %v %v", evs, err)
	}
	rec, err := evidence.Build(ctx, e.Store, evs[0].ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.AllVerified || len(rec.Probes) == 0 {
		t.Fatalf("record: all_verified %v, %d probes: %v", rec.AllVerified, len(rec.Probes), rec.Problems())
	}
	for _, p := range rec.Probes {
		if !p.Request.Verified || !p.SameBytes || p.Request.PinnedHeaders != pinnedVersion || p.Before == nil || p.After == nil {
			t.Errorf("%s: request %+v, same bytes %v", p.ProbeID, p.Request, p.SameBytes)
		}
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evidence.VerifyJSON(b); err != nil {
		t.Fatalf("the record does not verify: %v", err)
	}
	if !strings.Contains(string(b), `"pinned_headers": "anthropic-version: 2023-06-01\n"`) {
		t.Errorf("the record does not carry the pinned header:\n%.2000s", b)
	}

	// Replay: every stored answer reads as recorded, its request intact.
	for run := int64(1); run <= last.Summary.RunID; run++ {
		rr, err := app.Replay(ctx, e.Store, run, e.Targets, "")
		if err != nil {
			t.Fatal(err)
		}
		if rr.Replayed == 0 || rr.Same != rr.Replayed || len(rr.Diffs) != 0 {
			t.Fatalf("replay of run %d: %s: %+v", run, rr, rr.Diffs)
		}
	}

	// A stored pinned header that no longer matches is damage all three
	// find: the evidence is the bytes and the header.
	id := rec.Probes[0].After.ID
	if _, err := e.Store.SQL().ExecContext(ctx, `UPDATE observations SET request_pinned = 'anthropic-version: 2023-01-01'||char(10) WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	rep, err = e.Store.Check(ctx, storage.CheckOptions{})
	if err != nil || rep.OK || rep.ProblemCount != 1 || rep.Problems[0].ObservationID != id || rep.Problems[0].Problem != storage.ProblemRequestMismatch {
		t.Errorf("db check of a changed pinned header: %+v %v", rep, err)
	}
	if rec, err := evidence.Build(ctx, e.Store, evs[0].ID, time.Unix(0, 0)); err != nil || rec.AllVerified {
		t.Errorf("evidence of a changed pinned header verified (%v)", err)
	}
	run, err := e.Store.Observation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := app.Replay(ctx, e.Store, run.RunID, e.Targets, "")
	if err != nil || len(rr.Diffs) != 1 || rr.Diffs[0].ObservationID != id || rr.Diffs[0].RequestIntact || !rr.Diffs[0].BodyIntact {
		t.Errorf("replay of a changed pinned header: %v %+v", err, rr)
	}
}
