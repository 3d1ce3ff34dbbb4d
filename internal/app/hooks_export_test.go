package app

import "github.com/driftprobe/driftprobe/storage"

// SetBeforeMissedDetection sets the hook detectMissed calls before it
// detects each missed run, for the external tests; the function returned
// restores the previous one.
func SetBeforeMissedDetection(f func(st *storage.DB, run int64)) (restore func()) {
	old := beforeMissedDetection
	beforeMissedDetection = f
	return func() { beforeMissedDetection = old }
}
