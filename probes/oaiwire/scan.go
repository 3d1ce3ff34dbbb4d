package oaiwire

// scanner is the strict JSON reader under tokReader (fastchat.go): a
// hand-written single-pass scanner over a body held in memory, which
// replaced a jsontext.Decoder there because the per-token bookkeeping of a
// general streaming decoder was most of the fast paths' cost.
//
// It accepts exactly RFC 8259 JSON, as jsontext's defaults do, and rejects
// (ok false, so the fast path declines) everything those defaults reject
// and a little more:
//
//   - syntax: white space is space, tab, CR and LF only; literals are true,
//     false and null; numbers follow the RFC grammar (no leading zeros, no
//     leading '+' or '.', a digit after '.' and after an exponent); strings
//     hold no raw control character (< 0x20), only the escapes \" \\ \/ \b
//     \f \n \r \t and \uXXXX;
//   - text: strings are valid UTF-8 (no surrogate halves encoded in UTF-8
//     either), and a \u escape of a surrogate must be a high one followed at
//     once by an escaped low one (a lone surrogate is rejected, where
//     encoding/json would substitute U+FFFD);
//   - duplicate member names, compared after unescaping, in every object,
//     also inside values that are only skipped;
//   - nesting deeper than maxScanDepth (jsontext's limit, 10000) and, more
//     than jsontext, an object with more than maxScanMembers members (the
//     duplicate check is a linear scan);
//   - at the end (scanner.end), anything but white space after the
//     top-level value.
//
// The reads that structure the body (open, name, elem) keep a stack of
// the open containers, so the caller walks the objects it knows member by
// member and skips (value) or reads (str, number, literal) the rest.

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"unicode/utf8"
)

const (
	// maxScanDepth is the deepest nesting accepted, the top-level value
	// counting as 1 (jsontext's and encoding/json's limit).
	maxScanDepth = 10000
	// maxScanMembers bounds the members of one object.
	maxScanMembers = 256
)

type scanner struct {
	buf []byte // the body, read in place
	pos int    // the next unread byte

	stack   []scanFrame // the open containers, innermost last
	names   []nameRef   // the member names read in the open objects
	nameBuf []byte      // the unescaped text of names that had escapes
}

// scanFrame is one open container.
type scanFrame struct {
	obj   bool
	n     int32 // members or elements begun
	names int32 // index in names of this object's first member name
}

// nameRef locates one member name's unescaped text: buf[off:end], or
// nameBuf[off:end] when esc.
type nameRef struct {
	off, end int32
	esc      bool
}

// reset points the scanner at body and forgets any previous state. A body
// of 2 GiB or more (past what nameRef's offsets hold) is read as an empty
// one: every read of it fails.
func (s *scanner) reset(body []byte) {
	if len(body) > math.MaxInt32 {
		body = body[:0]
	}
	s.buf, s.pos = body, 0
	s.stack, s.names, s.nameBuf = s.stack[:0], s.names[:0], s.nameBuf[:0]
}

// ws skips white space.
func (s *scanner) ws() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	// Most bodies have no white space between tokens: check the next byte
	// before calling the loop.
	if s.pos < len(s.buf) && s.buf[s.pos] > ' ' {
		return s.buf[s.pos]
	}
	s.ws()
	if s.pos < len(s.buf) {
		return s.buf[s.pos]
	}
	return 0
}

// end reports whether the top-level value is complete and only white space
// follows it.
func (s *scanner) end() bool {
	s.ws()
	return s.pos == len(s.buf) && len(s.stack) == 0
}

// push opens a container whose opening delimiter was just consumed.
func (s *scanner) push(obj bool) bool {
	if len(s.stack) >= maxScanDepth {
		return false
	}
	s.stack = append(s.stack, scanFrame{obj: obj, names: int32(len(s.names))})
	return true
}

// pop closes the innermost container, forgetting its member names.
func (s *scanner) pop() {
	f := s.stack[len(s.stack)-1]
	s.names = s.names[:f.names]
	s.stack = s.stack[:len(s.stack)-1]
}

