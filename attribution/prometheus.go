package attribution

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/internal/yamlx"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// Prometheus reads production counts with range queries
// (GET URL/api/v1/query_range, https://prometheus.io/docs/prometheus/latest/querying/api/#range-queries).
//
// Query must return blocked requests per step per segment, e.g.
//
//	sum by (target, category) (increase(llm_blocked_total[1h]))
//
// with Step 1h: the sample at time t counts the interval (t−Step, t], so
// its Point starts at t−Step. Each series' TargetLabel names a configured
// target and its CategoryLabel a category (missing or empty: all blocks on
// the target). Series mapping to the same segment are summed. When no
// kept series carries CategoryLabel but they carry labels besides
// TargetLabel (a misnamed label), a warning lists the labels they carry. TotalQuery,
// when set, returns requests per step per target (any category label is
// ignored: totals are summed per target); a blocked sample then needs a
// total at the same timestamp, else it is dropped with a warning.
//
// A labelled counter has no series until its first increment (and none
// after a restart until the next one), so a missing blocked sample can
// mean no blocks. With TotalQuery, a step at which the target has a total
// but a segment with blocked samples elsewhere in the range has none
// counts as 0 blocked for it. Without, only the steps before a segment's
// first sample at which another segment of the same target has one count
// as 0; a segment whose first sample is still more than one step after
// Start gets a warning (its earlier steps are missing, not 0). A step
// whose blocked sample was dropped is never counted as 0.
//
// Series without a configured target, or with a category outside the
// vocabulary, are skipped and listed in Production.Skipped; NaN, infinite,
// negative and samples above MaxCount are dropped with a warning, and with
// them the step, for the segment (a total: for the target): the sum of
// the other series there is not the step's count. Skip
// reasons and warnings hold the server's text raw (labels quoted, not
// escaped): Report.WriteTable and WriteWarnings escape it for terminals. A transport failure, a
// non-2xx answer or a body that is not the documented JSON envelope is an
// error; an answer with status "error" is an *APIError. The credentials
// URL carries (URLSecrets: its password, the Basic credential sent for
// it, ...) are masked in the server's text an error or warning quotes,
// and the URL is named without them. A query (or total
// query) that matches no series at all is no error, but a warning naming
// it: an empty answer is what a mistyped metric name gets.
type Prometheus struct {
	URL           string // API root, e.g. http://prometheus:9090 (a path prefix is kept)
	Query         string
	TotalQuery    string // optional
	TargetLabel   string // default "target"
	CategoryLabel string // default "category"
	Start, End    time.Time
	Step          time.Duration
	Client        *http.Client // nil: a client with a two-minute timeout
}

// MaxPoints is the most steps a range query may span: Prometheus refuses
// a query when (end − start) / step exceeds it, so a series has at most
// MaxPoints+1 points.
const MaxPoints = 11000

// maxBody bounds a Prometheus answer.
const maxBody = 64 << 20

// InputError is a problem with the user's input (a flag, a query the
// server rejected as bad data): exit 2, not a runtime failure.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(format string, args ...any) error { return &InputError{fmt.Errorf(format, args...)} }

// APIError is an answer with status "error" (errorType, error), as the
// Prometheus HTTP API documents them.
type APIError struct {
	HTTPStatus int
	Type       string // errorType: bad_data, execution, timeout, canceled, internal, unavailable, not_found, ...
	Message    string // untrusted server text (the request's credentials masked), escaped by Error
	Query      string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("prometheus rejected the query %s: %s (HTTP %d): %s", strconv.Quote(wire.Shorten(e.Query, 200)), Clean(e.Type), e.HTTPStatus, Clean(wire.Shorten(e.Message, 500)))
}

// BadRequest reports whether the server rejected the query or its
// parameters (errorType bad_data): the user's input is wrong.
func (e *APIError) BadRequest() bool { return e.Type == "bad_data" }

// IsInput reports whether err is a problem with the user's input (a JSONL
// error, a bad flag, a query the server called bad data) rather than a
// runtime failure.
func IsInput(err error) bool {
	var ie *InputError
	var ae *APIError
	return yamlx.IsInputError(err) || errors.As(err, &ie) || (errors.As(err, &ae) && ae.BadRequest())
}

