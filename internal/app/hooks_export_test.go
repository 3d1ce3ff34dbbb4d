package app

import (
	"time"

	"github.com/driftprobe/driftprobe/storage"
)

// SetBeforeMissedDetection sets the hook detectMissed calls before it
// detects each missed run, for the external tests; the function returned
// restores the previous one.
func SetBeforeMissedDetection(f func(st *storage.DB, run int64)) (restore func()) {
	old := beforeMissedDetection
	beforeMissedDetection = f
	return func() { beforeMissedDetection = old }
}

// SetSchedulerStopTimeout sets how long Shutdown lets the scheduler wait
// for a run in progress (schedulerStopTimeout), for the external tests;
// the function returned restores the previous one.
func SetSchedulerStopTimeout(d time.Duration) (restore func()) {
	old := schedulerStopTimeout
	schedulerStopTimeout = d
	return func() { schedulerStopTimeout = old }
}
