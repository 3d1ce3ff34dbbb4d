// Package image builds driftprobe's container image without a container
// runtime: one layer on an empty base holding the static binary, the
// nonroot account the deployment manifests run as (uid and gid 65532), a
// world-writable /tmp for SQLite's temporary files and a working directory
// for the database. There is no shell and no package manager; the binary
// carries its own time-zone data and fallback TLS roots.
//
// The build is reproducible: the same binary and options give the same
// image digest (every file time is Options.Created, entries are in a fixed
// order, the layer is gzip-compressed deterministically).
package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and identity inside the image. The Kubernetes manifests and the
// README name the same ones.
const (
	BinaryPath = "/driftprobe"
	WorkDir    = "/var/lib/driftprobe" // the database's default home; a volume in deployments
	UID        = 65532
	GID        = 65532
	User       = "65532:65532"
)

// Options describe one image.
type Options struct {
	Binary   string    // path of a static linux binary of cmd/driftprobe
	Arch     string    // GOARCH of the binary: amd64, arm64
	Version  string    // the release, for the org.opencontainers.image.version label
	Revision string    // the source commit, for org.opencontainers.image.revision (optional)
	Created  time.Time // every timestamp in the image (zero: the Unix epoch)
}

// ErrNotStatic is returned for a binary that needs a dynamic loader
// (built with cgo): it would not start in an image without libc.
var ErrNotStatic = errors.New("binary is dynamically linked (build with CGO_ENABLED=0)")

// elfMachine maps a GOARCH to the ELF machine its binaries carry.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// Build returns the image for o. It refuses a binary that is not a static
// linux executable for o.Arch.
func Build(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if err := checkBinary(bin, o.Arch); err != nil {
		return nil, fmt.Errorf("image: %s: %w", o.Binary, err)
	}
	created := o.Created.UTC().Truncate(time.Second)
	if o.Created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	layerTar, err := rootfs(bin, created)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = o.Arch, "linux"
	cf.Created = v1.Time{Time: created}
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.Cmd = []string{"--help"}
	cf.Config.User = User
	cf.Config.WorkingDir = WorkDir
	cf.Config.Env = []string{"TMPDIR=/tmp"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "driftprobe",
		"org.opencontainers.image.description": "Continuous policy-drift monitor for LLM providers",
		"org.opencontainers.image.source":      "https://github.com/driftprobe/driftprobe",
		"org.opencontainers.image.version":     o.Version,
	}
	if o.Revision != "" {
		cf.Config.Labels["org.opencontainers.image.revision"] = o.Revision
	}
	cf.History = []v1.History{{Created: v1.Time{Time: created}, CreatedBy: "driftprobe internal/image: static binary, nonroot account, /tmp, " + WorkDir}}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return img, nil
}

// checkBinary refuses anything but a static linux executable for arch.
func checkBinary(bin []byte, arch string) error {
	want, ok := elfMachine[arch]
	if !ok {
		return fmt.Errorf("architecture %q: want amd64 or arm64", arch)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not a linux executable: %w", err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("built for %s, not %s", f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return ErrNotStatic
		}
	}
	return nil
}

// rootfs is the layer's tar: directories before their contents, in a
// fixed order, every entry owned and timed explicitly.
func rootfs(bin []byte, at time.Time) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	type entry struct {
		name     string
		mode     int64
		uid, gid int
		data     []byte // nil for a directory
	}
	entries := []entry{
		{"driftprobe", 0o755, 0, 0, bin},
		{"etc/", 0o755, 0, 0, nil},
		{"etc/group", 0o644, 0, 0, []byte(group)},
		{"etc/passwd", 0o644, 0, 0, []byte(passwd)},
		{"home/", 0o755, 0, 0, nil},
		{"home/nonroot/", 0o700, UID, GID, nil},
		{"tmp/", 0o1777, 0, 0, nil},
		{"var/", 0o755, 0, 0, nil},
		{"var/lib/", 0o755, 0, 0, nil},
		{"var/lib/driftprobe/", 0o750, UID, GID, nil},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: at}
		if e.data == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if e.data != nil {
			if _, err := tw.Write(e.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
