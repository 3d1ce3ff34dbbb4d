//go:build linux

package storage

import "syscall"

// readOnlyFS reports whether dir is on a file system mounted read-only
// (ST_RDONLY): nothing there can change a file while it is read.
func readOnlyFS(dir string) bool {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return false
	}
	const stRDONLY = 0x1
	return st.Flags&stRDONLY != 0
}
