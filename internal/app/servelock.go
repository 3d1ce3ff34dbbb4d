package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrServing is matched (errors.Is) by the error NewDaemon returns when
// another serve process holds the database's serve lock.
var ErrServing = errors.New("another driftprobe serve is serving this database")

// serveLockPath is the file beside database whose lock marks a serve
// process: DATABASE-serve.lock (beside the file a symbolic link names).
func serveLockPath(database string) string { return database + "-serve.lock" }

// serveLock is the lock one serve process holds on its database for its
// whole life. The run lease keeps runs from overlapping; this keeps a
// second daemon from starting at all, since two would each keep their own
// schedule (twice the probing and the cost). It is an advisory lock on a
// file of its own beside the database (never on the database file, whose
// locks are SQLite's), released by the kernel when the process ends,
// however it ends: there is no stale lock to take over. Where the
// platform has no such lock (not Unix) it is not taken.
type serveLock struct {
	f *os.File
}

// acquireServeLock takes the serve lock of database, or returns an error
// matching ErrServing that names the process holding it (as it wrote
// itself into the file). An in-memory database has no lock.
func acquireServeLock(database, listen string, now time.Time) (*serveLock, error) {
	if database == ":memory:" || database == "" {
		return &serveLock{}, nil
	}
	// Beside the file itself, so that serves naming it through different
	// links take the same lock.
	if real, err := filepath.EvalSymlinks(database); err == nil {
		database = real
	}
	p := serveLockPath(database)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("serve lock %s: %w", p, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("serve lock %s: %w", p, err)
	}
	if held {
		who := make([]byte, 512)
		n, _ := f.ReadAt(who, 0)
		f.Close()
		desc := strings.TrimSpace(sanitizeHolder(string(who[:n])))
		if desc == "" {
			desc = "a process that has not said who it is yet"
		}
		return nil, fmt.Errorf("%w (%s): %s; one daemon per database — stop it first (a second would run its own schedule: twice the probing), or give this one another database", ErrServing, database, desc)
	}
	host, _ := os.Hostname()
	desc := fmt.Sprintf("pid %d on host %s, since %s", os.Getpid(), host, now.UTC().Format(time.RFC3339))
	if listen != "" {
		desc += ", serving /metrics on " + listen
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(desc+"\n"), 0)
	}
	return &serveLock{f: f}, nil
}

// release gives the lock up (closing the file releases it). The file stays:
// removing it could let two processes lock two different files.
func (l *serveLock) release() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// sanitizeHolder keeps the printable characters of a lock file's text: it
// is another process's, or anyone's who could write the directory.
func sanitizeHolder(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return -1
		}
		return r
	}, s)
}
