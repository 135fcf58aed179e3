# nodeagent: the two commands a user needs are `make demo` and `make test`.
# Everything they need (the control plane binaries, the agent) is built on
# the way, once.

GO        ?= go
OUTPUT    := _output
BIN       := $(OUTPUT)/bin
# A semantic version from git (hack/release/version.sh): v1.2.3 on a tag.
VERSION   ?= $(shell hack/release/version.sh)
COMMIT    ?= $(shell git rev-parse --verify --quiet HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X github.com/nodeagent-io/nodeagent/internal/version.Version=$(VERSION) \
             -X github.com/nodeagent-io/nodeagent/internal/version.GitCommit=$(COMMIT)
# The image's binary: the agent-only build (run, csi, webhook, uninstall-check and version; no
# analyze, compare or convert, and so no client-go clientset), static, stripped. nodeagent-agent
# is the same build for this machine, which compare --agent-processes runs:
# what it measures is what the image ships (a dynamically linked build maps
# about 1.4 MiB of libc more). grpcnotrace keeps gRPC (the csi command's)
# from linking golang.org/x/net/trace and with it text/template, whose
# reflection keeps every exported method in the binary, and its pages
# resident in every agent (the record footprint; docs/performance.md).
AGENT_TAGS = agentonly,grpcnotrace
AGENT_BUILD = CGO_ENABLED=0 $(GO) build -tags $(AGENT_TAGS) -trimpath -ldflags "-s -w $(LDFLAGS)"
# The full binary is built on grpcnotrace too: without it, it keeps every
# exported method of client-go's types, and grows by more than half. Static
# as the agent's, so that the image's copy (/nodeagent-full, which analyze
# --serve runs) shares this machine's compiled packages.
FULL_TAGS = grpcnotrace
FULL_BUILD = CGO_ENABLED=0 $(GO) build -tags $(FULL_TAGS) -trimpath
# The image holds both builds (hack/image): /nodeagent, the agent-only one
# every node runs, and /nodeagent-full.
IMAGE_BUILD = GOOS=linux GOARCH=amd64 $(AGENT_BUILD) -o $(BIN)/nodeagent-linux-amd64 ./cmd/nodeagent && \
	GOOS=linux GOARCH=amd64 $(FULL_BUILD) -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/nodeagent-full-linux-amd64 ./cmd/nodeagent
# The image's platforms (make push, make release): both builds for each.
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
# The tests and go vet compile the main module as make build does (no cgo,
# -trimpath), so that they reuse its compiled packages instead of compiling
# the module's whole graph a second time with cgo and full paths. The unit
# tests' -race needs cgo, and compiles a graph of its own anyway.
AS_BUILT := CGO_ENABLED=0 GOFLAGS=-trimpath
# e2e tests start real processes; give them room on a two-core machine (a
# guard against a hang: each test waits for its conditions, and a shard
# takes longer at half the speed, make e2e-halfcpu).
E2E_TIMEOUT ?= 45m

comma := ,
space := $(empty) $(empty)
KUSTOMIZE_VERSION := v5.8.2
HELM_VERSION := v4.3.1
# Prometheus 3.16's module; its service discoveries other than static and
# file are left out of the build (remove_all_sd).
PROMETHEUS_VERSION := v0.316.0
STATICCHECK_VERSION := v0.8.2
GORELEASER_VERSION := v2.15.1
CYCLONEDX_GOMOD_VERSION := v1.10.0
KREW_VERSION := v0.4.3
# make release: where the archives will be downloaded from (the krew
# manifest names each archive under it).
RELEASE_URL ?= https://github.com/nodeagent-io/nodeagent/releases/download/$(VERSION)
RELEASE     := $(OUTPUT)/release
# The chart's version is the release's, without the v; its appVersion, the
# image tag, keeps it.
CHART_VERSION = $(VERSION:v%=%)
# Image tags follow the version `nodeagent version` prints: make image writes
# IMAGE for this machine's kind tests, make push sends
# $(REGISTRY)/nodeagent:$(VERSION).
IMAGE       ?= nodeagent:$(VERSION)
IMAGE_TAR   := $(OUTPUT)/nodeagent-image.tar

.PHONY: csi-load apiserver-v1.31 etcd-metrics-fixture release release-tools release-check release-check-published analyze-scale footprint all build controlplane kind-prep verify-core verify-refkubelet vet-refkubelet refkubelet kustomize helm promtool prometheus deploy-check dashboard reference staticcheck image push test verify unit fuzz bench latency idle scale soak e2e e2e-kind e2e-halfcpu e2e-kind-if-possible vet demo demo-record docs clean help

all: build

help: ## Show the targets.
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

build: ## Build nodeagent into _output/bin, its agent-only build nodeagent-agent (the image's), and kubectl-nodeagent.
	$(FULL_BUILD) -ldflags "$(LDFLAGS)" -o $(BIN)/nodeagent ./cmd/nodeagent
	$(AGENT_BUILD) -o $(BIN)/nodeagent-agent ./cmd/nodeagent
	ln -sf nodeagent $(BIN)/kubectl-nodeagent

controlplane: ## Build etcd, kube-apiserver and kube-controller-manager into _output/bin (once; minutes the first time: docs/development.md).
	hack/controlplane/build.sh $(BIN)

apiserver-v1.31: ## Build kube-apiserver v1.31.14 into _output/bin/kube-apiserver-v1.31 (once; several minutes the first time): the last minor whose etcd_requests_total says type, not resource.
	hack/apiserver-v1.31/build.sh $(BIN)

# Not part of make test: it needs a second Kubernetes build. The scrapes it
# writes are pkg/apimetrics's fixtures, committed.
etcd-metrics-fixture: controlplane apiserver-v1.31 ## Record etcd_requests_total of real apiservers v1.31 and the control plane's, after known quorum GETs, into pkg/apimetrics/testdata.
	$(GO) run ./hack/etcdmetrics -apiserver $(BIN)/kube-apiserver-v1.31
	$(GO) run ./hack/etcdmetrics -apiserver $(BIN)/kube-apiserver

refkubelet: ## Build the reference kubelets v1.28 and v1.37 into _output/bin (once; development.md says how long the first build takes).
	hack/refkubelet/build.sh $(BIN)

kustomize: $(BIN)/kustomize ## Build the pinned kustomize CLI into _output/bin (renders deploy/).

$(BIN)/kustomize:
	GOBIN=$(abspath $(BIN)) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

helm: $(BIN)/helm ## Build the pinned helm CLI into _output/bin (lints and renders deploy/helm/nodeagent).

$(BIN)/helm:
	GOBIN=$(abspath $(BIN)) $(GO) install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)

