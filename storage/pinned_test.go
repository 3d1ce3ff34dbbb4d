package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/anthropic"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// An Anthropic request, as the runner stores it, reads back with its
// pinned header: the fingerprint re-computed from the stored request is
// the one the request had, and the rebuilt request carries the header.
func TestPinnedRequestRoundTrip(t *testing.T) {
	ctx := context.Background()
	p, err := probes.New(probes.Target{Name: "a", Provider: "anthropic", Model: "claude-sonnet-4-5", Endpoint: "chat", MaxTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	if req.PinnedHeaders() != "anthropic-version: "+anthropic.DefaultVersion+"\n" {
		t.Fatalf("pinned %q", req.PinnedHeaders())
	}
	d := openTestDB(t)
	run, tgt := setupRun(t, d)
	o := &Observation{RunID: run, TargetID: tgt, ProbeID: "p", ProbeSHA256: "x", RequestSHA256: req.SHA256(),
		RequestMethod: req.Method, RequestPath: req.Path, RequestBody: req.Body, RequestPinned: req.PinnedHeaders(),
		Result: probes.Result{Class: probes.Allowed}, HTTPStatus: 200}
	if err := d.InsertObservations(ctx, []*Observation{o}); err != nil {
		t.Fatal(err)
	}
	back, err := d.Observation(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	rq, _, err := d.ObservationBodies(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if back.RequestPinned != req.PinnedHeaders() || back.RequestFingerprint(rq) != req.SHA256() {
		t.Fatalf("read back pinned %q, fingerprint %s, want %s", back.RequestPinned, back.RequestFingerprint(rq), req.SHA256())
	}
	rebuilt := back.Request(rq)
	if rebuilt.SHA256() != req.SHA256() || rebuilt.Header.Get(anthropic.VersionHeader) != anthropic.DefaultVersion || rebuilt.PinnedHeaders() != back.RequestPinned {
		t.Fatalf("rebuilt request %+v", rebuilt)
	}
	if rep, err := d.Check(ctx, CheckOptions{}); err != nil || !rep.OK || rep.Observations != 1 {
		t.Fatalf("check: %+v %v", rep, err)
	}
	// A request pinning nothing rebuilds without headers, as before.
	o.RequestPinned = ""
	if r := o.Request([]byte("{}")); r.Header != nil || r.Pinned != nil || r.SHA256() != probes.Fingerprint(o.RequestMethod, o.RequestPath, []byte("{}"), "") {
		t.Fatalf("unpinned request rebuilt as %+v", r)
	}
}

// schema9 creates a database as driftprobe wrote it before headers could
// be pinned: migrations 0001-0009 applied, nothing else.
func schema9(t *testing.T, p string) *DB {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 10 || ms[9].name != "0010_request_pinned.sql" {
		t.Fatalf("migration 10 is %v", ms[9:])
	}
	sdb, err := sql.Open("sqlite", "file:"+p+"?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	sdb.SetMaxOpenConns(1)
	for _, m := range ms[:9] {
		if _, err := sdb.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if _, err := sdb.Exec(fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
			t.Fatal(err)
		}
	}
	return &DB{db: sdb, path: p, now: func() time.Time { return time.Now().UTC() }}
}

// An existing schema-9 database (its Anthropic rows fingerprinted, as
// they then were, over method, path and body alone) is checked as it is
// by db check, refused by read commands, and upgraded by Open: its rows
// read back with no pinned header and keep verifying, beside new rows
// that carry one.
func TestSchema9DatabaseUpgrades(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "old.db")
	old := schema9(t, p)
	// The run as a schema-9 driftprobe began it (runs had no detected
	// column then).
	res, err := old.db.Exec(`INSERT INTO runs (started_at, status, corpus_name, corpus_version, corpus_hash, config_hash, host, version, note) VALUES (?, 'running', 'c', '1', '', '', '', '', '')`, ts(old.now()))
	if err != nil {
		t.Fatal(err)
	}
	run, _ := res.LastInsertId()
	tgt, err := old.EnsureTarget(ctx, TargetRow{Name: "sim", Provider: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	legacy := func(method, path string, body []byte) string {
		s := sha256.Sum256([]byte(method + "\n" + path + "\n" + string(body)))
		return hex.EncodeToString(s[:])
	}
	const n = 40
	for i := 0; i < n; i++ {
		body := fmt.Appendf(nil, `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"probe %d"}]}`, i)
		answer := fmt.Appendf(nil, `{"type":"message","stop_reason":"end_turn","content":[{"type":"text","text":"answer %d"}]}`, i)
		if i%3 == 0 {
			body = append(body, make([]byte, 2048)...) // stored compressed
		}
		sum := sha256.Sum256(answer)
		if _, err := old.db.Exec(`INSERT INTO observations (run_id, target_id, probe_id, probe_sha256, sample, request_sha256, request_method, request_path, request_body,
			class, http_status, body_sha256, body, observed_at) VALUES (?, ?, ?, 'x', 0, ?, 'POST', '/v1/messages', ?, 'allowed', 200, ?, ?, ?)`,
			run, tgt, fmt.Sprintf("p%02d", i), legacy("POST", "/v1/messages", body), encodeBody(body), hex.EncodeToString(sum[:]), encodeBody(answer), ts(time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	// db check reads schema 9 as it is.
	ro, err := OpenReadOnly(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ro.Check(ctx, CheckOptions{Full: true})
	if v, _ := ro.SchemaVersion(ctx); v != 9 {
		t.Errorf("schema %d, want 9", v)
	}
	ro.Close()
	if err != nil || !rep.OK || rep.Observations != n || rep.BodiesChecked != n {
		t.Fatalf("check of schema 9: %+v %v", rep, err)
	}
	if _, err := OpenReadCurrent(ctx, p); !errors.Is(err, ErrOlderSchema) {
		t.Fatalf("read command on schema 9: %v, want ErrOlderSchema", err)
	}

	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, _ := d.SchemaVersion(ctx); v != SchemaLatest() || v < 10 {
		t.Fatalf("migrated to schema %d, latest %d", v, SchemaLatest())
	}
	obs, err := d.Observations(ctx, run, 0)
	if err != nil || len(obs) != n {
		t.Fatalf("%d observations, %v", len(obs), err)
	}
	for _, o := range obs {
		rq, _, err := d.ObservationBodies(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if o.RequestPinned != "" || o.RequestFingerprint(rq) != o.RequestSHA256 || o.Request(rq).SHA256() != o.RequestSHA256 {
			t.Fatalf("observation %d after migration: pinned %q, fingerprint %s, recorded %s", o.ID, o.RequestPinned, o.RequestFingerprint(rq), o.RequestSHA256)
		}
	}
	// New rows pin their header; old and new verify side by side.
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"new"}]}`)
	const pin = "anthropic-version: 2023-06-01\n"
	o := &Observation{RunID: run, TargetID: tgt, ProbeID: "new", ProbeSHA256: "x", RequestSHA256: probes.Fingerprint("POST", "/v1/messages", body, pin),
		RequestMethod: "POST", RequestPath: "/v1/messages", RequestBody: body, RequestPinned: pin, Result: probes.Result{Class: probes.Allowed}, HTTPStatus: 200}
	if err := d.InsertObservations(ctx, []*Observation{o}); err != nil {
		t.Fatal(err)
	}
	if rep, err := d.Check(ctx, CheckOptions{Full: true}); err != nil || !rep.OK || rep.Observations != n+1 {
		t.Fatalf("check after migration: %+v %v", rep, err)
	}
}
