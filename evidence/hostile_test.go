package evidence_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

// hostileText is what a provider or a proxy can put in a header or an
// error body: invalid UTF-8, NUL and other control bytes, an escape
// sequence, line and paragraph separators, a bidi override, characters
// json.Marshal HTML-escapes, a literal U+FFFD, and markup.
const hostileText = "req-1-\xe9\x00\x01\x7f\x1b[2J\u2028\u2029\u202e<b>&amp;</b>\ufffd\xff\xfe\"\\`@octocat #9"

// writeLikeTheCLI writes r as `driftprobe evidence --json` does (indented,
// HTML characters not escaped).
func writeLikeTheCLI(t *testing.T, r *evidence.Record) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Finding 1: a record built from observations whose provider strings hold
// invalid UTF-8 and control bytes verifies once written and read back (as
// `evidence --json` then `evidence --verify` do), and an altered byte
// still fails it. What Build hashes is exactly what Verify recomputes from
// the written file.
func TestHostileProviderStringsVerifyAfterWriting(t *testing.T) {
	e := testenv.New(t, violence)
	e.Runs(4)
	ev := eventOfKind(t, e, "policy_change")
	ctx := context.Background()
	after := ev.Probes[0].AfterObs
	before := ev.Probes[0].BeforeObs
	exec(t, e, `UPDATE observations SET request_id = CAST(? AS TEXT), model_id = CAST(? AS TEXT), model_fp = CAST(? AS TEXT), message = CAST(? AS TEXT),
		reason = CAST(? AS TEXT) WHERE id IN (?, ?)`,
		[]byte(hostileText), []byte("gpt-\xe9\x1b"), []byte("fp_\xc3\x28\u2028"), []byte("blocked \xe9\x00 <script>&"), []byte("\x80why\u2029"), after, before)
	exec(t, e, `UPDATE events SET model_before = CAST(? AS TEXT), model_after = CAST(? AS TEXT), corpus_version = CAST(? AS TEXT) WHERE id = ?`,
		[]byte("gpt-\xe9|fp_\xff"), []byte("gpt-x-2 #9 \x1b[2J|fp\x00"), []byte("v1\xe9<&>"), ev.ID)
	// The test is only meaningful if the database hands the bytes back as
	// they were stored.
	if o, err := e.Store.Observation(ctx, after); err != nil || o.Result.RequestID != hostileText || utf8.ValidString(o.Result.ModelID) {
		t.Fatalf("stored request id %q (%v), model id %q", o.Result.RequestID, err, o.Result.ModelID)
	}

	rec, err := evidence.Build(ctx, e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := evidence.Verify(rec); err != nil {
		t.Fatalf("the record Build returned does not verify: %v", err)
	}
	for name, data := range map[string][]byte{"as the CLI writes it": writeLikeTheCLI(t, rec), "json.Marshal": mustMarshal(t, rec)} {
		got, err := evidence.VerifyJSON(data)
		if err != nil {
			t.Fatalf("%s: a freshly written, untouched record does not verify: %v", name, err)
		}
		if got.SHA256 != rec.SHA256 {
			t.Errorf("%s: record sha256 %s read back, %s built", name, got.SHA256, rec.SHA256)
		}
		// What Build returned is what the file holds.
		var gp, bp *evidence.Observation
		for i := range got.Probes {
			if got.Probes[i].After != nil && got.Probes[i].After.ID == after {
				gp, bp = got.Probes[i].After, rec.Probes[i].After
			}
		}
		if gp == nil || gp.RequestID != bp.RequestID || gp.ModelID != bp.ModelID || gp.Message != bp.Message || got.Event.ModelAfter != rec.Event.ModelAfter {
			t.Errorf("%s: the record read back differs from the one built: %+v / %+v", name, gp, bp)
		}
		if gp != nil && (!utf8.ValidString(gp.RequestID) || !strings.Contains(gp.RequestID, "\x00\x01\x7f\x1b[2J\u2028\u2029\u202e<b>&amp;</b>")) {
			t.Errorf("%s: request id %q: invalid UTF-8 left in, or valid characters lost", name, gp.RequestID)
		}

		// One altered byte (in the provider request id) fails it.
		i := bytes.Index(data, []byte("req-1-"))
		if i < 0 {
			t.Fatalf("%s: request id not in the record:\n%s", name, data)
		}
		altered := bytes.Clone(data)
		altered[i+4] = '2'
		if _, err := evidence.VerifyJSON(altered); err == nil || !strings.Contains(err.Error(), "record_sha256 mismatch") {
			t.Errorf("%s: altered record: %v, want a record_sha256 mismatch", name, err)
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// outsideCode returns md without its fenced code blocks and inline code
// spans (CommonMark: a backtick run opens a span closed by the next run of
// the same length; an unmatched run is literal), the text GitHub renders
// as markup, links and mentions.
func outsideCode(md string) string {
	var out strings.Builder
	fence := ""
	for _, line := range strings.Split(md, "\n") {
		if fence != "" {
			if strings.TrimRight(line, " ") == fence {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(line, "```") {
			fence = line[:len(line)-len(strings.TrimLeft(line, "`"))]
			continue
		}
		for i := 0; i < len(line); {
			if line[i] == '\\' && i+1 < len(line) {
				out.WriteString(line[i : i+2])
				i += 2
				continue
			}
			if line[i] != '`' {
				out.WriteByte(line[i])
				i++
				continue
			}
			n := run(line, i)
			closed := -1
			for j := i + n; j < len(line); {
				if line[j] != '`' {
					j++
					continue
				}
				m := run(line, j)
				if m == n {
					closed = j + m
					break
				}
				j += m
			}
			if closed < 0 {
				out.WriteString(line[i : i+n]) // literal backticks
				i += n
				continue
			}
			out.WriteString("CODE")
			i = closed
		}
		out.WriteByte('\n')
	}
	return out.String()
}

func run(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// Finding 2: every untrusted string in the Markdown view (event header,
// headings, observation and problem lines) is inert: no control, escape or
// bidi character reaches the output, and outside code GitHub finds no
// mention, reference, HTML or stray backtick to act on.
func TestMarkdownHeaderAndEveryLineInert(t *testing.T) {
	b := previousRecord(t)
	var r evidence.Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	h := func(s string) string {
		return s + " @octocat #9 GH-12 <b>m</b> ```x`` \x1b[2J \x1b]8;;https://evil.example\x07y\x1b]8;;\x07 \u202egnp.exe\u2066 \x00\x85\u2028 www.evil.example &amp; \xe9"
	}
	e := r.Event
	e.ModelBefore, e.ModelAfter = h("gpt-x-2 #9 \x1b[2J")+"|"+h("fp_\u202e<i>b</i>"), h("@octocat <b>m</b>")+"|"+h("fp")
	e.CorpusVersion, e.CorpusHash = h("v1"), h("abc")
	e.Targets = []string{h("t1"), "a"}
	e.Provider, e.Kind, e.Direction, e.Status = h("sim"), h("policy_change"), h("tightened"), h("open")
	e.NewCategories = []string{h("violence"), "hate"}
	e.Probes[0].Target, e.Probes[0].ProbeID = h("a"), h("p")
	e.Probes[0].Before.Categories = []string{h("c")}
	e.Probes[0].BeforeObs, e.Probes[0].AfterObs = 0, 0
	r.SHA256 = h("sha")

	p := &r.Probes[0]
	p.Target, p.ProbeID = h("a"), h("p")
	p.Before, p.BeforeAbsent = nil, h("before absent")
	p.After, p.AfterAbsent = nil, h("after absent")
	p.Request.Method, p.Request.Path, p.Request.SHA256 = h("POST"), h("/v1"), h("sha")
	p.Nondeterminism = h("note")
	q := &r.Probes[1]
	q.Target, q.ProbeID = h("a2"), h("p2")
	q.Request = evidence.Request{SHA256: h("sha"), Missing: h("missing")}
	q.Before.RequestID, q.Before.ModelID, q.Before.ModelFP, q.Before.Reason = h("req"), h("gpt-x-2 #9 \x1b[2J"), h("fp_\u202e<i>b</i>"), h("reason")
	q.Before.Message, q.Before.Stage = h("message"), h("stage")
	q.Before.Verdict.Class, q.Before.Verdict.Categories = "allowed", []string{h("cat")}
	q.Before.Problem = h("problem")
	q.After.ResponseAbsent = h("pruned")
	q.After.ResponseOK = false
	r.Probes[2].After.ResponseOK = false // a problem line naming target and probe
	r.Probes[2].Target, r.Probes[2].ProbeID = h("a3"), h("p3")

	var out bytes.Buffer
	evidence.WriteMarkdown(&out, &r)
	md := out.String()
	if !utf8.ValidString(md) {
		t.Error("markdown is not valid UTF-8")
	}
	seen := map[rune]bool{}
	for _, c := range md {
		bidi := c >= '\u202a' && c <= '\u202e' || c >= '\u2066' && c <= '\u2069' || c == '\u200e' || c == '\u200f' || c == '\u061c'
		if (c != '\n' && unicode.IsControl(c) || c == '\u2028' || c == '\u2029' || bidi) && !seen[c] {
			seen[c] = true
			t.Errorf("markdown carries %U", c)
		}
	}
	text := outsideCode(md)
	for _, bad := range []string{"<", "@octocat", "#9", "GH-12", "www.evil"} {
		if strings.Contains(text, bad) {
			t.Errorf("outside code, the markdown carries %q:\n%s", bad, text)
		}
	}
	for i := 0; i < len(text); i++ {
		if text[i] == '`' && (i == 0 || text[i-1] != '\\') {
			t.Errorf("a stray backtick outside code: %q", text[max(0, i-40):min(len(text), i+40)])
			break
		}
		if text[i] == '&' && !strings.HasPrefix(text[i:], "&amp;") && !strings.HasPrefix(text[i:], "&lt;") && !strings.HasPrefix(text[i:], "&gt;") {
			t.Errorf("an unescaped & outside code: %q", text[max(0, i-40):min(len(text), i+40)])
			break
		}
	}
	// Each field is still there to read, and the lines keep their shape.
	for _, want := range []string{"- model: ", "- corpus: ", "- targets: ", "## ", "gpt", "octocat", "evil.example", "before absent", "missing",
		"- does not verify: ", "- record sha256: ", "differs on every call: cite a record saved with `--json`", "no observation in this record"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if t.Failed() {
		t.Logf("markdown:\n%s", md)
	}
}

// The untouched testdata record renders as it did, its own vocabulary
// readable, and nothing hostile to escape.
func TestMarkdownOfAnOrdinaryRecord(t *testing.T) {
	b := previousRecord(t)
	r, err := evidence.VerifyJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	md := markdown(r)
	for _, want := range []string{"# driftprobe evidence: event 1", "all request and response hashes verified: true", "policy_change", "tightened", r.SHA256,
		r.Probes[0].ProbeID, r.Probes[0].Request.SHA256} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(outsideCode(md), "\\") {
		t.Errorf("ordinary text escaped:\n%s", md)
	}
	var ue *evidence.UnverifiedError
	if errors.As(evidence.Verify(r), &ue) {
		t.Fatal(ue)
	}
}

// A response body that is not valid UTF-8 is carried exactly
// (response_body_base64) and re-hashed by Verify: before, its text with
// U+FFFD could not be, and any body holding a U+FFFD was skipped.
func TestInvalidUTF8BodyVerifies(t *testing.T) {
	e := testenv.New(t, violence)
	e.Runs(4)
	ev := eventOfKind(t, e, "policy_change")
	after := ev.Probes[0].AfterObs
	body := []byte("{\"error\":\"\xff\xfe bad bytes \xe9\"}")
	sum := sha256.Sum256(body)
	exec(t, e, `UPDATE observations SET body = ?, body_sha256 = ? WHERE id = ?`, body, hex.EncodeToString(sum[:]), after)
	rec, err := evidence.Build(context.Background(), e.Store, ev.ID, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	var o *evidence.Observation
	for i := range rec.Probes {
		if a := rec.Probes[i].After; a != nil && a.ID == after {
			o = a
		}
	}
	if o == nil || !o.ResponseOK || o.ResponseBase64 != base64.StdEncoding.EncodeToString(body) || !strings.Contains(o.ResponseBody, "\ufffd bad bytes") {
		t.Fatalf("after observation %+v: want the exact bytes in response_body_base64, verified", o)
	}
	data := writeLikeTheCLI(t, rec)
	if _, err := evidence.VerifyJSON(data); err != nil {
		t.Fatalf("untouched record: %v", err)
	}
	// Altered bytes fail, and so does a readable text that no longer
	// matches them (each with its record hash recomputed, as a forger
	// would, so that the body check itself is what catches it).
	for name, edit := range map[string]func(*evidence.Observation){
		"bytes": func(o *evidence.Observation) {
			o.ResponseBase64 = base64.StdEncoding.EncodeToString(append(bytes.Clone(body), ' '))
		},
		"text": func(o *evidence.Observation) { o.ResponseBody = strings.Replace(o.ResponseBody, "bad", "good", 1) },
	} {
		r2, err := evidence.VerifyJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		for i := range r2.Probes {
			if a := r2.Probes[i].After; a != nil && a.ID == after {
				edit(a)
			}
		}
		if err := r2.Rehash(); err != nil {
			t.Fatal(err)
		}
		if err := evidence.Verify(r2); err == nil || !strings.Contains(err.Error(), "response") {
			t.Errorf("%s altered: %v, want a response body failure", name, err)
		}
	}
}

// TestMarkdownModelIDWithPipe: the record's model line names the model id
// and fingerprint the provider reported (diff.JoinModel, split by
// diff.SplitModel), even when the id holds "|": id "gpt-4o|fp_spoofed"
// with fingerprint "fp_real" is never shown as id "gpt-4o" with
// fingerprint "fp_spoofed|fp_real". The record and its hash are untouched.
func TestMarkdownModelIDWithPipe(t *testing.T) {
	b := previousRecord(t)
	var r evidence.Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	r.Event.ModelBefore, r.Event.ModelAfter = diff.JoinModel("gpt-4o|fp_spoofed", "fp_real"), diff.JoinModel("gpt-4o", "fp_new")
	var out bytes.Buffer
	evidence.WriteMarkdown(&out, &r)
	line := ""
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "- model: ") {
			line = l
		}
	}
	if want := "- model: " + ghissue.Code("gpt-4o|fp_spoofed") + " `fp_real` → `gpt-4o` `fp_new`"; line != want {
		t.Fatalf("model line %q, want %q", line, want)
	}
}
