package app

import (
	"crypto/rand"
	"fmt"
	"os"
	"strings"

	"github.com/driftprobe/driftprobe/storage"
)

// A run lease names its holder "HOST/PID/NONCE", followed on Linux by
// "/linux:BOOT:PIDNS:START" (the kernel's boot id, the inode of the
// holder's pid namespace, and its process start time in clock ticks).
// With that suffix a later process can tell, without waiting for the lease
// to expire, that a holder killed outright (SIGKILL, the OOM killer) has
// ended: see leaseHolderGone.
const identityPrefix = "/linux:"

// NewLease returns a run-lock identity for this process.
func NewLease(command string) *storage.Lease {
	var b [6]byte
	_, _ = rand.Read(b[:])
	h := Hostname()
	holder := fmt.Sprintf("%s/%d/%x", h, os.Getpid(), b)
	if id := processIdentity(); id != (procID{}) {
		holder += identityPrefix + id.String()
	}
	return &storage.Lease{Holder: holder, Host: h, PID: os.Getpid(), Command: command, Gone: leaseHolderGone}
}

// procID identifies a process across pid reuse on one machine and boot.
type procID struct {
	boot, pidNS, start string
}

func (p procID) String() string { return p.boot + ":" + p.pidNS + ":" + p.start }

// holderID returns the identity a lease's holder recorded, if it did.
func holderID(holder string) (procID, bool) {
	i := strings.LastIndex(holder, identityPrefix)
	if i < 0 {
		return procID{}, false
	}
	f := strings.Split(holder[i+len(identityPrefix):], ":")
	if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
		return procID{}, false
	}
	return procID{boot: f[0], pidNS: f[1], start: f[2]}, true
}

// leaseHolderGone reports whether held's holder has certainly ended: it
// recorded its identity, ran on this host, in this boot and in this pid
// namespace (so its pid means the same process here), and that pid is
// now free (the kernel says so: kill(pid, 0) fails with ESRCH), a
// zombie, or another process (a different start time). Any doubt —
// another machine or container, an older driftprobe that did not record
// its identity, a process this user may not see (/proc mounted
// hidepid=2, systemd ProtectProc=invisible: a live holder's /proc entry
// is then missing too) — answers false, and the lease is only taken over
// once it expires.
func leaseHolderGone(held storage.Lease) bool { return holderGone(held, processExists, procStat) }

// holderGone is leaseHolderGone asking the kernel through exists and /proc
// through stat (tests stand in for what they cannot arrange, such as a
// /proc that hides other users' processes).
func holderGone(held storage.Lease, exists func(pid int) existence, stat func(pid int) (start string, state byte, err error)) bool {
	id, ok := holderID(held.Holder)
	if !ok || held.PID <= 0 || held.Host != Hostname() {
		return false
	}
	self := processIdentity()
	if self == (procID{}) || id.boot != self.boot || id.pidNS != self.pidNS {
		return false
	}
	if held.PID == os.Getpid() {
		return id.start != self.start // this pid, an earlier process
	}
	switch exists(held.PID) {
	case noProcess:
		return true
	case unknown:
		return false
	}
	start, state, err := stat(held.PID)
	switch {
	case err != nil:
		return false // alive, but not visible here: cannot compare
	case state == 'Z' || state == 'X':
		return true // killed, not yet reaped
	}
	return start != id.start
}

// existence is what the kernel says about a pid.
type existence int

const (
	unknown    existence = iota
	noProcess            // no such process
	hasProcess           // a process (perhaps another user's) has it
)
