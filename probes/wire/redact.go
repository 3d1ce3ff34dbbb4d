package wire

import (
	"bytes"
	"sync"
	"unicode/utf8"
)

// Redacted replaces a secret in stored text and bodies.
const Redacted = "[REDACTED]"

// RedactBytes returns b with every secret (of 4 bytes or more) replaced by
// [REDACTED], however a provider or a gateway spelled it when echoing it:
// as it is; with JSON escapes at any depth ("sk-a\/b", "\u002d" for "-",
// "sk-a\\\/b" for an upstream's JSON error a gateway wrapped in a JSON
// string of its own; PHP escapes every "/" by default, and AWS secrets
// contain them); percent-encoded ("sk-a%2Fb"). Each character of a match
// may be spelled differently. Any run of 12 or more letters and digits of
// a secret left anywhere after that (a spelling none of these covers, or
// a key cut short by a gateway that bounded its own message, followed by
// other text) is replaced too: no stored byte may spell a long piece of a
// key. So is a secret cut off at the end of b (its first 8 bytes or more
// ending b): a field bounded before it reached the redaction (a provider
// message cut at MaxMessage) keeps no prefix of a key. b is modified only through copies;
// the result may share b's array when nothing matched.
func RedactBytes(b []byte, secrets ...string) []byte {
	for _, s := range secrets {
		if len(s) < 4 {
			continue
		}
		// The raw spelling first, wherever it is, even where an escape's
		// hex digits begin it ("\u00a1b2c3…" holds the key "a1b2c3…" as
		// bytes).
		if bytes.Contains(b, []byte(s)) {
			b = bytes.ReplaceAll(b, []byte(s), []byte(Redacted))
		}
		if bytes.IndexByte(b, '\\') >= 0 || bytes.IndexByte(b, '%') >= 0 {
			b = redactEscaped(b, []rune(s))
		}
		if k := cutSecret(b, s); k > 0 {
			b = append(b[:len(b)-k:len(b)-k], Redacted...)
		}
		b = redactPieces(b, s)
	}
	return b
}

// minCut is the shortest prefix of a secret that cutSecret redacts at the
// end of a text (shorter ones are no long piece of a key; 8 hex digits
// ending a fingerprint or a request id match a hex key's first 8 by
// chance once in four billion).
const minCut = 8

// cutSecret returns the length of the longest proper prefix of s, of
// minCut bytes or more, that b ends with: a secret cut off by a bound; 0
// when there is none.
func cutSecret(b []byte, s string) int {
	for k := min(len(s)-1, len(b)); k >= minCut; k-- {
		if string(b[len(b)-k:]) == s[:k] {
			return k
		}
	}
	return 0
}

// RedactString is RedactBytes for a string.
func RedactString(s string, secrets ...string) string {
	r := RedactBytes([]byte(s), secrets...)
	if string(r) == s {
		return s
	}
	return string(r)
}

// minFragment is the shortest run of a secret's letters and digits
// redacted on its own: 12 alphanumerics of a key are ~70 bits, never
// found in unrelated text.
const minFragment = 12

// pieceCache holds, per secret, the set of its minFragment-long pieces of
// letters and digits (redactPieces): computed once per secret.
var pieceCache sync.Map // string → map[string]bool

// pieces returns the set of every minFragment-long substring of s's runs
// of ASCII letters and digits.
func pieces(s string) map[string]bool {
	if m, ok := pieceCache.Load(s); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	for _, f := range keyRuns(s) {
		for i := 0; i+minFragment <= len(f); i++ {
			m[f[i:i+minFragment]] = true
		}
	}
	pieceCache.Store(s, m)
	return m
}

// Forget drops what RedactBytes keeps of secret s (its pieces): for a
// caller that stops redacting a short-lived credential, so a long-running
// process keeps nothing of every token it ever held.
func Forget(s string) { pieceCache.Delete(s) }

