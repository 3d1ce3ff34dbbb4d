package anthropic

import (
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// TestFixtures replays every recorded body in testdata/ (sources in the
// meta files) over loopback HTTP and pins its exact reading: class, stage,
// reason and categories. A fixture added without a case here fails.
func TestFixtures(t *testing.T) {
	p := func(t *testing.T, base string) probes.Prober { return newTestProber(t, base, nil) }
	es := map[string]string{"Content-Type": "text/event-stream"}
	probestest.Fixtures(t, probestest.Probe, map[string]probestest.Fixture{
		"message_200_end_turn_docs.json":           {Prober: p, Class: probes.Allowed, Reason: "end_turn"},
		"message_200_end_turn_sdk_go_fixture.json": {Prober: p, Class: probes.Allowed, Reason: "end_turn"},
		// stop_reason "refusal": Claude's streaming safety classifiers
		// stopped the answer (docs: "when streaming classifiers intervene
		// to handle potential policy violations"), an output-stage block.
		"stop_reason_refusal_docs.json": {Prober: p, Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal",
			Categories: []string{probes.CatIllicit}},
		"stop_reason_refusal_sdk_go_fixture.json": {Prober: p, Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal"},
		"error_400_invalid_request.json":          {Prober: p, Status: 400, Class: probes.ClientError, Reason: "400:invalid_request_error"},
		"error_400_output_blocked_content_filter.json": {Prober: p, Status: 400,
			Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "400:output_blocked"},
		"error_429_rate_limit.json": {Prober: p, Status: 429, Header: map[string]string{"retry-after": "7"},
			Class: probes.Transient, Reason: "429:rate_limit_error", RetryAfter: 7 * time.Second},
		// The tier's monthly spend cap: no retry-after, retrying fails until
		// next month. Sent once.
		"error_429_enforced_spend_limit_docs.json": {Prober: p, Status: 429,
			Class: probes.ClientError, Reason: "429:rate_limit_error:enforced_spend_limit_reached"},
		"error_529_overloaded.json": {Prober: p, Status: 529, Header: map[string]string{"Retry-After": "3"},
			Class: probes.Transient, Reason: "529:overloaded_error", RetryAfter: 3 * time.Second},
		// Streams (driftprobe never asks for one): complete ones read as
		// the message they describe, an error event after the 200 as its
		// envelope, a lone message_delta as nothing.
		"stream_end_turn_docs.sse.txt": {Prober: p, Header: es, Class: probes.Allowed, Reason: "end_turn"},
		"stream_error_overloaded_after_200.sse.txt": {Prober: p, Header: map[string]string{"Content-Type": "text/event-stream", "Request-Id": "req_stream123"},
			Class: probes.Transient, Reason: "200:overloaded_error"},
		"stream_refusal_complete_synth.sse.txt": {Prober: p, Header: es, Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "refusal",
			Categories: []string{probes.CatIllicit}},
		"stream_refusal_message_delta.sse.txt": {Prober: p, Header: es, Class: probes.Transient, Reason: "malformed_response"},
	})
}
