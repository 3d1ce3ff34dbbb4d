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