// redactPieces replaces every stretch of b made of overlapping
// minFragment-long pieces of s's letters and digits (pieces) by Redacted:
// a key cut anywhere, in the middle of a text or at its end, or followed
// by other text, keeps no run of minFragment letters and digits of it.
// One pass over b; b is modified only through a copy.
func redactPieces(b []byte, s string) []byte {
	set := pieces(s)
	if len(set) == 0 || len(b) < minFragment {
		return b
	}
	var out []byte
	last := 0
	for i := 0; i+minFragment <= len(b); {
		if !set[string(b[i:i+minFragment])] {
			i++
			continue
		}
		end := i + minFragment
		for j := i + 1; j+minFragment <= len(b) && j <= end && set[string(b[j:j+minFragment])]; j++ {
			end = j + minFragment
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(append(out, b[last:i]...), Redacted...)
		last, i = end, end
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// keyRuns returns the maximal runs of ASCII letters and digits of s at
// least minFragment long (s itself included when it is one).
func keyRuns(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		alnum := i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z')
		switch {
		case alnum && start < 0:
			start = i
		case !alnum && start >= 0:
			if i-start >= minFragment {
				out = append(out, s[start:i])
			}
			start = -1
		}
	}
	return out
}

// redactEscaped replaces every spelling of rs in b, raw or with JSON
// escapes. b is walked escape by escape: a match starts only where a
// character does, never inside an escape ("\u0030000" holds "0000" from
// its escaped "0" on, not from its hex digits).
func redactEscaped(b []byte, rs []rune) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		if n := matchEscaped(b[i:], rs); n > 0 {
			if out == nil {
				out = make([]byte, 0, len(b))
			}
			out = append(out, b[last:i]...)
			out = append(out, Redacted...)
			i += n
			last = i
			continue
		}
		if b[i] == '\\' && rs[0] != '\\' {
			// Every start within a run of backslashes reads the same
			// escape, the run's last backslash and what follows it: one
			// failed start fails them all. Skip the run's pairs at once
			// instead of reading the run again from each of them, which
			// is quadratic in it (a garbage answer of a million
			// backslashes took minutes).
			j := i
			for j+1 < len(b) && b[j] == '\\' && b[j+1] == '\\' {
				j += 2
			}
			if j > i {
				i = j
				continue
			}
		}
		i += tokenLen(b[i:])
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// tokenLen is the length of the character at the start of b: a whole
// JSON escape, else one byte.
func tokenLen(b []byte) int {
	if b[0] == '\\' && len(b) >= 2 {
		if b[1] == 'u' {
			if len(b) >= 6 && isHex4(b[2:6]) {
				return 6
			}
			return 1
		}
		if _, ok := shortEscapes[b[1]]; ok {
			return 2
		}
	}
	return 1
}

func isHex4(b []byte) bool {
	for _, h := range b {
		if !isHexDigit(h) {
			return false
		}
	}
	return true
}

// matchEscaped returns the length of the prefix of b that spells rs, each
// rune raw, escaped at any depth (any run of backslashes, then the rune,
// its short escape letter or u and four hex digits), or percent-encoded
// (an ASCII rune as %XX), or 0.
func matchEscaped(b []byte, rs []rune) int {
	n := 0
	for i, r := range rs {
		if n >= len(b) {
			return 0
		}
		switch {
		case b[n] == '\\':
			j := n
			for j < len(b) && b[j] == '\\' {
				j++
			}
			m := escapeSpells(b[j-1:], r) // the last backslash and what follows
			if m == 0 && r == '\\' {
				// A backslash of the key is itself spelled by a run of
				// backslashes ("\\" once escaped, "\\\\" twice), which may be
				// followed by the escape of the key's next rune.
				return matchBackslash(b, n, j, rs[i+1:])
			}
			if m == 0 {
				return 0
			}
			n = j - 1 + m
		default:
			m := rawEnd(b[n:], r)
			if m == 0 {
				return 0
			}
			n += m
		}
	}
	return n
}

// matchBackslash matches a backslash of a secret, and the backslashes that
// follow it in the secret (its group, c of them), spelled by the run of
// backslashes b[n:j] (b[j] is no backslash), then the secret's runes after
// the group (tail). It returns the length matched from b's start, or 0.
//
// Each of the group's backslashes takes one or more of the run; what they
// leave must begin tail's first rune: nothing (that rune raw or
// percent-encoded at b[j]), or backslashes ending in that rune's escape.
// matchEscaped reads a run of backslashes whole, whatever its length, so
// only two splits differ: none left, or some left (how many does not
// matter as long as each of the group's backslashes has one). That is two
// tries per group whatever the run's length and depth (trying 1, 3, 7, …
// left missed a group of three or more before an escape: a key's three
// backslashes then a newline, escaped once, are seven backslashes and an
// n, which none of those splits matched).
func matchBackslash(b []byte, n, j int, tail []rune) int {
	c := 1
	for c <= len(tail) && tail[c-1] == '\\' {
		c++
	}
	tail = tail[c-1:]
	run := j - n
	if run < c {
		return 0
	}
	if len(tail) == 0 {
		// The key ends with the group: each of its backslashes as one
		// escaped at some depth (1, 2, 4, … backslashes), the rest of the
		// run left to escape what follows.
		k := 1
		for c*k*2 <= run {
			k *= 2
		}
		return n + c*k
	}
	m0 := matchEscaped(b[j:], tail)
	if m0 > 0 {
		return j + m0
	}
	if run == c {
		return 0
	}
	// Some left: the run's last backslash begins tail's first rune's
	// escape. When that escape ends where the rune read raw did (\" and
	// \/ end one byte past b[j], as " and / do), the rest was read from
	// there already and failed: not read again (a key of many \" would be
	// read once per subset of its pairs).
	r := tail[0]
	if e := escapeSpells(b[j-1:], r); e == 0 || e == 2 && rawEnd(b[j:], r) == 1 {
		return 0
	}
	if m := matchEscaped(b[j-1:], tail); m > 0 {
		return j - 1 + m
	}
	return 0
}

// rawEnd is the length of r spelled raw or percent-encoded at b's start
// (as matchEscaped reads it), or 0.
func rawEnd(b []byte, r rune) int {
	if len(b) == 0 {
		return 0
	}
	if b[0] == '%' && r < utf8.RuneSelf && r != '%' {
		if len(b) >= 3 && isHex2(b[1:3]) && rune(hexVal(b[1])<<4|hexVal(b[2])) == r {
			return 3
		}
		return 0
	}
	c, size := utf8.DecodeRune(b)
	if c != r || c == utf8.RuneError && size < 2 {
		return 0
	}
	return size
}

func isHex2(b []byte) bool { return len(b) == 2 && isHexDigit(b[0]) && isHexDigit(b[1]) }

func isHexDigit(h byte) bool {
	return h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F'
}

func hexVal(h byte) byte {
	switch {
	case h >= '0' && h <= '9':
		return h - '0'
	case h >= 'a' && h <= 'f':
		return h - 'a' + 10
	default:
		return h - 'A' + 10
	}
}

// shortEscapes are JSON's two-character escapes and the runes they spell.
var shortEscapes = map[byte]rune{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escapeSpells returns the length of the JSON escape at the start of b
// (which starts with a backslash) when it spells r, else 0.
func escapeSpells(b []byte, r rune) int {
	if len(b) < 2 {
		return 0
	}
	if b[1] == 'u' {
		if len(b) < 6 || !isHex4(b[2:6]) {
			return 0
		}
		v := rune(hexVal(b[2]))<<12 | rune(hexVal(b[3]))<<8 | rune(hexVal(b[4]))<<4 | rune(hexVal(b[5]))
		if v == r {
			return 6
		}
		return 0
	}
	if c, ok := shortEscapes[b[1]]; ok && c == r {
		return 2
	}
	return 0
}
