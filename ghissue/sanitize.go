package ghissue

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Untrusted text (probe ids, provider request ids, model ids, provider
// messages, reasons) is made inert before it reaches an issue. Two forms:
//
//   - inert: one line for prose and table cells. HTML is escaped (&lt;),
//     markdown punctuation is backslash-escaped (no emphasis, links,
//     images, code spans or table breaks), and GitHub's post-render
//     autolinkers are defeated with a zero-width joiner: "@\u200dname" is no
//     mention, "#\u200d123" and "GH-\u200d123" are no references,
//     "http:\u200d//" and "www\u200d." are no links. (Backslash escapes alone
//     do not stop mentions and references: GitHub links them in the rendered
//     HTML text.)
//   - fenced: a code block whose backtick fence is longer than any backtick
//     run inside, so the content cannot close it. GitHub neither renders
//     markdown/HTML nor links mentions and references inside code blocks.

const zwj = "\u200d"

// mdSpecial are escaped with a backslash in inert text.
const mdSpecial = "\\`*_[]{}()!|~+-=:#$"

var (
	ghRefRe  = regexp.MustCompile(`(?i)\b(gh)-(\d)`)
	schemeRe = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*):(//)`)
	wwwRe    = regexp.MustCompile(`(?i)\b(www)\.`)
)

// clean makes s valid UTF-8 without control characters; newlines and tabs
// are kept when keepLines is true, otherwise they become spaces.
func clean(s string, keepLines bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			if keepLines {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case r == '\r':
			if keepLines {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\uFEFF':
			b.WriteByte(' ')
		case BidiControl(r):
			// bidi overrides: no "Trojan Source" tricks in evidence
		case unicode.Is(unicode.Cf, r):
			// Other invisible format characters (zero-width spaces and
			// joiners, the soft hyphen, tag characters) are shown, so two
			// strings that differ only by them never read the same.
			b.WriteString(FormatEscape(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// BidiControl reports whether r is a bidirectional embedding, override,
// isolate or mark: dropped from rendered untrusted text.
func BidiControl(r rune) bool {
	return r >= '\u202A' && r <= '\u202E' || r >= '\u2066' && r <= '\u2069' || r == '\u200E' || r == '\u200F' || r == '\u061C'
}

// FormatEscape is how rendered untrusted text shows an invisible format
// character: its code point as text ("\u200b").
func FormatEscape(r rune) string {
	if r > 0xffff {
		return fmt.Sprintf(`\U%08x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// truncRunes cuts s to at most n runes, marking the cut with "…".
func truncRunes(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n-1 {
			return s[:k] + "…"
		}
		i++
	}
	return s
}

// inert renders untrusted text as one inert markdown line of at most max
// source runes (before escaping).
func inert(s string, max int) string {
	s = truncRunes(strings.TrimSpace(clean(s, false)), max)
	if s == "" {
		return ""
	}
	// Break autolink triggers first (on the raw text), then escape.
	s = schemeRe.ReplaceAllString(s, "$1:"+zwj+"$2")
	s = wwwRe.ReplaceAllString(s, "$1"+zwj+".")
	s = ghRefRe.ReplaceAllString(s, "$1-"+zwj+"$2")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '@':
			b.WriteString("@" + zwj)
		case r == '#':
			b.WriteString(`\#` + zwj)
		case strings.ContainsRune(mdSpecial, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// orDash returns s, or an em dash when empty.
func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// longestRun returns the longest run of c in s.
func longestRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			if cur > best {
				best = cur
			}
		} else {
			cur = 0
		}
	}
	return best
}

// fenced renders untrusted text verbatim in a code block of at most max
// runes, with a fence longer than any backtick run inside.
func fenced(s string, max int) string {
	s = clean(s, true)
	if n := utf8.RuneCountInString(s); n > max {
		s = truncRunes(s, max) + "\n[truncated: " + itoa(n-max) + " more characters]"
	}
	// No driftprobe marker can be smuggled in (markers are looked up as
	// plain text in issue bodies and comments).
	s = strings.ReplaceAll(s, "<!--", "<!"+zwj+"--")
	fence := strings.Repeat("`", max2(3, longestRun(s, '`')+1))
	return fence + "text\n" + s + "\n" + fence + "\n"
}

// Code renders s as inline code in GitHub Markdown when it is a safe token,
// and otherwise as inert text (no markup, mentions, references or links):
// for any Markdown driftprobe prints, not only issues.
func Code(s string) string { return code(s) }

// Fenced renders untrusted text as a fenced code block: control and bidi
// characters out, no fence it can close, at most max runes.
func Fenced(s string, max int) string { return fenced(s, max) }

// code renders trusted, simple text (hex digests, numbers, our own
// vocabulary) as an inline code span; anything else goes through inert.
func code(s string) string {
	if s == "" {
		return "—"
	}
	if safeToken(s) {
		return "`" + s + "`"
	}
	return inert(s, 200)
}

var safeRe = regexp.MustCompile(`^[A-Za-z0-9._,/+=\[\]-]{1,200}$`)

func safeToken(s string) bool { return safeRe.MatchString(s) }

// titleText cleans a title: one line, no mention/reference triggers (titles
// are plain text, so no HTML or markdown escaping), at most max runes.
func titleText(s string, max int) string {
	s = strings.Join(strings.Fields(clean(s, false)), " ")
	s = strings.ReplaceAll(s, "@", "@"+zwj)
	s = strings.ReplaceAll(s, "#", "#"+zwj)
	return truncRunes(s, max)
}

func max2(a, b int) int {
	if a > b {
		return a
	}
	return b
}
