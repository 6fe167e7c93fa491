# fulcrum — build, test, demo, bench, lint.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build test demo bench bench-go bench-proxy lint clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/fulcrum ./cmd/fulcrum
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/fulcrumctl ./cmd/fulcrumctl

# fulcrum-agent for every platform it ships on, as static binaries:
# bin/agents/fulcrum-agent-<os>-<arch>[.exe].
AGENT_TARGETS := linux/amd64 linux/arm64 windows/amd64 darwin/arm64
.PHONY: agents
agents:
	@mkdir -p bin/agents
	@set -e; for t in $(AGENT_TARGETS); do \
	  os=$${t%/*}; arch=$${t#*/}; ext=; [ "$$os" = windows ] && ext=.exe; \
	  out=bin/agents/fulcrum-agent-$$os-$$arch$$ext; echo "$$out"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $$out ./cmd/fulcrum-agent; \
	done

# Every test, under the race detector; then the proxy's suite again on
# the connection layer that is not the default on Linux (Go's poller,
# tune_netio = "go"), and its mode tcp tests with tune_netio = "epoll"
# (the pollers' relay, where the default relays on io_uring).
test:
	$(GO) test -race -count=1 -timeout 8m ./...
	FULCRUM_TUNE_NETIO=go $(GO) test -race -count=1 -timeout 8m ./proxy/
	FULCRUM_TUNE_NETIO=epoll $(GO) test -race -count=1 -timeout 8m -run 'TCP|Tcp' ./proxy/

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
