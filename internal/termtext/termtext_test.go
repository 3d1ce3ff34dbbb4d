package termtext

import (
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"gpt-4o-2024":               "gpt-4o-2024",
		"a\x1b[2Jb":                 `a\x1b[2Jb`,
		"fp_\u202e<i>b</i>":         `fp_\u202e<i>b</i>`,
		"line\nbreak\r\x00":         `line\nbreak\r\x00`,
		"bad\xffutf8":               `bad\xffutf8`,
		`back\slash`:                `back\\slash`,
		"sep\u2028para\u2029":       `sep\u2028para\u2029`,
		"zero\u200bwidth\ufeffmark": `zero\u200bwidth\ufeffmark`,
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Safe(`already \x1b escaped` + "\x1b"); got != `already \x1b escaped\x1b` {
		t.Errorf("Safe: %q", got)
	}
	if got := Clean(strings.Repeat("é", 400)); !strings.HasSuffix(got, "…") || strings.Count(got, "é") != 300 {
		t.Errorf("long text not cut at 300 runes: %d runes", strings.Count(got, "é"))
	}
	long := strings.Repeat("p1234, ", 100) + "\x1b"
	if got := SafeLong(long); strings.Contains(got, "…") || !strings.HasSuffix(got, `\x1b`) || len(got) != len(long)+3 {
		t.Errorf("SafeLong cut or left raw: %d bytes from %d", len(got), len(long))
	}
}

func TestCleanLong(t *testing.T) {
	s := strings.Repeat("a", 400) + "\x1b\\"
	if got := CleanLong(s); got != strings.Repeat("a", 400)+`\x1b\\` {
		t.Fatalf("CleanLong = %q", got)
	}
}
