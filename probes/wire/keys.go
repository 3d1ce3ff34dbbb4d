package wire

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// keySanitizer keeps Unknown entries free of the list separator storage
// uses and of line breaks.
var keySanitizer = strings.NewReplacer(",", "_", "\n", "_", "\r", "_")

// KeysNotIn lists m's keys missing from known, sanitized, at most 64 bytes,
// prefixed and sorted. A provider adding a key is itself a signal: adapters
// record these in Result.Unknown.
func KeysNotIn(m map[string]json.RawMessage, known map[string]bool, prefix string) []string {
	var out []string
	for k := range m {
		if !known[k] {
			out = append(out, prefix+Truncate(keySanitizer.Replace(k), 64))
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
