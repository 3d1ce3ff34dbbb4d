package anthropic

import (
	"time"

	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// TestSpendCapNotRetried: a 429 rate_limit_error whose
// error.details.error_code is enforced_spend_limit_reached is the tier's
// monthly spend cap (testdata/error_429_enforced_spend_limit_docs.meta.yaml):
// the docs say it carries no retry-after and that retrying fails until next
// month. It was read as transient: retried with backoff on every probe and
// counted against the breaker, a whole run of waits for nothing. It is a
// client error, sent once, like OpenAI's insufficient_quota. An ordinary
// rate limit (no details, another code, details of an odd shape) stays
// transient and keeps its wait.
func TestSpendCapNotRetried(t *testing.T) {
	p := func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil) }
	const spendCap = `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_1"}`
	for _, c := range []probestest.Case{
		{Name: "docs_429", Fixture: "error_429_enforced_spend_limit_docs.json", Status: 429,
			Want: probestest.Want{Class: probes.ClientError, Reason: "429:rate_limit_error:enforced_spend_limit_reached", RequestID: "req_018EeWyXxfu5pfWkrYcMdjWG"}},
		{Name: "stream_error_event", Body: "event: error\ndata: " + spendCap + "\n\n", Header: map[string]string{"Content-Type": "text/event-stream"},
			Want: probestest.Want{Class: probes.ClientError, Reason: "200:rate_limit_error:enforced_spend_limit_reached"}},
		{Name: "200_envelope", Body: spendCap,
			Want: probestest.Want{Class: probes.ClientError, Reason: "200:rate_limit_error:enforced_spend_limit_reached"}},
	} {
		t.Run(c.Name, func(t *testing.T) {
			srv := probestest.NewReplay(t, c)
			r := probestest.DoRetrying(t, p(t, srv.URL), probestest.Probe, 4)
			probestest.Check(t, r, c.Want)
			if n := srv.Requests(); n != 1 || r.Class.Retryable() || r.Class.BreakerFailure() {
				t.Errorf("sent %d times (retryable %v, breaker failure %v): the spend cap must be sent once", n, r.Class.Retryable(), r.Class.BreakerFailure())
			}
		})
	}

	// Ordinary rate limits are untouched.
	probestest.Conformance(t, p, probestest.Probe, []probestest.Case{
		{Name: "no_details", Status: 429, Header: map[string]string{"retry-after": "7"},
			Body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:rate_limit_error", RetryAfter: 7 * time.Second}},
		{Name: "other_code", Status: 429, Header: map[string]string{"retry-after": "2"},
			Body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down","details":{"error_code":"acceleration_limit"}}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:rate_limit_error", RetryAfter: 2 * time.Second}},
		{Name: "details_odd_shape", Status: 429, Header: map[string]string{"retry-after": "2"},
			Body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down","details":"enforced_spend_limit_reached"}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:rate_limit_error", RetryAfter: 2 * time.Second}},
		{Name: "details_null", Status: 429, Header: map[string]string{"retry-after": "2"},
			Body: `{"type":"error","error":{"details":null,"type":"rate_limit_error","message":"slow down"}}`,
			Want: probestest.Want{Class: probes.Transient, Reason: "429:rate_limit_error", RetryAfter: 2 * time.Second}},
	})
}
