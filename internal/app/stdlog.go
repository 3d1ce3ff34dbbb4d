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

// rememberSecret adds a key to what stdLog redacts (keys shorter than 4
// bytes are not redacted anywhere: see wire.RedactBytes).
func rememberSecret(s string) {
	if len(s) < 4 {
		return
	}
	stdLog.mu.Lock()
	defer stdLog.mu.Unlock()
	if !slices.Contains(stdLog.secrets, s) {
		stdLog.secrets = append(stdLog.secrets, s)
	}
}

type redactingWriter struct {
	mu      sync.Mutex
	w       io.Writer
	secrets []string
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
