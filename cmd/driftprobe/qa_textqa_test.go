package main

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// hostileText is what a provider may send in any field: mentions,
// references, HTML, images, links, fences, table breaks, the marker
// driftprobe finds its issues by, terminal escape sequences, bidi
// overrides, zero-width characters and line breaks.
const hostileText = "@octocat #12 GH-34 <img src=https://evil.example/x.png> ![i](https://evil.example/p.png) [l](javascript:alert(1)) ``` `` | a | b | --> <!-- driftprobe:event=deadbeef --> \x1b[2J\x1b]0;pwn\x07 \u202egnp.exe\u2066 \u200b $x$ www.evil.example https://evil.example ~~s~~ <details>\r\nline2\u009b31m"

const hostileKey = "sk-hostile-KEY-0123456789abcdefXYZ"

// hostileProvider is an OpenAI-compatible server: allowed answers while
// phase is 0, then hostile blocks (a 400 content_filter error, a 200
// finish_reason content_filter) whose every free-text field is
// hostileText, with the caller's Authorization header echoed.
func hostileProvider(t *testing.T, phase *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-request-id", "req-@octocat #12 <b>`|`</b> --> "+auth)
		echo := hostileText + " key: " + auth
		if phase.Load() == 0 {
			w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"m-1","system_fingerprint":"fp_1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Sure, here is a summary."}}],"usage":{"prompt_tokens":5,"completion_tokens":5}}`))
			return
		}
		h := sha256.Sum256(body)
		if h[0]%2 == 0 {
			e := map[string]any{"error": map[string]any{
				"message": echo, "type": hostileText, "code": "content_filter", "param": "prompt",
				"innererror": map[string]any{"code": "ResponsibleAIPolicyViolation", "content_filter_result": map[string]any{
					hostileText: map[string]any{"filtered": true, "severity": hostileText},
					"hate":      map[string]any{"filtered": true, "severity": "high"},
				}},
			}}
			b, _ := json.Marshal(e)
			w.WriteHeader(http.StatusBadRequest)
			w.Write(b)
			return
		}
		a := map[string]any{"id": "c2", "object": "chat.completion", "model": "m-2 " + hostileText, "system_fingerprint": "fp " + hostileText,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "content_filter", "message": map[string]any{"role": "assistant", "content": echo},
				"content_filter_results": map[string]any{
					hostileText: map[string]any{"filtered": true, "severity": hostileText},
					"violence":  map[string]any{"filtered": true, "severity": "high"},
				}}},
			"usage": map[string]any{"prompt_tokens": 5, "completion_tokens": 5}}
		b, _ := json.Marshal(a)
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// checkInertMarkdown fails when md (issues as `outbox --dry-run` prints
// them, or evidence Markdown) lets hostileText act: a mention, a
// reference, raw HTML, an image or a link outside code, or a driftprobe
// marker anywhere but driftprobe's own (markers are looked up as plain
// text, code or not).
func checkInertMarkdown(t *testing.T, name, md string) {
	t.Helper()
	prose := outsideCode(md)
	for _, bad := range []string{"@octocat", "#12", "GH-34", "<img", "<details>", "](https://evil", "](javascript", "https://evil", "www.evil", "\x1b", "\u202e"} {
		if i := strings.Index(prose, bad); i >= 0 {
			t.Errorf("%s: %q outside code: %q", name, bad, prose[max(0, i-100):min(len(prose), i+100)])
		}
	}
	own := strings.Count(md, "==== would open") + 3*strings.Count(md, "==== would comment") // an update's id and key, the event's footer
	if n := strings.Count(md, "<!-- driftprobe:") + strings.Count(md, "<sub>driftprobe event `"); n != own {
		t.Errorf("%s: %d driftprobe markers, %d of them driftprobe's own", name, n, own)
	}
}

