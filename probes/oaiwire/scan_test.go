package oaiwire

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/driftprobe/driftprobe/probes"
)

// jsontextAccepts reports whether a jsontext.Decoder with its default
// (strict) options reads b as exactly one JSON value, and returns the value
// as ReadValue returns it: the reference of the scanner's syntax rules.
func jsontextAccepts(b []byte) ([]byte, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	v, err := dec.ReadValue()
	if err != nil {
		return nil, false
	}
	v = bytes.Clone(v) // valid only until the next read
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// scanAccepts reports whether the scanner reads b as exactly one value,
// and returns the value as scanner.value returns it.
func scanAccepts(b []byte) ([]byte, bool) {
	var s scanner
	s.reset(b)
	v, ok := s.value()
	if !ok || !s.end() {
		return nil, false
	}
	return v, true
}

// checkScan compares the scanner with jsontext on b: both accept it (and
// return the same value bytes) or both reject it. The one documented
// difference, objects of more than maxScanMembers members, which only the
// scanner rejects, is left out by the callers.
func checkScan(t *testing.T, b []byte) {
	t.Helper()
	got, ok := scanAccepts(b)
	want, wantOK := jsontextAccepts(b)
	if ok != wantOK || !bytes.Equal(got, want) {
		t.Errorf("%q: scanner %v %q, jsontext %v %q", b, ok, got, wantOK, want)
	}
}

// scanCases are JSON texts, valid and not, around the scanner's rules.
var scanCases = []string{
	// white space
	``, ` `, "\t{}\r\n", "\f{}", "\v{}", "\u00a0{}", "{}\x00", `{} `, ` { } `, "[ 1 ,\n2\t]",
	// literals
	`true`, `false`, `null`, `nul`, `nulll`, `True`, `[truefalse]`, `[true,false,null]`, `tru`, `nullx`,
	// numbers
	`0`, `-0`, `-`, `00`, `01`, `-01`, `1.`, `.5`, `1.5`, `+1`, `1e`, `1e+`, `1e-5`, `1E5`, `1e400`, `-1e-400`,
	`123456789012345678901234567890`, `0.0e0`, `1.0E+2`, `[0x1]`, `[1 2]`, `[1,]`, `[,1]`, `[-]`, `1.5.5`, `NaN`, `Infinity`,
	// strings and escapes
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\a"`, `"\x41"`, `"\u0041"`, `"\u00e9"`, `"\u00E9"`,
	`"\u00g9"`, `"\u00e"`, `"\u"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83d\u0041"`, `"\ud83dx"`,
	`"\ud83d\ud83d"`, `"\udbff\udfff"`, `"\u0000"`, "\"a\x00b\"", "\"a\nb\"", "\"a\tb\"", "\"a\x7fb\"", `"unterminated`,
	`"\`, "\"\xff\"", "\"\xc3\"", "\"\xc3\xa9\"", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"", "\"\xf4\x90\x80\x80\"",
	"\"\xe2\x82\"", "\"\xf0\x9f\x98\x80\"", "\"\xc0\x80\"",
	// objects and arrays
	`{}`, `[]`, `{"a":1}`, `{"a":1,}`, `{,"a":1}`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{"a":1 "b":2}`, `{1:1}`, `{"a":1]`,
	`[1}`, `[`, `{`, `]`, `}`, `[[[]]]`, `[{}]`, `{"a":{"b":[{"c":null}]}}`, `{"a":1}{}`, `{"a":1} 1`, `{"a":1}x`,
	// duplicate names, at every level and escaped
	`{"a":1,"a":2}`, `{"a":1,"b":{"a":1},"c":[{"a":1,"b":2},{"a":1}]}`, `{"x":[{"a":1,"a":1}]}`, `{"x":{"y":{"b":1,"b":2}}}`,
	`{"a":1,"\u0061":2}`, `{"\u0061":1,"\u0061":2}`, `{"é":1,"\u00e9":2}`, `{"a":{"a":{"a":1}}}`, `{"ab":1,"a":2,"b":3}`,
	`{"":1,"":2}`, `{"":1}`, `{"a\"":1,"a\u0022":2}`, `{"\ud83d\ude00":1,"😀":2}`, `{"a":[],"b":{},"a":null}`,
	`[{"a":1},{"a":1}]`, `{"a":{"x":1},"b":{"x":1}}`,
	// invalid UTF-8 in names and skipped values
	"{\"\xff\":1}", "{\"a\":[\"\xff\"]}", "{\"a\":{\"b\":\"\xc3\"}}",
}

// TestScanner compares the scanner with jsontext's strict defaults on
// hand-written texts, on each of them cut short, and on deep nesting.
func TestScanner(t *testing.T) {
	for _, c := range scanCases {
		checkScan(t, []byte(c))
		for i := range len(c) {
			checkScan(t, []byte(c[:i]))
		}
	}
	for _, d := range []int{1, 2, 100, maxScanDepth - 1, maxScanDepth, maxScanDepth + 1} {
		checkScan(t, []byte(strings.Repeat("[", d)+strings.Repeat("]", d)))
		checkScan(t, []byte(strings.Repeat(`{"a":`, d-1)+"{}"+strings.Repeat("}", d-1)))
		checkScan(t, []byte(strings.Repeat(`[{"a":1,"a":2}`, d/2+1)))
	}
}

// TestScannerMembers: an object of up to maxScanMembers members is read,
// duplicates found among them; a larger one is rejected.
func TestScannerMembers(t *testing.T) {
	for _, n := range []int{1, 2, 10, maxScanMembers} {
		b := []byte(`{"x":{` + bigObject(n) + `}}`)
		if _, ok := scanAccepts(b); !ok {
			t.Errorf("%d members: rejected", n)
		}
		checkScan(t, b)
		checkScan(t, []byte(`{"x":{`+bigObject(n)+`,"k":1}}`)) // a duplicate last
	}
	if _, ok := scanAccepts([]byte(`{"x":{` + bigObject(maxScanMembers+1) + `}}`)); ok {
		t.Errorf("%d members: accepted", maxScanMembers+1)
	}
}

// TestAppendUnescaped compares the scanner's unescaping with jsontext's.
func TestAppendUnescaped(t *testing.T) {
	for _, c := range scanCases {
		if len(c) < 2 || c[0] != '"' || c[len(c)-1] != '"' {
			continue
		}
		if _, ok := scanAccepts([]byte(c)); !ok {
			continue
		}
		want, err := jsontext.AppendUnquote(nil, []byte(c))
		if got := appendUnescaped(nil, []byte(c[1:len(c)-1])); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q, want %q (%v)", c, got, want, err)
		}
	}
}

