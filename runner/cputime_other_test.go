//go:build !unix

package runner_test

import "time"

// cpuTime is unavailable here; the overhead benchmark omits its CPU ratio.
func cpuTime() time.Duration { return 0 }
