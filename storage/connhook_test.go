package storage

import (
	"strings"
	"sync/atomic"
	"testing"

	"modernc.org/sqlite"
)

// connectHook is the test's function onConnect installed, if any.
var connectHook atomic.Pointer[func(c sqlite.ExecQuerierContext, dsn string) error]

func init() {
	// Once for the test binary (the driver keeps every hook registered);
	// a no-op unless a test installed its function with onConnect.
	sqlite.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, dsn string) error {
		if f := connectHook.Load(); f != nil {
			return (*f)(c, dsn)
		}
		return nil
	})
}

// onConnect has f called, until the test ends, on every connection the
// driver opens, once it is set up (its DSN's pragmas applied) and before
// its first statement; an error f returns fails that connection's
// opening, as SQLite's own would. f runs on the goroutine opening the
// connection and may block it.
func onConnect(t *testing.T, f func(c sqlite.ExecQuerierContext, dsn string) error) {
	t.Helper()
	connectHook.Store(&f)
	t.Cleanup(func() { connectHook.Store(nil) })
}

// writerConn reports whether dsn opens a connection Open makes to the file
// at p for writing: the store's or the run lease's (refuseForeign's and
// createPaged's connections aside).
func writerConn(dsn, p string) bool {
	return strings.HasPrefix(dsn, fileURI(p)+"?") && strings.Contains(dsn, "_txlock=immediate")
}
