// Command mkimage writes driftprobe's container image as a tarball that
// `docker load`, `podman load` and `crane push` accept, without a
// container runtime (see internal/image). `make image` runs it.
//
//	go run ./internal/tools/mkimage -binary out/linux-amd64/driftprobe -arch amd64 \
//	    -version v1.2.3 -created 1764460800 -tag ghcr.io/driftprobe/driftprobe:v1.2.3 -o out/driftprobe-image.tar
//
// It prints the image digest; the same binary and flags print the same one.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/driftprobe/driftprobe/internal/image"
)

func main() {
	var o image.Options
	var created, tag, out string
	flag.StringVar(&o.Binary, "binary", "", "static linux build of ./cmd/driftprobe (required)")
	flag.StringVar(&o.Arch, "arch", "amd64", "GOARCH the binary was built for: amd64 or arm64")
	flag.StringVar(&o.Version, "version", "dev", "version label")
	flag.StringVar(&o.Revision, "revision", "", "source commit label")
	flag.StringVar(&created, "created", os.Getenv("SOURCE_DATE_EPOCH"), "timestamp of every file, Unix seconds (default $SOURCE_DATE_EPOCH, else 0)")
	flag.StringVar(&tag, "tag", "ghcr.io/driftprobe/driftprobe:dev", "image reference recorded in the tarball")
	flag.StringVar(&out, "o", "driftprobe-image.tar", "output tarball")
	flag.Parse()
	if err := run(o, created, tag, out); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(o image.Options, created, tag, out string) error {
	if o.Binary == "" {
		return fmt.Errorf("-binary is required")
	}
	if created != "" {
		sec, err := strconv.ParseInt(created, 10, 64)
		if err != nil {
			return fmt.Errorf("-created %q: want Unix seconds", created)
		}
		o.Created = time.Unix(sec, 0)
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag: %w", err)
	}
	img, err := image.Build(o)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s\n", out, ref, d)
	return nil
}
