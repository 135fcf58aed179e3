# nodeagent: the two commands a user needs are `make demo` and `make test`.
# Everything they need (the control plane binaries, the agent) is built on
# the way, once.

GO        ?= go
OUTPUT    := _output
BIN       := $(OUTPUT)/bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT    ?= $(shell git rev-parse --verify --quiet HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X github.com/nodeagent-io/nodeagent/internal/version.Version=$(VERSION) \
             -X github.com/nodeagent-io/nodeagent/internal/version.GitCommit=$(COMMIT)
# e2e tests start real processes; give them room on a two-core machine.
E2E_TIMEOUT ?= 30m

.PHONY: all build controlplane test unit e2e vet demo clean help

all: build

help: ## Show the targets.
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

build: ## Build nodeagent into _output/bin.
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/nodeagent ./cmd/nodeagent

controlplane: ## Build etcd and kube-apiserver into _output/bin (once; minutes the first time).
	hack/controlplane/build.sh $(BIN)

vet: ## Run go vet.
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/e2e/...

unit: ## Run the unit tests.
	$(GO) test -race ./...

e2e: controlplane build ## Run the end-to-end tests on a local control plane.
	NODEAGENT_BIN=$(abspath $(BIN))/nodeagent $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./test/e2e/...

test: controlplane vet unit e2e ## Build what is missing, then vet, unit tests and e2e tests.

# The demo scenario is nodeagent compare's default (20 nodes x 10 pods, S=5s,
# TTL=25s, 60 s per mode); pass others with DEMO_ARGS, e.g.
#   make demo DEMO_ARGS="--modes every-sync,first-reference --phase-duration 2m"
DEMO_ARGS ?=
demo: controlplane build ## Compare ConfigMap GET load before and after kubernetes#120255 (about 4 minutes).
	$(BIN)/nodeagent compare --output-dir $(OUTPUT)/compare $(DEMO_ARGS)

clean: ## Remove build output (the control plane is rebuilt on the next run).
	rm -rf $(OUTPUT)
