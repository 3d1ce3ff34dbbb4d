package main

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// deployCommandLines returns every driftprobe command line in deploy/: the
// systemd units' ExecStart (binary dropped) and the Kubernetes containers'
// args, by file.
func deployCommandLines(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	units, _ := filepath.Glob("../../deploy/systemd/*.service")
	for _, u := range units {
		f, err := os.Open(u)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "ExecStart="); ok {
				if fields := strings.Fields(v); len(fields) > 0 && filepath.Base(fields[0]) == "driftprobe" {
					out[u] = fields[1:]
				}
			}
		}
		f.Close()
	}
	err := filepath.WalkDir("../../deploy/k8s", func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || filepath.Ext(p) != ".yaml" {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		dec := yaml.NewDecoder(f)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			collectArgs(m, func(args []string) { out[p] = args })
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// collectArgs calls f with the args of every container found in v.
func collectArgs(v any, f func([]string)) {
	switch v := v.(type) {
	case map[string]any:
		if ctrs, ok := v["containers"].([]any); ok {
			for _, c := range ctrs {
				if args, ok := c.(map[string]any)["args"].([]any); ok {
					var s []string
					for _, a := range args {
						s = append(s, a.(string))
					}
					f(s)
				}
			}
		}
		for _, x := range v {
			collectArgs(x, f)
		}
	case []any:
		for _, x := range v {
			collectArgs(x, f)
		}
	}
}

// Every command line the deployment files run names a command and flags
// this driftprobe has, with values its flag parser and checks accept: a
// renamed or removed flag would otherwise fail only on a server, at the
// first scheduled run.
func TestDeployCommandLinesParse(t *testing.T) {
	lines := deployCommandLines(t)
	if len(lines) < 4 {
		t.Fatalf("found %d command lines in deploy/ (%v), want the two units' and the two Kubernetes variants'", len(lines), lines)
	}
	for file, args := range lines {
		g := &globals{stdout: io.Discard, stderr: io.Discard}
		root := newRoot(g)
		cmd, rest, err := root.Find(args)
		if err != nil || cmd == root {
			t.Errorf("%s: %v: no such command (%v)", file, args, err)
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%s: %v: %v", file, args, err)
			continue
		}
		if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
			t.Errorf("%s: %v: %v", file, args, err)
		}
		if g.config != "/etc/driftprobe/config.yaml" || g.db != "/var/lib/driftprobe/driftprobe.db" {
			t.Errorf("%s: --config %q --db %q", file, g.config, g.db)
		}
		if cmd.Name() == "run" {
			if err := checkPushgateway(cmd.Flags().Lookup("pushgateway").Value.String()); err != nil {
				t.Errorf("%s: %v", file, err)
			}
		}
	}
}
