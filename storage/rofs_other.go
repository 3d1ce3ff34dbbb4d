//go:build !linux

package storage

import (
	"errors"
	"io/fs"
	"os"
)

// readOnlyFile reports whether this process may not write the existing
// file p, by opening it for writing (which changes nothing: no byte is
// written, it is not truncated). It answers false when that cannot be
// told: the caller then opens p as usual and reports what SQLite says.
func readOnlyFile(p string) bool {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err == nil {
		f.Close()
		return false
	}
	return errors.Is(err, fs.ErrPermission)
}
