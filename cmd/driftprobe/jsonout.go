package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// writeJSON writes v as indented JSON, HTML characters unescaped, with
// escapeInvisible applied: every --json output goes through it.
func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeInvisible(b.Bytes()))
	return err
}

// runFailure is the JSON document of a run that failed after it was
// recorded (`run --json`), or whose comparison failed after it was made
// (`compare --run --json`): scripts still get its id, what the database
// holds for it, and why.
type runFailure struct {
	RunID  int64  `json:"run_id"`
	Status string `json:"status"`
	Error  string `json:"error"`
}

// writeRunFailure writes err as the runFailure of run id, status. The
// command still returns err: the exit code is its.
func writeRunFailure(w interface{ Write([]byte) (int, error) }, id int64, status string, err error) error {
	if werr := writeJSON(w, runFailure{id, status, err.Error()}); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// escapeInvisible rewrites, in encoded JSON, the characters a terminal
// acts on or hides but encoding/json writes raw — DEL, the C1 controls,
// format characters (bidirectional overrides and isolates, zero-width
// characters, the BOM, the tag characters of "ASCII smuggling") —
// as \uXXXX escapes. They can only occur inside strings (a provider's
// message, a model fingerprint), whose decoded values stay the same, so
// JSON printed to a terminal cannot reorder or hide what it shows.
func escapeInvisible(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if invisible(r) {
			if out == nil {
				out = make([]byte, 0, len(b)+16)
			}
			out = append(out, b[last:i]...)
			if r > 0xffff { // beyond the BMP: a surrogate pair
				hi, lo := utf16.EncodeRune(r)
				out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
			last = i + n
		}
		i += n
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

func invisible(r rune) bool {
	// >= 0x7f: the encoder's own newlines and indentation stay; every
	// control below it inside a string is escaped by encoding/json.
	return r >= 0x7f && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r))
}
