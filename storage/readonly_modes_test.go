//go:build unix

package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// asUnprivileged runs the calling test again, in a new process, as user
// nobody (65534) when this process is root, for whom file modes do not
// apply, and reports whether it did: the caller then returns, the child
// having run the test (its failures fail this one). Not as root, it
// reports false and the test runs here.
func asUnprivileged(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	// The test binary sits in a directory only root may enter: copy it
	// where nobody can run it.
	dir := t.TempDir()
	for d := dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()) && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "storage.test")
	copyFile(t, os.Args[0], exe, 0o755)
	cmd := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &ee):
		t.Skipf("file modes do not apply to root, and running as nobody failed: %v", err)
	case err != nil:
		t.Fatalf("as user nobody: %v\n%s", err, out.String())
	case strings.Contains(out.String(), "--- SKIP"):
		t.Skipf("as user nobody:\n%s", out.String())
	default:
		t.Logf("ran as user nobody:\n%s", out.String())
	}
	return true
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// lockDir makes dir read-only (0555) until the test ends, skipping the
// test when this user can write there anyway.
func lockDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, nil, 0o644); err == nil {
		os.Remove(probe)
		t.Skip("this user writes a directory of mode 0555: file modes do not apply to it")
	}
}

// lockFile makes p read-only (0444), skipping the test when this user can
// write it anyway.
func lockFile(t *testing.T, p string) {
	t.Helper()
	if err := os.Chmod(p, 0o444); err != nil {
		t.Fatal(err)
	}
	if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
		f.Close()
		t.Skip("this user writes a file of mode 0444: file modes do not apply to it")
	}
}