// open reads the opening delimiter of a container (delim '{' or '[') or a
// null (open false, ok true). Anything else is not ok.
func (s *scanner) open(delim byte) (open, ok bool) {
	switch s.peek() {
	case delim:
		s.pos++
		return true, s.push(delim == '{')
	case 'n':
		return false, s.literal("null")
	}
	return false, false
}

// name reads the next member name of the innermost open object, with the
// comma before it and the colon after it, or the object's closing brace
// (done). The name is unescaped and valid until the scanner is reset.
func (s *scanner) name() (name []byte, done, ok bool) {
	if len(s.stack) == 0 {
		return nil, false, false
	}
	top := &s.stack[len(s.stack)-1]
	if !top.obj {
		return nil, false, false
	}
	c := s.peek()
	if c == '}' {
		s.pos++
		s.pop()
		return nil, true, true
	}
	if top.n > 0 {
		if c != ',' {
			return nil, false, false
		}
		s.pos++
	}
	top.n++
	name, ok = s.member()
	return name, false, ok
}

// elem begins the next element of the innermost open array (the caller
// then reads it), consuming the comma before it, or reads the array's
// closing bracket (done).
func (s *scanner) elem() (done, ok bool) {
	if len(s.stack) == 0 || s.stack[len(s.stack)-1].obj {
		return false, false
	}
	top := &s.stack[len(s.stack)-1]
	c := s.peek()
	if c == ']' {
		s.pos++
		s.pop()
		return true, true
	}
	if top.n > 0 {
		if c != ',' {
			return false, false
		}
		s.pos++
	}
	top.n++
	return false, true
}

// member reads a member name of the innermost open object and the colon
// after it, rejecting a name already read in that object.
func (s *scanner) member() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start, end, esc, ok := s.str()
	if !ok {
		return nil, false
	}
	ref := nameRef{off: int32(start), end: int32(end)}
	name := s.buf[start:end]
	if esc {
		off := len(s.nameBuf)
		s.nameBuf = appendUnescaped(s.nameBuf, name)
		ref = nameRef{off: int32(off), end: int32(len(s.nameBuf)), esc: true}
		name = s.nameBuf[off:]
	}
	first := int(s.stack[len(s.stack)-1].names)
	if len(s.names)-first >= maxScanMembers {
		return nil, false
	}
	for _, r := range s.names[first:] {
		if r.end-r.off == ref.end-ref.off && bytes.Equal(s.nameText(r), name) {
			return nil, false
		}
	}
	s.names = append(s.names, ref)
	if s.peek() != ':' {
		return nil, false
	}
	s.pos++
	return name, true
}

func (s *scanner) nameText(r nameRef) []byte {
	if r.esc {
		return s.nameBuf[r.off:r.end]
	}
	return s.buf[r.off:r.end]
}

// value reads past the next value, of any kind, and returns its bytes as
// sent (from its first byte to its last).
func (s *scanner) value() ([]byte, bool) {
	s.ws()
	start := s.pos
	base := len(s.stack)
	for {
		// A value begins here.
		if s.pos >= len(s.buf) {
			return nil, false
		}
		switch c := s.buf[s.pos]; c {
		case '{', '[':
			s.pos++
			obj := c == '{'
			if !s.push(obj) {
				return nil, false
			}
			switch s.peek() {
			case '}', ']':
				if s.buf[s.pos] != c+2 { // '{'+2 == '}', '['+2 == ']'
					return nil, false
				}
				s.pos++
				s.pop()
			default:
				if obj {
					if _, ok := s.member(); !ok {
						return nil, false
					}
				}
				s.ws()
				continue // to the first member's or element's value
			}
		case '"':
			if _, _, _, ok := s.str(); !ok {
				return nil, false
			}
		case 't':
			if !s.literal("true") {
				return nil, false
			}
		case 'f':
			if !s.literal("false") {
				return nil, false
			}
		case 'n':
			if !s.literal("null") {
				return nil, false
			}
		default:
			if _, ok := s.number(); !ok {
				return nil, false
			}
		}
		// A value ended: close containers, or go on to the next member or
		// element.
		for {
			if len(s.stack) == base {
				return s.buf[start:s.pos], true
			}
			obj := s.stack[len(s.stack)-1].obj
			c := s.peek()
			if c == ',' {
				s.pos++
				if obj {
					if _, ok := s.member(); !ok {
						return nil, false
					}
				}
				s.ws()
				break
			}
			if (obj && c == '}') || (!obj && c == ']') {
				s.pos++
				s.pop()
				continue
			}
			return nil, false
		}
	}
}

