package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/probes"
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
		if strings.Contains(got, "0123456789abcdef") || !strings.Contains(got, Redacted) {
			t.Errorf("%s: %s", name, got)
		}
		if json.Valid([]byte(body)) && !json.Valid([]byte(got)) {
			t.Errorf("%s: redaction broke the JSON: %s", name, got)
		}
	}
	// Not the key, nor 12 letters and digits of it: left alone, byte for
	// byte.
	for _, body := range []string{
		`{"message":"sk-QA\/SECRET\/0123456789aXcdeX"}`,
		`{"message":"a\\b \u0041 \/ ` + key[:10] + `"}`,
		`\`, `\u00`, `\u002`, `sk-QA\`, "",
	} {
		if got := string(RedactBytes([]byte(body), key)); got != body {
			t.Errorf("%q changed: %q", body, got)
		}
	}
	// A gateway wrapping an upstream's JSON error in a JSON string of its
	// own escapes twice; a percent-encoded echo; a spelling none of these
	// covers still loses every long run of the key's letters and digits.
	for _, body := range []string{
		`{"error":{"message":"upstream={\"error\":{\"message\":\"Incorrect API key provided: sk-QA\\\/SECRET\\\/0123456789abcdef\"}}"}}`,
		`{"m":"key=sk-QA%2FSECRET%2F0123456789abcdef"}`,
		`{"m":"key=sk-QA%2fSECRET%2f0123456789abcdef"}`,
		`{"m":"sk~QA~SECRET~0123456789abcdef"}`,
	} {
		got := string(RedactBytes([]byte(body), key))
		if strings.Contains(got, "0123456789abcdef") || !strings.Contains(got, Redacted) {
			t.Errorf("%s: %s", body, got)
		}
	}
	if got := string(RedactBytes([]byte(`sk-QA%2FSECRET%2F0123456789abcdef`), key)); got != Redacted {
		t.Errorf("percent-encoded key: %q, want it all redacted", got)
	}
	// A result's message, decoded once, still holds the inner escapes.
	if got := RedactString(`provided: sk-QA\/SECRET\/0123456789abcdef.`, key); got != "provided: "+Redacted+"." {
		t.Errorf("RedactString = %q", got)
	}
	// The key spelled by bytes that begin inside an escape is still
	// removed: no stored byte may spell it.
	hexKey := "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"
	if got := string(RedactBytes([]byte(`{"m":"x \u00`+hexKey+`"}`), hexKey)); strings.Contains(got, hexKey) {
		t.Errorf("key kept after an escape's head: %s", got)
	}
	if got := string(RedactBytes([]byte(`k\/ey`), "k/e")); got != `k\/ey` {
		t.Errorf("a secret under 4 bytes is redacted: %q", got)
	}
}

// FuzzRedactBytes: a secret spelled inside a JSON string, each character
// raw or \u-escaped as mask says, never survives redaction: no stored byte
// spells it, and the redacted string, when still JSON, no longer decodes
// to it. It stays JSON unless the raw spelling had to be cut out of an
// escape (or the secret holds a quote or a backslash, never in a key).
func FuzzRedactBytes(f *testing.F) {
	f.Add("error: ", "sk-QA/SECRET/0123456789abcdef", uint64(0b1010))
	f.Add(`a\`, "sk-xy", uint64(1))
	f.Add("", "abcd", ^uint64(0))
	f.Add(`x \u00`, "a1b2c3d4e5f6", uint64(0))
	f.Fuzz(func(t *testing.T, prefix, secret string, mask uint64) {
		if len(secret) < 4 || !utf8.ValidString(secret) || strings.ContainsRune(secret, 0) {
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
		enc := b.String()
		var before string
		if err := json.Unmarshal([]byte(enc), &before); err != nil || !strings.Contains(before, secret) {
			t.Fatalf("bad construction %q: %v", enc, err)
		}
		got := RedactBytes([]byte(enc), secret)
		// The marker itself may spell a short secret ("ACTE"): look
		// outside it.
		if strings.Contains(strings.ReplaceAll(string(got), Redacted, "\x00"), secret) {
			t.Fatalf("secret spelled raw in %q (from %q)", got, enc)
		}
		var after string
		if err := json.Unmarshal(got, &after); err != nil {
			if !strings.Contains(enc, secret) && !strings.ContainsAny(secret, "\"\\") {
				t.Fatalf("redaction broke the JSON string %q: %q: %v", enc, got, err)
			}
			return
		}
		if strings.Contains(strings.ReplaceAll(after, Redacted, "\x00"), secret) {
			t.Fatalf("secret survives in %q (from %q)", got, enc)
		}
	})
}

// A secret cut off at the end of a text (a provider message bounded at
// MaxMessage before the redaction saw it) leaves no prefix of minCut (8)
// bytes or more, and no run of 12 letters and digits of it anywhere; a
// shorter tail, or a prefix that does not end the text and holds no such
// run, is left (not a usable piece of a key; the second was not cut).
func TestRedactBytesCutSecret(t *testing.T) {
	const key = "sk-proj-QAprov0123456789abcdefghij"
	for _, c := range []struct{ in, want string }{
		{"Authorization: Bearer " + key[:20], "Authorization: Bearer " + Redacted},
		{"Bearer " + key[:8], "Bearer " + Redacted},
		{"Bearer " + key[:7], "Bearer " + key[:7]},
		{key[:10] + " and more", key[:10] + " and more"},
		{key[:24] + "… (truncated)", "sk-proj-" + Redacted + "… (truncated)"},
		{"x" + key, "x" + Redacted},
	} {
		if got := string(RedactBytes([]byte(c.in), key)); got != c.want {
			t.Errorf("RedactBytes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Through Redact, after Finish bounded the message.
	msg := strings.Repeat("x", MaxMessage-30) + " Bearer " + key
	r := Redact(Finish(probes.Result{Class: probes.ClientError, Message: msg}), key)
	if strings.Contains(r.Message, key[:8]) || strings.Contains(r.Message, "QAprov") || !strings.HasSuffix(r.Message, " Bearer "+Redacted) {
		t.Errorf("bounded message keeps a piece of the key: …%q", r.Message[len(r.Message)-30:])
	}
}

// A key holding a backslash is echoed with it escaped ("\\", at any depth:
// "\\\\" in a gateway's wrapped error): the whole key goes, not only its
// long runs of letters and digits (which left "sk-Tr1m/K3y+\"q\\" of the
// key below in the stored body and every output made from it).
func TestRedactBytesKeyWithBackslash(t *testing.T) {
	for _, key := range []string{`sk-Tr1m/K3y+"q\uoteZZ9911aa`, `sk-a\b\\c\"d\/e\nf`, `k\\\\`} {
		once, _ := json.Marshal(key)           // "sk-…\\…"
		twice, _ := json.Marshal(string(once)) // a gateway's wrapped upstream error
		php := strings.ReplaceAll(string(once), "/", `\/`)
		for _, body := range []string{
			`{"message":"Incorrect API key provided: ` + string(once[1:len(once)-1]) + `."}`,
			`{"message":"upstream=` + string(twice[1:len(twice)-1]) + `."}`,
			`{"message":"key=` + php[1:len(php)-1] + `."}`,
		} {
			got := string(RedactBytes([]byte(body), key))
			if !strings.Contains(got, Redacted) || strings.Contains(got, key[:4]) {
				t.Errorf("key %q: %s -> %s", key, body, got)
			}
			if json.Valid([]byte(body)) && !json.Valid([]byte(got)) {
				t.Errorf("key %q: redaction broke the JSON: %s", key, got)
			}
		}
	}
}

