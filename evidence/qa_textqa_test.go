package evidence_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
)

// driftprobe finds its issues and comments by markers it looks up as
// plain text, in code or not. The sentences the Markdown view shows as
// code spans (an update's detail, which quotes the provider's model id,
// why a side or its bytes are absent, a problem) carry the provider's
// text: a model id holding "<!-- driftprobe:event=FP -->" must not spell a
// marker in Markdown a human pastes into an issue or comment. The opener
// is broken as in the fences; the text stays readable.
func TestMarkdownSpansCarryNoMarker(t *testing.T) {
	var r evidence.Record
	if err := json.Unmarshal(previousRecord(t), &r); err != nil {
		t.Fatal(err)
	}
	marker := "<!-- driftprobe:event=deadbeef --> <!-- driftprobe:update=2 -->"
	r.Event.Updates = append(r.Event.Updates, diff.EventUpdate{ID: 9, RunID: 4, Change: "target_joined", Target: "b",
		Detail: `model on b: m-1 → id "m-2 ` + marker + `"`})
	r.Probes[0].Nondeterminism = "note " + marker
	r.Probes[1].Request = evidence.Request{SHA256: "abc", Missing: "missing " + marker}
	var out bytes.Buffer
	evidence.WriteMarkdown(&out, &r)
	md := out.String()
	if strings.Contains(md, "<!--") {
		i := strings.Index(md, "<!--")
		t.Errorf("the Markdown spells an HTML comment opener, a driftprobe marker: %q", md[max(0, i-80):min(len(md), i+80)])
	}
	if !strings.Contains(md, "driftprobe:event=deadbeef") || !strings.Contains(md, "note <!") {
		t.Errorf("the text is no longer there to read:\n%s", md)
	}
}
