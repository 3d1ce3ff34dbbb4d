package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/CLI.md: --pushgateway is checked before the run (exit 2). A port out
// of range, or a URL without a host name, used to pass the check: the run
// sent every probe and only the push failed afterwards (logged, exit 0).
func TestPushgatewayPortAndHostCheckedBeforeTheRun(t *testing.T) {
	for _, bad := range []string{"http://pushgw:99999", "http://pushgw:0", "http://:9091", "http://pguser:PGPASS@pushgw:65536"} {
		err := checkPushgateway(bad)
		if err == nil {
			t.Errorf("checkPushgateway(%q) = nil, want a usage error", bad)
			continue
		}
		if strings.Contains(err.Error(), "PGPASS") {
			t.Errorf("checkPushgateway(%q) repeats the password: %v", bad, err)
		}
	}
	for _, good := range []string{"http://pushgw:9091", "https://pushgw", "http://u:p@127.0.0.1:1/prefix", "http://[::1]:9091"} {
		if err := checkPushgateway(good); err != nil {
			t.Errorf("checkPushgateway(%q) = %v", good, err)
		}
	}
	db := filepath.Join(t.TempDir(), "x.db")
	_, stderr, code := runIn(t, "run", "--db", db, "--pushgateway", "http://pushgw:99999")
	if code != 2 || !strings.Contains(stderr, "port 99999") {
		t.Fatalf("run --pushgateway with port 99999: exit %d, stderr %s", code, stderr)
	}
}

// README: a backup whose destination directory is missing is exit 3; the
// message says that the directory is missing rather than only naming the
// temporary file it could not create.
func TestBackupIntoMissingDirectorySaysSo(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	if _, stderr, code := runIn(t, "run", "--db", db); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	_, stderr, code := runIn(t, "db", "backup", "--db", db, filepath.Join(dir, "nodir", "b.db"))
	if code != 3 || !strings.Contains(stderr, "directory "+filepath.Join(dir, "nodir")+" does not exist") {
		t.Fatalf("backup into a missing directory: exit %d, stderr %s", code, stderr)
	}
}

// A mistyped top-level command gets cobra's suggestion on one line, as a
// mistyped subcommand of db, corpus or config does; it used to print a
// literal "\trun" (the tab escaped for the terminal) on a line of its own.
func TestUnknownTopLevelCommandSuggestsOnOneLine(t *testing.T) {
	_, stderr, code := runIn(t, "runn")
	want := `unknown command "runn" for "driftprobe"; did you mean run?`
	if code != 2 || strings.TrimSpace(stderr) != want {
		t.Fatalf("driftprobe runn: exit %d, stderr %q, want %q", code, stderr, want)
	}
	if _, stderr, code := runIn(t, "nosuchcommand"); code != 2 || strings.TrimSpace(stderr) != `unknown command "nosuchcommand" for "driftprobe"` {
		t.Fatalf("driftprobe nosuchcommand: exit %d, stderr %q", code, stderr)
	}
}

// README's provider table names bedrock's key variables (the AWS ones);
// `providers` showed "-" in its KEY column, as for a provider needing none.
func TestProvidersTextNamesBedrocksCredentials(t *testing.T) {
	stdout, stderr, code := runIn(t, "providers")
	if code != 0 {
		t.Fatalf("providers: exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "bedrock" {
			if f[2] != "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY" {
				t.Fatalf("bedrock's KEY column: %q (line %q)", f[2], line)
			}
			return
		}
	}
	t.Fatalf("no bedrock row in:\n%s", stdout)
}

// README: the database's "directory must exist" (run creates the file,
// never its directory: exit 3). config check said ok without a word; now
// it warns (exit 0), unless --no-keys, which checks a config away from the
// host it runs on, as for the GitHub token.
func TestConfigCheckWarnsMissingDatabaseDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	missing := filepath.Join(dir, "nodir")
	os.WriteFile(cfg, []byte("targets:\n  - {name: s, provider: sim, model: sim-large}\ndatabase: \""+filepath.Join(missing, "x.db")+"\"\n"), 0o644)
	_, stderr, code := runIn(t, "config", "check", "--config", cfg)
	if code != 0 || !strings.Contains(stderr, "warning: database "+filepath.Join(missing, "x.db")+": its directory "+missing+" does not exist") {
		t.Errorf("config check: exit %d, stderr:\n%s", code, stderr)
	}
	if _, stderr, code := runIn(t, "config", "check", "--config", cfg, "--no-keys"); code != 0 || stderr != "" {
		t.Errorf("config check --no-keys: exit %d, stderr:\n%s", code, stderr)
	}
	os.Mkdir(missing, 0o755)
	if _, stderr, code := runIn(t, "config", "check", "--config", cfg); code != 0 || stderr != "" {
		t.Errorf("config check with the directory: exit %d, stderr:\n%s", code, stderr)
	}
}
