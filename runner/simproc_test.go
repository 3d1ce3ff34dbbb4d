package runner_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/probes/sim"
)

// simChildEnv set to 1 makes this test binary a simulator process instead
// of running tests (see startSimProcess).
const simChildEnv = "DRIFTPROBE_BENCH_SIM_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(simChildEnv) == "1" {
		serveSimChild()
		return
	}
	os.Exit(m.Run())
}

// serveSimChild serves the default target's simulator on a loopback port,
// prints its base URL on stdout and serves until stdin reaches EOF (the
// parent closed it, or exited).
func serveSimChild() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var cfg sim.Config
	if c := config.Default().Targets[0].Sim; c != nil {
		cfg = *c
	}
	srv := &http.Server{Handler: sim.NewServer(cfg), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("http://%s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
}

// simProcess is a simulator running in a process of its own.
type simProcess struct {
	URL string
	cmd *exec.Cmd
}

// startSimProcess starts this test binary as a simulator process (the
// default target's simulator, as the in-process one is) and returns its
// base URL; it stops when the benchmark ends.
func startSimProcess(b *testing.B) *simProcess {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), simChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		b.Fatalf("simulator process: %q %v", line, err)
	}
	return &simProcess{URL: strings.TrimSpace(line), cmd: cmd}
}

// cpu is the simulator process's CPU time so far; ok is false where that
// cannot be read.
func (p *simProcess) cpu() (time.Duration, bool) { return processCPU(p.cmd.Process.Pid) }
