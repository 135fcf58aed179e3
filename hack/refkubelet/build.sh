#!/usr/bin/env bash
# Builds the reference kubelets refkubelet-v1.28 and refkubelet-v1.36 into an
# output directory (default _output/bin), from the Go module proxy: one
# source, built once per module file (v1.28.mod, go.mod).
#
# Each binary is rebuilt only when it is missing or when what pins it
# changed: its stamp records a hash of its module file, its go.sum, the
# sources, this script and the Go version. The v1.36 build shares the
# module cache with hack/controlplane and takes about two minutes; the v1.28
# build downloads its own modules and takes about five.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
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
  want=$(cat "$modfile" "$sumfile" ./*.go build.sh <(go version) | sha256sum | cut -d' ' -f1)
  if [[ -x "$out/$name" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return
  fi
  local kube_version kube_major kube_minor
  kube_version=$(go list -modfile="$modfile" -m -f '{{.Version}}' k8s.io/kubernetes)
  IFS=. read -r kube_major kube_minor _ <<<"${kube_version#v}"
  # component-base/version is what the kubelet reports as its Node's
  # kubeletVersion; without it the Node would say v0.0.0-master.
  local pkg=k8s.io/component-base/version
  local ldflags="-s -w -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$kube_major -X $pkg.gitMinor=$kube_minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "Building $name (the kubelet of k8s.io/kubernetes $kube_version) into $out..."
  local start
  start=$(date +%s)
  go build -trimpath -modfile="$modfile" -tags "$tags" -ldflags "$ldflags" -o "$out/$name.tmp" .
  mv "$out/$name.tmp" "$out/$name"
  echo "$want" >"$stamp"
  echo "Built $name in $(( $(date +%s) - start ))s."
}

build refkubelet-v1.36 go.mod ""
build refkubelet-v1.28 v1.28.mod refkubelet_v1_28
