package attribution

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/internal/yamlx"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// JSONL reads production counts, one JSON object per line:
//
//	{"time":"2026-11-20T10:00:00Z","target":"sim-a","category":"violence","blocked":12,"total":1000}
//
// Fields:
//   - time (required): RFC 3339 ("T" and "Z" in either case), the start of
//     the interval the counts cover.
//   - target (required): a target name from the config.
//   - category (optional; "" or null: every block on the target): a
//     normalized category, see NormalizeCategory.
//   - blocked (required): blocked requests in the interval, a number
//     between 0 and MaxCount (fractions are accepted: Prometheus' increase()
//     returns them).
//   - total (optional; null: absent): requests in the interval, between
//     blocked and MaxCount.
//     Within one (target, category) series, give it on every line or on none.
//
// Blank lines and lines starting with '#' are skipped; a UTF-8 BOM and CRLF
// line ends are accepted. Decoding is strict: unknown or duplicate fields,
// wrong types, trailing data, a second point for the same series and time,
// and every rule above are errors reported as "NAME:LINE: field: problem"
// (a yamlx.List, at most maxErrors of them). Input that cannot be read
// (a directory, an I/O error) is an *InputError "NAME: reading: problem":
// the user's input too.
type JSONL struct {
	Name string    // the file name used in errors ("stdin" for standard input)
	R    io.Reader // the data
}

// maxErrors bounds the problems one JSONL file reports.
const maxErrors = 20

// MaxCount bounds a count (blocked or total requests in one interval), so
// that no sum over a series can overflow: larger JSONL counts are errors,
// larger Prometheus samples are dropped with a warning.
const MaxCount = 1e15

// maxLine bounds one JSONL line.
const maxLine = 1 << 20

// Load implements Source.
func (j *JSONL) Load(_ context.Context, targets []string) (*Production, error) {
	return ReadJSONL(j.Name, j.R, targets)
}

type jsonlPoint struct {
	Point
	line int
}

type jsonlErrs struct {
	name string
	list yamlx.List
}