promtool: $(BIN)/promtool ## Build the pinned promtool into _output/bin (checks and unit-tests deploy/prometheus).

$(BIN)/promtool:
	GOBIN=$(abspath $(BIN)) $(GO) install -tags remove_all_sd github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION)

prometheus: $(BIN)/prometheus ## Build the pinned Prometheus server into _output/bin (the e2e test of the rules and the dashboard).

$(BIN)/prometheus:
	GOBIN=$(abspath $(BIN)) $(GO) install -tags remove_all_sd github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION)

# What deploy/ ships, checked without a cluster: the chart linted in every
# mode and rendered equal to the kustomize overlays, the Prometheus rules
# checked and unit-tested on synthetic series.
deploy-check: kustomize helm promtool ## helm lint, the chart against the overlays, promtool check and test of deploy/prometheus.
	for mode in before after watch csi; do $(BIN)/helm lint --strict deploy/helm/nodeagent --set mode=$$mode --set image.tag=lint || exit 1; done
	$(BIN)/helm lint --strict deploy/helm/nodeagent --set mode=csi --set webhook.enabled=true --set image.tag=lint
	$(BIN)/helm lint --strict deploy/helm/nodeagent --set mode=csi --set csi.readAs=driver --set image.tag=lint
	$(BIN)/helm lint --strict deploy/helm/nodeagent --set mode=csi --set csi.readAs=pod --set csi.secrets.enabled=true --set image.tag=lint
	$(BIN)/promtool check rules deploy/prometheus/nodeagent-rules.yaml
	$(BIN)/promtool test rules deploy/prometheus/tests/rules_test.yaml
	$(AS_BUILT) HELM_BIN=$(abspath $(BIN))/helm KUSTOMIZE_BIN=$(abspath $(BIN))/kustomize $(GO) test -tags e2e -count=1 ./test/deploy/

staticcheck: $(BIN)/staticcheck ## Build the pinned staticcheck into _output/bin.

