package wire

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want time.Duration
	}{
		{7, 7 * time.Second}, {0.25, 250 * time.Millisecond}, {0, 0}, {-5, 0}, {math.NaN(), 0},
		{1e10, math.MaxInt64}, {1e300, math.MaxInt64}, {math.Inf(1), math.MaxInt64}, {math.Inf(-1), 0},
	} {
		if got := Duration(c.v, time.Second); got != c.want {
			t.Errorf("Duration(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestRetryAfterOutOfRange: found by FuzzClassify. A float conversion out of
// range used to yield a huge negative wait.
func TestRetryAfterOutOfRange(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, v := range [][2]string{{"Retry-After", "1e300"}, {"Retry-After", "NaN"}, {"Retry-After", "Inf"}, {"retry-after-ms", "+Inf"}, {"retry-after-ms", "NaN"}} {
		h := http.Header{}
		h.Set(v[0], v[1])
		if d := RetryAfter(h, now); d < 0 {
			t.Errorf("%s: %s = %v", v[0], v[1], d)
		}
	}
	h := http.Header{}
	h.Set("retry-after-ms", "1500")
	if d := RetryAfter(h, now); d != 1500*time.Millisecond {
		t.Errorf("retry-after-ms 1500 = %v", d)
	}
}

func TestRedact(t *testing.T) {
	const key = "sk-redact-0123456789"
	r := Redact(probes.Result{
		Reason: "x " + key, Message: strings.Repeat("m", MaxMessage-5) + key, RequestID: key, ModelID: key, ModelFP: key,
		Unknown: []string{"category:" + key}, Signals: []probes.Signal{{Category: probes.CatOther, Raw: key, Severity: key}},
	}, key, "", "abc")
	for _, s := range []string{r.Reason, r.Message, r.RequestID, r.ModelID, r.ModelFP, r.Unknown[0], r.Signals[0].Raw, r.Signals[0].Severity} {
		if strings.Contains(s, key) {
			t.Errorf("key left in %q", s)
		}
	}
	if len(r.Message) > MaxMessage {
		t.Errorf("message %d bytes", len(r.Message))
	}
	// A short key replaced by the longer marker must not push Message over
	// its bound.
	r = Redact(probes.Result{Message: strings.Repeat("k3y!", MaxMessage/4)}, "k3y!")
	if len(r.Message) > MaxMessage {
		t.Errorf("message %d bytes after redacting a short key", len(r.Message))
	}
}

func TestIsAbuseNotOnInvalidPrompt(t *testing.T) {
	const invalid = "Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please try again with a different prompt: https://platform.openai.com/docs/guides/reasoning#advice-on-prompting"
	for _, c := range []struct {
		typ, code, msg string
		abuse          bool
	}{
		// OpenAI's per-request input block, direct or through a gateway
		// without its code: never account enforcement.
		{"invalid_request_error", "invalid_prompt", invalid, false},
		{"", "400", "litellm.BadRequestError: OpenAIException - " + invalid, false},
		{"", "", "INVALID PROMPT: Your prompt was flagged as potentially violating our usage policies", false},
		// Account enforcement still is.
		{"", "", "Your account has been suspended for repeated violations of our usage policies.", true},
		{"", "", "Your access was terminated due to violation of our usage policies.", true},
		{"", "", "This key is violating our usage policy and has been restricted.", true},
		{"invalid_request_error", "", "This organization has been disabled.", true},
		{"", "account_deactivated", invalid, true},
		{"", "", invalid + " Your account has been suspended.", true},
		// Enforcement on the workspace, project or organization a key
		// belongs to is account-level too.
		{"", "", "Your workspace has been suspended. Please contact support.", true},
		{"permission_error", "", "This project has been suspended for violations of our terms.", true},
		{"", "", "Your organisation has been suspended.", true},
		{"", "", "Your organization has been disabled.", true},
		// Ordinary errors are not.
		{"invalid_request_error", "", "messages: roles must alternate", false},
		{"", "", "Invalid API key.", false},
		{"authentication_error", "", "invalid x-api-key", false},
		{"", "", "Unauthorized", false},
		{"", "", "This workspace has been archived.", false},
		{"", "", "Project not found or you do not have access to it.", false},
		{"", "", "Your organization must be verified to use this model.", false},
	} {
		if got := IsAbuse(c.typ, c.code, c.msg); got != c.abuse {
			t.Errorf("IsAbuse(%q, %q, %q) = %v, want %v", c.typ, c.code, c.msg, got, c.abuse)
		}
	}
	if !IsPromptFlagged(invalid) || IsPromptFlagged("Your account has been suspended.") {
		t.Error("IsPromptFlagged")
	}
}

func TestSanitizeUnknown(t *testing.T) {
	for in, want := range map[string]string{
		"category:hate":            "category:hate",
		"category:new,cat":         "category:new_cat",
		"content_type:a\nb\r\tc":   "content_type:a_b__c",
		"x\x00y\x7fz\u0085w":       "x_y_z_w",
		"fp:a\u202eb\u200bc\ufeff": "fp:a_b_c_",
		"ünïcode:ok é":             "ünïcode:ok é",
		"bad:\xff":                 "bad:\uFFFD",
		"":                         "",
	} {
		if got := SanitizeUnknown(in); got != want {
			t.Errorf("SanitizeUnknown(%q) = %q, want %q", in, got, want)
		}
		if got := SanitizeUnknown(SanitizeUnknown(in)); got != want {
			t.Errorf("not idempotent on %q: %q", in, got)
		}
	}
	clean := []string{"a", "b:c"}
	if got := CleanUnknown(clean); &got[0] != &clean[0] {
		t.Error("CleanUnknown copied a clean list")
	}
	dirty := []string{"a", "b,c", "d\ne"}
	got := CleanUnknown(dirty)
	if strings.Join(got, "|") != "a|b_c|d_e" || dirty[1] != "b,c" {
		t.Errorf("CleanUnknown = %q (input now %q)", got, dirty)
	}
	if n := testing.AllocsPerRun(100, func() { SanitizeUnknown("category:hate") }); n != 0 {
		t.Errorf("%v allocations sanitizing a clean entry", n)
	}
	// Finish sanitizes every entry, whatever the adapter put there.
	r := Finish(probes.Result{Class: probes.Allowed, Unknown: []string{"category:new,cat", "content_type:weird,type"}})
	if strings.Join(r.Unknown, ",") != "category:new_cat,content_type:weird_type" {
		t.Errorf("Finish left %q", r.Unknown)
	}
}