// literal reads the literal word (true, false or null).
func (s *scanner) literal(word string) bool {
	if len(s.buf)-s.pos >= len(word) && string(s.buf[s.pos:s.pos+len(word)]) == word {
		s.pos += len(word)
		return true
	}
	return false
}

// number reads a number and returns its literal.
func (s *scanner) number() ([]byte, bool) {
	b, i := s.buf, s.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return nil, false
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return nil, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return nil, false
		}
		i = j
	}
	v := b[s.pos:i]
	s.pos = i
	return v, true
}

// digits returns the index of the first non-digit in b at or after i.
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// strPlain marks the bytes a string holds as they are: printable ASCII
// other than the quote and the backslash.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads the string at s.pos (its opening quote), validating it, and
// returns the bounds of its text as sent (between the quotes) and whether
// that text has escapes.
func (s *scanner) str() (start, end int, esc, ok bool) {
	b := s.buf
	i := s.pos + 1
	start = i
	for {
		i = plainRun(b, i)
		for i < len(b) && strPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			return 0, 0, false, false
		}
		switch c := b[i]; {
		case c == '"':
			s.pos = i + 1
			return start, i, esc, true
		case c == '\\':
			esc = true
			n := escapeLen(b[i:])
			if n == 0 {
				return 0, 0, false, false
			}
			i += n
		case c < 0x20:
			return 0, 0, false, false
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return 0, 0, false, false
			}
			i += n
		}
	}
}

// plainRun returns the index of the first byte at or after i that is not
// plain string text (strPlain), or, when there is none in the last words
// of b, an index of the last seven bytes (the caller finishes byte by
// byte). It reads eight bytes at a time, with the classic tests on a word
// for a byte below a bound and for a zero byte (of x XOR a byte). Those
// tests set the high bit of the first byte that is not plain and of no
// plain byte before it (a byte can only be disturbed by a borrow from a
// lower one that fired), so the lowest bit set is exactly that byte.
func plainRun(b []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ ('"' * ones)
		bs := x ^ ('\\' * ones)
		if t := ((x - 0x20*ones) | (q - ones) | (bs - ones) | x) & highs; t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
		i += 8
	}
	return i
}

// escapeLen returns the length of the escape sequence b begins with (at
// its backslash), 12 for a surrogate pair, or 0 if it is not a valid one.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		r, ok := hex4(b[2:])
		switch {
		case !ok:
			return 0
		case r < 0xd800 || r >= 0xe000:
			return 6
		case r >= 0xdc00:
			return 0 // a lone low surrogate
		}
		if len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
			return 0 // a lone high surrogate
		}
		if lo, ok := hex4(b[8:]); !ok || lo < 0xdc00 || lo >= 0xe000 {
			return 0
		}
		return 12
	}
	return 0
}

// hex4 decodes the four hex digits b begins with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendUnescaped appends the unescaped text of s, the text of a string
// that str validated, to dst.
func appendUnescaped(dst, s []byte) []byte {
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		s = s[i:]
		switch s[1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(s[2:])
			if 0xd800 <= r && r < 0xdc00 {
				lo, _ := hex4(s[8:])
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				s = s[6:]
			}
			dst = utf8.AppendRune(dst, r)
			s = s[6:]
			continue
		default: // '"', '\\', '/'
			dst = append(dst, s[1])
		}
		s = s[2:]
	}
	return dst
}