// A key after a run of backslashes, of either parity, is still found:
// the run is skipped as a whole once a start in it failed, not read again
// from each of its pairs. And a garbage answer of nothing but backslashes
// comes back as it was. (BenchmarkRedactBytesBackslashRun measures the
// run's cost: linear, where it was quadratic, minutes for a million.)
func TestRedactAfterABackslashRun(t *testing.T) {
	const key = "sk-QA/SECRET/0123456789abcdef"
	for _, n := range []int{1, 2, 3, 1000, 1001} {
		for _, spelled := range []string{key, `\u0073k-QA\/SECRET\/0123456789abcdef`, `\\u0073k-QA/SECRET/0123456789abcdef`} {
			in := `{"m":"` + strings.Repeat(`\`, n) + ` ` + spelled + `"}`
			got := string(RedactBytes([]byte(in), key))
			if strings.Contains(got, "0123456789abcdef") || !strings.Contains(got, Redacted) {
				t.Errorf("%d backslashes, then %s: %s", n, spelled, got)
			}
		}
	}
	junk := []byte(`{"error":"` + strings.Repeat(`\`, 100001) + `"}`)
	if got := RedactBytes(junk, key); string(got) != string(junk) {
		t.Errorf("a run of backslashes was changed (%d bytes, was %d)", len(got), len(junk))
	}
}

// BenchmarkRedactBytesBackslashRun is one answer of a million backslashes
// redacted for a key: what a garbage answer costs a worker.
func BenchmarkRedactBytesBackslashRun(b *testing.B) {
	body := []byte(`{"error":"` + strings.Repeat(`\`, 1_000_000) + `"}`)
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		RedactBytes(body, `sk-Tr1m/K3y+"q\uoteZZ9911aa`)
	}
}

// A key holding three or more backslashes in a row, then a rune that is
// escaped ("\n", "\u003c"), is still redacted whole when echoed escaped:
// the key's backslashes share the run with that escape's own backslash,
// and a split of the run into powers of two (1, 3, 7, … left) missed it
// (sk-q\\\\\\\nxyz, once escaped, was stored as it was). And a key of
// many backslash-then-quote pairs spelled so that its end does not
// match costs no more than linear work (each pair's two readings, the
// backslash taking the whole run or leaving the quote's escape its
// backslash, end at the same place: read once).
func TestRedactBytesKeyWithBackslashGroup(t *testing.T) {
	keys := []string{"sk-q\\\\\\\nxyz", "sk-q\\\\\\<xyz", "sk-q\\\\\\\txyz", "sk-q\\\\\\\\\\/xyz", "sk-q\\\\\\\\\\\nxyz", "sk-q\\\\\\", "sk-q\\\\\\\\\\\\\\\\\\n"}
	for _, key := range keys {
		s := key
		for depth := 1; depth <= 3; depth++ {
			m, _ := json.Marshal(s)
			s = string(m[1 : len(m)-1])
			for _, sp := range []string{s, strings.ReplaceAll(s, "/", `\/`)} {
				body := `{"m":"x ` + sp + ` y"}`
				got := string(RedactBytes([]byte(body), key))
				if !strings.Contains(got, Redacted) || strings.Contains(got, "sk-q") || strings.Contains(got, "xyz") {
					t.Errorf("key %q, escaped %d times: %s -> %s", key, depth, body, got)
				}
			}
		}
	}
	key := "sk-" + strings.Repeat(`\"`, 40) + "Z"
	once, _ := json.Marshal(key)
	body := string(once[1:len(once)-2]) + "Y" // the key but its last rune
	done := make(chan []byte, 1)
	go func() { done <- RedactBytes([]byte(body), key) }()
	select {
	case got := <-done:
		if string(got) != body {
			t.Errorf("a near miss was changed: %s", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a key of 40 backslash-quote pairs took over 5s to fail against its near miss")
	}
}
