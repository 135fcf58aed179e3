#!/usr/bin/env bash
# `make e2e-kind`: nodeagent on a real kind cluster (one control plane, two
# workers; real kubelets and containerd), tested and measured there.
#
#   1. docker    a Docker engine (hack/kind/docker.sh: a running one, or, as
#                root on Debian, docker.io installed and started here);
#   2. image     kind's published node image where a registry answers,
#                otherwise one built here (hack/kind/build-node-image.sh);
#   3. cluster   `kind create cluster` from deploy/kind/cluster.yaml, with the
#                apiserver's audit log on and every node's TTL 0 (its TTL
#                controller is off); with the offline image, a static bridge
#                CNI and routes between the nodes (kindnetd's image cannot be
#                fetched);
#   4. deploy    the nodeagent image loaded with `kind load image-archive`,
#                deploy/overlays/kind rendered with that image, as a user
#                deploys what they built (kustomize edit set image), applied,
#                the rollout awaited;
#   5. tests     go test ./test/e2ekind: files of real pods on every node,
#                equal to the kubelet's; updates; deletion; RBAC refusals with
#                the agent's real ServiceAccount; compare --daemonset before
#                and after; nodeagent beside the kind kubelets' Cache strategy;
#                the Helm chart installed in the before mode and upgraded to
#                after, beside the kustomize DaemonSet; analyze's findings and
#                update delays against what the containers hold, and analyze
#                always on (the chart's, alone) serving them as series, with
#                deploy/prometheus's alerts firing on a real Prometheus; the
#                CSI driver beside the kubelet, through Kubernetes' storage e2e
#                suite (hack/storage-e2e) and through its restarts;
#   6. install   the README's commands for a checkout, as written, on a clone
#                of this one: build, analyze, make push to a local registry on
#                the kind network, Helm, kubectl (TestInstallFromREADME).
#
# The cluster, and dockerd if this script started it, are removed on success,
# failure and Ctrl-C (KEEP_CLUSTER=1 keeps the cluster). Exit code 3 means
# this machine cannot run it, and the reason is printed; with
# E2E_KIND_OPTIONAL=1 (make test) that is one line and exit code 0. Each stage's time is
# printed at the end and written to _output/e2e-kind/timings.txt.
#
# Environment: CLUSTER (nodeagent), NODE_IMAGE (a node image
# to use as it is), KEEP_CLUSTER=1, E2E_KIND_RUN (a -run pattern for the tests).
set -euo pipefail
cd "$(dirname "$0")/.."

cluster=${CLUSTER:-nodeagent}
out=_output/e2e-kind
bin=_output/bin
mkdir -p "$out"
: >"$out/timings.txt"

stage_start=$(date +%s)
stage_name=""
stage() {
  finish_stage
  stage_name=$1
  stage_start=$(date +%s)
  echo "=== e2e-kind: $1"
}
finish_stage() {
  [[ -n "$stage_name" ]] && printf '%-10s %4ss\n' "$stage_name" "$(($(date +%s) - stage_start))" >>"$out/timings.txt"
  stage_name=""
}

created=""
cleanup() {
  local code=$?
  finish_stage
  trap - EXIT INT TERM
  if [[ -n "$created" && "${KEEP_CLUSTER:-}" != 1 ]]; then
    echo "=== e2e-kind: deleting the cluster"
    "$bin/kind" delete cluster --name "$cluster" >/dev/null 2>&1 || true
  fi
  [[ "${KEEP_CLUSTER:-}" == 1 ]] || docker rm -f "$cluster-registry" >/dev/null 2>&1 || true
  [[ "${KEEP_CLUSTER:-}" == 1 ]] || hack/kind/docker.sh down || true
  echo "=== e2e-kind: stage times"
  cat "$out/timings.txt"
  exit "$code"
}
trap cleanup EXIT
trap 'echo "e2e-kind: interrupted" >&2; exit 130' INT TERM

if [[ -n "${E2E_KIND_OPTIONAL:-}" ]]; then
  # make test: a machine that cannot have Docker gets one line, not a failure.
  stage_name=docker stage_start=$(date +%s)
  docker_status=0
  hack/kind/docker.sh up 2>"$out/docker.err" || docker_status=$?
  if [[ $docker_status == 3 ]]; then
    trap - EXIT
    echo "e2e-kind: skipped: $(sed 's/^docker.sh: //' "$out/docker.err" | tail -1)"
    exit 0
  fi
  echo "=== e2e-kind: docker"
  cat "$out/docker.err" >&2
  [[ $docker_status == 0 ]] || exit "$docker_status"
else
  stage docker
  hack/kind/docker.sh up
fi

# kind from the module pinned in hack/kind, so every machine runs the same.
source hack/lib/build.sh
build::kind "$(pwd)/$bin"
# The module's source, which a kind binary built elsewhere leaves out of
# this machine's module cache.
(cd hack/kind && go mod download sigs.k8s.io/kind)
kind_version=$(cd hack/kind && go list -m -f '{{.Version}}' sigs.k8s.io/kind)
default_image=$(grep -o 'kindest/node:[^"]*' "$(cd hack/kind && go list -m -f '{{.Dir}}' sigs.k8s.io/kind)/pkg/apis/config/defaults/image.go")