// AlignRange returns the range ending at end truncated to a multiple of
// step and starting since before it, since rounded up to whole steps: both
// ends sit on the step grid, so repeated runs query the same steps and no
// part of since goes unqueried.
func AlignRange(end time.Time, since, step time.Duration) (time.Time, time.Time) {
	if step > 0 {
		end = end.Truncate(step)
		if r := since % step; r != 0 {
			since += step - r
		}
	}
	return end.Add(-since), end
}

// Check validates the query parameters (InputError).
func (p *Prometheus) Check() error {
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		shown := strconv.Quote(p.URL)
		if strings.ContainsAny(p.URL, "@?") {
			// user:password@ or a token in the query: not repeated.
			shown = "(not repeated: it may hold a credential)"
		}
		return inputErr("--prometheus %s: want an http(s) URL such as http://prometheus:9090", shown)
	}
	if strings.TrimSpace(p.Query) == "" {
		return inputErr("--query is required with --prometheus")
	}
	if p.Step < time.Second {
		return inputErr("--step %s: want at least 1s", p.Step)
	}
	if !p.End.After(p.Start) {
		return inputErr("the range is empty: --since must be positive")
	}
	if steps := int64(p.End.Sub(p.Start) / p.Step); steps > MaxPoints {
		return inputErr("--since %s at --step %s asks for %d points per series; Prometheus refuses more than %d steps (%d points): raise --step or shorten --since",
			p.End.Sub(p.Start), p.Step, steps+1, MaxPoints, MaxPoints+1)
	}
	if p.targetLabel() == p.categoryLabel() {
		return inputErr("--target-label and --category-label must differ")
	}
	return nil
}

// noSeries is the warning for a query (what: "query" or "total query")
// that matched no series in the range: a mistyped metric or label name
// looks exactly like this, so it is never silent.
func (p *Prometheus) noSeries(what, q string) string {
	return fmt.Sprintf("prometheus: the %s %s matched no series between %s and %s: nothing from it to attribute (check the metric and label names, and --since)",
		what, strconv.Quote(wire.Shorten(q, 200)), p.Start.UTC().Format(time.RFC3339), p.End.UTC().Format(time.RFC3339))
}

// quote wraps untrusted text in double quotes without escaping it: the
// text is escaped once, at output.
func quote(s string) string { return `"` + s + `"` }

func (p *Prometheus) targetLabel() string {
	if p.TargetLabel == "" {
		return "target"
	}
	return p.TargetLabel
}

func (p *Prometheus) categoryLabel() string {
	if p.CategoryLabel == "" {
		return "category"
	}
	return p.CategoryLabel
}

