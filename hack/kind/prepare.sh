#!/usr/bin/env bash
# `make kind-prep`: what `make e2e-kind` builds that needs no Docker engine,
# built ahead: kind, the local registry's image, Kubernetes' storage e2e
# suite (hack/storage-e2e), and the offline node image's root file system
# (hack/kind/build-node-image.sh --no-import). make test runs it in the
# background, at the lowest CPU priority, while its other stages run: the
# e2e tests spend most of their time waiting, and the node image's
# debootstrap waits on the network. The kind stage then only imports the
# image. On a machine where make e2e-kind cannot run (no Docker engine,
# and none can be started) it builds nothing and says so.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! reason=$(hack/kind/docker.sh can 2>&1); then
  echo "kind-prep: nothing to build: ${reason#docker.sh: }"
  exit 0
fi
source hack/lib/build.sh
build::kind "$(pwd)/_output/bin"
# The local registry's image, for the test of the README's install commands.
hack/kind/registry-image.sh >/dev/null
# Kubernetes' storage e2e suite, which the kind tests run against the driver.
hack/storage-e2e/build.sh
# Where Docker Hub answers, make e2e-kind pulls kind's published image.
if [[ -z "${NODE_IMAGE:-}" ]] && timeout 10 bash -c '</dev/tcp/registry-1.docker.io/443' 2>/dev/null; then
  echo "kind-prep: kind is built; Docker Hub answers, so make e2e-kind pulls kind's node image instead of building one"
  exit 0
fi
hack/kind/build-node-image.sh --no-import >/dev/null
echo "kind-prep: kind and the node image's root file system are built"
