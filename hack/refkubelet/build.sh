#!/usr/bin/env bash
# Builds the reference kubelets refkubelet-v1.28 and refkubelet-v1.37 into an
# output directory (default _output/bin), from the Go module proxy: one
# source, built once per module file (v1.28.mod, go.mod).
#
# Each binary is rebuilt only when it is missing or when what pins it
# changed: its stamp records a hash of its module file, its go.sum, the
# sources, this script and the Go version. The v1.37 build shares the
# module cache with hack/controlplane and takes about two minutes; the v1.28
# build downloads its own modules and takes about five.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib/build.sh"
out=${1:-"$here/../../_output/bin"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$here"

# build <name> <module file> <build tags>
build() {
  local name=$1 modfile=$2 tags=$3
  local sumfile=${modfile%.mod}.sum
  local stamp="$out/.$name.stamp"
  local want
  want=$(build::hash "$modfile" "$sumfile" ./*.go build.sh)
  if build::current "$stamp" "$want" "$out/$name"; then
    return
  fi
  local kube_version ldflags
  kube_version=$(go list -modfile="$modfile" -m -f '{{.Version}}' k8s.io/kubernetes)
  # The version the kubelet reports as its Node's kubeletVersion.
  ldflags=$(build::kube_ldflags "$kube_version")
  echo "Building $name (the kubelet of k8s.io/kubernetes $kube_version) into $out..."
  local start
  start=$(date +%s)
  go build -trimpath -modfile="$modfile" -tags "$tags" -ldflags "$ldflags" -o "$out/$name.tmp" .
  mv "$out/$name.tmp" "$out/$name"
  echo "$want" >"$stamp"
  echo "Built $name in $(( $(date +%s) - start ))s."
}

build refkubelet-v1.37 go.mod ""
build refkubelet-v1.28 v1.28.mod refkubelet_v1_28
