package wire

import (
	"bytes"
	"unicode/utf8"
)

// Redacted replaces a secret in stored text and bodies.
const Redacted = "[REDACTED]"

// RedactBytes returns b with every secret (of 4 bytes or more) replaced by
// [REDACTED], whether it appears as it is or spelled as JSON string
// content with escapes: a provider echoing a key in a JSON error message
// may escape any character of it ("sk-a\/b" for "sk-a/b", "\u002d" for
// "-"; PHP escapes every "/" by default, and AWS secrets contain them).
// Each character of a match may be raw or escaped independently. b is
// modified only through copies; the result may share b's array when
// nothing matched.
func RedactBytes(b []byte, secrets ...string) []byte {
	for _, s := range secrets {
		if len(s) < 4 {
			continue
		}
		// The raw spelling first, wherever it is, even where an escape's
		// hex digits begin it ("\u00a1b2c3…" holds the key "a1b2c3…" as
		// bytes): no stored byte may spell the key.
		if bytes.Contains(b, []byte(s)) {
			b = bytes.ReplaceAll(b, []byte(s), []byte(Redacted))
		}
		if bytes.IndexByte(b, '\\') >= 0 {
			b = redactEscaped(b, []rune(s))
		}
	}
	return b
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
		if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
			return false
		}
	}
	return true
}

// matchEscaped returns the length of the prefix of b that spells rs, each
// rune raw or as a JSON escape, or 0.
func matchEscaped(b []byte, rs []rune) int {
	n := 0
	for _, r := range rs {
		if n >= len(b) {
			return 0
		}
		if b[n] == '\\' {
			m := escapeSpells(b[n:], r)
			if m == 0 {
				return 0
			}
			n += m
			continue
		}
		c, size := utf8.DecodeRune(b[n:])
		if c != r || c == utf8.RuneError && size < 2 {
			return 0
		}
		n += size
	}
	return n
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
		if len(b) < 6 {
			return 0
		}
		var v rune
		for _, h := range b[2:6] {
			switch {
			case h >= '0' && h <= '9':
				v = v<<4 | rune(h-'0')
			case h >= 'a' && h <= 'f':
				v = v<<4 | rune(h-'a'+10)
			case h >= 'A' && h <= 'F':
				v = v<<4 | rune(h-'A'+10)
			default:
				return 0
			}
		}
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
