package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// --json output never carries raw characters a terminal acts on or hides
// (bidi overrides, C1 controls, DEL, zero-width), yet decodes to the same
// values.
func TestWriteJSONEscapesInvisible(t *testing.T) {
	v := map[string]string{
		"fp":      "fp_\u202eevil\u202c",
		"message": "a\u007fb\u0085c\u200bd\ufeffe\U000E0041f\u00adg",
		"plain":   "héllo <b> & \u2028 ok",
	}
	var b bytes.Buffer
	if err := writeJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"\u202e", "\u202c", "\u007f", "\u0085", "\u200b", "\ufeff", "\U000E0041", "\u00ad"} {
		if bytes.Contains(b.Bytes(), []byte(r)) {
			t.Errorf("raw %U in %s", []rune(r)[0], b.Bytes())
		}
	}
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for k := range v {
		if back[k] != v[k] {
			t.Errorf("%s: %q read back as %q", k, v[k], back[k])
		}
	}
	if !bytes.Contains(b.Bytes(), []byte("héllo <b> &")) {
		t.Errorf("ordinary text escaped: %s", b.Bytes())
	}
}

// corpus lint --json on a bad corpus still prints JSON on stdout, with
// ok false and the problems, for CI that parses it; exit 2 as without.
func TestCorpusLintJSONFailure(t *testing.T) {
	stdout, stderr, code := runIn(t, "corpus", "lint", "--json", filepath.Join("..", "..", "corpus", "testdata", "bad-duplicate-id"))
	var got struct {
		OK     bool     `json:"ok"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 2 || got.OK || len(got.Errors) != 1 ||
		!strings.Contains(got.Errors[0], `corpus.yaml:14: probes[2].id: duplicate id "p-one"`) || !strings.Contains(stderr, "duplicate id") {
		t.Fatalf("exit %d, stdout %q (%v), stderr %q", code, stdout, err, stderr)
	}
}

// DRIFTPROBE_CONFIG set but blank (an unset variable expanded in a unit
// file) is refused rather than read as "no config": the built-in
// simulator config would run instead, exit 0.
func TestBlankConfigVariableRefused(t *testing.T) {
	t.Setenv("DRIFTPROBE_CONFIG", " ")
	if _, stderr, code := runIn(t, "config", "check"); code != 2 || !strings.Contains(stderr, "DRIFTPROBE_CONFIG is set but empty") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, _, code := runIn(t, "version"); code != 0 {
		t.Fatalf("version, which reads no config: exit %d", code)
	}
}

// A stop mid-run (serve's SIGTERM) leaves the outbox queued without an
// ERROR line: log-based alerting must not page on a clean shutdown.
func TestAfterRunHookQuietOnShutdown(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	afterRunHook(nil, log, "driftprobe serve")(ctx, nil, nil, nil)
	if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "shutting down") {
		t.Fatalf("logs: %s", logs.String())
	}
}
