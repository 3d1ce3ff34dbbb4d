package mistral

import (
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// TestFixtures replays every recorded body in testdata/ (sources in the
// meta files) over loopback HTTP and pins its exact reading: class, stage,
// reason and categories. A fixture added without a case here fails.
func TestFixtures(t *testing.T) {
	probestest.Fixtures(t, probestest.Probe, map[string]probestest.Fixture{
		"chat_moderations_200.json": {Prober: newProber(EndpointChat), Class: probes.Allowed, Reason: "not_flagged"},
		"moderations_200.json":      {Prober: newProber(EndpointModeration), Class: probes.Allowed, Reason: "not_flagged"},
	})
}
