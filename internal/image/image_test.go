package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"gopkg.in/yaml.v3"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// staticBinary builds ./cmd/driftprobe as `make image` does (static,
// linux, this machine's architecture) once per test binary.
func staticBinary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary is a linux executable; running it needs linux")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "driftprobe-image-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "driftprobe")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/driftprobe/driftprobe/internal/app.Version=v9.9.9-test", "-o", builtBin, "../../cmd/driftprobe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return builtBin
}

var created = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// writeImage builds and writes the image as `make image` does and reads
// it back from the tarball, as `docker load` would.
func writeImage(t *testing.T, o Options) (path string, digest string) {
	t.Helper()
	img, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "image.tar")
	tag, _ := name.NewTag("ghcr.io/driftprobe/driftprobe:v9.9.9-test")
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return path, d.String()
}

func TestImageRunsAsNonrootWithItsOwnFilesystem(t *testing.T) {
	bin := staticBinary(t)
	path, _ := writeImage(t, Options{Binary: bin, Arch: runtime.GOARCH, Version: "v9.9.9-test", Revision: "abc123", Created: created})

	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != "ghcr.io/driftprobe/driftprobe:v9.9.9-test" {
		t.Fatalf("docker-load manifest: %+v", m)
	}
	tag, _ := name.NewTag("ghcr.io/driftprobe/driftprobe:v9.9.9-test")
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/driftprobe" ||
		c.WorkingDir != "/var/lib/driftprobe" || !cf.Created.Time.Equal(created) {
		t.Fatalf("config: os %q arch %q user %q entrypoint %q workdir %q created %v", cf.OS, cf.Architecture, c.User, c.Entrypoint, c.WorkingDir, cf.Created)
	}
	if c.Labels["org.opencontainers.image.version"] != "v9.9.9-test" || c.Labels["org.opencontainers.image.revision"] != "abc123" {
		t.Fatalf("labels: %v", c.Labels)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}

	// The filesystem a container sees.
	rc := mutate.Extract(img)
	defer rc.Close()
	type file struct {
		mode     int64
		uid, gid int
		typ      byte
		data     []byte
	}
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if !h.ModTime.Equal(created) {
			t.Errorf("%s: time %v, want %v", h.Name, h.ModTime, created)
		}
		files[strings.TrimSuffix(h.Name, "/")] = file{h.Mode, h.Uid, h.Gid, h.Typeflag, data}
	}
	for _, want := range []struct {
		name     string
		mode     int64
		uid, gid int
		typ      byte
	}{
		{"driftprobe", 0o755, 0, 0, tar.TypeReg},
		{"tmp", 0o1777, 0, 0, tar.TypeDir},
		{"var/lib/driftprobe", 0o750, UID, GID, tar.TypeDir},
		{"home/nonroot", 0o700, UID, GID, tar.TypeDir},
		{"etc/passwd", 0o644, 0, 0, tar.TypeReg},
	} {
		f, ok := files[want.name]
		if !ok || f.mode != want.mode || f.uid != want.uid || f.gid != want.gid || f.typ != want.typ {
			t.Errorf("%s: %+v (present %v), want mode %o uid %d gid %d type %c", want.name, f, ok, want.mode, want.uid, want.gid, want.typ)
		}
	}
	if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") || !strings.Contains(string(files["etc/group"].data), "nonroot:x:65532:") {
		t.Errorf("account: %q / %q", files["etc/passwd"].data, files["etc/group"].data)
	}
	for n := range files {
		if strings.HasPrefix(n, "bin") || strings.HasPrefix(n, "usr") || n == "sh" {
			t.Errorf("image carries %s: no shell or userland is meant to be there", n)
		}
	}

	// The binary in the image is the one built, and it starts with an
	// empty environment in a directory of its own, as in a container.
	want, _ := os.ReadFile(bin)
	if !bytes.Equal(files["driftprobe"].data, want) {
		t.Fatal("the image's /driftprobe differs from the binary it was built from")
	}
	root := t.TempDir()
	exe := filepath.Join(root, "driftprobe")
	if err := os.WriteFile(exe, files["driftprobe"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "version")
	cmd.Dir, cmd.Env = root, []string{}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "driftprobe v9.9.9-test (") {
		t.Fatalf("driftprobe version from the image: %v: %s", err, out)
	}
	// A scheduled config with a time zone checks with no zoneinfo on
	// the path the binary would look in first.
	cfg := filepath.Join(root, "c.yaml")
	os.WriteFile(cfg, []byte("schedule: \"CRON_TZ=America/New_York 0 * * * *\"\ntargets:\n  - name: sim\n    provider: sim\n    model: sim-1\n"), 0o644)
	cmd = exec.Command(exe, "config", "check", "--config", cfg)
	cmd.Dir, cmd.Env = root, []string{"ZONEINFO=" + filepath.Join(root, "no-zoneinfo")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("config check with CRON_TZ: %v: %s", err, out)
	}
}

