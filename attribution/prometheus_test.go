package attribution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// promServer replays fixture bodies by query (the "query" parameter) and
// records every request.
type promServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newPromServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *promServer {
	t.Helper()
	ps := &promServer{}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps.mu.Lock()
		ps.reqs = append(ps.reqs, r.Clone(context.Background()))
		ps.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(ps.Close)
	return ps
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "prometheus", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func replay(body []byte, status int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}
}

var promT0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

func testProm(u string) *Prometheus {
	start, end := AlignRange(promT0.Add(8*time.Hour+17*time.Minute), 8*time.Hour, time.Hour)
	return &Prometheus{URL: u, Query: `sum by (target, category) (increase(llm_blocked_total[1h]))`, TotalQuery: `sum by (target) (increase(llm_requests_total[1h]))`,
		Start: start, End: end, Step: time.Hour}
}

// The documentation's own example answer
// (https://prometheus.io/docs/prometheus/latest/querying/api/#range-queries,
// testdata/prometheus/query_range_doc.json) parses; its series carry no
// target label, so both are skipped with the reason and their labels.
func TestPrometheusDocExample(t *testing.T) {
	ps := newPromServer(t, replay(fixture(t, "query_range_doc.json"), 200))
	p := &Prometheus{URL: ps.URL + "/", Query: "up", Start: time.Unix(1435781430, 781e6), End: time.Unix(1435781460, 781e6), Step: 15 * time.Second}
	prod, err := p.Load(context.Background(), testTargets)
	if err != nil {
		t.Fatal(err)
	}
	if len(prod.Series) != 0 || len(prod.Skipped) != 2 {
		t.Fatalf("series %+v skipped %+v", prod.Series, prod.Skipped)
	}
	s := prod.Skipped[0]
	if s.Query != "blocked" || s.Reason != `no "target" label` || s.Labels["job"] != "prometheus" || s.Labels["instance"] != "localhost:9090" {
		t.Fatalf("skipped %+v", s)
	}
	r := ps.reqs[0]
	if r.Method != http.MethodGet || r.URL.Path != "/api/v1/query_range" || r.URL.Query().Get("step") != "15" || r.URL.Query().Get("query") != "up" {
		t.Fatalf("request %s %s", r.Method, r.URL)
	}
}

// A real-shaped answer (testdata/prometheus/query_range_blocked.json and
// query_range_total.json, the documented matrix shape) maps labels to
// segments and joins totals, and the request carries the documented
// parameters.
func TestPrometheusLoad(t *testing.T) {
	blocked, total := fixture(t, "query_range_blocked.json"), fixture(t, "query_range_total.json")
	p := testProm("")
	ps := newPromServer(t, func(w http.ResponseWriter, r *http.Request) {
		body := blocked
		if r.URL.Query().Get("query") == p.TotalQuery {
			body = total
		}
		replay(body, 200)(w, r)
	})
	p.URL = ps.URL + "/prom" // a path prefix is kept
	prod, err := p.Load(context.Background(), testTargets)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.reqs) != 2 {
		t.Fatalf("%d requests", len(ps.reqs))
	}
	for i, q := range []string{p.Query, p.TotalQuery} {
		r := ps.reqs[i]
		v := r.URL.Query()
		if r.Method != http.MethodGet || r.URL.Path != "/prom/api/v1/query_range" || v.Get("query") != q ||
			v.Get("start") != "2026-11-20T00:00:00Z" || v.Get("end") != "2026-11-20T08:00:00Z" || v.Get("step") != "3600" ||
			r.Header.Get("Accept") != "application/json" {
			t.Errorf("request %d: %s %s %v", i, r.Method, r.URL.Path, v)
		}
	}
	byKey := map[string]*Series{}
	for _, s := range prod.Series {
		byKey[s.Target+"/"+s.Category] = s
	}
	if len(prod.Series) != 5 {
		t.Fatalf("series: %v", keys(byKey))
	}
	v := byKey["sim-a/violence"]
	if v == nil || len(v.Points) != 7 || !v.HasTotals() || v.Step != time.Hour {
		t.Fatalf("sim-a/violence: %+v", v)
	}
	// The sample at 01:00 counts the hour from 00:00; the NaN at 03:00 is gone.
	if !v.Points[0].Time.Equal(promT0) || v.Points[0].Blocked != 10 || v.Points[0].Total != 1000 || !v.Points[2].Time.Equal(promT0.Add(3*time.Hour)) {
		t.Fatalf("points: %+v", v.Points)
	}
	if h := byKey["sim-a/hate"]; h == nil || len(h.Points) != 8 || h.Points[0].Blocked != 5 {
		t.Fatalf("two series of one segment are summed: %+v", h)
	}
	if a := byKey["sim-a/"]; a == nil || a.Points[7].Blocked != 70 {
		t.Fatalf("no category label: all blocks: %+v", a)
	}
	// sim-b: +Inf and -1 dropped; one step has no total.
	if b := byKey["sim-b/violence"]; b == nil || len(b.Points) != 5 {
		t.Fatalf("sim-b/violence: %+v", b)
	}
	if m := byKey["sim-b/sexual_minors"]; m == nil || len(m.Points) != 6 {
		t.Fatalf("sim-b/sexual_minors (the last step has no total, one has more blocks than requests): %+v", m)
	}
	reasons := []string{}
	for _, s := range prod.Skipped {
		reasons = append(reasons, s.Query+": "+s.Reason)
	}
	want := []string{`blocked: target "prod-x" is not in the config`, `blocked: no "target" label`, "blocked: category label: unknown category \"gore\x1b[2J\"", `total: no "target" label`}
	if len(reasons) != len(want) {
		t.Fatalf("skipped: %q", reasons)
	}
	for i := range want {
		if !strings.HasPrefix(reasons[i], want[i]) {
			t.Errorf("skipped %d: %q, want %q", i, reasons[i], want[i])
		}
	}
	warn := strings.Join(prod.Warnings, "\n")
	for _, w := range []string{"prometheus warning: PromQL info", "target sim-a, category violence: 1 sample(s) NaN", "target sim-b, category violence: 2 sample(s) NaN, infinite, negative",
		"target sim-b, category sexual_minors: 1 sample(s) without a total", "target sim-b, category sexual_minors: 1 sample(s) with more blocked than total"} {
		if !strings.Contains(warn, w) {
			t.Errorf("warnings lack %q:\n%s", w, warn)
		}
	}
}

