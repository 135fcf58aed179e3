#!/usr/bin/env bash
# Builds kube-apiserver v1.31.14 into an output directory (default _output/bin)
# as kube-apiserver-v1.31, from the Go module proxy, through the module in this
# folder: the release whose etcd_requests_total a reader must still understand
# (labelled type, not resource). Rebuilt only when a pin changed; the first
# build downloads its own modules and takes several minutes.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib/build.sh"
out=${1:-"$here/../../_output/bin"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stamp="$out/.kube-apiserver-v1.31.stamp"

want=$(build::hash "$here/go.mod" "$here/go.sum" "$here/build.sh")
if build::current "$stamp" "$want" "$out/kube-apiserver-v1.31"; then
  exit 0
fi
cd "$here"
kube_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
echo "Building kube-apiserver $kube_version into $out/kube-apiserver-v1.31 (several minutes the first time)..."
start=$(date +%s)
go build -trimpath -ldflags "$(build::kube_ldflags "$kube_version")" -o "$out/kube-apiserver-v1.31.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$out/kube-apiserver-v1.31.tmp" "$out/kube-apiserver-v1.31"
echo "$want" >"$stamp"
echo "Built kube-apiserver $kube_version in $(( $(date +%s) - start ))s."