func TestImageIsReproducible(t *testing.T) {
	bin := staticBinary(t)
	o := Options{Binary: bin, Arch: runtime.GOARCH, Version: "v9.9.9-test", Created: created}
	_, d1 := writeImage(t, o)
	_, d2 := writeImage(t, o)
	if d1 != d2 {
		t.Fatalf("same binary and options, two digests: %s, %s", d1, d2)
	}
	o.Created = created.Add(time.Second)
	if _, d3 := writeImage(t, o); d3 == d1 {
		t.Fatalf("another creation time gave the same digest %s: the digest does not cover the files' times", d3)
	}
}

// The binary carries the time-zone database and the fallback TLS roots:
// an image without /usr/share/zoneinfo or CA certificates needs both.
func TestBinaryCarriesZonesAndRoots(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../cmd/driftprobe").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := "\n" + string(out)
	for _, p := range []string{"time/tzdata", "golang.org/x/crypto/x509roots/fallback"} {
		if !strings.Contains(deps, "\n"+p+"\n") {
			t.Errorf("cmd/driftprobe does not import %s", p)
		}
	}
}

func TestBuildRefusesWhatWouldNotStart(t *testing.T) {
	bin := staticBinary(t)
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	if other != "" {
		if _, err := Build(Options{Binary: bin, Arch: other}); err == nil || !strings.Contains(err.Error(), "built for") {
			t.Errorf("binary for %s labelled %s: %v", runtime.GOARCH, other, err)
		}
	}
	text := filepath.Join(t.TempDir(), "script")
	os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755)
	if _, err := Build(Options{Binary: text, Arch: runtime.GOARCH}); err == nil || !strings.Contains(err.Error(), "not a linux executable") {
		t.Errorf("a script: %v", err)
	}
	// A dynamically linked executable from this machine, if it has one.
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/bin/ls"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		dynamic := false
		for _, pr := range f.Progs {
			dynamic = dynamic || pr.Type == elf.PT_INTERP
		}
		arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
		f.Close()
		if !dynamic || arch == "" {
			continue
		}
		if _, err := Build(Options{Binary: p, Arch: arch}); !errors.Is(err, ErrNotStatic) {
			t.Errorf("%s (dynamic): %v, want ErrNotStatic", p, err)
		}
		return
	}
	t.Log("no dynamically linked executable found to refuse")
}

// The deployment manifests run the image as its own account and keep the
// database where the image's working directory is.
func TestManifestsMatchTheImage(t *testing.T) {
	for _, p := range []string{"../../deploy/k8s/cronjob.yaml", "../../deploy/k8s/serve/deployment-serve.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Spec struct {
				Template    podTemplate `yaml:"template"`
				JobTemplate struct {
					Spec struct {
						Template podTemplate `yaml:"template"`
					} `yaml:"spec"`
				} `yaml:"jobTemplate"`
			} `yaml:"spec"`
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		pod := doc.Spec.Template.Spec
		if len(pod.Containers) == 0 {
			pod = doc.Spec.JobTemplate.Spec.Template.Spec
		}
		sc := pod.SecurityContext
		if sc.RunAsUser != UID || sc.RunAsGroup != GID || sc.FSGroup != GID {
			t.Errorf("%s: runs as %d:%d (fsGroup %d), the image's account is %d:%d", p, sc.RunAsUser, sc.RunAsGroup, sc.FSGroup, UID, GID)
		}
		if len(pod.Containers) != 1 {
			t.Fatalf("%s: %d containers", p, len(pod.Containers))
		}
		c := pod.Containers[0]
		mounts := map[string]bool{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = true
		}
		if c.SecurityContext.ReadOnlyRootFilesystem && !mounts["/tmp"] {
			t.Errorf("%s: read-only root without a /tmp volume: SQLite's temporary files have nowhere to go", p)
		}
		if !mounts[WorkDir] || !strings.Contains(strings.Join(c.Args, " "), WorkDir+"/") {
			t.Errorf("%s: the database is not kept under %s (mounts %v, args %v)", p, WorkDir, mounts, c.Args)
		}
	}
}

type podTemplate struct {
	Spec struct {
		SecurityContext struct {
			RunAsUser  int `yaml:"runAsUser"`
			RunAsGroup int `yaml:"runAsGroup"`
			FSGroup    int `yaml:"fsGroup"`
		} `yaml:"securityContext"`
		Containers []struct {
			Args            []string `yaml:"args"`
			SecurityContext struct {
				ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
			} `yaml:"securityContext"`
			VolumeMounts []struct {
				MountPath string `yaml:"mountPath"`
			} `yaml:"volumeMounts"`
		} `yaml:"containers"`
	} `yaml:"spec"`
}
