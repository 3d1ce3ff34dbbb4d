package corpus

import (
	"strings"
	"testing"
)

// TestCanonicalLineEndingsAndMeaning: the canonical form (and so a probe's
// SHA-256 and the corpus hash) does not depend on how the YAML is spelt —
// CRLF line endings (a Windows checkout with autocrlf), a UTF-8 byte order
// mark, a literal block scalar instead of a quoted string with "\n" — and
// changes with everything a provider would receive differently: a role,
// the order of messages, a trailing space, a block scalar's final newline
// (`|` keeps it, `|-` strips it).
func TestCanonicalLineEndingsAndMeaning(t *testing.T) {
	const base = `name: x
version: "1"
probes:
  - {id: p, messages: [{role: system, content: "Be brief."}, {role: user, content: "line one\nline two"}, {role: assistant, content: "ok"}, {role: user, content: "Go on."}], tags: [hate], expect: either, role: borderline}
`
	const block = "name: x\nversion: \"1\"\nprobes:\n  - id: p\n    messages:\n      - role: system\n        content: Be brief.\n      - role: user\n        content: |-\n          line one\n          line two\n      - role: assistant\n        content: ok\n      - role: user\n        content: Go on.\n    tags: [hate]\n    expect: either\n    role: borderline\n"
	want := loadString(t, base)
	for name, src := range map[string]string{
		"block":      block,
		"block crlf": strings.ReplaceAll(block, "\n", "\r\n"),
		"crlf":       strings.ReplaceAll(base, "\n", "\r\n"),
		"bom":        "\ufeff" + base,
	} {
		if got := loadString(t, src); got.Hash != want.Hash || string(got.Probes[0].Canonical()) != string(want.Probes[0].Canonical()) {
			t.Errorf("%s: canonical form\n%s\nwant\n%s", name, got.Probes[0].Canonical(), want.Probes[0].Canonical())
		}
	}
	for name, src := range map[string]string{
		"role":           strings.Replace(base, `{role: assistant, content: "ok"}`, `{role: user, content: "ok"}`, 1),
		"order":          strings.Replace(base, `{role: system, content: "Be brief."}, {role: user, content: "line one\nline two"}`, `{role: user, content: "line one\nline two"}, {role: system, content: "Be brief."}`, 1),
		"trailing space": strings.Replace(base, `"Go on."`, `"Go on. "`, 1),
		"final newline":  strings.Replace(block, "content: |-\n", "content: |\n", 1),
		"crlf in quotes": strings.Replace(base, `line one\nline two`, `line one\r\nline two`, 1),
	} {
		got := loadString(t, src)
		if got.Hash == want.Hash || got.Probes[0].SHA256 == want.Probes[0].SHA256 {
			t.Errorf("%s: same hash as the original, though the messages differ:\n%s", name, got.Probes[0].Canonical())
		}
	}
}
