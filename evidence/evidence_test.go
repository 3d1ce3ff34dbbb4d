package evidence_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

func TestEvidenceIsVerifiable(t *testing.T) {
	e := testenv.New(t, `
targets:
  - name: a
    provider: sim
    model: m
    sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}
`)
	e.Runs(4)
	evs, err := diff.ListEvents(context.Background(), e.Store, diff.Filter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %v %v", evs, err)
	}
	rec, err := evidence.Build(context.Background(), e.Store, evs[0].ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.AllVerified || len(rec.Probes) != len(evs[0].Probes) {
		t.Fatalf("verified %v, %d probes", rec.AllVerified, len(rec.Probes))
	}
	for _, p := range rec.Probes {
		if !p.Request.Verified || !p.SameBytes || p.Before == nil || p.After == nil {
			t.Errorf("%s: %+v", p.ProbeID, p)
		}
		if p.Before.RequestID == "" || p.After.RequestID == "" || p.Before.RunID >= p.After.RunID || p.ProbeCanonical == "" {
			t.Errorf("%s: missing provider ids, runs or canonical probe", p.ProbeID)
		}
		if !strings.Contains(p.Request.Body, `"messages"`) || p.Before.Verdict.Key() == p.After.Verdict.Key() {
			t.Errorf("%s: request body %q, %v -> %v", p.ProbeID, p.Request.Body, p.Before.Verdict, p.After.Verdict)
		}
	}
	if err := evidence.Verify(rec); err != nil {
		t.Fatal(err)
	}
	// Tampering with the bytes is detected.
	rec.Probes[0].Request.Body = strings.Replace(rec.Probes[0].Request.Body, "m", "M", 1)
	if err := evidence.Verify(rec); err == nil {
		t.Fatal("tampered record verified")
	}
}

const noisy = `
targets:
  - name: n
    provider: sim
    model: m
    sim: {noise: 0.5, noise_band: 0.3}
`

const violence = `
targets:
  - name: a
    provider: sim
    model: m
    sim: {policies: [{from_run: 3, thresholds: {violence: 0.3}}]}
`

func eventOfKind(t *testing.T, e *testenv.Env, kind string) *diff.Event {
	t.Helper()
	evs, err := diff.ListEvents(context.Background(), e.Store, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == kind {
			return ev
		}
	}
	t.Fatalf("no %s event among %d", kind, len(evs))
	return nil
}

func exec(t *testing.T, e *testenv.Env, q string, args ...any) {
	t.Helper()
	if _, err := e.Store.SQL().ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func markdown(r *evidence.Record) string {
	var b strings.Builder
	evidence.WriteMarkdown(&b, r)
	return b.String()
}

// A record Build just produced verifies, also for a nondeterminism event
// whose probes cite no before (no baseline ever held) or no after
// observation: those sides are absent, said so, and not mismatches.
func TestNondeterminismEvidenceVerifies(t *testing.T) {
	e := testenv.New(t, noisy)
	e.Runs(6)
	ev := eventOfKind(t, e, diff.KindNondeterminism)
	rec, err := evidence.Build(context.Background(), e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := evidence.Verify(rec); err != nil {
		t.Fatalf("a record evidence just built does not verify: %v", err)
	}
	if !rec.AllVerified {
		t.Fatalf("absent observations counted as problems: %v", rec.Problems())
	}
	noBaseline := map[string]bool{}
	for _, ep := range ev.Probes {
		noBaseline[ep.ProbeID] = ep.BeforeObs == 0 && ep.Before.Class == ""
	}
	absent := 0
	for _, p := range rec.Probes {
		if noBaseline[p.ProbeID] && !strings.Contains(p.BeforeAbsent, "baseline") {
			t.Errorf("%s: no baseline ever held, before_absent %q does not say so", p.ProbeID, p.BeforeAbsent)
		}
		if p.Request.SHA256 == "" || (!p.Request.Verified && p.Request.Missing == "") {
			t.Errorf("%s: request %+v", p.ProbeID, p.Request)
		}
		for _, s := range []struct {
			o      *evidence.Observation
			absent string
		}{{p.Before, p.BeforeAbsent}, {p.After, p.AfterAbsent}} {
			if (s.o == nil) != (s.absent != "") {
				t.Errorf("%s: observation %v, absent %q: a missing side must say why, a present one must not", p.ProbeID, s.o != nil, s.absent)
			}
			if s.o == nil {
				absent++
			}
		}
		if (p.Before == nil || p.After == nil) && p.SameBytes {
			t.Errorf("%s: identical bytes before and after claimed with a side absent", p.ProbeID)
		}
	}
	md := markdown(rec)
	if strings.Contains(md, "sha256 ,") || strings.Contains(md, "sha256  (") || strings.Contains(md, "request  ,") {
		t.Errorf("blank request in the text:\n%s", md)
	}
	if absent > 0 && (!strings.Contains(md, "no observation in this record") || !strings.Contains(md, "not in this record (absent, so not checked)")) {
		t.Errorf("%d absent observations not said in the text:\n%s", absent, md)
	}
}

// Every way a side or its bytes can legitimately be absent: the record
// says which and why, still verifies, and finds the request bytes where it
// can. (An observation the event cites that the database lacks is no such
// way: see TestMissingCitedObservationDoesNotVerify.)
func TestAbsentEvidenceIsSaidAndVerifies(t *testing.T) {
	e := testenv.New(t, violence)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindPolicy)
	if len(ev.Probes) < 4 {
		t.Fatalf("need 4 probes, event has %d", len(ev.Probes))
	}
	p0, p1, p2, p3 := ev.Probes[0], ev.Probes[1], ev.Probes[2], ev.Probes[3]
	// p0: the event cites no observation at all.
	exec(t, e, `UPDATE event_probes SET before_obs = 0, after_obs = 0 WHERE event_id = ? AND probe_id = ?`, ev.ID, p0.ProbeID)
	// p1: untouched.
	// p2: retention dropped the before observation's bodies.
	exec(t, e, `UPDATE observations SET request_body = NULL, body = NULL, bodies_pruned = 1 WHERE id = ?`, p2.BeforeObs)
	// p3: no observation cited, and no stored copy of its request bytes anywhere.
	exec(t, e, `UPDATE event_probes SET before_obs = 0, after_obs = 0 WHERE event_id = ? AND probe_id = ?`, ev.ID, p3.ProbeID)
	exec(t, e, `UPDATE observations SET request_body = NULL, body = NULL, bodies_pruned = 1 WHERE probe_id = ?`, p3.ProbeID)

	rec, err := evidence.Build(context.Background(), e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := evidence.Verify(rec); err != nil || !rec.AllVerified {
		t.Fatalf("verify: %v, all_verified %v %v", err, rec.AllVerified, rec.Problems())
	}
	by := map[string]evidence.Probe{}
	for _, p := range rec.Probes {
		by[p.ProbeID] = p
	}
	if p := by[p0.ProbeID]; p.Before != nil || p.After != nil || p.BeforeAbsent == "" || p.AfterAbsent == "" ||
		!p.Request.Verified || p.Request.ObservationID == 0 || p.Request.Body == "" || p.SameBytes {
		t.Errorf("no observation cited: %+v", p)
	}
	if p := by[p1.ProbeID]; p.After == nil || p.Before == nil || !p.Request.Verified || !p.SameBytes {
		t.Errorf("untouched probe: %+v", p)
	}
	if p := by[p2.ProbeID]; p.Before == nil || p.Before.ResponseAbsent == "" || p.Before.ResponseOK || p.Before.Problem != "" ||
		!p.Request.Verified || p.Request.ObservationID != p2.AfterObs || !p.SameBytes {
		t.Errorf("before bodies pruned: %+v / %+v", p, p.Before)
	}
	if p := by[p3.ProbeID]; p.Request.Missing == "" || p.Request.Verified || p.Request.Body != "" || p.Request.SHA256 != p3.RequestSHA256 {
		t.Errorf("request bytes stored nowhere: %+v", p.Request)
	}
	md := markdown(rec)
	for _, want := range []string{"the bytes are not in this record", "response body not in this record",
		"which the event does not cite", "identical bytes before and after: not applicable"} {
		if !strings.Contains(md, want) {
			t.Errorf("text lacks %q:\n%s", want, md)
		}
	}
}

// A corrupt stored body does not abort the record: the observation says
// what is wrong, the record does not verify, and Verify says it is intact
// but records evidence that does not verify.
func TestCorruptBodyIsRecordedNotFatal(t *testing.T) {
	e := testenv.New(t, violence)
	e.Runs(4)
	ev := eventOfKind(t, e, diff.KindPolicy)
	ctx := context.Background()
	var obs int64
	var body []byte
	for _, p := range ev.Probes {
		if err := e.Store.SQL().QueryRowContext(ctx, `SELECT body FROM observations WHERE id = ?`, p.AfterObs).Scan(&body); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(string(body), "\xff\x06\x00\x00S2sTwO") {
			obs = p.AfterObs
			break
		}
	}
	if obs == 0 {
		t.Fatal("no S2-compressed after body to corrupt")
	}
	body[len(body)/2] ^= 0xff
	exec(t, e, `UPDATE observations SET body = ? WHERE id = ?`, body, obs)
	// And one stored request that no longer hashes to its fingerprint.
	var other int64
	for _, p := range ev.Probes {
		if p.AfterObs != obs {
			other = p.BeforeObs
			break
		}
	}
	exec(t, e, `UPDATE observations SET request_body = CAST(REPLACE(CAST(request_body AS TEXT), '"m"', '"M"') AS BLOB) WHERE id = ?`, other)

	rec, err := evidence.Build(ctx, e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatalf("a corrupt body aborted the record: %v", err)
	}
	if rec.AllVerified {
		t.Fatal("all_verified with a corrupt body")
	}
	var found, foundReq bool
	for _, p := range rec.Probes {
		if p.After != nil && p.After.ID == obs {
			// The damaged side is named; the intact request beside it
			// still counts.
			found = strings.Contains(p.After.Problem, "response body: stored body unreadable") && !p.After.ResponseOK &&
				!strings.Contains(p.After.Problem, "request")
		}
		if p.Before != nil && p.Before.ID == other {
			// The request comes from the intact after observation instead.
			foundReq = strings.Contains(p.Before.Problem, "stored request bytes hash to") && p.Request.Verified && p.Request.ObservationID == p.After.ID
		}
	}
	if !found || !foundReq {
		t.Fatalf("problems not recorded on the observations (corrupt body %v, request %v): %v", found, foundReq, rec.Problems())
	}
	if len(rec.Problems()) != 2 {
		t.Errorf("problems: %q", rec.Problems())
	}
	var ue *evidence.UnverifiedError
	if err := evidence.Verify(rec); !errors.As(err, &ue) || len(ue.Problems) != 2 || !strings.Contains(err.Error(), fmt.Sprint(obs)) {
		t.Fatalf("verify: %v", err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evidence.VerifyJSON(b); !errors.As(err, &ue) {
		t.Fatalf("VerifyJSON: %v", err)
	}
	if md := markdown(rec); !strings.Contains(md, "DOES NOT VERIFY") || !strings.Contains(md, "all request and response hashes verified: false") {
		t.Errorf("text:\n%s", md)
	}
	// Claiming all_verified over the problems is caught even with the
	// record's own hash redone (sha256 of the record with it empty).
	rec.AllVerified, rec.SHA256 = true, ""
	b, _ = json.Marshal(rec)
	sum := sha256.Sum256(b)
	rec.SHA256 = hex.EncodeToString(sum[:])
	if err := evidence.Verify(rec); err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "all_verified") {
		t.Fatalf("all_verified true over problems: %v", err)
	}
}

// Input that is not an evidence record is said to be so (not a hash
// mismatch); fields a record does not have fail verification.
func TestVerifyJSONNotARecord(t *testing.T) {
	for _, in := range []string{`{}`, `null`, `[]`, `"x"`, `{"format": "driftprobe-evidence/9", "event": {}, "record_sha256": "ab"}`,
		`{"format": "driftprobe-evidence/1"}`, `{"format": "driftprobe-evidence/1", "event": {"id": 1}}`, `not json`} {
		var nr *evidence.NotRecordError
		if _, err := evidence.VerifyJSON([]byte(in)); !errors.As(err, &nr) {
			t.Errorf("%s: %v, want a NotRecordError", in, err)
		}
	}
	b := previousRecord(t)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["comment"] = "not covered by the hash"
	b, _ = json.Marshal(m)
	var nr *evidence.NotRecordError
	if _, err := evidence.VerifyJSON(b); err == nil || errors.As(err, &nr) || !strings.Contains(err.Error(), "comment") {
		t.Fatalf("unknown field: %v", err)
	}
}

// A record written before absences were recorded (testdata, from the
// previous format) still verifies: every field added since is omitted
// when empty, so the record's own hash is unchanged.
func TestPreviousRecordsStillVerify(t *testing.T) {
	b := previousRecord(t)
	r, err := evidence.VerifyJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if !r.AllVerified || len(r.Probes) != 3 {
		t.Fatalf("all_verified %v, %d probes", r.AllVerified, len(r.Probes))
	}
}

// Edits that keep record_sha256 consistent are still caught where the
// record's own claims no longer hold: request bytes that do not hash to
// the fingerprint (also when re-marked missing or unverified), and a
// response body marked verified that does not hash to its sha256.
func TestVerifyCatchesConsistentEdits(t *testing.T) {
	b := previousRecord(t)
	for name, edit := range map[string]func(r *evidence.Record){
		"request body": func(r *evidence.Record) { r.Probes[0].Request.Body += " " },
		"request body marked missing": func(r *evidence.Record) {
			r.Probes[0].Request.Body += " "
			r.Probes[0].Request.Verified = false
			r.Probes[0].Request.Missing = "x"
		},
		"request body marked unverified": func(r *evidence.Record) { r.Probes[0].Request.Verified = false },
		"after response body":            func(r *evidence.Record) { r.Probes[0].After.ResponseBody += " " },
		"before response body":           func(r *evidence.Record) { r.Probes[1].Before.ResponseBody = `{"choices":[]}` },
	} {
		var r evidence.Record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		edit(&r)
		if err := r.Rehash(); err != nil {
			t.Fatal(err)
		}
		if err := evidence.Verify(&r); err == nil {
			t.Errorf("%s: edited record verifies", name)
		}
	}
}

// The Markdown view renders provider and prompt text inert: no control or
// bidi characters reach a terminal or a rendered page, and no backtick in
// a provider's request id closes its code span.
func TestMarkdownRendersProviderTextInert(t *testing.T) {
	b := previousRecord(t)
	var r evidence.Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	hostile := "x\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 `y` <b>@here\u202egnp.exe"
	r.Probes[0].After.RequestID = hostile
	r.Probes[0].After.Reason = hostile
	r.Probes[0].Request.Body += hostile
	var out bytes.Buffer
	evidence.WriteMarkdown(&out, &r)
	md := out.String()
	for _, bad := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(md, bad) {
			t.Errorf("markdown carries %q", bad)
		}
	}
	// Outside the fenced request body (where text is literal), the
	// observation line escapes markup and backticks.
	var line string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "- after:") && strings.Contains(l, "click") {
			line = l
		}
	}
	if line == "" || strings.Contains(line, "<b>") || strings.Contains(line, "`y`") {
		t.Errorf("observation line %q", line)
	}
}

// previousRecord is the bytes of a record written in the previous format
// (testdata), which must keep verifying.
func previousRecord(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/record-v1-pre-absences.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}
