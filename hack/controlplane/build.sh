#!/usr/bin/env bash
# Builds the pinned etcd, kube-apiserver and kube-controller-manager into an output directory (default
# _output/bin), from the Go module proxy, through the module in this folder.
#
# It rebuilds only when a binary is missing or when what pins it changed: the
# stamp file records a hash of this module's go.mod, go.sum, this script and
# the Go version. The first build takes a few minutes; later calls return at
# once.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib/build.sh"
out=${1:-"$here/../../_output/bin"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stamp="$out/.controlplane.stamp"

want=$(build::hash "$here/go.mod" "$here/go.sum" "$here/build.sh")
if build::current "$stamp" "$want" "$out/etcd" "$out/kube-apiserver" "$out/kube-controller-manager"; then
  exit 0
fi

# The versions come from go.mod, so that pinning a new release is one edit.
kube_version=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(cd "$here" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
# What /version, `kubectl version` and the apiserver's own compatibility
# checks read.
ldflags=$(build::kube_ldflags "$kube_version")

echo "Building etcd $etcd_version, kube-apiserver and kube-controller-manager $kube_version into $out (a few minutes the first time)..."
cd "$here"
start=$(date +%s)
go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3
go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
# Of kube-controller-manager the local control plane runs the serviceaccount
# and root-ca-cert-publisher controllers (every pod's service-account volume
# needs them), and the DaemonSet controller for the tests of
# `nodeagent compare --daemonset`; the binary is built whole.
go build -trimpath -ldflags "$ldflags" -o "$out/kube-controller-manager.tmp" k8s.io/kubernetes/cmd/kube-controller-manager
for bin in etcd kube-apiserver kube-controller-manager; do
  mv "$out/$bin.tmp" "$out/$bin"
done
echo "$want" >"$stamp"
echo "Built the control plane in $(( $(date +%s) - start ))s."