$(BIN)/staticcheck:
	GOBIN=$(abspath $(BIN)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

image: ## Write the container image as a tarball, without Docker: _output/nodeagent-image.tar.
	$(IMAGE_BUILD)
	cd hack/image && $(GO) run . --binary $(abspath $(BIN))/nodeagent-linux-amd64 --full $(abspath $(BIN))/nodeagent-full-linux-amd64 --output $(abspath $(IMAGE_TAR)) \
		--tag $(IMAGE) --version $(VERSION) --revision $(COMMIT)
	@echo "Wrote $(IMAGE_TAR) ($(IMAGE)); load it with: kind load image-archive $(IMAGE_TAR) --name nodeagent"

# make push REGISTRY=registry.example/team: the multi-architecture image
# (IMAGE_PLATFORMS, each with its agent-only and its full build) and the
# Helm chart (running that image by default), sent to a registry without
# Docker; then a kustomization per overlay in _output/deploy that runs the
# image pushed, and the commands that install it (hack/release/
# install-commands.sh). One login serves both pushes: the image's
# credentials come from $$DOCKER_CONFIG/config.json (~/.docker/config.json),
# and helm is given the same file (`docker login`, `crane auth login` or
# `helm registry login --registry-config ~/.docker/config.json` write it).
# localhost registries are spoken to over plain HTTP.
REGISTRY_CONFIG = $(or $(DOCKER_CONFIG),$(HOME)/.docker)/config.json
push: helm ## Push the multi-arch image to REGISTRY/nodeagent:<version> and the chart to oci://REGISTRY/charts/nodeagent, without Docker; writes kustomizations for it in _output/deploy and prints the install commands.
	@if [ -z "$(REGISTRY)" ]; then \
		echo "make push: say where, e.g. make push REGISTRY=registry.example/team (pushes registry.example/team/nodeagent:$(VERSION) and oci://registry.example/team/charts/nodeagent)"; exit 2; fi
	@for p in $(IMAGE_PLATFORMS); do echo "building the agent and the full build for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(AGENT_BUILD) -o $(BIN)/nodeagent-$${p%/*}-$${p#*/} ./cmd/nodeagent || exit 1; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(FULL_BUILD) -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/nodeagent-full-$${p%/*}-$${p#*/} ./cmd/nodeagent || exit 1; done
	@pushed=$$(cd hack/image && $(GO) run . $(foreach p,$(IMAGE_PLATFORMS),--binary $(p)=$(abspath $(BIN))/nodeagent-$(subst /,-,$(p)) --full $(p)=$(abspath $(BIN))/nodeagent-full-$(subst /,-,$(p))) \
		--index --push $(REGISTRY)/nodeagent:$(VERSION) --version $(VERSION) --revision $(COMMIT)) || exit 1; echo "$$pushed"; \
	rm -rf $(OUTPUT)/chart && hack/release/package-chart.sh $(BIN)/helm $(REGISTRY)/nodeagent $(VERSION) $(OUTPUT)/chart && \
	$(BIN)/helm push $(OUTPUT)/chart/nodeagent-$(CHART_VERSION).tgz oci://$(REGISTRY)/charts --registry-config $(REGISTRY_CONFIG) \
		$(if $(filter localhost:% 127.0.0.1:%,$(REGISTRY)),--plain-http) && \
	rm -rf $(OUTPUT)/deploy && hack/release/install-commands.sh "$(REGISTRY)" "$(VERSION)" "$(CHART_VERSION)" "$(IMAGE_PLATFORMS)" "$${pushed##*@}" $(OUTPUT)

release-tools: $(BIN)/goreleaser $(BIN)/cyclonedx-gomod $(BIN)/krew ## Build the pinned GoReleaser, cyclonedx-gomod and krew into _output/bin (make release, make release-check).

$(BIN)/goreleaser:
	GOBIN=$(abspath $(BIN)) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

$(BIN)/krew:
	GOBIN=$(abspath $(BIN)) $(GO) install sigs.k8s.io/krew/cmd/krew@$(KREW_VERSION)

$(BIN)/cyclonedx-gomod:
	GOBIN=$(abspath $(BIN)) $(GO) install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)

