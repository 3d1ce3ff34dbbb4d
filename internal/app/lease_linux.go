package app

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// processIdentity is this process's procID, or the zero procID when /proc
// does not say.
var processIdentity = sync.OnceValue(func() procID {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return procID{}
	}
	ns, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil || !strings.HasPrefix(ns, "pid:[") || !strings.HasSuffix(ns, "]") {
		return procID{}
	}
	// /proc must be this pid namespace's: in one entered without
	// remounting /proc, /proc/self is another process's view.
	start, _, err := procStat(os.Getpid())
	if err != nil {
		return procID{}
	}
	if b, err := os.ReadFile("/proc/self/stat"); err != nil || !bytes.HasPrefix(b, []byte(strconv.Itoa(os.Getpid())+" ")) {
		return procID{}
	}
	b := strings.TrimSpace(string(boot))
	if b == "" || strings.ContainsAny(b, ":/") {
		return procID{}
	}
	return procID{boot: b, pidNS: ns[len("pid:[") : len(ns)-1], start: start}
})

// procStat returns a process's start time (clock ticks since boot) and
// state letter from /proc/PID/stat. An error satisfying os.IsNotExist
// means there is no such process.
func procStat(pid int) (start string, state byte, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses,
	// so the fields start after the last ')'. starttime is field 22, the
	// 20th after COMM.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return "", 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f[19], f[0][0], nil
}

// processExists asks the kernel whether pid exists (kill with signal 0
// sends nothing): ESRCH means no such process; EPERM means one exists that
// this user may not signal.
func processExists(pid int) existence {
	switch err := syscall.Kill(pid, 0); {
	case err == nil, errors.Is(err, syscall.EPERM):
		return hasProcess
	case errors.Is(err, syscall.ESRCH):
		return noProcess
	}
	return unknown
}
