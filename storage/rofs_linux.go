//go:build linux

package storage

import (
	"errors"
	"syscall"
)

// readOnlyFile reports whether this process may not write the existing
// file p: its mode forbids it (for the effective user, as open(2) checks),
// or its file system is mounted read-only. It answers false when that
// cannot be told (p missing, say): the caller then opens p as usual and
// reports what SQLite says.
func readOnlyFile(p string) bool {
	const (
		atFDCWD   = -0x64 // AT_FDCWD
		wOK       = 0x2   // W_OK
		atEAccess = 0x200 // AT_EACCESS
	)
	err := syscall.Faccessat(atFDCWD, p, wOK, atEAccess)
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EPERM) {
		return true
	}
	// Without faccessat2 (Linux before 5.8) Go checks the mode bits
	// only: ask the file system too.
	var st syscall.Statfs_t
	const stRDONLY = 0x1
	return err == nil && syscall.Statfs(p, &st) == nil && st.Flags&stRDONLY != 0
}
