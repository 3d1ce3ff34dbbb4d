# driftprobe: a continuous policy-drift monitor for LLM providers.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/driftprobe/driftprobe/internal/app.Version=$(VERSION)
BIN      := bin/driftprobe
# make image: the container image's architecture, reference, commit and
# file times (the commit's time, so a rebuild of one commit is identical).
ARCH     ?= $(shell $(GO) env GOARCH)
IMAGE    ?= ghcr.io/driftprobe/driftprobe:$(VERSION)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# An execution count, not a duration: a -fuzztime duration can fail a
# clean fuzz with "context deadline exceeded" (a race in the Go fuzz
# coordinator between the deadline and its worker context).
FUZZTIME ?= 2000x

.PHONY: build image test lint bench demo clean

## build: a static, pure-Go binary in bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/driftprobe

## image: the container image as a tarball, out/driftprobe-image-$(ARCH).tar, for `docker load`,
## `podman load` or `crane push`; built without a container runtime (internal/image)
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(ARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o out/linux-$(ARCH)/driftprobe ./cmd/driftprobe
	$(GO) run ./internal/tools/mkimage -binary out/linux-$(ARCH)/driftprobe -arch $(ARCH) -version '$(VERSION)' \
		-revision '$(REVISION)' -created '$(SOURCE_DATE_EPOCH)' -tag '$(IMAGE)' -o out/driftprobe-image-$(ARCH).tar

## test: formatting, no build outputs tracked, vet, every test (race detector on), then a short fuzz of every
## response parser; offline, loopback only. -timeout: go test's default (10 minutes per package) is
## too close to what the race detector takes for diff and cmd/driftprobe on a slow 2-CPU machine.
## RACEFLAGS: the race detector watches every package but SQLite's C source translated to Go
## (modernc.org/sqlite/lib), which it slowed about 15-fold (a new database's schema: 1.1-1.6 s instead
## of ~0.09 s); driftprobe's code, the standard library, the sqlite driver and modernc.org/libc stay
## instrumented.
RACEFLAGS ?= -race -gcflags='modernc.org/sqlite/lib=-race=false'
test:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && echo "gofmt: files above need formatting" && exit 1)
	bash scripts/check-tree.sh
	$(GO) vet ./...
	$(GO) test $(RACEFLAGS) -count=1 -timeout 30m ./...
	FUZZTIME=$(FUZZTIME) bash scripts/fuzz-short.sh

## lint: formatting, vet, and no build outputs tracked
lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && echo "gofmt: files above need formatting" && exit 1)
	bash scripts/check-tree.sh
	$(GO) vet ./...

## bench: the run, detection, classification, storage, attribution and metrics benchmarks
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 5x ./runner ./diff
	$(GO) test -run '^$$' -bench . -benchmem ./probes/oaiwire ./storage ./attribution
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./metrics

## demo: the whole story on the embedded simulator, no keys, no network
demo:
	$(GO) run ./cmd/driftprobe demo

clean:
	rm -rf bin out
