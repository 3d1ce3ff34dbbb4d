package ghissue_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/ghissue"
)

// TestHeldRowsShowTheirBlocker is QA D6: rows queued while the token was
// unset all recorded "GitHub token missing". With the token set, GitHub
// refuses event 1's issue (422) and that row waits; event 1's later rows
// are held behind it, untouched by the pass. The listing must give them
// the real blocker (row 1's refusal and its wait), not their stale
// "token missing", and not say they are retried on the next delivery.
func TestHeldRowsShowTheirBlocker(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	res := deliver(t, s, c, ghissue.Options{Getenv: func(string) string { return "" }})
	if res.Deferred != 4 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "token missing") {
		t.Fatalf("pass without a token: %+v", res)
	}
	f.addFault(fault{match: isCreate, status: 422, body: `{"message":"Validation Failed","errors":[{"resource":"Issue","code":"invalid","field":"labels"}]}`})
	res = deliver(t, s, c, ghissue.Options{})
	if res.Failed != 1 || res.Sent != 1 {
		t.Fatalf("pass with a token: %+v", res)
	}
	p := pending(t, s)
	if len(p) != 3 || p[0].EventID != 1 || p[1].EventID != 1 || p[2].EventID != 1 {
		t.Fatalf("scenario changed: %+v", p)
	}
	until := c.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	if want := "waiting until " + until + ": GitHub refused the request (422"; !strings.HasPrefix(p[0].Reason, want) {
		t.Errorf("failing row: reason %q, want it to start %q", p[0].Reason, want)
	}
	for _, h := range p[1:] {
		want := "held back until outbox row " + strconv.FormatInt(p[0].ID, 10) + " of the same event is delivered; row " + strconv.FormatInt(p[0].ID, 10) + ": waiting until " + until + ": GitHub refused the request (422"
		if !strings.HasPrefix(h.Reason, want) {
			t.Errorf("held row %d: reason %q, want it to start %q", h.ID, h.Reason, want)
		}
		if strings.Contains(h.Reason, "token missing") || strings.Contains(h.Reason, "retried on the next delivery") {
			t.Errorf("held row %d: stale reason %q", h.ID, h.Reason)
		}
	}
}
