//go:build !linux

package storage

// readOnlyFS reports whether dir is on a read-only file system; where that
// cannot be told, never (so a database is never read as immutable).
func readOnlyFS(string) bool { return false }
