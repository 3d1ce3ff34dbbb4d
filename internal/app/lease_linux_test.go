package app

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/storage"
)

// leaseOf returns the lease a process with pid and identity id would hold.
func leaseOf(pid int, id procID) storage.Lease {
	return storage.Lease{Holder: "h/1/abc" + identityPrefix + id.String(), Host: Hostname(), PID: pid, Command: "driftprobe run"}
}

// A lease is taken over early only when its holder has certainly ended:
// same host, boot and pid namespace, and its pid free, a zombie or reused.
func TestLeaseHolderGone(t *testing.T) {
	self := processIdentity()
	if self == (procID{}) {
		t.Skip("no /proc identity here")
	}
	// A live process: a child blocked reading its stdin.
	live := exec.Command("cat")
	stdin, err := live.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); live.Wait() }()
	liveStart, _, err := procStat(live.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	liveID := procID{boot: self.boot, pidNS: self.pidNS, start: liveStart}

	// An ended process, killed outright: first a zombie, then reaped.
	dead := exec.Command("cat")
	deadIn, _ := dead.StdinPipe()
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadStart, _, err := procStat(dead.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	deadID := procID{boot: self.boot, pidNS: self.pidNS, start: deadStart}
	deadPID := dead.Process.Pid
	if err := dead.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet: /proc shows it until Wait; it may still be dying.
	for i := 0; i < 1<<22; i++ {
		if _, state, err := procStat(deadPID); err != nil || state == 'Z' {
			break
		}
	}
	if !leaseHolderGone(leaseOf(deadPID, deadID)) {
		t.Error("a killed, unreaped holder (zombie) is not gone")
	}
	deadIn.Close()
	dead.Wait()

	other := func(f func(*procID)) procID { id := liveID; f(&id); return id }
	for _, c := range []struct {
		name string
		l    storage.Lease
		want bool
	}{
		{"live holder", leaseOf(live.Process.Pid, liveID), false},
		{"ended holder", leaseOf(deadPID, deadID), true},
		{"pid now another process", leaseOf(live.Process.Pid, other(func(p *procID) { p.start = "1" })), true},
		{"this process", leaseOf(os.Getpid(), self), false},
		{"this pid, an earlier process", leaseOf(os.Getpid(), other(func(p *procID) { p.start = "1" })), true},
		{"another boot", leaseOf(deadPID, other(func(p *procID) { p.boot = "00000000-0000-0000-0000-000000000000" })), false},
		{"another pid namespace", leaseOf(deadPID, other(func(p *procID) { p.pidNS = "1" })), false},
		{"another host", func() storage.Lease { l := leaseOf(deadPID, deadID); l.Host = "elsewhere"; return l }(), false},
		{"no identity (older driftprobe)", storage.Lease{Holder: "h/1/abc", Host: Hostname(), PID: deadPID}, false},
		{"malformed identity", storage.Lease{Holder: "h/1/abc" + identityPrefix + "x:y", Host: Hostname(), PID: deadPID}, false},
		{"no pid", leaseOf(0, deadID), false},
	} {
		if got := leaseHolderGone(c.l); got != c.want {
			t.Errorf("%s: gone = %v, want %v", c.name, got, c.want)
		}
	}
}

// NewLease records this process's identity, and it reads back.
func TestNewLeaseRecordsIdentity(t *testing.T) {
	l := NewLease("driftprobe run")
	id, ok := holderID(l.Holder)
	if !ok || id != processIdentity() || !strings.HasPrefix(l.Holder, Hostname()+"/") || l.Gone == nil {
		t.Fatalf("lease %+v: identity %+v %v", l, id, ok)
	}
}

// procStat reads the state and start time past a command name holding
// spaces and parentheses.
func TestProcStatOddCommandName(t *testing.T) {
	dir := t.TempDir()
	odd := dir + "/a b) c"
	if err := os.Symlink("/bin/cat", odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd)
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	start, state, err := procStat(cmd.Process.Pid)
	if err != nil || start == "" || strings.ContainsAny(start, " )") || state == 0 {
		t.Fatalf("start %q state %q: %v", start, state, err)
	}
}

// A live holder this user may not see in /proc (hidepid=2, systemd
// ProtectProc=invisible: its /proc entry is missing, kill(pid, 0) says
// EPERM) is never taken for gone; only the kernel's "no such process" is.
func TestLeaseHolderHiddenInProcIsAlive(t *testing.T) {
	self := processIdentity()
	if self == (procID{}) {
		t.Skip("no /proc identity here")
	}
	held := leaseOf(4242, procID{boot: self.boot, pidNS: self.pidNS, start: "777"})
	hidden := func(int) (string, byte, error) { return "", 0, os.ErrNotExist }
	if holderGone(held, func(int) existence { return hasProcess }, hidden) {
		t.Error("a live holder hidden from /proc was taken for gone")
	}
	if holderGone(held, func(int) existence { return unknown }, hidden) {
		t.Error("an unknown answer was taken for gone")
	}
	if !holderGone(held, func(int) existence { return noProcess }, hidden) {
		t.Error("no such process, yet not gone")
	}
	if processExists(os.Getpid()) != hasProcess {
		t.Error("this process does not exist")
	}
}