# make release: what a release publishes, into _output/release, without
# Docker or any network but the module proxy (docs/install.md). GoReleaser
# runs in snapshot mode on a tag too: it publishes nothing, and the version
# is hack/release/version.sh's; publishing is docs/install.md's steps.
# RELEASE_GOOS=linux leaves darwin's archives out, and RELEASE_GOARCH=amd64
# arm64's archives and image (make test's release-check, which proves the
# release works on this machine's platform: the other platforms' builds
# share the code and the GoReleaser configuration, and are make release's
# to prove).
RELEASE_GOOS ?= linux darwin
RELEASE_GOARCH ?= amd64 arm64
release: release-tools helm ## Archives for linux and darwin on amd64 and arm64, checksums, SBOMs, the krew manifest, the chart and the multi-arch image as an OCI layout, into _output/release.
	@grep -q '^  goos: \[linux, darwin\]$$' .goreleaser.yaml || { echo "make release: .goreleaser.yaml has no line '  goos: [linux, darwin]' for RELEASE_GOOS to replace"; exit 1; }
	@grep -q '^  goarch: \[amd64, arm64\]$$' .goreleaser.yaml || { echo "make release: .goreleaser.yaml has no line '  goarch: [amd64, arm64]' for RELEASE_GOARCH to replace"; exit 1; }
	mkdir -p $(OUTPUT) && sed -e 's/^  goos: \[linux, darwin\]$$/  goos: [$(subst $(space),$(comma) ,$(strip $(RELEASE_GOOS)))]/' \
		-e 's/^  goarch: \[amd64, arm64\]$$/  goarch: [$(subst $(space),$(comma) ,$(strip $(RELEASE_GOARCH)))]/' .goreleaser.yaml >$(OUTPUT)/goreleaser.yaml
	RELEASE_VERSION=$(VERSION) RELEASE_COMMIT=$(COMMIT) RELEASE_COMMIT_TIME=$$(git log -1 --format=%ct 2>/dev/null || echo 0) \
		RELEASE_URL=$(RELEASE_URL) PATH=$(abspath $(BIN)):$$PATH \
		$(BIN)/goreleaser release --snapshot --clean --config $(OUTPUT)/goreleaser.yaml
	mv $(RELEASE)/krew/nodeagent.yaml $(RELEASE)/nodeagent.yaml && rmdir $(RELEASE)/krew
	hack/release/package-chart.sh $(BIN)/helm ghcr.io/nodeagent-io/nodeagent $(VERSION) $(RELEASE)
	cd hack/image && $(GO) run . $(foreach p,$(IMAGE_PLATFORMS),--binary $(p)=$(abspath $(RELEASE))/nodeagent-agent-$(subst /,-,$(p)) \
		--full $(p)=$$(echo $(abspath $(RELEASE))/nodeagent_$(subst /,_,$(p))_*/nodeagent)) \
		--index --oci-layout $(abspath $(RELEASE))/image --version $(VERSION) --revision $(COMMIT)
	@echo "Wrote $(RELEASE): nodeagent $(VERSION)"

# make release-check: a release made, published and checked on this
# machine, as docs/install.md says (hack/release/release-check.sh): a
# throwaway clone of this checkout tagged RELEASE_CHECK_TAG, make release
# there and the release's tests (test/release), then the assets and make
# push published to a local stand-in for GitHub and the registry, and make
# release-check-published on what it serves.
RELEASE_CHECK_TAG ?= v9.9.9
release-check: release-tools helm ## Make, publish (to a local stand-in) and test a release of this checkout tagged RELEASE_CHECK_TAG in a throwaway clone: asset names, archives, checksums, SBOMs, krew install, the chart and the image index.
	BIN=$(abspath $(BIN)) RELEASE_GOOS="$(RELEASE_GOOS)" RELEASE_GOARCH="$(RELEASE_GOARCH)" HELM_BIN=$(abspath $(BIN))/helm KREW_BIN=$(abspath $(BIN))/krew \
		hack/release/release-check.sh $(RELEASE_CHECK_TAG)

# make release-check-published VERSION=vX.Y.Z: what release vX.Y.Z
# published, downloaded as a user gets it (hack/release/check-published.sh:
# the assets from RELEASE_URL, the chart and the image index from
# RELEASE_REGISTRY) into _output/published, and the release's tests run on
# it.
RELEASE_REGISTRY ?= ghcr.io/nodeagent-io
PUBLISHED ?= $(OUTPUT)/published
release-check-published: release-tools helm ## Download release VERSION as published (assets, chart, image) and run the release's tests on it.
	hack/release/check-published.sh $(VERSION) $(RELEASE_URL) $(RELEASE_REGISTRY) $(abspath $(BIN))/helm $(abspath $(PUBLISHED))
	NODEAGENT_RELEASE_DIR=$(abspath $(PUBLISHED)) NODEAGENT_RELEASE_VERSION=$(VERSION) NODEAGENT_RELEASE_URL=$(RELEASE_URL) \
		NODEAGENT_RELEASE_GOOS="$(RELEASE_GOOS)" NODEAGENT_RELEASE_GOARCH="$(RELEASE_GOARCH)" NODEAGENT_RELEASE_IMAGE=$(RELEASE_REGISTRY)/nodeagent \
		HELM_BIN=$(abspath $(BIN))/helm KREW_BIN=$(abspath $(BIN))/krew $(GO) test -tags release -count=1 ./test/release/

