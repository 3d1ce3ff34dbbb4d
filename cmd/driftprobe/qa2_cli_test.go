package main

// QA round 2: CLI contract checks.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// docs/CLI.md: `serve [--listen 127.0.0.1:9464]`: the daemon's
// endpoints default to loopback, and empty values of the other path and
// address flags are refused as usage errors (`--config ""`, `--db ""`:
// exit 2, "give a file, or leave the flag out for the default"). An empty
// --listen (an unset variable in a unit file or manifest template) is
// accepted instead and serves /metrics, /healthz and /readyz on every
// interface at a random port ("metrics on http://[::]:NNNNN/metrics").
func TestQA2ServeEmptyListenRefused(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"serve", "--db", filepath.Join(dir, "s.db"), "--listen", "", "--no-initial-run"},
		{"sim", "--listen", " "},
		{"demo", "--dir", ""},
	} {
		a, _ := json.Marshal(args)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "DRIFTPROBE_ARGS="+string(a))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Errorf("%q was accepted and kept going (killed after 4s); want exit 2\nstdout: %s\nstderr: %s", args, out.String(), errb.String())
		} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !bytes.Contains(errb.Bytes(), []byte("is empty")) {
			t.Errorf("%q: %v, want exit 2 saying the flag is empty\nstderr: %s", args, err, errb.String())
		}
		cancel()
	}
}
