package app

import (
	"bytes"
	"fmt"
	"log"
	"strings"
	"testing"
)

// The credentials delivery learns (a GitHub App's installation tokens and
// JWTs, replaced all along a daemon's life) are redacted from the standard
// library's log, the latest maxLearned of them: the list does not grow
// for ever. A target's key stays whatever delivery learns.
func TestRememberSecretKeepsTheLatest(t *testing.T) {
	var out bytes.Buffer
	old := stdLog
	stdLog = &redactingWriter{}
	defer func() { stdLog = old; log.SetOutput(old) }()
	InstallStdLog(&out)
	rememberSecret("sk-targetKEY0123456789abcdef")
	tok := func(i int) string { return fmt.Sprintf("ghs_learnedTOKEN%02dabcdefghijklmnop", i) }
	for i := 0; i < maxLearned+4; i++ {
		RememberSecret(tok(i))
	}
	for i := 0; i < maxLearned+4; i++ {
		log.Printf("echo %s", tok(i))
	}
	log.Printf("echo sk-targetKEY0123456789abcdef")
	got := out.String()
	for i := 4; i < maxLearned+4; i++ {
		if strings.Contains(got, tok(i)) {
			t.Errorf("token %d of the latest %d is not redacted", i, maxLearned)
		}
	}
	if strings.Contains(got, "targetKEY") {
		t.Errorf("the target's key is no longer redacted")
	}
	if n := len(stdLog.secrets); n != maxLearned+1 {
		t.Errorf("%d secrets kept, want %d", n, maxLearned+1)
	}
}
