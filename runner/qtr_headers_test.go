package runner_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
)

// An answer's headers are capped at runner.MaxResponseHeaderBytes, far
// below net/http's default of 10 MB: parsed, 10 MB of one-line headers
// ("1:\r\n2:\r\n…", a million names) take some 160 MB of memory and seconds
// of CPU per answer in flight, 2.6 GB at the default concurrency of 16.
// Headers past the cap are a transient transport failure, never a verdict;
// a gateway's generous headers (16 KiB) are read as usual.
func TestResponseHeadersCapped(t *testing.T) {
	for _, c := range []struct {
		name  string
		bytes int
		class probes.Class
	}{
		{"16 KiB of headers", 16 << 10, probes.Allowed},
		{"past the cap", runner.MaxResponseHeaderBytes + 1<<10, probes.Transient},
		{"2 MiB of headers", 2 << 20, probes.Transient},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				v := strings.Repeat("h", 1000)
				for i := 0; i*1010 < c.bytes; i++ {
					w.Header().Set(fmt.Sprintf("X-H-%d", i), v)
				}
				okAnswer(w)
			}))
			defer srv.Close()
			e := qarEnv(t, 1, fmt.Sprintf("  - {name: c, provider: openai_compatible, model: m, api_key_env: QAR_KEY, base_url: %q, concurrency: 1, max_attempts: 1}\n", srv.URL+"/v1"))
			sum := qarRun(t, e, newFakeClock(), nil)
			o := observations(t, e, sum.RunID)[0]
			if o.Result.Class != c.class {
				t.Fatalf("%d bytes of headers stored %s (%s: %s), want %s", c.bytes, o.Result.Class, o.Result.Reason, o.Result.Message, c.class)
			}
			if c.class == probes.Transient && !strings.Contains(o.Result.Message, "exceeded") {
				t.Errorf("message %q does not name the header limit", o.Result.Message)
			}
		})
	}
}
