package diff_test

import (
	"slices"
	"testing"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/diff"
)

// The config accepts in github.kinds exactly the kinds detection records.
func TestConfigKnowsEveryKind(t *testing.T) {
	kinds := []string{diff.KindPolicy, diff.KindModel, diff.KindScoreDrift, diff.KindNondeterminism}
	if !slices.Equal(slices.Sorted(slices.Values(kinds)), slices.Sorted(slices.Values(config.EventKinds))) {
		t.Fatalf("config.EventKinds %v, detection records %v", config.EventKinds, kinds)
	}
}
