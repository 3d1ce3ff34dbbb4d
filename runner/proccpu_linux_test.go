package runner_test

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// processCPU is process pid's CPU time so far (user + system) read from
// /proc/PID/stat, in clock ticks of 10 ms; ok is false when it cannot be
// read.
func processCPU(pid int) (_ time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, field 2, is parenthesised and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	s, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+s) * 10 * time.Millisecond, true
}
