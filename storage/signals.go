package storage

import (
	"strconv"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/probes"
)

// appendSignalsJSON encodes signals exactly as encoding/json would encode
// []probes.Signal (field names, omitempty rules, string escaping), without
// reflection: it runs once per observation on the hot path.
func appendSignalsJSON(b []byte, sigs []probes.Signal) []byte {
	b = append(b, '[')
	for i, s := range sigs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"category":`...)
		b = appendString(b, s.Category)
		b = append(b, `,"raw":`...)
		b = appendString(b, s.Raw)
		if s.Score != 0 {
			b = append(b, `,"score":`...)
			b = appendFloat(b, s.Score)
		}
		if s.HasScore {
			b = append(b, `,"has_score":true`...)
		}
		if s.Severity != "" {
			b = append(b, `,"severity":`...)
			b = appendString(b, s.Severity)
		}
		if s.Fired {
			b = append(b, `,"fired":true}`...)
		} else {
			b = append(b, `,"fired":false}`...)
		}
	}
	return append(b, ']')
}

// appendFloat formats like encoding/json (ES6 number formatting).
func appendFloat(b []byte, f float64) []byte {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	fmt := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	b = strconv.AppendFloat(b, f, fmt, -1, 64)
	if fmt == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString quotes s like encoding/json with HTML escaping on.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
