package probes

import (
	"strings"
	"testing"
)

// PastedEndpoint matches the base's path ending segment by segment
// (patterns, any case, a trailing "/" aside), the first pattern that
// matches naming what to drop; a root, an empty path or an unparsable base
// gives nothing.
func TestPastedEndpoint(t *testing.T) {
	eps := []string{"/v1*/models/*", "/chat/completions"}
	for base, drop := range map[string]string{
		"https://h/v1beta/models/g:generateContent": "/v1beta/models/g:generateContent",
		"https://h/p/V1/Models/g/":                  "/V1/Models/g",
		"https://h/v1/CHAT/completions":             "/CHAT/completions",
		"https://h/v1":                              "",
		"https://h":                                 "",
		"https://h/":                                "",
		"https://h/completions":                     "",
		"::":                                        "",
	} {
		w := PastedEndpoint(base, "/x", "p", "https://root", eps...)
		switch {
		case drop == "" && w != nil:
			t.Errorf("%s: %v", base, w)
		case drop != "" && (len(w) != 1 || w[0].Field != "base_url" || !strings.Contains(w[0].Msg, "drop the trailing "+drop+" ")):
			t.Errorf("%s: %v, want to drop %s", base, w, drop)
		}
	}
}

// MissingVersion warns when the path does not end in the version (any
// case), never for an empty base.
func TestMissingVersion(t *testing.T) {
	for base, warn := range map[string]bool{
		"https://h": true, "https://h/": true, "https://h/openai": true, "https://h/v1/x": true,
		"https://h/v1": false, "https://h/V1/": false, "https://h/openai/v1": false, "": false,
	} {
		if w := MissingVersion(base, "/chat/completions", "openai", "https://h/v1", "v1"); (w != nil) != warn {
			t.Errorf("%q: %v", base, w)
		}
	}
}
