package evidence_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/storage"
)

// anthropicEvent runs an Anthropic target against a loopback Messages API
// answering with the anthropic package's fixtures (end_turn, then a
// refusal for about a quarter of the probes from run 3) and returns the
// event it detects. Its requests pin anthropic-version.
func anthropicEvent(t *testing.T) (*testenv.Env, *diff.Event) {
	t.Helper()
	fixture := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "probes", "anthropic", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	allowed, refusal := fixture("message_200_end_turn_docs.json"), fixture("stop_reason_refusal_docs.json")
	var tighten atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if sum := sha256.Sum256(body.Bytes()); tighten.Load() && sum[0] < 0x40 {
			w.Write(refusal)
			return
		}
		w.Write(allowed)
	}))
	t.Cleanup(up.Close)
	t.Setenv("DRIFTPROBE_TEST_ANTHROPIC_KEY", "sk-ant-test-0123456789")
	e := testenv.New(t, "targets:\n  - {name: claude, provider: anthropic, model: claude-sonnet-4-5, api_key_env: DRIFTPROBE_TEST_ANTHROPIC_KEY, base_url: \""+up.URL+"\"}\n")
	e.Runs(2)
	tighten.Store(true)
	e.Runs(2)
	return e, eventOfKind(t, e, diff.KindPolicy)
}

const pinned = "anthropic-version: 2023-06-01\n"