func (e *jsonlErrs) add(line int, field, format string, args ...any) {
	e.list = append(e.list, &yamlx.Error{File: e.name, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (e *jsonlErrs) full() bool { return len(e.list) >= maxErrors }

// final returns the problems in line order, at most maxErrors of them,
// followed by a "too many problems" line when there were more or when
// reading stopped early.
func (e *jsonlErrs) final(stopped bool) yamlx.List {
	sort.SliceStable(e.list, func(a, b int) bool { return e.list[a].Line < e.list[b].Line })
	if len(e.list) > maxErrors {
		e.list, stopped = e.list[:maxErrors], true
	}
	if stopped {
		e.add(e.list[len(e.list)-1].Line, "", "too many problems; stopping here")
	}
	return e.list
}

// ReadJSONL reads the JSONL format (see JSONL) from r; name locates errors.
func ReadJSONL(name string, r io.Reader, targets []string) (*Production, error) {
	known := targetSet(targets)
	errs := &jsonlErrs{name: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	bySeg := map[Segment][]jsonlPoint{}
	lineNo := 0
	for sc.Scan() {
		lineNo++
		raw := sc.Bytes()
		if lineNo == 1 {
			raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
		}
		line := bytes.TrimSpace(raw)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		seg, p, ok := parseLine(errs, lineNo, line, known, targets)
		if ok {
			bySeg[seg] = append(bySeg[seg], jsonlPoint{p, lineNo})
		}
		if errs.full() {
			return nil, errs.final(true)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			errs.add(lineNo+1, "", "line longer than %d bytes", maxLine)
			return nil, errs.final(false)
		}
		// The input is unreadable (a directory, an I/O error): the user's
		// input, said once — an *os.PathError repeats "read NAME".
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &InputError{fmt.Errorf("%s: reading: %w", name, err)}
	}
	prod := &Production{Skipped: []SkippedSeries{}}
	for seg, pts := range bySeg {
		sort.SliceStable(pts, func(a, b int) bool { return pts[a].Time.Before(pts[b].Time) })
		s := &Series{Segment: seg}
		ordered := lineOrder(pts)
		first := ordered[0]
		for _, p := range ordered[1:] {
			if p.HasTotal != first.HasTotal {
				errs.add(p.line, "total", "%s here but %s on line %d, for the same target and category: give total on every line of a series or on none",
					presence(p.HasTotal), presence(first.HasTotal), first.line)
				break
			}
		}
		for i, p := range pts {
			if i > 0 && p.Time.Equal(pts[i-1].Time) {
				errs.add(max(p.line, pts[i-1].line), "time", "a second point for target %s, category %s at %s (the other is on line %d)",
					seg.Target, catName(seg.Category), p.Time.Format(time.RFC3339), min(p.line, pts[i-1].line))
				continue
			}
			s.Points = append(s.Points, p.Point)
		}
		s.Step = medianStep(s.Points)
		prod.Series = append(prod.Series, s)
	}
	if len(errs.list) > 0 {
		return nil, errs.final(false)
	}
	if len(prod.Series) == 0 {
		// Like a Prometheus query that matches nothing: a report with no
		// series and a warning (a --fail-on gate over it exits 2).
		prod.Warnings = append(prod.Warnings, name+": no production data (empty, or every line blank or a # comment): nothing to attribute")
		return prod, nil
	}
	sortSeries(prod.Series)
	return prod, nil
}

// lineOrder returns pts ordered by line (the file's order).
func lineOrder(pts []jsonlPoint) []jsonlPoint {
	out := append([]jsonlPoint(nil), pts...)
	sort.Slice(out, func(a, b int) bool { return out[a].line < out[b].line })
	return out
}

func presence(b bool) string {
	if b {
		return "present"
	}
	return "absent"
}

func catName(c string) string {
	if c == "" {
		return `"" (all)`
	}
	return c
}

var jsonlFields = []string{"time", "target", "category", "blocked", "total"}

// parseLine decodes one data line. Problems go to errs; ok is false when
// there was any.
func parseLine(errs *jsonlErrs, n int, line []byte, known map[string]bool, targets []string) (Segment, Point, bool) {
	before := len(errs.list)
	fields, ok := splitObject(errs, n, line)
	if !ok {
		return Segment{}, Point{}, false
	}
	var seg Segment
	var p Point
	// time
	if raw, ok := fields["time"]; !ok {
		errs.add(n, "time", "required (an RFC 3339 time, e.g. 2026-11-20T10:00:00Z)")
	} else if s, ok := jsonString(errs, n, "time", raw, false); ok {
		// RFC 3339 (5.6) allows a lower-case "t" and "z"; Go's parser
		// wants them upper-case, and nothing else in the format is a
		// letter.
		t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
		if err != nil {
			errs.add(n, "time", "%q: not an RFC 3339 time (e.g. 2026-11-20T10:00:00Z)", s)
		} else {
			p.Time = t.UTC()
		}
	}
	// target
	if raw, ok := fields["target"]; !ok {
		errs.add(n, "target", "required (a target name from the config)")
	} else if s, ok := jsonString(errs, n, "target", raw, false); ok {
		switch {
		case s == "":
			errs.add(n, "target", "empty (want a target name from the config)")
		case !known[s]:
			errs.add(n, "target", "%q is not a target in the config (configured: %s)", s, strings.Join(targets, ", "))
		default:
			seg.Target = s
		}
	}
	// category
	if raw, ok := fields["category"]; ok {
		if s, ok := jsonString(errs, n, "category", raw, true); ok {
			c, err := NormalizeCategory(s)
			if err != nil {
				errs.add(n, "category", "%v", err)
			} else {
				seg.Category = c
			}
		}
	}
	// blocked, total
	blockedOK := false
	if raw, ok := fields["blocked"]; !ok {
		errs.add(n, "blocked", "required (blocked requests in the interval)")
	} else if v, ok := jsonCount(errs, n, "blocked", raw, false); ok {
		p.Blocked, blockedOK = v, true
	}
	if raw, ok := fields["total"]; ok {
		if v, ok := jsonCount(errs, n, "total", raw, true); ok && !isNull(raw) {
			p.Total, p.HasTotal = v, true
			if blockedOK && p.Blocked > p.Total {
				errs.add(n, "blocked", "%s exceeds total %s", fmtCount(p.Blocked), fmtCount(p.Total))
			}
		}
	}
	return seg, p, len(errs.list) == before
}

// splitObject reads one JSON object's members, rejecting unknown and
// duplicate keys and trailing data.
func splitObject(errs *jsonlErrs, n int, line []byte) (map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil {
		errs.add(n, "", "invalid JSON: %v", jsonErr(err))
		return nil, false
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		errs.add(n, "", "want a JSON object per line, got %s", jsonKind(line))
		return nil, false
	}
	fields := map[string]json.RawMessage{}
	ok := true
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			errs.add(n, "", "invalid JSON: %v", jsonErr(err))
			return nil, false
		}
		key, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			errs.add(n, fieldName(key), "invalid JSON: %v", jsonErr(err))
			return nil, false
		}
		switch {
		case !contains(jsonlFields, key):
			errs.add(n, fieldName(key), "unknown field (want %s)", strings.Join(jsonlFields, ", "))
			ok = false
		case fields[key] != nil:
			errs.add(n, key, "duplicate field")
			ok = false
		default:
			fields[key] = raw
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		errs.add(n, "", "invalid JSON: %v", jsonErr(err))
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		errs.add(n, "", "trailing data after the JSON object (one object per line)")
		return nil, false
	}
	return fields, ok
}

// fieldName renders an untrusted key for an error message.
func fieldName(k string) string {
	if k != "" && strings.IndexFunc(k, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 && len(k) <= 64 {
		return k
	}
	return strconv.Quote(wire.Shorten(k, 64))
}

func jsonString(errs *jsonlErrs, n int, field string, raw json.RawMessage, nullOK bool) (string, bool) {
	if isNull(raw) {
		if nullOK {
			return "", true
		}
		errs.add(n, field, "must not be null")
		return "", false
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		errs.add(n, field, "want a string, got %s", jsonKind(raw))
		return "", false
	}
	return s, true
}

func jsonCount(errs *jsonlErrs, n int, field string, raw json.RawMessage, nullOK bool) (float64, bool) {
	if isNull(raw) {
		if nullOK {
			return 0, true
		}
		errs.add(n, field, "must not be null")
		return 0, false
	}
	if jsonKind(raw) != "a number" {
		errs.add(n, field, "want a number, got %s", jsonKind(raw))
		return 0, false
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(v, 0) {
		errs.add(n, field, "%s: number out of range", wire.Shorten(string(raw), 32))
		return 0, false
	}
	if v < 0 {
		errs.add(n, field, "%s: must not be negative", wire.Shorten(string(raw), 32))
		return 0, false
	}
	if v > MaxCount {
		errs.add(n, field, "%s: too large (at most 1e15)", wire.Shorten(string(raw), 32))
		return 0, false
	}
	return v, true
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// jsonKind names the JSON type of a raw value.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
		return "a number"
	}
	return "invalid JSON"
}

func jsonErr(err error) string {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "unexpected end of line"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func fmtCount(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
