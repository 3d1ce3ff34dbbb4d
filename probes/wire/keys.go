package wire

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// unknownClean reports whether SanitizeUnknown leaves s as it is: valid
// UTF-8 with no comma, no control and no format character.
func unknownClean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ',' || c < 0x20 || c == 0x7f {
			return false
		}
		if c >= utf8.RuneSelf {
			// Multi-byte: decode the rest (C1 controls, invalid bytes).
			for _, r := range s[i:] {
				if r == ',' || r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// SanitizeUnknown is the one sanitizer of Result.Unknown entries, keys and
// provider-controlled values alike: a comma (the separator storage joins
// the list with, so "category:a,b" would read back as two entries) and
// every control character (line breaks, tabs, NUL, DEL, C1) and format
// character (bidirectional overrides and isolates, zero-width characters,
// the BOM: invisible, or reordering what a terminal shows) become "_";
// invalid UTF-8 becomes U+FFFD. A clean string is returned as it is,
// without allocating.
func SanitizeUnknown(s string) string {
	if unknownClean(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == ',' || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return '_'
		}
		return r
	}, s)
}

// CleanUnknown applies SanitizeUnknown to every entry of u, in order. It
// returns u itself when every entry is clean, else a sanitized copy (u
// may be shared with a caller).
func CleanUnknown(u []string) []string {
	for i, s := range u {
		if unknownClean(s) {
			continue
		}
		out := make([]string, len(u))
		copy(out, u)
		for j := i; j < len(out); j++ {
			out[j] = SanitizeUnknown(out[j])
		}
		return out
	}
	return u
}

// KeysNotIn lists m's keys missing from known, sanitized, at most 64 bytes,
// prefixed and sorted. A provider adding a key is itself a signal: adapters
// record these in Result.Unknown.
func KeysNotIn(m map[string]json.RawMessage, known map[string]bool, prefix string) []string {
	var out []string
	for k := range m {
		if !known[k] {
			out = append(out, prefix+Truncate(SanitizeUnknown(k), 64))
		}
	}
	sort.Strings(out)
	return out
}

// UnknownKeys is KeysNotIn over the JSON object raw; anything that is not
// an object yields nothing.
func UnknownKeys(raw []byte, known map[string]bool, prefix string) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return KeysNotIn(m, known, prefix)
}

// Set returns a membership map of vals (known keys, enum values).
func Set(vals ...string) map[string]bool {
	m := make(map[string]bool, len(vals))
	for _, v := range vals {
		m[v] = true
	}
	return m
}

// EscapeRawNewlines repairs a shape of invalid JSON seen in providers'
// documentation and in the wild: raw line breaks and tabs inside string
// literals. Newlines become \n, carriage returns and tabs spaces; bytes
// outside strings are untouched.
func EscapeRawNewlines(b []byte) []byte {
	out := make([]byte, 0, len(b))
	in, esc := false, false
	for _, c := range b {
		if in {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			case c == '\n':
				out = append(out, '\\', 'n')
				continue
			case c == '\r' || c == '\t':
				out = append(out, ' ')
				continue
			}
		} else if c == '"' {
			in = true
		}
		out = append(out, c)
	}
	return out
}