// Load implements Source.
func (p *Prometheus) Load(ctx context.Context, targets []string) (*Production, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	known := targetSet(targets)
	prod := &Production{Skipped: []SkippedSeries{}}
	series, warns, err := p.query(ctx, p.Query)
	if err != nil {
		return nil, err
	}
	prod.Warnings = append(prod.Warnings, warns...)
	if len(series) == 0 {
		prod.Warnings = append(prod.Warnings, p.noSeries("query", p.Query))
	}
	tl, cl := p.targetLabel(), p.categoryLabel()
	skip := func(query string, labels map[string]string, format string, args ...any) {
		if labels == nil {
			labels = map[string]string{}
		}
		prod.Skipped = append(prod.Skipped, SkippedSeries{Query: query, Labels: labels, Reason: fmt.Sprintf(format, args...)})
	}
	// target returns the configured target a series is about, or skips it.
	target := func(query string, s promSeries) (string, bool) {
		tgt := s.Metric[tl]
		switch {
		case tgt == "":
			skip(query, s.Metric, "no %s label", quote(tl))
			return "", false
		case !known[tgt]:
			skip(query, s.Metric, "target %s is not in the config", quote(tgt))
			return "", false
		}
		return tgt, true
	}
	blocked := map[Segment]map[int64]float64{}
	bad := map[Segment]int{}
	badAt := map[Segment]map[int64]bool{} // steps with a dropped blocked sample
	// The labels the kept series carry, and whether any carries cl: a
	// misnamed category label is otherwise silent (every series reads as
	// "all blocks").
	carried, present := false, map[string]bool{}
	for _, s := range series {
		tgt, ok := target("blocked", s)
		if !ok {
			continue
		}
		for k := range s.Metric {
			present[k] = true
		}
		if _, ok := s.Metric[cl]; ok {
			carried = true
		}
		cat, ok := normalizeCategory(s.Metric[cl])
		if !ok {
			skip("blocked", s.Metric, "%s label: %s", cl, unknownCategory(quote(s.Metric[cl])))
			continue
		}
		seg := Segment{Target: tgt, Category: cat}
		if blocked[seg] == nil {
			blocked[seg] = map[int64]float64{}
		}
		for _, v := range s.Values {
			if !v.ok {
				bad[seg]++
				if v.timeOK {
					if badAt[seg] == nil {
						badAt[seg] = map[int64]bool{}
					}
					badAt[seg][v.ms] = true
				}
				continue
			}
			blocked[seg][v.ms] += v.val
		}
	}
	// Series that carry only the target label are a query summed by
	// target alone: all blocks, as documented, no warning. Series that
	// carry other labels but not cl were most likely meant to be split by
	// one of them.
	delete(present, tl)
	if !carried && len(present) > 0 {
		names := make([]string, 0, len(present)+1)
		for k := range present {
			names = append(names, k)
		}
		names = append(names, tl)
		sort.Strings(names)
		more := ""
		if n := len(names) - maxLabelsListed; n > 0 {
			names, more = names[:maxLabelsListed], fmt.Sprintf(" and %d more", n)
		}
		for i, k := range names {
			names[i] = quote(wire.Shorten(k, 100))
		}
		prod.Warnings = append(prod.Warnings, fmt.Sprintf("prometheus: no series of the query carries the category label %s (--category-label, attribution.category_label); the series carry the labels %s%s: every block on a target is counted in one segment, all categories together (name the label that holds the category, or sum the query by target alone)",
			quote(cl), strings.Join(names, ", "), more))
	}
	// A step at which a series of the segment had a dropped sample has no
	// known sum: the other series' samples alone are not its count.
	for seg, at := range badAt {
		for ms := range at {
			delete(blocked[seg], ms)
		}
	}
	var totals map[string]map[int64]float64
	if strings.TrimSpace(p.TotalQuery) != "" {
		tseries, warns, err := p.query(ctx, p.TotalQuery)
		if err != nil {
			return nil, err
		}
		prod.Warnings = append(prod.Warnings, warns...)
		if len(tseries) == 0 {
			prod.Warnings = append(prod.Warnings, p.noSeries("total query", p.TotalQuery))
		}
		totals = map[string]map[int64]float64{}
		badTotalAt := map[string]map[int64]bool{}
		for _, s := range tseries {
			tgt, ok := target("total", s)
			if !ok {
				continue
			}
			if totals[tgt] == nil {
				totals[tgt] = map[int64]float64{}
			}
			for _, v := range s.Values {
				if !v.ok {
					bad[Segment{Target: tgt, Category: "(total)"}]++
					if v.timeOK {
						if badTotalAt[tgt] == nil {
							badTotalAt[tgt] = map[int64]bool{}
						}
						badTotalAt[tgt][v.ms] = true
					}
					continue
				}
				totals[tgt][v.ms] += v.val
			}
		}
		// Likewise a target's total at a step one of its series dropped.
		for tgt, at := range badTotalAt {
			for ms := range at {
				delete(totals[tgt], ms)
			}
		}
	}
	late := fillMissing(blocked, badAt, totals, p.Start.Add(p.Step).UnixMilli())
	segs := make([]Segment, 0, len(blocked))
	for seg := range blocked {
		segs = append(segs, seg)
	}
	sort.Slice(segs, func(i, j int) bool {
		if segs[i].Target != segs[j].Target {
			return segs[i].Target < segs[j].Target
		}
		return segs[i].Category < segs[j].Category
	})
	for _, seg := range segs {
		byTime := blocked[seg]
		times := make([]int64, 0, len(byTime))
		for ms := range byTime {
			times = append(times, ms)
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		s := &Series{Segment: seg, Step: p.Step}
		noTotal, over := 0, 0
		for _, ms := range times {
			pt := Point{Time: time.UnixMilli(ms).UTC().Add(-p.Step), Blocked: byTime[ms]}
			if totals != nil {
				tot, ok := totals[seg.Target][ms]
				if !ok {
					noTotal++
					continue
				}
				// increase() extrapolates: allow rounding, drop real excess.
				if pt.Blocked > tot*(1+1e-9)+1e-9 {
					over++
					continue
				}
				pt.Blocked = math.Min(pt.Blocked, tot)
				pt.Total, pt.HasTotal = tot, true
			}
			s.Points = append(s.Points, pt)
		}
		name := fmt.Sprintf("target %s, category %s", seg.Target, catName(seg.Category))
		if first, ok := late[seg]; ok {
			prod.Warnings = append(prod.Warnings, fmt.Sprintf("prometheus: %s: no sample for the intervals between %s (the range's start) and %s: they are missing, not counted as 0 blocked "+
				"(a labelled counter has no series until its first increment; with a total query, steps with requests count as 0)",
				name, p.Start.Add(-p.Step).UTC().Format(time.RFC3339), time.UnixMilli(first).UTC().Add(-p.Step).Format(time.RFC3339)))
		}
		if noTotal > 0 {
			prod.Warnings = append(prod.Warnings, fmt.Sprintf("prometheus: %s: %d sample(s) without a total at the same time: dropped", name, noTotal))
		}
		if over > 0 {
			prod.Warnings = append(prod.Warnings, fmt.Sprintf("prometheus: %s: %d sample(s) with more blocked than total requests: dropped", name, over))
		}
		if len(s.Points) > 0 {
			prod.Series = append(prod.Series, s)
		}
	}
	badSegs := make([]Segment, 0, len(bad))
	for seg := range bad {
		badSegs = append(badSegs, seg)
	}
	sort.Slice(badSegs, func(i, j int) bool {
		return badSegs[i].Target+"\x00"+badSegs[i].Category < badSegs[j].Target+"\x00"+badSegs[j].Category
	})
	for _, seg := range badSegs {
		prod.Warnings = append(prod.Warnings, fmt.Sprintf("prometheus: target %s, category %s: %d sample(s) NaN, infinite, negative, above 1e15 or malformed: skipped",
			seg.Target, catName(seg.Category), bad[seg]))
	}
	sortSeries(prod.Series)
	capLists(prod)
	return prod, nil
}

// fillMissing counts as 0 blocked the steps at which a segment with
// samples elsewhere in the range has none, when the answer shows that
// production was counted then: a labelled counter (llm_blocked_total with
// category="privacy") has no series until its first increment, and
// loses it on a restart until the next one, so its absence is no blocks.
//
//   - With totals: every step at which the segment's target has a total.
//   - Without totals: the steps before the segment's first sample at which
//     another segment of the same target has one (a gap later in the
//     series is left a gap: nothing says the counter still existed).
//
// A step whose blocked sample was dropped (NaN, negative, ...) is never
// filled. late returns, for the segments without totals whose first
// sample is still after since (milliseconds), that sample's time.
func fillMissing(blocked map[Segment]map[int64]float64, badAt map[Segment]map[int64]bool, totals map[string]map[int64]float64, since int64) (late map[Segment]int64) {
	late = map[Segment]int64{}
	if totals != nil {
		for seg, byTime := range blocked {
			if len(byTime) == 0 {
				continue
			}
			for ms := range totals[seg.Target] {
				if _, ok := byTime[ms]; !ok && !badAt[seg][ms] {
					byTime[ms] = 0
				}
			}
		}
		return late
	}
	seen := map[string]map[int64]bool{} // target → steps with a sample of any of its segments
	first := map[Segment]int64{}
	for seg, byTime := range blocked {
		if seen[seg.Target] == nil {
			seen[seg.Target] = map[int64]bool{}
		}
		f := int64(math.MaxInt64)
		for ms := range byTime {
			seen[seg.Target][ms] = true
			f = min(f, ms)
		}
		first[seg] = f
	}
	for seg, byTime := range blocked {
		if len(byTime) == 0 {
			continue
		}
		f := first[seg]
		for ms := range seen[seg.Target] {
			if ms < f && !badAt[seg][ms] {
				byTime[ms] = 0
			}
		}
		newFirst := f
		for ms := range byTime {
			newFirst = min(newFirst, ms)
		}
		if newFirst > since {
			late[seg] = newFirst
		}
	}
	return late
}

// maxListed bounds the skipped series and warnings a Prometheus answer
// can put in a report (reports are stored after every run and read at
// every scrape): the first maxListed are kept, and one warning counts the
// rest.
const maxListed = 100

// maxLabelsListed bounds the label names the missing-category-label
// warning lists.
const maxLabelsListed = 20

func capLists(prod *Production) {
	if n := len(prod.Skipped); n > maxListed {
		prod.Skipped = prod.Skipped[:maxListed:maxListed]
		prod.Warnings = append(prod.Warnings, fmt.Sprintf("prometheus: %d more skipped series not listed", n-maxListed))
	}
	if n := len(prod.Warnings); n > maxListed+1 {
		prod.Warnings = append(prod.Warnings[:maxListed:maxListed], fmt.Sprintf("prometheus: %d more warnings not listed", n-maxListed))
	}
}

// promEnvelope is the documented response envelope.
type promEnvelope struct {
	Status    string    `json:"status"`
	Data      promField `json:"data"`
	ErrorType string    `json:"errorType"`
	Error     string    `json:"error"`
	Warnings  []string  `json:"warnings"`
	Infos     []string  `json:"infos"`
}

// promField is the envelope's data, decoded in place (a json.RawMessage
// would copy an answer of up to maxBody once more); err is why it is not
// a query result, said only once the status is known to be success.
type promField struct {
	data promData
	err  error
	set  bool
}

func (f *promField) UnmarshalJSON(b []byte) error {
	f.set, f.err = true, json.Unmarshal(b, &f.data)
	return nil
}

type promData struct {
	ResultType string     `json:"resultType"`
	Result     promResult `json:"result"`
}

// promResult is a matrix's series; err is why the result is not one
// (another result type's shape), said after the result type.
type promResult struct {
	series []promSeries
	err    error
}

func (r *promResult) UnmarshalJSON(b []byte) error {
	r.err = json.Unmarshal(b, &r.series)
	return nil
}

// promSeries is one series of a matrix: labels and [unix_time, "value"]
// pairs.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values []promSample      `json:"values"`
}

