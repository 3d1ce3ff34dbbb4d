# driftprobe: a continuous policy-drift monitor for LLM providers.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/driftprobe/driftprobe/internal/app.Version=$(VERSION)
BIN      := bin/driftprobe
# An execution count, not a duration: a -fuzztime duration can fail a
# clean fuzz with "context deadline exceeded" (a race in the Go fuzz
# coordinator between the deadline and its worker context).
FUZZTIME ?= 2000x

.PHONY: build test lint bench demo clean

## build: a static, pure-Go binary in bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/driftprobe

## test: formatting, no build outputs tracked, vet, every test (race detector on), then a short fuzz of every
## response parser; offline, loopback only
test:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && echo "gofmt: files above need formatting" && exit 1)
	bash scripts/check-tree.sh
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
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
	rm -rf bin
