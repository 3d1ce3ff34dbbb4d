//go:build !linux

package runner_test

import "time"

// processCPU is unavailable here; the benchmarks omit what needs it.
func processCPU(int) (time.Duration, bool) { return 0, false }
