# fulcrum — build, test, demo, bench, lint.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build test demo bench bench-go bench-proxy lint clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/fulcrum ./cmd/fulcrum
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/fulcrumctl ./cmd/fulcrumctl

# Every test, under the race detector.
test:
	$(GO) test -race -count=1 -timeout 8m ./...

demo: build
	./bin/fulcrum demo

# Go benchmarks of the hot paths, then the side-by-side run against HAProxy.
bench: bench-go bench-proxy

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

bench-proxy: build
	./bench/run.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin
