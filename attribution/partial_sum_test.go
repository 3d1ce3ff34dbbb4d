package attribution

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// matrixBody renders a query_range answer: each series' labels and its
// values by hour after promT0 (a string value; "" leaves the step out).
func matrixBody(t *testing.T, series []map[string]string, values [][]string) []byte {
	t.Helper()
	type s struct {
		Metric map[string]string `json:"metric"`
		Values [][]any           `json:"values"`
	}
	var res []s
	for i, m := range series {
		x := s{Metric: m, Values: [][]any{}}
		for h, v := range values[i] {
			if v != "" {
				x.Values = append(x.Values, []any{promT0.Add(time.Duration(h) * time.Hour).Unix(), v})
			}
		}
		res = append(res, x)
	}
	b, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": res}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Series of one segment are summed; a step at which one of them had a
// dropped sample (NaN here) has no known sum, so the step is dropped for
// the segment: the other series' sample alone is not its count. The same
// for the totals of a target.
func TestPrometheusPartialSumDropped(t *testing.T) {
	a := map[string]string{"target": "sim-a", "category": "violence", "instance": "a"}
	b := map[string]string{"target": "sim-a", "category": "violence", "instance": "b"}
	ta := map[string]string{"target": "sim-a", "instance": "a"}
	tb := map[string]string{"target": "sim-a", "instance": "b"}
	blocked := matrixBody(t, []map[string]string{a, b}, [][]string{
		{"", "5", "5", "NaN", "5", "5", "5", "5", "5"},
		{"", "5", "5", "5", "5", "5", "5", "5", "5"},
	})
	totals := matrixBody(t, []map[string]string{ta, tb}, [][]string{
		{"", "500", "500", "500", "500", "500", "+Inf", "500", "500"},
		{"", "500", "500", "500", "500", "500", "500", "500", "500"},
	})
	ps := newPromServer(t, func(w http.ResponseWriter, r *http.Request) {
		body := blocked
		if strings.Contains(r.URL.Query().Get("query"), "requests") {
			body = totals
		}
		replay(body, 200)(w, r)
	})
	for _, withTotals := range []bool{false, true} {
		t.Run("totals="+strconv.FormatBool(withTotals), func(t *testing.T) {
			p := testProm(ps.URL)
			if !withTotals {
				p.TotalQuery = ""
			}
			prod, err := p.Load(context.Background(), testTargets)
			if err != nil {
				t.Fatal(err)
			}
			if len(prod.Series) != 1 {
				t.Fatalf("series %+v", prod.Series)
			}
			dropped := map[int]bool{3: true} // the NaN blocked sample's step
			if withTotals {
				dropped[6] = true // the +Inf total's step
			}
			for _, pt := range prod.Series[0].Points {
				h := int(pt.Time.Add(time.Hour).Sub(promT0) / time.Hour)
				if dropped[h] {
					t.Errorf("the step at hour %d, with a sample dropped, is counted: %+v", h, pt)
				}
				if pt.Blocked != 10 || (withTotals && pt.Total != 1000) {
					t.Errorf("hour %d: %+v, want the sum 10 of 1000", h, pt)
				}
			}
			if want := 8 - len(dropped); len(prod.Series[0].Points) != want {
				t.Errorf("%d points, want %d: %+v", len(prod.Series[0].Points), want, prod.Series[0].Points)
			}
		})
	}
}
