package app

import (
	"os"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// TestRunbookRunFailedNamesNewerSchema: a serve left running (or paused
// past its lease) while a newer driftprobe migrated its database fails
// every later tick with storage.ErrNewerSchema, which is what
// DriftprobeRunFailed tickets: the RUNBOOK's section must say what that
// log line means and what to do (stop this serve, run the newer one).
func TestRunbookRunFailedNamesNewerSchema(t *testing.T) {
	b, err := os.ReadFile("../../docs/RUNBOOK.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## DriftprobeRunFailed\n")
	if i < 0 {
		t.Fatal("RUNBOOK.md has no DriftprobeRunFailed section")
	}
	sec := doc[i+1:]
	if j := strings.Index(sec[3:], "\n## "); j >= 0 {
		sec = sec[:j+3]
	}
	sec = strings.Join(strings.Fields(sec), " ") // wrapped lines read as one
	for _, want := range []string{
		storage.ErrNewerSchema.Error(),
		"while this one had it open",                             // a tick refused (AcquireLock)
		"during this run, while this one's run lease had lapsed", // a run stopped mid-way
		"stop this process",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("RUNBOOK.md DriftprobeRunFailed does not name %q", want)
		}
	}
}
