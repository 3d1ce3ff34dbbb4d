package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer a child process writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveProc starts `driftprobe serve` on db in a process of its own (the
// test binary, as TestMain runs DRIFTPROBE_ARGS).
func serveProc(t *testing.T, db string, stderr *lockedBuffer) *exec.Cmd {
	t.Helper()
	a, _ := json.Marshal([]string{"serve", "--db", db, "--listen", "127.0.0.1:0", "--no-initial-run"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DRIFTPROBE_ARGS="+string(a))
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// waitServing waits until the process pid has written itself into db's
// serve lock and serves /metrics.
func waitServing(t *testing.T, db string, pid int, stderr *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(db + "-serve.lock")
		if strings.HasPrefix(string(b), "pid "+strconv.Itoa(pid)+" ") && strings.Contains(stderr.String(), "metrics on http://") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve (pid %d) did not take the serve lock: lock file %q, stderr %s", pid, b, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A second serve on a database a serve process is serving exits 3 at
// once, naming the first; once the first is killed (SIGKILL: nothing of
// its own releases anything), the kernel has released its lock and a new
// serve starts.
func TestServeTwiceOnOneDatabaseRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	var err1 lockedBuffer
	first := serveProc(t, db, &err1)
	waitServing(t, db, first.Process.Pid, &err1)

	a, _ := json.Marshal([]string{"serve", "--db", db, "--listen", "127.0.0.1:0", "--no-initial-run"})
	second := exec.Command(os.Args[0], "-test.run=^$")
	second.Env = append(os.Environ(), "DRIFTPROBE_ARGS="+string(a))
	var err2 bytes.Buffer
	second.Stderr = &err2
	done := make(chan error, 1)
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 3 || !strings.Contains(err2.String(), "another driftprobe serve is serving this database") || !strings.Contains(err2.String(), "pid "+strconv.Itoa(first.Process.Pid)+" ") {
			t.Fatalf("second serve: %v, stderr %s; want exit 3 naming pid %d", err, err2.String(), first.Process.Pid)
		}
	case <-time.After(20 * time.Second):
		second.Process.Kill()
		t.Fatalf("second serve kept running; stderr %s", err2.String())
	}

	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	var err3 lockedBuffer
	third := serveProc(t, db, &err3)
	waitServing(t, db, third.Process.Pid, &err3)
	third.Process.Signal(syscall.SIGTERM)
	if err := third.Wait(); err != nil {
		t.Fatalf("third serve after SIGTERM: %v, stderr %s", err, err3.String())
	}
}
