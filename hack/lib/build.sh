#!/usr/bin/env bash
# The build scripts' common steps (hack/*/build.sh, hack/kind/*.sh). Source
# it; every function is named build::*.
#
# A stamp file beside the binaries records a hash of what pins them (module
# files, sources, the script, the Go version), so that a build runs only
# when a binary is missing or its inputs changed.

# build::hash FILE...: the hash a stamp records for these inputs and the Go
# version.
build::hash() {
  cat "$@" <(go version) | sha256sum | cut -d' ' -f1
}

# build::current STAMP HASH BINARY...: whether every binary is there and the
# stamp holds HASH.
build::current() {
  local stamp=$1 hash=$2
  shift 2
  local bin
  for bin in "$@"; do
    [[ -x "$bin" ]] || return 1
  done
  [[ -f "$stamp" && "$(cat "$stamp")" == "$hash" ]]
}

# build::kube_ldflags VERSION: -ldflags that make a Kubernetes binary report
# VERSION (k8s.io/component-base/version, what /version and a Node's
# kubeletVersion show; without it a binary calls itself v0.0.0-master).
build::kube_ldflags() {
  local version=$1 major minor
  IFS=. read -r major minor _ <<<"${version#v}"
  local pkg=k8s.io/component-base/version
  echo "-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor" \
    "-X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}

# build::kind OUT_DIR: kind from the module pinned in hack/kind, into
# OUT_DIR/kind, once per pin.
build::kind() {
  local out=$1 kind_dir
  kind_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../kind" && pwd)
  local hash
  hash=$(build::hash "$kind_dir/go.mod" "$kind_dir/go.sum")
  if build::current "$out/.kind.stamp" "$hash" "$out/kind"; then
    return
  fi
  mkdir -p "$out"
  (cd "$kind_dir" && go build -trimpath -o "$out/kind.tmp" sigs.k8s.io/kind)
  mv "$out/kind.tmp" "$out/kind"
  echo "$hash" >"$out/.kind.stamp"
}