vet: ## Run go vet over every module but the reference kubelets' (make verify checks those).
	$(AS_BUILT) $(GO) vet ./...
	$(AS_BUILT) $(GO) vet -tags e2e ./test/e2e/... ./test/e2ekind/... ./test/deploy/...
	$(AS_BUILT) $(GO) vet -tags release ./test/release/
	cd hack/kind && $(GO) vet ./capdrop-runc ./images ./pause
	cd hack/image && $(GO) vet . ./localpublish
	cd hack/dashboard && $(GO) vet .

# verify is what a change must pass before review: formatting, go vet and
# staticcheck over every package of every module (hack/'s, and the
# reference kubelets' two builds, included), the e2e tests' included; the
# docs' links; the generated dashboard.
verify: verify-core verify-refkubelet ## Check formatting (gofmt), go vet and staticcheck over every module, that the agent-only build links the core API group alone (and no generic typed client), the docs' relative links and anchors, their quotes of runs and of make push, no measured figure by hand and no overlay applied without an image (hack/docrules), and that docs/reference.md and the dashboard are what the code writes.

verify-refkubelet: staticcheck ## go vet and staticcheck of the reference kubelets' two builds (hack/refkubelet/check.sh) and of the storage e2e runner (hack/storage-e2e).
	hack/refkubelet/check.sh $(abspath $(BIN))/staticcheck
	cd hack/storage-e2e && $(GO) vet . && $(abspath $(BIN))/staticcheck .

# make test vets the reference kubelets' module and leaves its staticcheck,
# which analyses the kubelet's whole graph from source, to make verify.
vet-refkubelet: ## go vet of the reference kubelets' two builds (make test's part of verify-refkubelet).
	hack/refkubelet/check.sh

verify-core: vet staticcheck ## make verify but the reference kubelets' module.
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt: these files need gofmt -w:"; echo "$$unformatted"; exit 1; fi
	$(BIN)/staticcheck ./...
	$(BIN)/staticcheck -tags e2e ./test/...
	$(BIN)/staticcheck -tags release ./test/release/
	$(BIN)/staticcheck -tags $(AGENT_TAGS) ./cmd/nodeagent
	cd hack/kind && $(abspath $(BIN))/staticcheck ./capdrop-runc ./images ./pause
	cd hack/image && $(abspath $(BIN))/staticcheck . ./localpublish
	cd hack/dashboard && $(abspath $(BIN))/staticcheck .
	@trace=$$($(GO) list -tags $(FULL_TAGS) -deps ./cmd/nodeagent | grep -x 'text/template'); \
	if [ -n "$$trace" ]; then echo "the full build links text/template (which keeps every exported method of client-go's types): keep gRPC on grpcnotrace"; exit 1; fi
	@heavy=$$($(GO) list -tags $(AGENT_TAGS) -deps ./cmd/nodeagent | grep -xE 'k8s.io/client-go/(kubernetes/scheme|informers|gentype)|text/template'); \
	if [ -n "$$heavy" ]; then echo "the agent-only build links $$(echo $$heavy): every API group's types, server-side apply's, or text/template (which keeps every exported method); keep it on pkg/coreclient and gRPC on grpcnotrace (docs/performance.md)"; exit 1; fi
	$(GO) run ./hack/doclinks $$(git ls-files '*.md' '*.yaml' '*.go' '*.json')
	$(GO) run ./hack/docruns check $$(git ls-files '*.md')
	$(GO) run ./hack/docrules $$(git ls-files '*.md' '*.sh' Makefile)
	hack/release/quote-push.sh --check docs/deploy.md
	$(GO) test -count=1 -run '^TestReferenceIsCurrent$$' ./cmd/nodeagent
	@cd hack/dashboard && $(GO) run . | diff -u $(abspath deploy/grafana/nodeagent.json) - >/dev/null || \
		{ echo "deploy/grafana/nodeagent.json is not what hack/dashboard writes: run make dashboard"; exit 1; }

docs: ## Write the docs' quotes of recorded runs (docs/runs/*.json) and of make push's output between their markers; make verify checks them.
	$(GO) run ./hack/docruns render $$(git ls-files '*.md')
	hack/release/quote-push.sh docs/deploy.md

reference: ## Write docs/reference.md (every command's flags, every metric) from the code.
	$(GO) test -count=1 -run '^TestReferenceIsCurrent$$' ./cmd/nodeagent -update-reference

dashboard: ## Write deploy/grafana/nodeagent.json, the Grafana dashboard, from its code in hack/dashboard.
	cd hack/dashboard && $(GO) run . -o $(abspath deploy/grafana/nodeagent.json)

# The race detector needs cgo and a C compiler: where there is none, make
# unit runs the tests without it and says so.
RACE = $(shell command -v "$$($(GO) env CC)" >/dev/null 2>&1 && echo -race)

