package ghissue_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/ghissue"
)

// TestReviewMappingWithoutURLIsTrustedOnAnyHost: mappingHere trusts a
// stored issue number whose issue_url is empty ("a mapping from before
// URLs were kept": the first release stored GitHub's html_url as it came,
// empty when an answer lacked it) without knowing its host, so after
// github.base_url moved (the case the commit guards) driftprobe comments
// on that number's issue here whatever it is. Here event 1's stored number
// is 2, which on this GitHub is event 2's issue (another marker): event
// 1's updates land on it. docs/GITHUB.md says "driftprobe never comments on,
// retitles or closes an issue without the event's marker".
func TestReviewMappingWithoutURLIsTrustedOnAnyHost(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	deliverOpensOnly(t, s, c) // #1 is event 1's issue, #2 event 2's
	if _, err := s.st.SQL().Exec(`UPDATE events SET issue_number = 2, issue_url = '' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	evs := events(t, s)
	m1 := ghissue.EventMarker(evs[0].Fingerprint)
	n := len(f.requests())
	deliver(t, s, c, ghissue.Options{})
	for _, r := range f.requests()[n:] {
		if r.Method != http.MethodGet && strings.Contains(r.Path, "/issues/2") && strings.Contains(r.Body, "driftprobe:update=") {
			for _, u := range evs[0].Updates {
				if strings.Contains(r.Body, ghissue.UpdateMarker(evs[0], u)) {
					t.Errorf("event 1's update %d was posted to issue #2, whose body carries event 2's marker, not event 1's (%s): %s %s", u.ID, m1, r.Method, r.Path)
				}
			}
		}
	}
}
