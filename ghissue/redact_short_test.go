package ghissue

import "testing"

// A credential shorter than minSecret is not redacted (no real one is that
// short, and "tok" would be cut out of "token"); from minSecret up, every
// occurrence is.
func TestRedactorSkipsValuesTooShortToBeCredentials(t *testing.T) {
	var r redactor
	r.add("tok", "ghp_abc")
	const msg = "repository acme/x not found, or not visible to the token in $GITHUB_TOKEN (404): ghp_abc"
	if got, want := r.redact(msg), "repository acme/x not found, or not visible to the token in $GITHUB_TOKEN (404): [redacted]"; got != want {
		t.Errorf("redact:\n got %q\nwant %q", got, want)
	}
	r.add("toke")
	if got := r.redact("the token"); got != "the [redacted]n" {
		t.Errorf("a 4-character credential: %q", got)
	}
}
