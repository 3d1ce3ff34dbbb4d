package azure

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
		// prompt_filter_results and choice annotations on an answered
		// request are scores: allowed (protected_material_code detected but
		// not filtered fires nothing).
		"chat_200_annotations_prompt_filter_results.json": {Prober: newProber, Class: probes.Allowed, Reason: "stop"},
		// The docs' N>1 scenario: one generation finished with
		// content_filter, so the provider withheld output for these bytes.
		"completion_200_n3_one_choice_content_filter.json": {Prober: newProber, Class: probes.BlockedOutput, Stage: probes.StageOutput, Reason: "content_filter"},
		"prompt_filtered_400_docs_fragment.json": {Prober: newProber, Status: 400,
			Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "content_filter"},
		"prompt_filtered_400_innererror_docs_legacy.json": {Prober: newProber, Status: 400,
			Class: probes.BlockedInput, Stage: probes.StageInput, Reason: "content_filter",
			Categories: []string{probes.CatHate, probes.CatSelfHarm, probes.CatViolence}},
	})
}
