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
func Clean(s string) string { return clean(s, true) }

// Safe makes text that may already hold Clean's escapes (an error message
// built from Clean'd parts) safe for a terminal without escaping it twice:
// like Clean, but backslashes are left as they are.
func Safe(s string) string { return clean(s, false) }

func clean(s string, escBackslash bool) string {
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
		if n >= 300 && i < len(s) {
			b.WriteString("…")
			break
		}
	}
	return b.String()
}
