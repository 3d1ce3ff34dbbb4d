package attribution

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// A --category-label that no blocked series carries, while the series
// carry other labels besides the target's (a misnamed label: every block
// on a target is summed into one segment), is a warning listing the
// labels present; series carrying only the target label (a query summed
// by target alone) and series carrying the label are not.
func TestPrometheusCategoryLabelMissingWarns(t *testing.T) {
	const reason = `{"status":"success","data":{"resultType":"matrix","result":[
{"metric":{"target":"sim-a","reason":"violence"},"values":[[1795136400,"3"]]},
{"metric":{"target":"sim-a","reason":"hate"},"values":[[1795136400,"4"]]},
{"metric":{"target":"sim-b","job":"gw"},"values":[[1795136400,"1"]]}]}}`
	const onlyTarget = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"target":"sim-a"},"values":[[1795136400,"12"]]}]}}`
	const withCategory = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"target":"sim-a","category":"hate"},"values":[[1795136400,"12"]]}]}}`
	const want = `prometheus: no series of the query carries the category label "category" (--category-label, attribution.category_label); the series carry the labels "job", "reason", "target": every block on a target is counted in one segment, all categories together (name the label that holds the category, or sum the query by target alone)`
	for _, c := range []struct {
		name, body string
		warn       bool
	}{
		{"misnamed", reason, true},
		{"summed by target", onlyTarget, false},
		{"carried", withCategory, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := newPromServer(t, func(w http.ResponseWriter, r *http.Request) {
				body := c.body
				if strings.Contains(r.URL.Query().Get("query"), "llm_requests_total") {
					body = onlyTarget
				}
				replay([]byte(body), 200)(w, r)
			})
			prod, err := testProm(ps.URL).Load(context.Background(), testTargets)
			if err != nil {
				t.Fatal(err)
			}
			w := strings.Join(prod.Warnings, "\n")
			if got := strings.Contains(w, want); got != c.warn {
				t.Errorf("warning present %v, want %v:\n%s", got, c.warn, w)
			}
			if !c.warn && strings.Contains(w, "category label") {
				t.Errorf("warnings: %s", w)
			}
		})
	}
}