stage image
# Whether Docker Hub, where kind's images live, can be reached at all: a
# connection, so that an offline machine finds out in seconds.
registry_answers() { timeout 10 bash -c '</dev/tcp/registry-1.docker.io/443' 2>/dev/null; }
config="$out/cluster.yaml"
cp deploy/kind/cluster.yaml "$config"
offline=""
if [[ -n "${NODE_IMAGE:-}" ]]; then
  node_image=$NODE_IMAGE
elif docker image inspect "$default_image" >/dev/null 2>&1 || { registry_answers && docker pull "$default_image"; }; then
  node_image=$default_image
else
  echo "e2e-kind: no registry answers for $default_image: using a node image built here (built once: about 14 minutes on a fresh two-core machine)"
  node_image=$(hack/kind/build-node-image.sh)
  offline=1
  # Its containerd has no kindnetd image; the pod network is set up below.
  printf 'networking:\n  disableDefaultCNI: true\n' >>"$config"
fi
echo "e2e-kind: node image $node_image, kind $kind_version"
# Kubernetes' storage e2e suite and the image its pods run (built once, here
# or by make kind-prep).
hack/storage-e2e/build.sh
# The local registry the install test pushes to (built once, here or by make
# kind-prep).
registry_image=$(hack/kind/registry-image.sh)
docker load -i _output/kind/registry.tar >/dev/null

stage cluster
if "$bin/kind" get clusters 2>/dev/null | grep -qx "$cluster"; then
  echo "e2e-kind: deleting the existing kind cluster $cluster, to start clean (CLUSTER=another-name keeps it)"
  "$bin/kind" delete cluster --name "$cluster" >/dev/null 2>&1 || true
fi
created=1
# With the offline image no node is Ready before its pod network exists.
wait_ready=3m
[[ -z "$offline" ]] || wait_ready=0s
"$bin/kind" create cluster --name "$cluster" --config "$config" --image "$node_image" --wait "$wait_ready"
kubeconfig="$out/kubeconfig"
"$bin/kind" get kubeconfig --name "$cluster" >"$kubeconfig"
# kubectl as the control-plane node has it, so the host needs none.
kubectl() { docker exec -i "$cluster-control-plane" kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }
if [[ -n "$offline" ]]; then
  hack/kind/pod-network.sh "$cluster"
fi
kubectl wait --for=condition=Ready nodes --all --timeout=180s
# The TTL controller is off (deploy/kind/cluster.yaml): every node gets the
# TTL it would give a three-node cluster, and a test may change one node's.
kubectl annotate nodes --all --overwrite node.alpha.kubernetes.io/ttl=0

stage deploy
"$bin/kind" load image-archive _output/nodeagent-image.tar --name "$cluster"
# The image the pods of Kubernetes' storage e2e suite run (hack/storage-e2e).
"$bin/kind" load image-archive _output/storage-e2e/busybox.tar --name "$cluster"
# The image as make image tagged it (nodeagent:<version>), read from the
# tarball itself; the overlay is rendered from a copy with that image set,
# and the tests check that the agents run exactly it.
agent_image=$(tar -xOf _output/nodeagent-image.tar manifest.json | sed -n 's/.*"RepoTags":\["\([^"]*\)".*/\1/p')
if [[ -z "$agent_image" ]]; then
  echo "e2e-kind: _output/nodeagent-image.tar has no tag: run make image" >&2
  exit 1
fi
rendered=$(mktemp -d) repo=$(pwd)
cp -r deploy "$rendered/"
(cd "$rendered/deploy/overlays/kind" && "$repo/$bin/kustomize" edit set image "ghcr.io/nodeagent-io/nodeagent=$agent_image")
"$bin/kustomize" build "$rendered/deploy/overlays/kind" | kubectl apply --server-side -f -
rm -rf "$rendered"
kubectl -n nodeagent rollout status daemonset/nodeagent --timeout=180s

stage tests
# The tests' pods run the nodes' sandbox image, which every node has.
pod_image=$(docker exec "$cluster-control-plane" sh -c "sed -n 's/.*sandbox_image = \"\(.*\)\"/\1/p' /etc/containerd/config.toml")
pod_image=${pod_image:-registry.k8s.io/pause:3.10}
export NODEAGENT_KIND_CLUSTER=$cluster NODEAGENT_KIND_KUBECONFIG=$(pwd)/$kubeconfig NODEAGENT_KIND_POD_IMAGE=$pod_image \
  NODEAGENT_KIND_AGENT_IMAGE=$agent_image NODEAGENT_KIND_REGISTRY_IMAGE=$registry_image \
  NODEAGENT_BIN=$(pwd)/$bin/nodeagent NODEAGENT_HELM_BIN=$(pwd)/$bin/helm NODEAGENT_KIND_OUTPUT=$(pwd)/$out \
  NODEAGENT_PROMETHEUS_BIN=$(pwd)/$bin/prometheus NODEAGENT_STORAGE_E2E=$(pwd)/_output/storage-e2e/storage-e2e.test
# TestInstallFromREADME replaces the agents the other tests use: it runs
# last, on its own.
install_test='^TestInstallFromREADME$'
if [[ -n "${E2E_KIND_RUN:-}" ]]; then
  go test -tags e2e -count=1 -timeout 40m -v -run "$E2E_KIND_RUN" ./test/e2ekind/
else
  go test -tags e2e -count=1 -timeout 40m -v -skip "$install_test" ./test/e2ekind/
  stage install
  go test -tags e2e -count=1 -timeout 10m -v -run "$install_test" ./test/e2ekind/
fi
