package corpus

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"

	"github.com/driftprobe/driftprobe/internal/problems"
	"github.com/driftprobe/driftprobe/internal/yamlx"
	"gopkg.in/yaml.v3"
)

// Lock is the content of corpus.lock: every version ever locked and its
// content hash.
type Lock struct {
	Name     string            `yaml:"name"`
	Versions map[string]string `yaml:"versions"`
	nameLine int               // where name is written (0: unknown)
}

func readLock(fsys fs.FS, file string) (*Lock, error) {
	data, err := fs.ReadFile(fsys, LockName)
	if err != nil {
		// The error names the file inside fsys only ("read corpus.lock"):
		// name it as the user gave the directory. A missing lock stays
		// fs.ErrNotExist for CheckLock.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: cannot read lock: %w", file, err)
	}
	var l Lock
	root, err := yamlx.Decode(file, data, &l)
	// An unknown field hides no damaged hash. The decoder has read what
	// it reports nothing about (a map drops no other entry).
	decoded, ok := problems.Readable(err)
	if !ok {
		return nil, err
	}
	if l.Versions == nil {
		l.Versions = map[string]string{}
	}
	// A damaged lock is reported as such, not as probes changed under
	// their version.
	var errs yamlx.List
	vs := make([]string, 0, len(l.Versions))
	for v := range l.Versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	for _, v := range vs {
		if !isSHA256(l.Versions[v]) {
			errs = append(errs, &yamlx.Error{File: file, Line: versionLine(root, v), Field: "versions." + v,
				Msg: "not a content hash (64 lowercase hex digits): the lock file is damaged; restore it from version control"})
		}
	}
	if all := problems.Combine(root, decoded, errs, nil); len(all) > 0 {
		return nil, problems.Cap(all)
	}
	l.nameLine = yamlx.Line(root, "name")
	return &l, nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// versionLine is the line of version v's hash in a lock's document (0
// when not found). Versions may hold dots, so no dotted path finds them.
func versionLine(root *yaml.Node, v string) int {
	if root == nil || len(root.Content) == 0 {
		return 0
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "versions" {
			continue
		}
		vm := m.Content[i+1]
		for j := 0; j+1 < len(vm.Content); j += 2 {
			if vm.Content[j].Value == v {
				return vm.Content[j+1].Line
			}
		}
	}
	return 0
}

func (l *Lock) check(c *Corpus, file string) error {
	want, ok := l.Versions[c.Version]
	if !ok {
		return nil
	}
	if want != c.Hash {
		if line := yamlx.Line(c.root, "version"); line > 0 {
			file += ":" + strconv.Itoa(line)
		}
		return fmt.Errorf("%s: version: %w: version %q is locked to content %.12s…, the probes now hash to %.12s…; bump the version and run `driftprobe corpus lock`", file, ErrChangedUnderVersion, c.Version, want, c.Hash)
	}
	return nil
}

// VersionAt is where c's version is written, "DIR/corpus.yaml:LINE" (the
// line when known), for messages in the FILE:LINE: field form; "" for the
// embedded corpus.
func (c *Corpus) VersionAt() string {
	if c.Dir == "" {
		return ""
	}
	at := filepath.Join(c.Dir, FileName)
	if line := yamlx.Line(c.root, "version"); line > 0 {
		at += ":" + strconv.Itoa(line)
	}
	return at
}

// CheckLock verifies c against the corpus.lock in its directory. When the
// lock is missing or does not name c's version yet and create is true, the
// version is added to the lock (the first run of a new version locks it).
// It returns whether the lock file was written.
func CheckLock(c *Corpus, create bool) (bool, error) {
	if c.Dir == "" {
		return false, nil // embedded: checked by Default
	}
	file := filepath.Join(c.Dir, FileName)
	l, err := readLock(os.DirFS(c.Dir), filepath.Join(c.Dir, LockName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l = &Lock{Name: c.Name, Versions: map[string]string{}}
	case err != nil:
		return false, err
	}
	if l.Name != "" && l.Name != c.Name {
		return false, &yamlx.Error{File: filepath.Join(c.Dir, LockName), Line: l.nameLine, Field: "name",
			Msg: fmt.Sprintf("the lock belongs to corpus %q, not to %q (%s): copied from another corpus? Remove it and run `driftprobe corpus lock`", l.Name, c.Name, FileName)}
	}
	if err := l.check(c, file); err != nil {
		return false, err
	}
	if _, ok := l.Versions[c.Version]; ok || !create {
		return false, nil
	}
	l.Versions[c.Version] = c.Hash
	if l.Name == "" {
		l.Name = c.Name // a hand-written lock that named no corpus
	}
	return true, writeLock(c.Dir, l)
}

// WriteLock records c's version and hash in its directory's corpus.lock,
// refusing when the version is already locked to different content.
func WriteLock(c *Corpus) error {
	if c.Dir == "" {
		return errors.New("the embedded default corpus is locked at build time")
	}
	_, err := CheckLock(c, true)
	return err
}

func writeLock(dir string, l *Lock) error {
	var buf bytes.Buffer
	buf.WriteString("# Written by `driftprobe corpus lock`: corpus version -> content hash.\n# A version's probes may never change; bump the version instead.\n")
	fmt.Fprintf(&buf, "name: %s\nversions:\n", yamlScalar(l.Name))
	vs := make([]string, 0, len(l.Versions))
	for v := range l.Versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	for _, v := range vs {
		fmt.Fprintf(&buf, "  %s: %s\n", yamlScalar(v), l.Versions[v])
	}
	// A unique temporary file renamed over the lock: readers see the old or
	// the new lock, never half of one, and two runs locking at once do not
	// write into the same temporary file. A lock that is a symlink (one
	// lock shared by several checkouts) is replaced where it points, beside
	// its target, and the link is kept.
	path := filepath.Join(dir, LockName)
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("write lock: %s is a symlink that does not resolve: %w", path, err)
		}
		path, dir = real, filepath.Dir(real)
	}
	f, err := os.CreateTemp(dir, "."+LockName+".*.tmp")
	if err != nil {
		return lockWriteError(dir, err)
	}
	tmp := f.Name()
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write lock: %w", err)
	}
	return nil
}

func yamlScalar(s string) string {
	b, _ := yaml.Marshal(s)
	return string(bytes.TrimSpace(b))
}

// lockWriteError is the error of a lock that could not be created in dir.
// A directory this user may not write, or one on a read-only mount (a
// Kubernetes ConfigMap volume, an image layer: EROFS, which is no
// fs.ErrPermission), says how to ship the lock instead.
func lockWriteError(dir string, err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("write lock: %w: %s is read-only; lock the corpus where its lock is writable (driftprobe corpus lock DIR) and ship %s with it, a run then only reads it", err, dir, LockName)
	}
	return fmt.Errorf("write lock: %w", err)
}