// outsideCode returns md without its fenced code blocks and inline code
// spans (CommonMark: a span closes at the next backtick run of the same
// length), and without driftprobe's own <details> wrapper.
func outsideCode(md string) string {
	var b strings.Builder
	fence := ""
	for _, l := range strings.Split(md, "\n") {
		if fence != "" {
			if strings.TrimSpace(l) == fence {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(l, "```") {
			fence = l[:len(l)-len(strings.TrimLeft(l, "`"))]
			continue
		}
		l = strings.ReplaceAll(l, "<details><summary>Provider reasons and messages (untrusted text, verbatim)</summary>", "")
		for i := 0; i < len(l); {
			if l[i] != '`' {
				b.WriteByte(l[i])
				i++
				continue
			}
			j := i
			for j < len(l) && l[j] == '`' {
				j++
			}
			run := l[i:j]
			k := j
			for {
				e := strings.Index(l[k:], run)
				if e < 0 {
					k = -1
					break
				}
				e += k
				f := e + len(run)
				if (e == 0 || l[e-1] != '`') && (f == len(l) || l[f] != '`') {
					k = f
					break
				}
				k = f
				for k < len(l) && l[k] == '`' {
					k++
				}
			}
			if k < 0 { // no closing run: the backticks are literal
				b.WriteString(run)
				i = j
				continue
			}
			i = k
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// A provider whose every free-text field (message, error type, model id,
// fingerprint, category names and severities, request id header) is
// hostile and echoes the key: over runs, events, diff, evidence (Markdown
// and JSON, response bodies included), replay, compare, outbox and its
// dry run, db check and plan, no output carries the key, no text output a
// raw control, escape or bidi character, and the Markdown lets nothing
// act outside code nor spells a marker of driftprobe's.
func TestHostileProviderTextEverywhere(t *testing.T) {
	var phase atomic.Int32
	srv := hostileProvider(t, &phase)
	t.Setenv("HOSTILE_KEY", hostileKey)
	t.Setenv("GITHUB_TOKEN", "test-token")
	conf := "targets:\n" +
		"  - {name: h1, provider: openai_compatible, model: m, api_key_env: HOSTILE_KEY, base_url: \"" + srv.URL + "/v1\"}\n" +
		"  - {name: h2, provider: openai_compatible, model: m2, api_key_env: HOSTILE_KEY, base_url: \"" + srv.URL + "/v1\"}\n" +
		"github: {repo: o/r, base_url: \"http://127.0.0.1:1/\"}\n"
	r := newCLIRecorder(t, conf)
	record := r.record
	r.runPhases(&phase)
	record("events", "events")
	record("events-json", "events", "--json")
	record("diff", "diff", "--target", "h1", "--from", "2", "--to", "4")
	record("diff-json", "diff", "--target", "h1", "--from", "2", "--to", "4", "--json")
	record("evidence-json", "evidence", "1", "--json")
	record("replay", "replay")
	record("compare", "compare", "--from", "h1", "--to", "h2")
	record("outbox", "outbox")
	checkInertMarkdown(t, "outbox --dry-run", record("dry", "outbox", "--dry-run"))
	checkInertMarkdown(t, "evidence", record("evidence-md", "evidence", "1"))
	record("dbcheck", "db", "check", "--full")
	record("plan", "plan")
	for _, o := range r.outs {
		parts := strings.SplitN(o, "\x00", 3)
		name, all := parts[0], parts[1]+parts[2]
		if strings.Contains(all, hostileKey) || strings.Contains(all, "KEY-0123456789abcdef") {
			t.Errorf("%s: the key reached the output", name)
		}
		if strings.HasSuffix(name, "json") {
			continue
		}
		if i := strings.IndexAny(all, "\x1b\x07\u202e\u2066\u009b\r"); i >= 0 {
			t.Errorf("%s: raw control/bidi character in terminal output: %q", name, all[max(0, i-80):min(len(all), i+80)])
		}
	}
	raw, _ := os.ReadFile(r.db)
	if strings.Contains(string(raw), hostileKey) {
		t.Errorf("the key is in the database file")
	}
}

// scoreProvider answers every probe allowed, with a content filter score
// under a hostile category name that moves from 0.1 to 0.9 once phase is
// 1: a score drift whose keys are the provider's text.
func scoreProvider(t *testing.T, phase *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		score := 0.1
		if phase.Load() != 0 {
			score = 0.9
		}
		a := map[string]any{"id": "c2", "object": "chat.completion", "model": "m-1", "system_fingerprint": "fp_1",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "fine"},
				"content_filter_results": map[string]any{
					hostileText: map[string]any{"filtered": false, "severity": "safe", "score": score},
					"hate":      map[string]any{"filtered": false, "severity": "safe", "score": score},
				}}},
			"usage": map[string]any{"prompt_tokens": 5, "completion_tokens": 5}}
		b, _ := json.Marshal(a)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A score drift's keys are the provider's raw category names: the events
// table, diff, evidence and issue Markdown show them inert.
func TestHostileScoreKeysEverywhere(t *testing.T) {
	var phase atomic.Int32
	srv := scoreProvider(t, &phase)
	t.Setenv("GITHUB_TOKEN", "test-token")
	conf := "targets:\n" +
		"  - {name: h1, provider: openai_compatible, model: m, base_url: \"" + srv.URL + "/v1\"}\n" +
		"github: {repo: o/r, base_url: \"http://127.0.0.1:1/\", kinds: [policy_change, model_change, score_drift]}\n"
	r := newCLIRecorder(t, conf)
	record := r.record
	r.runPhases(&phase)
	record("events", "events")
	record("diff", "diff", "--target", "h1", "--from", "2", "--to", "4")
	checkInertMarkdown(t, "evidence", record("evidence", "evidence", "1"))
	checkInertMarkdown(t, "outbox --dry-run", record("dry", "outbox", "--dry-run"))
	for _, o := range r.outs {
		parts := strings.SplitN(o, "\x00", 3)
		name, all := parts[0], parts[1]+parts[2]
		if i := strings.IndexAny(all, "\x1b\x07\u202e\u2066\u009b\r"); i >= 0 {
			t.Errorf("%s: raw control/bidi character in terminal output: %q", name, all[max(0, i-80):min(len(all), i+80)])
		}
	}
}

// cliRecorder runs CLI commands on one config and database, keeping each
// command's name, stdout and stderr (outs: name NUL stdout NUL stderr).
type cliRecorder struct {
	t       *testing.T
	cfg, db string
	outs    []string
}

// newCLIRecorder writes conf as the config, beside a fresh database.
func newCLIRecorder(t *testing.T, conf string) *cliRecorder {
	t.Helper()
	dir := t.TempDir()
	r := &cliRecorder{t: t, cfg: filepath.Join(dir, "c.yaml"), db: filepath.Join(dir, "d.db")}
	if err := os.WriteFile(r.cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

// record runs args with the recorder's config and database (a non-zero
// exit is an error) and returns stdout and stderr together.
func (r *cliRecorder) record(name string, args ...string) string {
	r.t.Helper()
	stdout, stderr, code := runIn(r.t, append(args, "--config", r.cfg, "--db", r.db)...)
	if code != 0 {
		r.t.Errorf("%s: exit %d\n%s", name, code, stderr)
	}
	r.outs = append(r.outs, name+"\x00"+stdout+"\x00"+stderr)
	return stdout + stderr
}

// runPhases runs twice in phase 0, then three times in phase 1: a
// change the provider makes at run 3, confirmed at run 4.
func (r *cliRecorder) runPhases(phase *atomic.Int32) {
	r.t.Helper()
	for i := 0; i < 2; i++ {
		r.record("run", "run", "--no-progress")
	}
	phase.Store(1)
	for i := 0; i < 3; i++ {
		r.record("run", "run", "--no-progress")
	}
}