unit: ## Run the unit tests (with the race detector where a C compiler is installed).
	@[ -n "$(RACE)" ] || echo "make unit: no C compiler ($$($(GO) env CC)), so no race detector: the tests run without it (Debian: apt-get install gcc)"
	$(GO) test $(RACE) ./...
	cd hack/kind && $(GO) test ./capdrop-runc
	cd hack/image && $(GO) test .

# Each fuzz target runs FUZZTIME after its committed seed corpus
# (testdata/fuzz); a failure it finds is written there, to reproduce with
# go test -run. A count of executions, not a duration: Go 1.26's fuzzing
# coordinator can report "context deadline exceeded", with no failing
# input, when a duration ends while a worker is busy (golang/go#75804,
# fixed in Go 1.27). 10,000 take about 20 s each on two cores.
FUZZTIME ?= 10000x
fuzz: ## Fuzz path validation and payload building, FUZZTIME executions each (default 10000x).
	$(GO) test -run '^$$' -fuzz '^FuzzWrite$$' -fuzztime $(FUZZTIME) ./pkg/volumemanager/atomicwriter
	$(GO) test -run '^$$' -fuzz '^FuzzConfigMapVolume$$' -fuzztime $(FUZZTIME) ./pkg/volumemanager/core

# The e2e tests run in E2E_SHARDS processes at once, each with its own
# control plane (hack/e2e.sh); E2E_RUN=<pattern> runs only those, in one.
E2E_SHARDS ?= 3
e2e: controlplane refkubelet build kustomize prometheus image ## Run the end-to-end tests on local control planes (E2E_SHARDS at once) and beside the reference kubelets.
	NODEAGENT_BIN=$(abspath $(BIN))/nodeagent KUSTOMIZE_BIN=$(abspath $(BIN))/kustomize PROMETHEUS_BIN=$(abspath $(BIN))/prometheus NODEAGENT_IMAGE_TAR=$(abspath $(IMAGE_TAR)) \
		E2E_SHARDS=$(E2E_SHARDS) E2E_TIMEOUT=$(E2E_TIMEOUT) $(AS_BUILT) hack/e2e.sh

# Six samples of each benchmark, in the format benchstat compares:
#   benchstat old.txt _output/bench.txt
bench: ## Go benchmarks of the hot paths, six samples each, to _output/bench.txt (benchstat's format).
	@mkdir -p $(OUTPUT)
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./pkg/... | tee $(OUTPUT)/bench.txt

# Update latency per strategy on one node (docs/latency.md): 10, 110 and 1,000
# pods, twenty to a ConfigMap, S = 1m (the kubelet's default), five updates a
# second. About 23 minutes per pod count.
LATENCY_PODS ?= 10 110 1000
latency: controlplane build ## Update latency per strategy at 10, 110 and 1,000 pods on one node, to _output/latency/<pods>/ (long: the record latency-1000 in development.md gives its time).
	@for pods in $(LATENCY_PODS); do \
		$(BIN)/nodeagent compare --nodes 1 --pods-per-node $$pods --shared-configmaps $$(( (pods + 19) / 20 )) \
			--sync-frequency 1m --phase-duration 151s --sample-interval 10s --update-rate 5 \
			--modes every-sync,first-reference,watch-at-sync,watch --output-dir $(OUTPUT)/latency/$$pods || exit 1; \
	done

