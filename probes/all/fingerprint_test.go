package all

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// golden is a golden request file (probestest.Dump) read back.
type golden struct {
	method, path, sha string
	pinned            bool
	body              []byte
}

func readGolden(t *testing.T, path string) golden {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := bytes.Cut(b, []byte("\n\n"))
	if !ok {
		t.Fatalf("%s: no blank line", path)
	}
	var g golden
	g.body = bytes.TrimSuffix(body, []byte("\n"))
	for i, line := range strings.Split(string(head), "\n") {
		switch {
		case i == 0:
			g.method, g.path, _ = strings.Cut(line, " ")
		case strings.HasPrefix(line, "sha256: "):
			g.sha = strings.TrimPrefix(line, "sha256: ")
		case strings.HasPrefix(line, "pinned: "):
			g.pinned = true
		}
	}
	if g.sha == "" {
		t.Fatalf("%s: no sha256 line", path)
	}
	return g
}

func legacySHA256(method, path string, body []byte) string {
	s := sha256.Sum256([]byte(method + "\n" + path + "\n" + string(body)))
	return hex.EncodeToString(s[:])
}

// TestGoldenFingerprintsUnpinned: every provider's golden request except
// Anthropic's pins no header, and its recorded fingerprint is the one
// computed before headers could be pinned (SHA-256 of method, path and
// body), so stored baselines and requests_sha256 values of those providers
// stay valid. (Each package's TestGolden checks its renders against these
// files.)
func TestGoldenFingerprintsUnpinned(t *testing.T) {
	files, err := filepath.Glob("../*/testdata/golden/*.txt")
	if err != nil || len(files) < 10 {
		t.Fatalf("golden files: %v %v", files, err)
	}
	for _, f := range files {
		g := readGolden(t, f)
		anthropic := strings.Contains(filepath.ToSlash(f), "/anthropic/")
		if g.pinned != anthropic {
			t.Errorf("%s: pinned %v", f, g.pinned)
		}
		if anthropic {
			continue
		}
		if want := legacySHA256(g.method, g.path, g.body); g.sha != want {
			t.Errorf("%s: fingerprint %s, want the unpinned %s", f, g.sha, want)
		}
		if got := probes.Fingerprint(g.method, g.path, g.body, ""); got != g.sha {
			t.Errorf("%s: probes.Fingerprint %s, recorded %s", f, got, g.sha)
		}
	}
}

func newProber(t *testing.T, tg probes.Target) probes.Prober {
	t.Helper()
	p, err := probes.New(tg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAnthropicVersionInFingerprint: the anthropic-version header is part
// of Anthropic's fingerprint (two versions, two fingerprints: a version
// bump is an input change, not a provider policy change), while an OpenAI
// chat request still has the fingerprint its golden file recorded.
func TestAnthropicVersionInFingerprint(t *testing.T) {
	fp := map[string]string{}
	for _, v := range []string{"2023-06-01", "2023-01-01"} {
		p := newProber(t, probes.Target{Name: "a", Provider: "anthropic", Model: "claude-sonnet-4-5", Endpoint: "chat", MaxTokens: 64,
			Options: map[string]string{"anthropic_version": v}})
		req, err := p.Render(probestest.Probe)
		if err != nil {
			t.Fatal(err)
		}
		if req.Header.Get("anthropic-version") != v {
			t.Fatalf("anthropic-version %q, want %q", req.Header.Get("anthropic-version"), v)
		}
		again, _ := p.Render(probestest.Probe)
		if again.SHA256() != req.SHA256() {
			t.Fatalf("%s: two renders, two fingerprints", v)
		}
		fp[v] = req.SHA256()
	}
	if fp["2023-06-01"] == fp["2023-01-01"] {
		t.Errorf("anthropic_version 2023-06-01 and 2023-01-01 share the fingerprint %s", fp["2023-06-01"])
	}
	// The default version is the one the golden file pins.
	p := newProber(t, probes.Target{Name: "a", Provider: "anthropic", Model: "claude-sonnet-4-5", Endpoint: "chat", MaxTokens: 64})
	req, _ := p.Render(probestest.Probe)
	if g := readGolden(t, "../anthropic/testdata/golden/messages_system.txt"); req.SHA256() != g.sha || g.sha != fp["2023-06-01"] {
		t.Errorf("default anthropic fingerprint %s, golden %s, 2023-06-01 %s", req.SHA256(), g.sha, fp["2023-06-01"])
	}

	// OpenAI: the target of probes/openai's golden test.
	seed := int64(7)
	oa := newProber(t, probes.Target{Name: "openai-test", Provider: "openai", Model: "gpt-4o-2024-08-06", Endpoint: "chat",
		APIKey: "sk-x", MaxTokens: 256, Seed: &seed, Options: map[string]string{"organization": "org-test", "project": "proj_test"}})
	req, err := oa.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	g := readGolden(t, "../openai/testdata/golden/openai_chat.txt")
	if req.SHA256() != g.sha || req.SHA256() != legacySHA256(req.Method, req.Path, req.Body) || req.PinnedHeaders() != "" {
		t.Errorf("openai fingerprint %s, golden %s, unpinned %s", req.SHA256(), g.sha, legacySHA256(req.Method, req.Path, req.Body))
	}
}

// TestFingerprintRecipeAsDocumented recomputes a pinned and an unpinned
// golden fingerprint from the recipe docs/DETECTION.md gives a reviewer
// (method, "\n", path with query, "\n", body; then, only with a pinned
// header, NUL and "name: value\n" lines, lower-cased and sorted), with
// nothing of probes.Fingerprint: the documented recipe is the code's.
func TestFingerprintRecipeAsDocumented(t *testing.T) {
	recipe := func(method, path string, body []byte, pinned ...string) string {
		b := []byte(method + "\n" + path + "\n")
		b = append(b, body...)
		if len(pinned) > 0 {
			b = append(b, 0)
			for _, l := range pinned {
				b = append(b, l+"\n"...)
			}
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	a := readGolden(t, "../anthropic/testdata/golden/messages_system.txt")
	if got := recipe(a.method, a.path, a.body, "anthropic-version: 2023-06-01"); got != a.sha {
		t.Errorf("anthropic: documented recipe %s, recorded %s", got, a.sha)
	}
	for _, f := range []string{"../azure/testdata/golden/azure_chat.txt", "../bedrock/testdata/golden/chat_no_guardrail.txt"} {
		g := readGolden(t, f)
		if got := recipe(g.method, g.path, g.body); got != g.sha {
			t.Errorf("%s: documented recipe %s, recorded %s", f, got, g.sha)
		}
	}
}
