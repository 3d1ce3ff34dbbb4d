package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRedactBytesEscapedForms(t *testing.T) {
	const key = "sk-QA/SECRET/0123456789abcdef"
	allU := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			b.WriteString(`\u00` + strings.ToUpper(string("0123456789abcdef"[r>>4])) + string("0123456789abcdef"[r&15]))
		}
		return b.String()
	}
	for name, body := range map[string]string{
		"raw":            `{"message":"Incorrect API key provided: ` + key + `."}`,
		"php slashes":    `{"message":"Incorrect API key provided: sk-QA\/SECRET\/0123456789abcdef."}`,
		"dash as \\u":    `{"message":"Incorrect API key provided: sk\u002dQA/SECRET/0123456789abcdef."}`,
		"every char \\u": `{"message":"Incorrect API key provided: ` + allU(key) + `."}`,
		"mixed case hex": `{"message":"sk\u002DQA\/SECRET\/0123456789abcdef"}`,
		"twice":          `{"a":"sk-QA\/SECRET\/0123456789abcdef","b":"` + key + `"}`,
		"at the end":     `sk-QA\/SECRET\/0123456789abcdef`,
	} {
		got := string(RedactBytes([]byte(body), key))
		var v any
		if strings.Contains(got, "0123456789abcdef") || !strings.Contains(got, Redacted) {
			t.Errorf("%s: %s", name, got)
		}
		if json.Valid([]byte(body)) && !json.Valid([]byte(got)) {
			t.Errorf("%s: redaction broke the JSON: %s", name, got)
		}
		_ = v
	}
	// Not the key: left alone, byte for byte.
	for _, body := range []string{
		`{"message":"sk-QA\/SECRET\/0123456789abcdeX"}`,
		`{"message":"a\\b \u0041 \/ ` + key[:10] + `"}`,
		`\`, `\u00`, `\u002`, `sk-QA\`, "",
	} {
		if got := string(RedactBytes([]byte(body), key)); got != body {
			t.Errorf("%q changed: %q", body, got)
		}
	}
	if got := string(RedactBytes([]byte(`k\/ey`), "k/e")); got != `k\/ey` {
		t.Errorf("a secret under 4 bytes is redacted: %q", got)
	}
}

// FuzzRedactBytes: a secret spelled inside a JSON string, each character
// raw or \u-escaped as mask says, never survives redaction: the redacted
// string, decoded, no longer holds it.
func FuzzRedactBytes(f *testing.F) {
	f.Add("error: ", "sk-QA/SECRET/0123456789abcdef", uint64(0b1010))
	f.Add(`a\`, "sk-xy", uint64(1))
	f.Add("", "abcd", ^uint64(0))
	f.Fuzz(func(t *testing.T, prefix, secret string, mask uint64) {
		if len(secret) < 4 || !utf8.ValidString(secret) || strings.ContainsAny(secret, "[]REDACT") {
			return
		}
		for _, r := range secret {
			if r > 0xFFFF {
				return // spelled as a surrogate pair: not matched (keys are ASCII)
			}
		}
		pq, _ := json.Marshal(prefix)
		var b strings.Builder
		b.WriteString(string(pq[:len(pq)-1]))
		i := 0
		for _, r := range secret {
			if mask>>(i%64)&1 == 1 || r < 0x20 || r == '"' || r == '\\' {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
			i++
		}
		b.WriteString(`"`)
		var before string
		if err := json.Unmarshal([]byte(b.String()), &before); err != nil || !strings.Contains(before, secret) {
			t.Fatalf("bad construction %q: %v", b.String(), err)
		}
		got := RedactBytes([]byte(b.String()), secret)
		var after string
		if err := json.Unmarshal(got, &after); err != nil {
			t.Fatalf("redaction broke the JSON string %q: %q: %v", b.String(), got, err)
		}
		if strings.Contains(after, secret) {
			t.Fatalf("secret survives in %q (from %q)", got, b.String())
		}
	})
}