# How cost grows with nodes (docs/compare.md): 100, 300 and 1,000 simulated
# nodes of 30 pods, with CPU and heap profiles of each measured window,
# then the growth chart of every run under _output/scale. compare picks S: the kubelet's 1m up to 300
# nodes, 4m at 1,000, where every-sync at 1m asks more GETs than this
# machine's apiserver serves.
SCALE_NODES ?= 100 300 1000
scale: controlplane build ## Compare at 100, 300 and 1,000 simulated nodes of 30 pods, with profiles, and the growth chart, to _output/scale/ (long: the records scale-* in development.md give their times).
	@failed=""; for nodes in $(SCALE_NODES); do \
		$(BIN)/nodeagent compare --nodes $$nodes --pods-per-node 30 --sample-interval 10s \
			--profile-dir $(OUTPUT)/scale/$$nodes/profiles --output-dir $(OUTPUT)/scale/$$nodes || failed="$$failed $$nodes"; \
	done; \
	runs=$$(for d in $(OUTPUT)/scale/*/; do [ -f $$d/report.json ] && echo $$d; done); \
	$(GO) run ./hack/growthchart -o $(OUTPUT)/scale/growth.svg $$runs; \
	if [ -n "$$failed" ]; then echo "make scale: the runs of$$failed nodes did not complete; the chart shows the others"; exit 1; fi

# The idle cost of one node's agent beside the real kubelet's (docs/performance.md,
# "Idle cost"): 110 pods, each its own ConfigMap, every agent and
# kubelet its own process; S = 1m over 5 minutes, then S = 10s over 2.
# The CSI driver's Secrets mode on one node under load (docs/csi.md, "What
# it costs"): 1,000 volumes, half of them secret volumes on their tmpfs,
# published through its socket with the pods' tokens, 100 updates a second
# for a minute. As root (the tmpfs mounts).
csi-load: controlplane build ## The CSI driver with 1,000 volumes (half Secrets) under 100 updates a second: update delays, CPU, memory, to _output/tables/csi-load.json (as root; the record csi-load gives its time).
	NODEAGENT_BIN=$(abspath $(BIN))/nodeagent NODEAGENT_MEASURE_CSI_LOAD=1 \
		$(GO) test -tags e2e -count=1 -timeout 15m -v -run '^TestCSIDriverUnderLoad$$' ./test/e2e/

idle: controlplane build refkubelet ## CPU and memory of one node's agent with 110 pods, per strategy, beside the real kubelet's, and of the CSI driver with 110 volumes (long: the records idle-* and csi-idle in development.md give their times).
	NODEAGENT_BIN=$(abspath $(BIN))/nodeagent NODEAGENT_MEASURE_IDLE=1 \
		$(GO) test -tags e2e -count=1 -timeout 10m -v -run '^TestCSIDriverIdleCost$$' ./test/e2e/
	$(BIN)/nodeagent compare --nodes 1 --pods-per-node 110 --sync-frequency 1m --phase-duration 5m --sample-interval 30s --agent-processes \
		--modes every-sync,first-reference,watch,kubelet-v1.28,kubelet-v1.37,kubelet-v1.37-watch --output-dir $(OUTPUT)/idle/1m
	$(BIN)/nodeagent compare --nodes 1 --pods-per-node 110 --sync-frequency 10s --phase-duration 2m --sample-interval 10s --agent-processes \
		--modes every-sync,first-reference,watch,kubelet-v1.28,kubelet-v1.37,kubelet-v1.37-watch --output-dir $(OUTPUT)/idle/10s

# What nodeagent's binaries hold in memory before any work (docs/performance.md,
# "Where the memory is"): each started against an apiserver that refuses
# every connection, its /proc status read after five seconds.
footprint: build ## Resident memory of nodeagent and nodeagent-agent with no work, the binary's pages and anonymous memory apart, to _output/tables/footprint.json (seconds).
	$(GO) run ./hack/footprint -o $(OUTPUT)/tables/footprint.json $(abspath $(BIN))/nodeagent $(abspath $(BIN))/nodeagent-agent

# nodeagent analyze at the scale of the clusters that suffer most
# (docs/performance.md, "analyze at 5,000 nodes"): the local apiserver
# holding ANALYZE_SCALE_NODES Node objects, 30 pods a node and their
# ConfigMaps and Secrets (no kubelets), then analyze end to end.
ANALYZE_SCALE_NODES ?= 5000,10000
analyze-scale: controlplane build ## analyze end to end on the local apiserver holding 5,000 nodes and 150,000 pods with their objects, once and always on (--serve): time, memory, CPU, requests, a change's way to /metrics.
	@mkdir -p $(OUTPUT)/analyze-scale
	NODEAGENT_BIN=$(abspath $(BIN))/nodeagent NODEAGENT_ANALYZE_SCALE_NODES=$(ANALYZE_SCALE_NODES) \
		$(GO) test -tags e2e -count=1 -timeout 0 -v -run '^TestAnalyzeAtScale$$' ./test/e2e/...

# The soak: pod churn, ConfigMap updates and faults at random for
# SOAK_DURATION, then the invariants (test/e2e/soak_test.go).
SOAK_DURATION ?= 30m
soak: controlplane build ## Churn, updates and faults for SOAK_DURATION (default 30m), then check every invariant.
	NODEAGENT_BIN=$(abspath $(BIN))/nodeagent NODEAGENT_SOAK_DURATION=$(SOAK_DURATION) NODEAGENT_RELIABILITY_TABLE=$(abspath $(OUTPUT))/reliability/soak.md \
		$(GO) test -tags e2e -count=1 -timeout 0 -v -run '^TestSoak$$' ./test/e2e/...

# Each stage prints its time and CPU seconds, and make test the table of them
# at the end (hack/stages.sh). The foreground is what the tests wait for:
# the control plane, the reference kubelets, nodeagent and the tools the e2e
# tests run, then the e2e tests and the kind stage, which mostly wait on
# clocks (_output/test-cpu.txt: fewer CPU seconds than two cores give in
# their time, the kind stage's far fewer). Everything else runs in
# background chains, niced, on the cores they leave idle: kind-prep from
# the start; make verify's checks once the main module is compiled; the
# tools the e2e tests do not run, deploy-check and release-check; the unit
# tests and fuzzing beside the kind stage, whose tests leave the most idle.
# The kind stage waits for its node image and helm; a background stage that
# fails stops the run at the next stage boundary.
TEST_STAGES := controlplane bg:kind-prep refkubelet build bg:verify-core,vet-refkubelet kustomize prometheus image \
	bg:helm,promtool,deploy-check,release-check e2e wait:kind-prep wait:helm bg:unit,fuzz e2e-kind-if-possible wait
# make test's release-check builds linux's archives and image for this
# machine's architecture alone: make release builds darwin's and the other
# architecture's, which share the code and the GoReleaser configuration.
test: export RELEASE_GOOS = linux
test: export RELEASE_GOARCH = $(shell $(GO) env GOARCH)
test: ## Build what is missing, then verify, unit tests, fuzzing, e2e tests and, where the machine can, the kind e2e; prints each stage's time and CPU seconds.
	@hack/stages.sh "$(MAKE)" $(TEST_STAGES)

# The demo scenario is nodeagent compare's default (20 nodes x 10 pods, S=5s,
# TTL=25s, 60 s per mode); pass others with DEMO_ARGS, e.g.
#   make demo DEMO_ARGS="--modes every-sync,first-reference --phase-duration 2m"
DEMO_ARGS ?=
demo: controlplane build ## Compare ConfigMap GET load before and after kubernetes#120255 (the record demo in development.md gives its time).
	$(BIN)/nodeagent compare --output-dir $(OUTPUT)/compare $(DEMO_ARGS)

demo-record: controlplane build ## make demo, kept as docs/runs/demo.json and written into the docs that quote it (CHANGELOG="why the figures moved").
	@start=$$(date +%s); $(BIN)/nodeagent compare --output-dir $(OUTPUT)/compare && \
	$(GO) run ./hack/docruns record -name demo -command "make demo" -report $(OUTPUT)/compare/report.json \
		-took $$(( $$(date +%s) - start ))s -changelog "$(CHANGELOG)" -- compare --output-dir $(OUTPUT)/compare && \
	cp $(OUTPUT)/compare/chart.svg docs/images/demo-chart.svg && \
	$(MAKE) docs

kind-prep: ## Build kind and the kind node image's root file system, which need no Docker engine (make test does it in the background).
	hack/kind/prepare.sh

e2e-kind: build kustomize helm prometheus image ## A kind cluster (built offline where no registry answers): e2e tests, compare and the storage suite on it (its time: docs/kind.md; the node image adds more the first time).
	$(AS_BUILT) hack/e2e-kind.sh

# The e2e and kind stages with half the CPU this machine offers (hack/halfcpu.sh:
# a cgroup's CPU quota, which also holds the kind nodes): a test that fails
# here depends on the machine's speed. What they need is built first, at
# full speed. HALFCPU_STAGES chooses the stages, E2E_RUN the e2e tests, e.g.
#   make e2e-halfcpu HALFCPU_STAGES=e2e E2E_RUN='^TestUpdateStorms$$'
HALFCPU_STAGES ?= e2e e2e-kind
e2e-halfcpu: controlplane refkubelet build kustomize prometheus image $(if $(filter e2e-kind,$(HALFCPU_STAGES)),helm kind-prep) ## make e2e and make e2e-kind with half the machine's CPU (HALFCPU_STAGES, E2E_RUN): the suite must hold on a slower machine.
	MAKE="$(MAKE)" hack/halfcpu.sh $(HALFCPU_STAGES)

# make test runs the kind e2e where this machine can have a Docker engine and
# says in one line why not where it cannot; with E2E_KIND_REQUIRED=1 (CI) a
# machine that cannot is a failure.
e2e-kind-if-possible: build kustomize helm prometheus image
	@if [ -n "$$E2E_KIND_REQUIRED" ]; then $(AS_BUILT) hack/e2e-kind.sh; else $(AS_BUILT) E2E_KIND_OPTIONAL=1 hack/e2e-kind.sh; fi

clean: ## Remove build output (the control plane is rebuilt on the next run).
	rm -rf $(OUTPUT)
