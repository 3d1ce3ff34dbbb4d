package storage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Processes creating the same new database at once (two `run`s started
// together, a CronJob and an operator) all open it: none takes the schema
// another is creating for another program's. Separate processes, since
// SQLite's locks between connections of one process are not what the
// processes race on.
func TestOpenConcurrentCreate(t *testing.T) {
	if p := os.Getenv("DRIFTPROBE_TEST_OPEN"); p != "" {
		// The child: open (creating) and exit.
		d, err := Open(context.Background(), p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "OPEN FAILED:", err)
			os.Exit(3)
		}
		d.Close()
		return
	}
	rounds, procs := 15, 3
	if testing.Short() {
		rounds = 4
	}
	dir := t.TempDir()
	for r := 0; r < rounds; r++ {
		p := filepath.Join(dir, fmt.Sprintf("%d.db", r))
		var wg sync.WaitGroup
		outs := make([]string, procs)
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "-test.run=^TestOpenConcurrentCreate$", "-test.count=1")
				cmd.Env = append(os.Environ(), "DRIFTPROBE_TEST_OPEN="+p)
				if out, err := cmd.CombinedOutput(); err != nil {
					outs[i] = fmt.Sprintf("%v: %s", err, out)
				}
			}()
		}
		wg.Wait()
		for _, o := range outs {
			if o != "" {
				t.Fatalf("round %d: a process failed to open the new database: %s", r, strings.TrimSpace(o))
			}
		}
	}
}
