// Package termtext makes untrusted text (provider answers, model ids,
// GitHub error messages) safe to print on a terminal or in a log line.
package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean makes untrusted text safe for a terminal: control and format
// characters (including escape sequences' ESC, bidirectional overrides
// and line breaks) and invalid UTF-8 are escaped (\n, \x1b, \u202e), and
// text beyond 300 runes is cut.
func Clean(s string) string { return clean(s, true, maxRunes) }

// Safe makes text that may already hold Clean's escapes (an error message
// built from Clean'd parts) safe for a terminal without escaping it twice:
// like Clean, but backslashes are left as they are.
func Safe(s string) string { return clean(s, false, maxRunes) }

// SafeLong is Safe without the length cap, for text that is long by
// design (a change's list of probe ids) and must be printed whole.
func SafeLong(s string) string { return clean(s, false, -1) }

// CleanLong is Clean without the length cap, for untrusted text that is
// bounded by its maker and long by design (a warning quoting a query or a
// label) and must be printed whole.
func CleanLong(s string) string { return clean(s, true, -1) }

// maxRunes is where Clean and Safe cut text.
const maxRunes = 300

func clean(s string, escBackslash bool, limit int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' && escBackslash:
			b.WriteString(`\\`)
		case r < 0x80 && (unicode.IsControl(r)):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += w
		n++
		if limit >= 0 && n >= limit && i < len(s) {
			b.WriteString("…")
			break
		}
	}
	return b.String()
}

// Count is "1 one" or "N many": a count with its noun in agreement.
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