func TestPrometheusErrors(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		status int
		body   string
		want   string
		input  bool
	}{
		{"bad_data", 400, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:8: parse error: unexpected \u001b[31m"}`,
			`prometheus rejected the query "sum by (target, category) (increase(llm_blocked_total[1h]))": bad_data (HTTP 400): invalid parameter "query": 1:8: parse error: unexpected \x1b[31m`, true},
		{"execution", 422, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory"}`, "execution (HTTP 422): query processing would load too many samples", false},
		{"timeout", 503, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, "timeout (HTTP 503)", false},
		{"html 502", 502, "<html><body><h1>502 Bad Gateway</h1></body></html>", "HTTP 502: <html><body><h1>502 Bad Gateway", false},
		{"garbage 200", 200, "this is not json\x00\x1b]0;pwned\x07", `the answer is not the API's JSON (invalid character 'h' in literal true (expecting 'r')): this is not json\x00\x1b]0;pwned\a`, false},
		{"truncated 200", 200, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{}`, "the answer is not the API's JSON", false},
		{"vector", 200, `{"status":"success","data":{"resultType":"vector","result":[]}}`, `result type "vector", want matrix`, false},
		{"odd status", 200, `{"status":"partial","data":{}}`, `answer status "partial", want success`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := newPromServer(t, replay([]byte(c.body), c.status))
			_, err := testProm(ps.URL).Load(ctx, testTargets)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, c.want)
			}
			if IsInput(err) != c.input {
				t.Fatalf("IsInput = %v, want %v", IsInput(err), c.input)
			}
			var ae *APIError
			if errors.As(err, &ae) != strings.Contains(c.body, `"status":"error"`) {
				t.Fatalf("APIError: %v", err)
			}
		})
	}
}

// An unreachable server is a runtime error that names the server but not
// the query string or credentials.
func TestPrometheusUnreachable(t *testing.T) {
	ps := newPromServer(t, replay(nil, 200))
	u, _ := url.Parse(ps.URL)
	ps.Close()
	u.User = url.UserPassword("alice", "s3cret")
	_, err := testProm(u.String()).Load(context.Background(), testTargets)
	if err == nil || IsInput(err) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "llm_blocked_total") ||
		!strings.Contains(err.Error(), "/api/v1/query_range") {
		t.Fatalf("%v", err)
	}
}

func TestPrometheusCheck(t *testing.T) {
	base := func() *Prometheus { return testProm("http://127.0.0.1:9") }
	cases := []struct {
		mod  func(p *Prometheus)
		want string
	}{
		{func(p *Prometheus) { p.URL = "prometheus:9090" }, "want an http(s) URL"},
		{func(p *Prometheus) { p.URL = "ftp://x" }, "want an http(s) URL"},
		{func(p *Prometheus) { p.Query = " " }, "--query is required"},
		{func(p *Prometheus) { p.Step = 0 }, "--step 0s: want at least 1s"},
		{func(p *Prometheus) { p.Start = p.End }, "the range is empty"},
		{func(p *Prometheus) { p.Step = time.Second; p.Start = p.End.Add(-7 * 24 * time.Hour) }, "asks for 604801 points per series; Prometheus refuses more than 11000"},
		{func(p *Prometheus) { p.TargetLabel, p.CategoryLabel = "x", "x" }, "must differ"},
	}
	for _, c := range cases {
		p := base()
		c.mod(p)
		err := p.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) || !IsInput(err) {
			t.Errorf("%v, want %q (input error)", err, c.want)
		}
	}
	if err := base().Check(); err != nil {
		t.Fatal(err)
	}
}

func keys(m map[string]*Series) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Prometheus refuses a range query only when (end−start)/step exceeds
// 11000: exactly 11000 steps (11001 points) is accepted.
func TestPrometheusCheckPointLimit(t *testing.T) {
	p := testProm("http://127.0.0.1:9")
	p.Start = p.End.Add(-MaxPoints * p.Step)
	if err := p.Check(); err != nil {
		t.Fatalf("11000 steps: %v", err)
	}
	p.Start = p.Start.Add(-p.Step)
	if err := p.Check(); err == nil || !strings.Contains(err.Error(), "asks for 11002 points per series; Prometheus refuses more than 11000 steps (11001 points)") {
		t.Fatalf("11001 steps: %v", err)
	}
}

// Both ends of the range sit on the step grid: --since is rounded up to
// whole steps, so no part of it goes unqueried.
func TestAlignRange(t *testing.T) {
	end := promT0.Add(10*time.Hour + 20*time.Minute)
	for _, c := range []struct {
		since, step time.Duration
		start, stop time.Time
	}{
		{90 * time.Minute, time.Hour, promT0.Add(8 * time.Hour), promT0.Add(10 * time.Hour)},
		{2 * time.Hour, time.Hour, promT0.Add(8 * time.Hour), promT0.Add(10 * time.Hour)},
		{time.Minute, time.Hour, promT0.Add(9 * time.Hour), promT0.Add(10 * time.Hour)},
		{25 * time.Minute, 10 * time.Minute, promT0.Add(9*time.Hour + 50*time.Minute), promT0.Add(10*time.Hour + 20*time.Minute)},
	} {
		start, stop := AlignRange(end, c.since, c.step)
		if !start.Equal(c.start) || !stop.Equal(c.stop) {
			t.Errorf("--since %v --step %v: %v – %v, want %v – %v", c.since, c.step, start, stop, c.start, c.stop)
		}
	}
}

// Samples above MaxCount are dropped with a warning, as NaN is, so sums
// stay finite.
func TestPrometheusHugeSample(t *testing.T) {
	body := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"target":"sim-a"},"values":[[1795136400,"12"],[1795140000,"1.7e308"],[1795143600,"2e15"]]}]}}`
	ps := newPromServer(t, replay([]byte(body), 200))
	p := testProm(ps.URL)
	p.TotalQuery = ""
	prod, err := p.Load(context.Background(), testTargets)
	if err != nil {
		t.Fatal(err)
	}
	if len(prod.Series) != 1 || len(prod.Series[0].Points) != 1 || prod.Series[0].Points[0].Blocked != 12 {
		t.Fatalf("%+v", prod.Series)
	}
	if w := strings.Join(prod.Warnings, "\n"); !strings.Contains(w, "target sim-a, category \"\" (all): 2 sample(s) NaN, infinite, negative, above 1e15 or malformed: skipped") {
		t.Fatalf("warnings: %s", w)
	}
}

// Untrusted server text is kept raw in the report and escaped once, at
// output: the table and stderr show \x1b, JSON carries \u001b.
func TestPrometheusEscapedOnce(t *testing.T) {
	body := "{\"status\":\"success\",\"warnings\":[\"bad \\u001b[31m\"],\"data\":{\"resultType\":\"matrix\",\"result\":[" +
		"{\"metric\":{\"target\":\"evil\\u001b]0\"},\"values\":[[1795136400,\"1\"]]}," +
		"{\"metric\":{\"target\":\"sim-a\",\"category\":\"gore\\u0007\"},\"values\":[[1795136400,\"1\"]]}]}}"
	ps := newPromServer(t, replay([]byte(body), 200))
	p := testProm(ps.URL)
	p.TotalQuery = ""
	prod, err := p.Load(context.Background(), testTargets)
	if err != nil {
		t.Fatal(err)
	}
	r := Attribute(prod, history(), Options{})
	var table, stderr strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	r.WriteWarnings(&stderr)
	for name, out := range map[string]string{"table": table.String(), "stderr": stderr.String()} {
		if strings.Contains(out, `\\`) || strings.ContainsAny(out, "\x1b\a") {
			t.Errorf("%s: escaped twice or not at all:\n%s", name, out)
		}
	}
	for _, want := range []string{`prometheus warning: bad \x1b[31m`, `target "evil\x1b]0" is not in the config`, `category label: unknown category "gore\a"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr.String())
		}
	}
	if !strings.Contains(table.String(), `target "evil\x1b]0" is not in the config`) {
		t.Errorf("table:\n%s", table.String())
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"prometheus warning: bad \u001b[31m"`, `"target \"evil\u001b]0\" is not in the config"`, `unknown category \"gore\u0007\"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
}

// A hostile answer (thousands of unknown-target series and server
// warnings) cannot grow a stored report without bound: the first
// maxListed of each are kept and one warning counts the rest.
func TestPrometheusListsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"status":"success","warnings":[`)
	for i := 0; i < 300; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"warning %d"`, i)
	}
	b.WriteString(`],"data":{"resultType":"matrix","result":[`)
	for i := 0; i < 500; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"target":"prod-%d"},"values":[[1795136400,"1"]]}`, i)
	}
	b.WriteString(`]}}`)
	ps := newPromServer(t, replay([]byte(b.String()), 200))
	p := testProm(ps.URL)
	p.TotalQuery = ""
	prod, err := p.Load(context.Background(), testTargets)
	if err != nil {
		t.Fatal(err)
	}
	if len(prod.Skipped) != maxListed || len(prod.Warnings) != maxListed+1 {
		t.Fatalf("%d skipped series and %d warnings kept, want %d and %d", len(prod.Skipped), len(prod.Warnings), maxListed, maxListed+1)
	}
	if last := prod.Warnings[maxListed]; !strings.Contains(last, "more warnings not listed") {
		t.Errorf("last warning %q", last)
	}
}

// lateCounter answers hourly samples from 01:00 to 12:00 (points 00:00 to
// 11:00): violence on sim-a at every step; privacy on sim-a only from the
// sample at 07:00 (its counter's first block, point 06:00), with a NaN at
// 03:00; and, for the total query, 1000 requests per step.
func lateCounter(t *testing.T, withViolence bool) *promServer {
	return newPromServer(t, func(w http.ResponseWriter, r *http.Request) {
		var series []string
		sample := func(h int, v string) string {
			return fmt.Sprintf(`[%d,%q]`, promT0.Add(time.Duration(h)*time.Hour).Unix(), v)
		}
		if strings.Contains(r.URL.Query().Get("query"), "requests") {
			var vals []string
			for h := 1; h <= 12; h++ {
				vals = append(vals, sample(h, "1000"))
			}
			series = append(series, `{"metric":{"target":"sim-a"},"values":[`+strings.Join(vals, ",")+`]}`)
		} else {
			var v, p []string
			for h := 1; h <= 12; h++ {
				v = append(v, sample(h, "10"))
				switch {
				case h == 3:
					p = append(p, sample(h, "NaN"))
				case h >= 7:
					p = append(p, sample(h, "2"))
				}
			}
			if withViolence {
				series = append(series, `{"metric":{"target":"sim-a","category":"violence"},"values":[`+strings.Join(v, ",")+`]}`)
			}
			series = append(series, `{"metric":{"target":"sim-a","category":"privacy"},"values":[`+strings.Join(p, ",")+`]}`)
		}
		replay([]byte(`{"status":"success","data":{"resultType":"matrix","result":[`+strings.Join(series, ",")+`]}}`), 200)(w, r)
	})
}

// A counter that first appears at the change (a labelled counter has no
// series until its first increment) is still a change: with totals, a
// step with requests and no blocked sample counts as 0; without, the
// steps before its first sample at which the target's other categories
// have samples do; a step whose sample was dropped never does.
func TestPrometheusCounterAppearsAtTheChange(t *testing.T) {
	ev := Event{ID: 1, Kind: "policy_change", Direction: Tightened, Targets: []string{"sim-a"}, NewCategories: []string{"privacy"},
		Flips: []Flip{flip("sim-a", []string{"privacy"}, allowed, blocked("privacy"), 7)}}
	cases := []struct {
		name     string
		totals   bool
		violence bool
		points   int
		change   bool
		before   float64
		after    float64
		warning  string
	}{
		{"with totals", true, false, 11, true, 0, 0.002, ""},
		{"without totals, another category of the target", false, true, 11, true, 0, 2, ""},
		{"without totals, alone: a warning", false, false, 6, false, 0, 0, "prometheus: target sim-a, category privacy: no sample for the intervals between 2026-11-20T00:00:00Z (the range's start) and 2026-11-20T06:00:00Z: they are missing, not counted as 0 blocked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := lateCounter(t, c.violence)
			p := &Prometheus{URL: ps.URL, Query: `sum by (target, category) (increase(llm_blocked_total[1h]))`, Start: promT0.Add(time.Hour), End: promT0.Add(12 * time.Hour), Step: time.Hour}
			if c.totals {
				p.TotalQuery = `sum by (target) (increase(llm_requests_total[1h]))`
			}
			prod, err := p.Load(context.Background(), testTargets)
			if err != nil {
				t.Fatal(err)
			}
			var priv *Series
			for _, s := range prod.Series {
				if s.Category == "privacy" {
					priv = s
				}
			}
			if priv == nil || len(priv.Points) != c.points {
				t.Fatalf("privacy: %+v", priv)
			}
			for _, pt := range priv.Points {
				if pt.Time.Equal(promT0.Add(2 * time.Hour)) {
					t.Errorf("the step whose sample was NaN was counted: %+v", pt)
				}
			}
			warns := strings.Join(prod.Warnings, "\n")
			if c.warning == "" && strings.Contains(warns, "no sample for the intervals") || !strings.Contains(warns, c.warning) {
				t.Errorf("warnings %q, want %q", warns, c.warning)
			}
			r := Attribute(prod, history(ev), Options{})
			var got *ChangeReport
			for i := range r.Changes {
				if r.Changes[i].Category == "privacy" {
					got = &r.Changes[i]
				}
			}
			if !c.change {
				if got != nil {
					t.Fatalf("change %+v", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("no privacy change: %+v (warnings %q)", r.Changes, r.Warnings)
			}
			if !got.ChangeAt.Equal(changeAt) || got.BeforeRate != c.before || got.AfterRate != c.after || got.Direction != Up ||
				got.Attribution != Provider || !reflect.DeepEqual(got.Events, []int64{1}) {
				t.Errorf("%+v", got)
			}
		})
	}
}

// A query that matches no series (a mistyped metric name) is never
// silent: a warning names it, and the total query's too.
func TestPrometheusNoSeriesWarns(t *testing.T) {
	empty := `{"status":"success","data":{"resultType":"matrix","result":[]}}`
	blocked := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"target":"sim-a"},"values":[[1795136400,"12"]]}]}}`
	for _, c := range []struct {
		name           string
		blocked, total string
		want           []string
	}{
		{"blocked query", empty, empty, []string{
			`prometheus: the query "sum by (target, category) (increase(llm_blocked_total[1h]))" matched no series between 2026-11-20T00:00:00Z and 2026-11-20T08:00:00Z: nothing from it to attribute (check the metric and label names, and --since)`,
			`prometheus: the total query "sum by (target) (increase(llm_requests_total[1h]))" matched no series between`}},
		{"total query only", blocked, empty, []string{`prometheus: the total query "sum by (target) (increase(llm_requests_total[1h]))" matched no series`}},
		{"both match", blocked, blocked, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := newPromServer(t, func(w http.ResponseWriter, r *http.Request) {
				body := c.blocked
				if strings.Contains(r.URL.Query().Get("query"), "llm_requests_total") {
					body = c.total
				}
				replay([]byte(body), 200)(w, r)
			})
			prod, err := testProm(ps.URL).Load(context.Background(), testTargets)
			if err != nil {
				t.Fatal(err)
			}
			w := strings.Join(prod.Warnings, "\n")
			for _, want := range c.want {
				if !strings.Contains(w, want) {
					t.Errorf("warnings lack %q:\n%s", want, w)
				}
			}
			if c.want == nil && strings.Contains(w, "matched no series") {
				t.Errorf("warnings: %s", w)
			}
		})
	}
}