// The record of an event on requests with a pinned header carries the
// header beside method, path and body; Build verified them together, and
// Verify re-hashes them together: a changed or dropped header is caught
// like changed bytes.
func TestPinnedHeadersInRecord(t *testing.T) {
	e, ev := anthropicEvent(t)
	rec, err := evidence.Build(context.Background(), e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.AllVerified {
		t.Fatalf("the record does not verify: %v", rec.Problems())
	}
	for _, p := range rec.Probes {
		if p.Request.PinnedHeaders != pinned || !p.Request.Verified || !p.SameBytes {
			t.Fatalf("%s: %+v", p.ProbeID, p.Request)
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evidence.VerifyJSON(b); err != nil {
		t.Fatalf("VerifyJSON: %v", err)
	}
	md := markdown(rec)
	if !strings.Contains(md, "/v1/messages`, pinned headers `anthropic-version: 2023-06-01`, sha256") {
		t.Errorf("markdown does not show the pinned header:\n%.1500s", md)
	}

	for name, edit := range map[string]func(q *evidence.Request){
		"changed": func(q *evidence.Request) { q.PinnedHeaders = "anthropic-version: 2023-01-01\n" },
		"dropped": func(q *evidence.Request) { q.PinnedHeaders = "" },
		"added":   func(q *evidence.Request) { q.PinnedHeaders += "x-extra: 1\n" },
	} {
		var r evidence.Record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		edit(&r.Probes[0].Request)
		if err := r.Rehash(); err != nil {
			t.Fatal(err)
		}
		if err := evidence.Verify(&r); err == nil || !strings.Contains(err.Error(), "request sha256") {
			t.Errorf("%s pinned header: %v", name, err)
		}
	}
	// A request marked missing carries no header either.
	var r evidence.Record
	json.Unmarshal(b, &r)
	r.Probes[0].Request = evidence.Request{SHA256: r.Probes[0].Request.SHA256, Missing: "gone", PinnedHeaders: pinned}
	r.Rehash()
	if err := evidence.Verify(&r); err == nil || !strings.Contains(err.Error(), "marked missing") {
		t.Errorf("missing request with a pinned header: %v", err)
	}

	// With the bodies of both cited observations pruned, the bytes come
	// from another stored observation of the same request, verified with
	// its pinned header too.
	ep := ev.Probes[0]
	exec(t, e, `UPDATE observations SET request_body = NULL, body = NULL, bodies_pruned = 1 WHERE id IN (?, ?)`, ep.BeforeObs, ep.AfterObs)
	pruned, err := evidence.Build(context.Background(), e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pruned.Probes {
		if p.Target != ep.Target || p.ProbeID != ep.ProbeID {
			continue
		}
		if q := p.Request; !q.Verified || q.Missing != "" || q.PinnedHeaders != pinned || q.ObservationID == 0 || q.ObservationID == ep.BeforeObs || q.ObservationID == ep.AfterObs {
			t.Errorf("request read from another observation: %+v", q)
		}
	}
	if !pruned.AllVerified {
		t.Errorf("pruned record: %v", pruned.Problems())
	}

	// The header is untrusted text in the markdown, like the path: one
	// whole code span, control and bidi characters out.
	r = evidence.Record{}
	json.Unmarshal(b, &r)
	r.Probes[0].Request.PinnedHeaders = "x-evil: `@org/team` \u202e\x1b[31m[link](https://example.com)\n"
	md = markdown(&r)
	if strings.ContainsAny(md, "\u202e\x1b") || !strings.Contains(md, "pinned headers ``x-evil: `@org/team`  [31m[link](https://example.com)``, sha256") {
		t.Errorf("pinned header rendered live:\n%.1500s", md)
	}
}

// A database written before headers could be pinned (schema 9: no
// request_pinned column) is checked as it is, refused by read commands,
// and once migrated its observations verify as before: the record of its
// event is byte-for-byte the one built before, without pinned_headers.
func TestSchema9EvidenceVerifiesAfterMigration(t *testing.T) {
	ctx := context.Background()
	e := testenv.New(t, violence)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindPolicy)
	exec(t, e, `UPDATE event_updates SET target_id = 0`) // as a schema-9 binary recorded them
	exec(t, e, `UPDATE run_targets SET origin = ''`)     // (it kept no origins)
	exec(t, e, `UPDATE event_probes SET origin = ''`)
	before, err := evidence.Build(ctx, e.Store, ev.ID, time.Unix(0, 0))
	if err != nil || !before.AllVerified {
		t.Fatalf("record: %v %v", err, before.Problems())
	}
	want, _ := json.Marshal(before)
	if bytes.Contains(want, []byte("pinned_headers")) {
		t.Fatalf("a record without pinned headers names them: %s", want)
	}
	exec(t, e, `ALTER TABLE observations DROP COLUMN request_pinned`)
	exec(t, e, `ALTER TABLE event_updates DROP COLUMN target_id`)
	exec(t, e, `ALTER TABLE event_probes DROP COLUMN withdrawn`)
	exec(t, e, `ALTER TABLE runs DROP COLUMN detected`)
	exec(t, e, `ALTER TABLE event_updates DROP COLUMN kind`)
	exec(t, e, `ALTER TABLE run_targets DROP COLUMN origin`)
	exec(t, e, `ALTER TABLE input_changes DROP COLUMN cause`)
	exec(t, e, `ALTER TABLE probe_states DROP COLUMN origin`)
	exec(t, e, `DROP TABLE parked_states`)
	exec(t, e, `ALTER TABLE event_probes DROP COLUMN origin`)
	exec(t, e, `ALTER TABLE run_targets DROP COLUMN model`)
	exec(t, e, `DROP TABLE github_holds`)
	exec(t, e, `DROP TABLE origin_scope_unnamed`)
	exec(t, e, `ALTER TABLE run_targets DROP COLUMN detected`)
	exec(t, e, `PRAGMA user_version = 9`)
	e.Close()

	ro, err := storage.OpenReadOnly(ctx, e.Config.Database)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ro.Check(ctx, storage.CheckOptions{Full: true})
	ro.Close()
	if err != nil || !rep.OK || rep.Observations == 0 {
		t.Fatalf("check of schema 9: %+v %v", rep, err)
	}
	if _, err := storage.OpenReadCurrent(ctx, e.Config.Database); !errors.Is(err, storage.ErrOlderSchema) {
		t.Fatalf("schema 9 opened for reading: %v", err)
	}

	e.Reload() // migrates
	if v, _ := e.Store.SchemaVersion(ctx); v != storage.SchemaLatest() || v < 10 {
		t.Fatalf("schema %d after migration", v)
	}
	after, err := evidence.Build(ctx, e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(after)
	if !bytes.Equal(got, want) {
		t.Fatalf("the record changed with the migration:\n got %.600s\nwant %.600s", got, want)
	}
	if _, err := evidence.VerifyJSON(got); err != nil {
		t.Fatal(err)
	}
	if rep, err := e.Store.Check(ctx, storage.CheckOptions{Full: true}); err != nil || !rep.OK {
		t.Fatalf("check after migration: %+v %v", rep, err)
	}
}
