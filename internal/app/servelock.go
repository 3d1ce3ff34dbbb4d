package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrServing is matched (errors.Is) by the error NewDaemon returns when
// another serve process holds the database's serve lock.
var ErrServing = errors.New("another driftprobe serve is serving this database")

// serveLockPath is the file beside database whose lock marks a serve
// process: DATABASE-serve.lock.
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
	f    *os.File
	desc string // what the holder wrote of itself
}

// acquireServeLock takes the serve lock of database, or returns an error
// matching ErrServing that names the process holding it (as it wrote
// itself into the file). No lock is taken (a nil *serveLock, no error)
// for an in-memory database, for a path that cannot be a database file
// (a directory, a missing directory: opening the database then says what
// is wrong), and where the lock cannot be had at all (the file system has
// no flock, the lock file is another user's): warn then says why, and the
// daemon runs unguarded, as it did before the lock existed.
func acquireServeLock(database string, now time.Time) (l *serveLock, warn string, err error) {
	if database == ":memory:" || database == "" {
		return nil, "", nil
	}
	database = resolveDatabase(database)
	if fi, err := os.Stat(database); err == nil && fi.IsDir() {
		return nil, "", nil
	}
	if fi, err := os.Stat(filepath.Dir(database)); err != nil || !fi.IsDir() {
		return nil, "", nil
	}
	p := serveLockPath(database)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Sprintf("serve lock %s: %v: running without it (a second serve on this database would not be refused; remove the file, left by another user, to restore it)", p, err), nil
		}
		return nil, "", fmt.Errorf("serve lock %s: %w", p, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Sprintf("serve lock %s: %v: this file system takes no lock, running without it (a second serve on this database would not be refused)", p, err), nil
	}
	if held {
		who := make([]byte, 512)
		n, _ := f.ReadAt(who, 0)
		f.Close()
		desc := strings.TrimSpace(sanitizeHolder(string(who[:n])))
		if desc == "" {
			desc = "a process that has not said who it is yet"
		}
		return nil, "", fmt.Errorf("%w (%s): %s; one daemon per database — stop it first (a second would run its own schedule: twice the probing), or give this one another database", ErrServing, database, desc)
	}
	host, _ := os.Hostname()
	l = &serveLock{f: f, desc: fmt.Sprintf("pid %d on host %s, since %s", os.Getpid(), host, now.UTC().Format(time.RFC3339))}
	l.write("")
	return l, "", nil
}

// resolveDatabase returns the file database names, through symbolic
// links (a link to a database not created yet included: the file it will
// be), so that serves naming one database through different links take
// the same lock.
func resolveDatabase(p string) string {
	for range 40 { // as the kernel's own limit on links followed
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		t, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(dir, filepath.Base(p))
	}
	return p
}

// write records who holds the lock, with the /metrics address (listen)
// once it is bound, for a daemon it refuses to name.
func (l *serveLock) write(listen string) {
	if l == nil || l.f == nil {
		return
	}
	desc := l.desc
	if listen != "" {
		desc += ", serving /metrics on " + listen
	}
	if err := l.f.Truncate(0); err == nil {
		_, _ = l.f.WriteAt([]byte(desc+"\n"), 0)
	}
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