// FuzzScanner compares the scanner with jsontext on any input: both accept
// it as one value (the same bytes) or both reject it. The unescaped text
// of each accepted string must also be jsontext's.
//
//	go test ./probes/oaiwire -run '^$' -fuzz '^FuzzScanner$' -fuzztime 1m
func FuzzScanner(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if bytes.Count(b, []byte{','}) >= maxScanMembers {
			return // may be an object larger than the scanner reads
		}
		checkScan(t, b)
		if len(b) >= 2 && b[0] == '"' {
			if _, ok := scanAccepts(b); ok {
				want, _ := jsontext.AppendUnquote(nil, bytes.TrimRight(b, " \t\r\n"))
				if got := appendUnescaped(nil, bytes.TrimRight(b, " \t\r\n")[1:len(bytes.TrimRight(b, " \t\r\n"))-1]); !bytes.Equal(got, want) || !utf8.Valid(got) {
					t.Errorf("%q: unescaped %q, want %q", b, got, want)
				}
			}
		}
	})
}

// TestFastChatScannerEdgeCases compares the fast and the reference chat
// readers on bodies around the scanner's rules; accept as in
// TestFastChatEdgeCases.
func TestFastChatScannerEdgeCases(t *testing.T) {
	yes, no := new(bool), new(bool)
	*yes = true
	ans := `"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]`
	cases := []struct {
		name   string
		body   string
		accept *bool
	}{
		{"duplicate in skipped object", `{"x":{"a":1,"a":2},` + ans + `}`, no},
		{"duplicate in skipped array of objects", `{"x":[{"a":1},{"b":1,"b":2}],` + ans + `}`, no},
		{"duplicate deep in skipped value", `{"x":[[{"y":{"z":{"q":1,"q":1}}}]],` + ans + `}`, no},
		{"duplicate escaped in skipped object", `{"x":{"a":1,"\u0061":2},` + ans + `}`, no},
		{"same name at different levels", `{"x":{"x":{"x":1},"choices":2},` + ans + `}`, yes},
		{"same name in sibling objects", `{"x":[{"a":1},{"a":1}],"y":{"a":{"a":1}},` + ans + `}`, yes},
		{"duplicate in filter entry", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"filtered":false,"filtered":true}}}]}`, no},
		{"duplicate filter name", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"filtered":false},"hate":{"filtered":true}}}]}`, no},
		{"duplicate usage name", `{` + ans + `,"usage":{"prompt_tokens":1,"prompt_tokens":2}}`, no},
		{"escaped unknown name", `{"br\u0061nd_new":1,` + ans + `}`, yes},
		{"escaped known name in message", `{"choices":[{"message":{"\u0063ontent":"hi","r\u006fle":"assistant"},"finish_reason":"stop"}]}`, yes},
		{"escaped filter names", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"h\u0061te":{"filt\u0065red":true,"severity":"h\u0069gh"}}}]}`, yes},
		{"escaped surrogate pair name", `{"\ud83d\ude00":1,` + ans + `}`, yes},
		{"lone surrogate in skipped value", `{"x":"\udc00",` + ans + `}`, no},
		{"lone surrogate in name", `{"\ud800":1,` + ans + `}`, no},
		{"invalid utf8 in skipped object", "{\"x\":{\"y\":[\"\xc3\"]}," + ans + "}", no},
		{"invalid utf8 in skipped name", "{\"x\":{\"\xe2\x82\":1}," + ans + "}", no},
		{"utf8 surrogate half in value", "{\"choices\":[{\"message\":{\"content\":\"\xed\xa0\x80\"},\"finish_reason\":\"stop\"}]}", no},
		{"control char in skipped value", "{\"x\":\"a\x01\"," + ans + "}", no},
		{"del in value", "{\"choices\":[{\"message\":{\"content\":\"a\x7f\"},\"finish_reason\":\"stop\"}]}", yes},
		{"negative zero count", `{` + ans + `,"usage":{"prompt_tokens":-0,"completion_tokens":0}}`, yes},
		{"negative zero score", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"score":-0}}}]}`, yes},
		{"score 1e400", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"score":1e400}}}]}`, no},
		{"skipped 1e400", `{"x":1e400,` + ans + `}`, yes},
		{"skipped huge integer", `{"x":123456789012345678901234567890,` + ans + `}`, yes},
		{"leading zero count", `{` + ans + `,"usage":{"prompt_tokens":01}}`, no},
		{"leading zero skipped", `{"x":01,` + ans + `}`, no},
		{"leading zero score", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"score":00.5}}}]}`, no},
		{"plus number", `{"x":+1,` + ans + `}`, no},
		{"dot number", `{"x":.5,` + ans + `}`, no},
		{"bare minus", `{` + ans + `,"usage":{"prompt_tokens":-}}`, no},
		{"exponent without digits", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"score":1e}}}]}`, no},
		{"number then letter", `{` + ans + `,"usage":{"prompt_tokens":1x}}`, no},
		{"literal prefix", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"filtered":tru}}}]}`, no},
		{"literal run-on", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop","content_filter_results":{"hate":{"filtered":truex}}}]}`, no},
		{"trailing comma in object", `{` + ans + `,}`, no},
		{"trailing comma in array", `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"},]}`, no},
		{"trailing comma in skipped array", `{"x":[1,],` + ans + `}`, no},
		{"leading comma in skipped object", `{"x":{,"a":1},` + ans + `}`, no},
		{"missing colon", `{"x" 1,` + ans + `}`, no},
		{"mismatched close", `{"x":[1},` + ans + `}`, no},
		{"trailing whitespace", `{` + ans + "} \t\r\n", yes},
		{"trailing nul", `{` + ans + "}\x00", no},
		{"trailing bracket", `{` + ans + `}]`, no},
		{"trailing second object", `{` + ans + `}{}`, no},
		{"trailing string", `{` + ans + `}""`, no},
		{"form feed", "{\f" + ans + `}`, no},
		{"vertical tab", "{" + ans + "\v}", no},
		{"nbsp", "{\u00a0" + ans + `}`, no},
		{"whitespace everywhere", "\r\n\t {\t\"x\"\n:\r[ 1 ,\t{ \"a\" : null } ] ,\n" + strings.ReplaceAll(ans, ",", " ,\n ") + "\r}\n", yes},
		{"deep skipped objects", `{"x":` + strings.Repeat(`{"a":`, 9999) + `1` + strings.Repeat(`}`, 9999) + `,` + ans + `}`, yes},
		{"too deep skipped objects", `{"x":` + strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat(`}`, 10000) + `,` + ans + `}`, no},
		{"large skipped object", `{"x":{` + bigObject(maxScanMembers+1) + `},` + ans + `}`, no},
	}
	for _, c := range cases {
		for _, h := range []http.Header{nil, {"X-Request-Id": {"r"}}} {
			ok, diff := fastSlowDiff(&probes.Response{Status: 200, Header: h, Body: []byte(c.body)})
			if diff != "" {
				t.Errorf("%s: %s", c.name, diff)
			}
			if c.accept != nil && ok != *c.accept {
				t.Errorf("%s: fast path accepted=%v, want %v", c.name, ok, *c.accept)
			}
		}
	}
}

