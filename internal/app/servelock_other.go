//go:build !unix

package app

import "os"

// tryLock takes no lock where the platform has no flock.
func tryLock(*os.File) (bool, error) { return false, nil }