// promSample is one [unix_time, "value"] pair, read as it is decoded
// (24 bytes a sample, not its text: an answer near maxBody holds millions).
type promSample struct {
	ms     int64   // the time in milliseconds, when timeOK
	val    float64 // the value, when ok
	timeOK bool    // the time is usable
	ok     bool    // ... and so is the value: between 0 and MaxCount
}

// UnmarshalJSON reads a pair; anything else is an unusable sample, never
// an error (the sample is dropped and counted, not the answer).
func (s *promSample) UnmarshalJSON(b []byte) error {
	*s = parseSample(b)
	return nil
}

// parseSample reads one [unix_time, "value"] pair (b is valid JSON: the
// decoder checked the whole answer first).
func parseSample(b []byte) promSample {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return promSample{}
	}
	inner := b[1 : len(b)-1]
	i := bytes.IndexByte(inner, ',')
	if i < 0 {
		return promSample{}
	}
	ts, err := strconv.ParseFloat(string(bytes.TrimSpace(inner[:i])), 64)
	if err != nil || math.IsNaN(ts) || math.IsInf(ts, 0) || ts < 0 || ts > 1e11 {
		return promSample{}
	}
	out := promSample{ms: int64(math.Round(ts * 1000)), timeOK: true}
	raw := bytes.TrimSpace(inner[i+1:])
	var text string
	switch {
	case len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"':
		return out // not a string: a third element, a number, ...
	case bytes.ContainsAny(raw[1:len(raw)-1], `"\`):
		// Escapes, or more than one element: the decoder decides.
		if json.Unmarshal(raw, &text) != nil {
			return out
		}
	default:
		text = string(raw[1 : len(raw)-1])
	}
	val, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(val) || math.IsInf(val, 0) || val < 0 || val > MaxCount {
		return out
	}
	out.val, out.ok = val, true
	return out
}

func (p *Prometheus) query(ctx context.Context, q string) ([]promSeries, []string, error) {
	u, _ := url.Parse(p.URL) // Check parsed it
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/query_range"
	u.RawPath = ""
	v := u.Query()
	v.Set("query", q)
	v.Set("start", p.Start.UTC().Format(time.RFC3339))
	v.Set("end", p.End.UTC().Format(time.RFC3339))
	v.Set("step", strconv.FormatFloat(p.Step.Seconds(), 'f', -1, 64))
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, inputErr("--prometheus: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "driftprobe-attribute")
	client := p.Client
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Minute}
	}
	// The server's text (an error, a body, a status, a warning) may
	// quote the credentials the request sent: masked (mask), whole,
	// before it is cut to size. The URL is named without them.
	secrets := URLSecrets(p.URL)
	mask := func(s string) string { return MaskSecrets(s, wire.Redacted, secrets) }
	named := *u
	named.RawQuery, named.ForceQuery, named.Fragment, named.RawFragment = "", false, "", ""
	if named.User != nil {
		named.User = url.User("xxxxx") // Redacted would keep a token given as the user name
	}
	where := named.String()
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL with the whole query
		}
		// A transport error may quote the server ("malformed HTTP response").
		return nil, nil, fmt.Errorf("prometheus %s: %w", where, MaskError(err, wire.Redacted, secrets))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus %s: reading the answer: %w", where, err)
	}
	if len(body) > maxBody {
		return nil, nil, fmt.Errorf("prometheus %s: answer larger than %d MB: narrow the query or raise --step", where, maxBody>>20)
	}
	var env promEnvelope
	jerr := json.Unmarshal(body, &env)
	if jerr == nil && env.Status == "error" {
		return nil, nil, &APIError{HTTPStatus: resp.StatusCode, Type: mask(env.ErrorType), Message: mask(env.Error), Query: q}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, nil, fmt.Errorf("prometheus %s: HTTP %d: %s", where, resp.StatusCode, Clean(wire.Shorten(mask(strings.TrimSpace(string(body))), 200)))
	}
	if jerr != nil {
		return nil, nil, fmt.Errorf("prometheus %s: the answer is not the API's JSON (%v): %s", where, jerr, Clean(wire.Shorten(mask(strings.TrimSpace(string(body))), 200)))
	}
	if env.Status != "success" {
		return nil, nil, fmt.Errorf("prometheus %s: answer status %s, want success", where, strconv.Quote(wire.Shorten(mask(env.Status), 64)))
	}
	if !env.Data.set && env.Data.err == nil {
		env.Data.err = errors.New("no data")
	}
	if env.Data.err != nil {
		return nil, nil, fmt.Errorf("prometheus %s: the answer's data is not a query result: %v", where, env.Data.err)
	}
	data := env.Data.data
	if data.ResultType != "matrix" {
		return nil, nil, fmt.Errorf("prometheus %s: result type %s, want matrix (a range query)", where, strconv.Quote(wire.Shorten(mask(data.ResultType), 64)))
	}
	if data.Result.err != nil {
		return nil, nil, fmt.Errorf("prometheus %s: the answer's data is not a query result: %v", where, data.Result.err)
	}
	// Raw text: WriteWarnings and WriteTable escape it, JSON carries it.
	var warns []string
	for _, w := range env.Warnings {
		warns = append(warns, "prometheus warning: "+wire.Shorten(mask(w), 500))
	}
	for _, w := range env.Infos {
		warns = append(warns, "prometheus info: "+wire.Shorten(mask(w), 500))
	}
	return data.Result.series, warns, nil
}