// listing is dir's files, names and sizes.
func listing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %o %d", e.Name(), fi.Mode().Perm(), fi.Size()))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// checkedDB makes a closed database of n checked observations at dir/d.db.
func checkedDB(t *testing.T, dir string, n int) string {
	t.Helper()
	p := filepath.Join(dir, "d.db")
	d, err := Open(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	run, tgt := setupRun(t, d)
	if err := d.InsertObservations(context.Background(), checkedObservations(run, tgt, n)); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// readsUnchanged opens p with OpenReadOnly and OpenReadCurrent, checks and
// backs it up, and fails the test unless all of it works and dir (p's)
// ends as it began: no file created beside p, p's bytes as they were.
func readsUnchanged(t *testing.T, p string, observations int64) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Dir(p)
	before, bytesBefore := listing(t, dir), mustRead(t, p)
	ro, err := OpenReadOnly(ctx, p)
	if err != nil {
		t.Fatalf("OpenReadOnly: %v", err)
	}
	rep, err := ro.Check(ctx, CheckOptions{Full: true})
	if err != nil || !rep.OK || rep.Observations != observations {
		t.Errorf("check: %+v %v", rep, err)
	}
	dst := filepath.Join(t.TempDir(), "b.db")
	if err := ro.Backup(ctx, dst); err != nil {
		t.Errorf("backup: %v", err)
	}
	ro.Close()
	cur, err := OpenReadCurrent(ctx, p)
	if err != nil {
		t.Fatalf("OpenReadCurrent: %v", err)
	}
	if _, err := cur.Observations(ctx, 1, 0); err != nil {
		t.Errorf("observations: %v", err)
	}
	cur.Close()
	if after := listing(t, dir); after != before {
		t.Errorf("reading changed the directory:\nbefore %s\nafter  %s", before, after)
	}
	if !bytes.Equal(mustRead(t, p), bytesBefore) {
		t.Error("reading changed the database file")
	}
	b, err := OpenReadOnly(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if rep, err := b.Check(ctx, CheckOptions{}); err != nil || !rep.OK || rep.Observations != observations {
		t.Errorf("the backup: %+v %v", rep, err)
	}
}

// A database in a directory this user cannot write (a copy in a read-only
// directory): SQLite cannot create its -shm file; with no -wal holding
// commits the file alone is complete and is read as immutable, nothing
// created beside it.
func TestReadOnlyDirectory(t *testing.T) {
	if asUnprivileged(t) {
		return
	}
	dir := t.TempDir()
	p := checkedDB(t, dir, 40)
	lockDir(t, dir)
	readsUnchanged(t, p, 40)
	writerRefused(t, p)
}

// writerRefused: Open, which writes, says this user may not write there
// (not just SQLite's "attempt to write a readonly database"), and leaves
// the directory as it was.
func writerRefused(t *testing.T, p string) {
	t.Helper()
	before := listing(t, filepath.Dir(p))
	d, err := Open(context.Background(), p)
	if err == nil {
		d.Close()
		t.Fatal("a writer opened a database this user may not write")
	}
	if !strings.Contains(err.Error(), p+": this user may not write the database or its directory") {
		t.Errorf("writer's error: %v", err)
	}
	if after := listing(t, filepath.Dir(p)); after != before {
		t.Errorf("a refused writer changed the directory: %s, was %s", after, before)
	}
}

// A database file this user cannot write (mode 0444) in a directory it can:
// read as immutable, without leaving -wal and -shm files owned by this
// user beside it (which the database's owner might not be able to write).
func TestReadOnlyFile(t *testing.T) {
	if asUnprivileged(t) {
		return
	}
	dir := t.TempDir()
	p := checkedDB(t, dir, 40)
	lockFile(t, p)
	readsUnchanged(t, p, 40)
	writerRefused(t, p)
}

// walCopy copies the database at dir/d.db while a writer holds commits in
// its -wal file (no checkpoint yet) into a new directory: d.db and d.db-wal,
// and d.db-shm when withSHM. It returns the copy's path and how many
// observations it holds (some only in the -wal file).
func walCopy(t *testing.T, withSHM bool) (string, int64) {
	t.Helper()
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "d.db")
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.db.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0`); err != nil {
		t.Fatal(err)
	}
	run, tgt := setupRun(t, d)
	if err := d.InsertObservations(ctx, checkedObservations(run, tgt, 30)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	suffixes := []string{"", "-wal"}
	if withSHM {
		suffixes = append(suffixes, "-shm")
	}
	for _, s := range suffixes {
		copyFile(t, p+s, filepath.Join(dir, "d.db"+s), 0o644)
	}
	if sidecar(p, "-wal") <= 0 {
		t.Fatal("the writer's -wal file is empty")
	}
	return filepath.Join(dir, "d.db"), 30
}

// A -wal file holding commits that SQLite cannot read without creating the
// -shm file beside it: refused, naming the -wal file and what this user
// would need to write, and nothing created.
func TestUnreadableWAL(t *testing.T) {
	if asUnprivileged(t) {
		return
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		lock func(t *testing.T, p string) string // what this user may not write
	}{
		{"read-only directory", func(t *testing.T, p string) string { lockDir(t, filepath.Dir(p)); return filepath.Dir(p) }},
		{"read-only file", func(t *testing.T, p string) string { lockFile(t, p); return p }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _ := walCopy(t, false)
			where := c.lock(t, p)
			before := listing(t, filepath.Dir(p))
			_, err := OpenReadOnly(ctx, p)
			want := p + "-wal holds committed data SQLite cannot read without write access to " + where + "; copy the three files (d.db, -wal, -shm) somewhere writable"
			if !errors.Is(err, ErrWALUnreadable) || !strings.Contains(fmt.Sprint(err), want) || IsDamaged(err) {
				t.Errorf("got %v\nwant ErrWALUnreadable: %q", err, want)
			}
			if _, err := OpenReadCurrent(ctx, p); !errors.Is(err, ErrWALUnreadable) {
				t.Errorf("OpenReadCurrent: %v, want ErrWALUnreadable", err)
			}
			if after := listing(t, filepath.Dir(p)); after != before {
				t.Errorf("a refused open changed the directory:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// With the -shm file beside it too (all three files copied), SQLite
	// reads the commits through it, creating nothing.
	t.Run("with -shm", func(t *testing.T) {
		p, n := walCopy(t, true)
		lockDir(t, filepath.Dir(p))
		before := listing(t, filepath.Dir(p))
		ro, err := OpenReadOnly(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		if rep, err := ro.Check(ctx, CheckOptions{}); err != nil || !rep.OK || rep.Observations != n {
			t.Errorf("check: %+v %v", rep, err)
		}
		if after := listing(t, filepath.Dir(p)); after != before {
			t.Errorf("reading changed the directory:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// A database read as immutable takes no lock: when its file changes while
// it is checked (a writer that can write there, say), Check says so
// rather than calling the file damaged.
func TestImmutableCheckNoticesAChange(t *testing.T) {
	if asUnprivileged(t) {
		return
	}
	ctx := context.Background()
	dir := t.TempDir()
	p := checkedDB(t, dir, 200)
	lockDir(t, dir)
	ro, err := OpenReadOnly(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.unlocked == nil {
		t.Fatal("not read as immutable")
	}
	// "Another writer" rewrites most of the file under the reader.
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if _, err := f.WriteAt(make([]byte, st.Size()-8192), 4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep, err := ro.Check(ctx, CheckOptions{})
	if !errors.Is(err, ErrChangedWhileRead) || !strings.Contains(fmt.Sprint(err), p) {
		t.Errorf("check of a file rewritten under it: %+v %v, want ErrChangedWhileRead", rep, err)
	}
	// Nor is a backup of it published: the copy may mix two states.
	b := filepath.Join(t.TempDir(), "b.db")
	if err := ro.Backup(ctx, b); !errors.Is(err, ErrChangedWhileRead) {
		t.Errorf("backup of a file rewritten under it: %v, want ErrChangedWhileRead", err)
	}
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Errorf("a backup was published: %v", err)
	}
}
