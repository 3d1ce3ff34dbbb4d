package app

import (
	"io"
	"log"
	"slices"
	"strings"
	"sync"

	"github.com/driftprobe/driftprobe/internal/termtext"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// stdLog is where the standard library's logger writes once InstallStdLog
// ran. net/http's transport writes to that logger, for one thing the bytes
// an upstream sent past its Content-Length ("Unsolicited response received
// on idle HTTP channel starting with ..."), which may echo a key; those
// lines pass through here, every key a target was built with redacted.
var stdLog = &redactingWriter{}

// InstallStdLog points the standard library's logger at w through the
// redaction of every key targets were built with (see stdLog).
func InstallStdLog(w io.Writer) {
	stdLog.mu.Lock()
	stdLog.w = w
	stdLog.mu.Unlock()
	log.SetOutput(stdLog)
}

// RememberSecret adds a credential to what the standard library's logger
// redacts once InstallStdLog ran: a GitHub token, or a GitHub App's JWT
// and installation token as delivery learns them. A GitHub App's
// credentials are short-lived and replaced all along a daemon's life:
// only the maxLearned latest are kept (a target's key, rememberSecret,
// always is).
func RememberSecret(s string) {
	stdLog.mu.Lock()
	defer stdLog.mu.Unlock()
	if !stdLog.addLocked(s) {
		return
	}
	stdLog.learned = append(stdLog.learned, s)
	if len(stdLog.learned) > maxLearned {
		old := stdLog.learned[0]
		stdLog.learned = stdLog.learned[1:]
		stdLog.secrets = slices.DeleteFunc(stdLog.secrets, func(x string) bool { return x == old })
		wire.Forget(old)
	}
}

// maxLearned is how many credentials RememberSecret keeps: a GitHub App's
// tokens last an hour, its JWTs minutes.
const maxLearned = 16

// rememberSecret adds a key to what stdLog redacts (keys shorter than 4
// bytes are not redacted anywhere: see wire.RedactBytes).
func rememberSecret(s string) {
	stdLog.mu.Lock()
	defer stdLog.mu.Unlock()
	stdLog.addLocked(s)
}

// addLocked adds s to what r redacts and reports whether it was new
// (keys shorter than 4 bytes are not redacted anywhere: see
// wire.RedactBytes). r.mu is held.
func (r *redactingWriter) addLocked(s string) bool {
	if len(s) < 4 || slices.Contains(r.secrets, s) {
		return false
	}
	r.secrets = append(r.secrets, s)
	return true
}

type redactingWriter struct {
	mu      sync.Mutex
	w       io.Writer
	secrets []string
	learned []string // the secrets RememberSecret added, oldest first
}

// Write redacts the keys and escapes what a terminal would act on
// (termtext.Safe, cut at 300 runes), then writes the line. It reports p as written whatever
// became of it: the logger has nothing better to do with an error.
func (r *redactingWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		return len(p), nil
	}
	b := strings.TrimSuffix(string(wire.RedactBytes(p, r.secrets...)), "\n")
	_, err := io.WriteString(r.w, termtext.Safe(b)+"\n")
	return len(p), err
}
