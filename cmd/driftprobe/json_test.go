package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// --json output never carries raw characters a terminal acts on or hides
// (bidi overrides, C1 controls, DEL, zero-width), yet decodes to the same
// values.
func TestWriteJSONEscapesInvisible(t *testing.T) {
	v := map[string]string{
		"fp":      "fp_\u202eevil\u202c",
		"message": "a\u007fb\u0085c\u200bd\ufeffe",
		"plain":   "héllo <b> & \u2028 ok",
	}
	var b bytes.Buffer
	if err := writeJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"\u202e", "\u202c", "\u007f", "\u0085", "\u200b", "\ufeff"} {
		if bytes.Contains(b.Bytes(), []byte(r)) {
			t.Errorf("raw %U in %s", []rune(r)[0], b.Bytes())
		}
	}
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for k := range v {
		if back[k] != v[k] {
			t.Errorf("%s: %q read back as %q", k, v[k], back[k])
		}
	}
	if !bytes.Contains(b.Bytes(), []byte("héllo <b> &")) {
		t.Errorf("ordinary text escaped: %s", b.Bytes())
	}
}