// bigObject returns n distinct members: "k":0,"kx":0,"kxx":0,...
func bigObject(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strings.Repeat("x", i) + `":0`)
	}
	return b.String()
}

// TestPlainRun: plainRun returns the first byte that is not plain string
// text, or an index of the last seven bytes before which all are plain.
func TestPlainRun(t *testing.T) {
	rng := uint64(11)
	for range 200000 {
		rng = rng*6364136223846793005 + 1442695040888963407
		b := make([]byte, rng>>58)
		for j := range b {
			rng = rng*6364136223846793005 + 1442695040888963407
			// Mostly plain bytes, with the boundaries of every rule.
			b[j] = []byte{'a', 'a', 'a', 'a', '"', '\\', 0x1f, 0x20, 0x7f, 0x80, 0x21, 0x23, 0x5b, 0x5d, 0xff, byte(rng >> 32)}[rng>>60]
		}
		want := len(b)
		for j, c := range b {
			if !strPlain[c] {
				want = j
				break
			}
		}
		got := plainRun(b, 0)
		if got != want && !(want >= len(b)-7 && got >= len(b)-7 && got <= want) {
			t.Fatalf("%q: plainRun %d, want %d", b, got, want)
		}
	}
}

// TestFastChatScannerPoolBound: a reader whose scanner stack or name
// records grew past maxPooledFrames (deep nesting, many names) is not
// pooled again, and no pooled reader keeps a body.
func TestFastChatScannerPoolBound(t *testing.T) {
	ans := `"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]`
	bodies := []string{
		`{"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `,` + ans + `}`,
		`{"x":` + strings.Repeat(`{"a":`, 2000) + `1` + strings.Repeat("}", 2000) + `,` + ans + `}`,
		`{"x":{"\u0061` + strings.Repeat("b", 2*maxPooledBytes) + `":1},` + ans + `}`,
	}
	for _, b := range bodies {
		if ok, diff := fastSlowDiff(&probes.Response{Status: 200, Body: []byte(b)}); !ok || diff != "" {
			t.Fatalf("accepted=%v %s", ok, diff)
		}
	}
	var got []*chatReader
	for range 64 {
		c := chatReaders.Get().(*chatReader)
		got = append(got, c)
		if cap(c.s.stack) > maxPooledFrames || cap(c.s.names) > maxPooledFrames || cap(c.s.nameBuf) > maxPooledBytes {
			t.Errorf("a pooled reader kept a stack of %d, %d name records, %d bytes of names", cap(c.s.stack), cap(c.s.names), cap(c.s.nameBuf))
		}
		if c.s.buf != nil {
			t.Errorf("a pooled reader kept a body")
		}
	}
	for _, c := range got {
		c.release()
	}
}
