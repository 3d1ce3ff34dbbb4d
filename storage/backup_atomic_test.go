package storage

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// paddedDB makes a driftprobe database of about mb MiB (a run, 50
// observations, and incompressible padding VACUUM INTO must copy), closed.
func paddedDB(t *testing.T, mb int) string {
	t.Helper()
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "src.db")
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	run, tgt := setupRun(t, d)
	if err := d.InsertObservations(ctx, checkedObservations(run, tgt, 50)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, `CREATE TABLE pad (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	// The padding's random bytes come from Go: SQLite's randomblob is
	// C code transpiled to Go, about 100 times slower under -race.
	blob := make([]byte, 1<<20)
	for i := 0; i < mb; i++ {
		rand.Read(blob)
		if _, err := d.db.ExecContext(ctx, `INSERT INTO pad VALUES (?)`, blob); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// backupFiles lists the files in dir whose names start with base.
func backupFiles(t *testing.T, dir, base string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), base) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A backup killed mid-copy (SIGKILL: nothing runs after it) leaves no
// partial FILE, only its temporary file; the next backup to FILE works. The
// temporary file, renamed to a name of its own with its journal, is what
// an interrupted backup used to leave as FILE: db check calls it
// incomplete (ErrIncomplete, damage), not unreadable.
func TestBackupKilledLeavesNoPartialFile(t *testing.T) {
	if a := os.Getenv("DRIFTPROBE_TEST_BACKUP"); a != "" {
		// The child: back up and exit, unless killed first.
		src, dst, _ := strings.Cut(a, "\n")
		d, err := OpenReadOnly(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Backup(context.Background(), dst); err != nil {
			t.Fatal(err)
		}
		return
	}
	if testing.Short() {
		t.Skip("writes a 32 MiB database")
	}
	src := paddedDB(t, 32)
	dir := t.TempDir()
	dst := filepath.Join(dir, "b.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBackupKilledLeavesNoPartialFile$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DRIFTPROBE_TEST_BACKUP="+src+"\n"+dst)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Kill it once the copy holds a few MiB, whatever its name.
	killed := false
	for deadline := time.Now().Add(30 * time.Second); !killed && time.Now().Before(deadline); {
		select {
		case err := <-done:
			t.Skipf("the backup finished (%v) before it could be killed", err)
		default:
		}
		for _, n := range backupFiles(t, dir, "b.db") {
			if st, err := os.Stat(filepath.Join(dir, n)); err == nil && st.Size() > 4<<20 && !strings.HasSuffix(n, "-journal") {
				cmd.Process.Kill()
				killed = true
				break
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	if !killed {
		cmd.Process.Kill()
		t.Fatal("no backup file grew within 30 s")
	}
	<-done
	left := backupFiles(t, dir, "b.db")
	if _, err := os.Stat(dst); err == nil {
		t.Fatalf("a killed backup left a partial %s (files %v)", dst, left)
	}
	var tmp string
	for _, n := range left {
		if strings.HasPrefix(n, "b.db.tmp-") && !strings.Contains(n, "-journal") {
			tmp = filepath.Join(dir, n)
		}
	}
	if tmp == "" {
		t.Fatalf("files left: %v, want b.db.tmp-NNN", left)
	}

	// What a killed backup used to leave as FILE (the partial copy and
	// the journal of the write that never finished): damage, not an
	// unreadable file.
	partial := filepath.Join(dir, "partial.db")
	if err := os.Rename(tmp, partial); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp+"-journal", partial+"-journal"); err != nil {
		t.Fatalf("no journal beside the killed backup's file: %v (files %v)", err, left)
	}
	_, err := OpenReadOnly(context.Background(), partial)
	if !errors.Is(err, ErrIncomplete) || !IsDamaged(err) || !strings.Contains(err.Error(), "an interrupted write left "+partial+"-journal: the file is incomplete (an interrupted backup?") {
		t.Errorf("the killed backup's file: %v, want ErrIncomplete naming its journal", err)
	}

	// FILE is free: the next backup writes it.
	d, err := OpenReadOnly(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Backup(context.Background(), dst); err != nil {
		t.Fatalf("backup after a killed one: %v", err)
	}
	b, err := OpenReadOnly(context.Background(), dst)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if rep, err := b.Check(context.Background(), CheckOptions{}); err != nil || !rep.OK || rep.Observations != 50 {
		t.Errorf("the backup: %+v %v", rep, err)
	}
}

// waitFor polls dir until a file whose name starts with prefix appears (its
// name), or stop is closed ("").
func waitFor(dir, prefix string, stop <-chan struct{}) string {
	for {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				return e.Name()
			}
		}
		select {
		case <-stop:
			return ""
		case <-time.After(50 * time.Microsecond):
		}
	}
}

// FILE never exists before the backup is complete, and a FILE created
// while the copy is written is not replaced: the backup says ErrExists,
// removes its temporary file, and leaves that FILE as it is.
func TestBackupNeverReplacesAFileCreatedMeanwhile(t *testing.T) {
	ctx := context.Background()
	src := paddedDB(t, 16)
	d, err := OpenReadOnly(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dir := t.TempDir()
	dst := filepath.Join(dir, "b.db")
	stop := make(chan struct{})
	raced := make(chan string, 1)
	go func() {
		// As soon as the backup is under way, someone else writes FILE.
		n := waitFor(dir, "b.db", stop)
		if n != "" {
			os.WriteFile(dst, []byte("precious"), 0o644)
		}
		raced <- n
	}()
	err = d.Backup(ctx, dst)
	close(stop)
	first := <-raced
	if first == "" {
		t.Skip("the backup finished before another file could be written")
	}
	if first == "b.db" {
		t.Errorf("FILE existed while the backup was being written")
	}
	if !errors.Is(err, ErrExists) {
		t.Errorf("backup racing a file created at its path: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "precious" {
		t.Errorf("the file created meanwhile was replaced (%d bytes)", len(b))
	}
	if left := backupFiles(t, dir, "b.db"); len(left) != 1 {
		t.Errorf("files left: %v, want b.db alone", left)
	}
}

// A backup cancelled mid-copy removes its temporary file and writes no
// FILE; the file system keeps nothing of it.
func TestBackupCancelledRemovesItsTemporaryFile(t *testing.T) {
	src := paddedDB(t, 16)
	d, err := OpenReadOnly(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dir := t.TempDir()
	dst := filepath.Join(dir, "b.db")
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan struct{})
	go func() {
		if waitFor(dir, "b.db", stop) != "" {
			cancel()
		}
	}()
	err = d.Backup(ctx, dst)
	close(stop)
	cancel()
	if err == nil {
		t.Skip("the backup finished before it could be cancelled")
	}
	if left := backupFiles(t, dir, "b.db"); len(left) != 0 {
		t.Errorf("a cancelled backup (%v) left %v", err, left)
	}
	// The handle is still read-only, and still backs up.
	if _, err := d.db.Exec(`CREATE TABLE x (a)`); err == nil {
		t.Error("the read-only handle writes after a backup")
	}
	if err := d.Backup(context.Background(), dst); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
