package corpus

import (
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// A corpus on a read-only mount (a Kubernetes ConfigMap volume, an image
// layer under readOnlyRootFilesystem) fails the lock's write with EROFS,
// not a permission error: the error still says the directory is
// read-only and how to ship the lock, as it does for a directory this
// user may not write.
func TestWriteLockReadOnlyMountSaysSo(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EROFS, syscall.EACCES} {
		err := lockWriteError("/etc/driftprobe/corpus", &fs.PathError{Op: "open", Path: "/etc/driftprobe/corpus/.corpus.lock.1.tmp", Err: errno})
		if !strings.Contains(err.Error(), "/etc/driftprobe/corpus is read-only") || !strings.Contains(err.Error(), "driftprobe corpus lock DIR") {
			t.Errorf("%v: %v, want it to say the directory is read-only and how to lock it", errno, err)
		}
	}
}
