package wire

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
)

func TestTrimBOM(t *testing.T) {
	for in, want := range map[string]string{
		"\xef\xbb\xbf{}":             "{}",
		"\xef\xbb\xbf\xef\xbb\xbf{}": "\xef\xbb\xbf{}",  // one mark, not every one
		" \xef\xbb\xbf{}":            " \xef\xbb\xbf{}", // only a leading one
		"\xef\xbb{}":                 "\xef\xbb{}",      // a partial mark is not one
		"{}":                         "{}",
		"":                           "",
	} {
		if got := string(TrimBOM([]byte(in))); got != want {
			t.Errorf("TrimBOM(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSkipBOMLeavesResponse: the response an adapter reads skips the mark,
// while the one the runner stores and hashes keeps every byte received.
func TestSkipBOMLeavesResponse(t *testing.T) {
	raw := []byte("\xef\xbb\xbf{\"a\":1}")
	orig := bytes.Clone(raw)
	resp := &probes.Response{Status: 400, Header: http.Header{"X-Request-Id": {"r"}}, Body: raw, Truncated: true}
	got := SkipBOM(resp)
	if got == resp {
		t.Fatal("SkipBOM returned the response it was given for a body with a mark")
	}
	if string(got.Body) != `{"a":1}` || got.Status != 400 || !got.Truncated || got.Header.Get("X-Request-Id") != "r" {
		t.Errorf("SkipBOM = %+v", got)
	}
	if !bytes.Equal(resp.Body, orig) || !bytes.Equal(raw, orig) {
		t.Errorf("SkipBOM changed the stored body: %q", resp.Body)
	}
	plain := &probes.Response{Status: 200, Body: []byte(`{}`)}
	if SkipBOM(plain) != plain {
		t.Error("SkipBOM copied a response without a mark")
	}
	if SkipBOM(nil) != nil {
		t.Error("SkipBOM(nil) != nil")
	}
	if n := testing.AllocsPerRun(100, func() { SkipBOM(plain) }); n != 0 {
		t.Errorf("SkipBOM allocates %v times on a body without a mark", n)
	}
}

// TestOrganizationRestricted: Groq's account restriction is enforcement
// (by its code, and by its wording alone); a restriction that is not the
// organization's is not.
func TestOrganizationRestricted(t *testing.T) {
	for _, c := range []struct {
		typ, code, msg string
		want           bool
	}{
		{"invalid_request_error", "organization_restricted", "Organization has been restricted. Please reach out to support if you believe this was in error.", true},
		{"", "", "Organization has been restricted. Please reach out to support if you believe this was in error.", true},
		{"", "organization_restricted", "", true},
		{"", "", "Your organisation has been restricted.", true},
		{"invalid_request_error", "", "This model is restricted to organizations on the enterprise plan.", false},
		{"invalid_request_error", "model_not_found", "The model is restricted.", false},
	} {
		if got := IsAbuse(c.typ, c.code, c.msg); got != c.want {
			t.Errorf("IsAbuse(%q, %q, %q) = %v, want %v", c.typ, c.code, c.msg, got, c.want)
		}
	}
}

// TestPromptFlaggedSafetyWording: OpenAI's "limited access ... for safety
// reasons" invalid prompt, forwarded or not, straight or typographic
// apostrophe; the words without OpenAI's "Invalid prompt:" opening are not
// it, and it is never account enforcement.
func TestPromptFlaggedSafetyWording(t *testing.T) {
	const msg = "Invalid prompt: we've limited access to this content for safety reasons. This type of information may be used to benefit or to harm people."
	for in, want := range map[string]bool{
		msg: true,
		"litellm.BadRequestError: OpenAIException - " + msg:                             true,
		"Invalid prompt: we\u2019ve limited access to this content for safety reasons.": true,
		"We've limited access to this content for safety reasons.":                      false,
		"Invalid prompt: 'messages' must contain the word 'json'.":                      false,
	} {
		if got := IsPromptFlagged(in); got != want {
			t.Errorf("IsPromptFlagged(%q) = %v, want %v", in, got, want)
		}
		if IsAbuse("invalid_request_error", "invalid_prompt", in) {
			t.Errorf("IsAbuse(%q) = true", in)
		}
	}
}
