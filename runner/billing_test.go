package runner_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/driftprobe/driftprobe/internal/testenv"
)

// A 2xx answer without usable content is retried, and the provider billed
// it: the observation's cost counts every attempt's tokens, while
// tokens_in/tokens_out stay the final answer's own usage. (The cost used
// to count the last attempt only, under-reporting spend.)
func TestCostCountsRetriedBilledAnswers(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{} // request body -> attempts
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b [4096]byte
		n, _ := r.Body.Read(b[:])
		mu.Lock()
		seen[string(b[:n])]++
		k := seen[string(b[:n])]
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if k == 1 {
			// Billed, but no content: transient no_content, retried.
			fmt.Fprint(w, `{"id":"x1","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant"}}],"usage":{"prompt_tokens":100,"completion_tokens":40}}`)
			return
		}
		fmt.Fprint(w, `{"id":"x2","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Sure."}}],"usage":{"prompt_tokens":100,"completion_tokens":10}}`)
	}))
	defer srv.Close()
	t.Setenv("QA_KEY", "k9Zq7")
	e := testenv.New(t, fmt.Sprintf(`
targets:
  - {name: c, provider: openai_compatible, model: m, api_key_env: QA_KEY, base_url: %q, concurrency: 2, max_attempts: 3, price: {input_per_mtok: 1000000, output_per_mtok: 2000000}}
`, srv.URL+"/v1"))
	res := e.Run()
	obs, err := e.Store.Observations(context.Background(), res.Summary.RunID, 0)
	if err != nil || len(obs) == 0 {
		t.Fatal(err)
	}
	for _, o := range obs {
		if o.Sample != 0 {
			continue
		}
		if o.Attempts != 2 || o.Result.TokensIn != 100 || o.Result.TokensOut != 10 {
			t.Fatalf("%s: attempts %d, tokens %d/%d; want 2 attempts and the final answer's 100/10", o.ProbeID, o.Attempts, o.Result.TokensIn, o.Result.TokensOut)
		}
		// Both attempts: (100+100)·1 + (40+10)·2 dollars at these prices.
		if want := 200.0 + 100.0; math.Abs(o.CostUSD-want) > 1e-9 {
			t.Errorf("%s: cost %v, want %v (both attempts billed)", o.ProbeID, o.CostUSD, want)
		}
	}
}
