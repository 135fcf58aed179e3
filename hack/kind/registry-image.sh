#!/usr/bin/env bash
# registry-image.sh: the image of a local registry for the kind cluster, the
# way kind documents one (a registry container on the kind network, which
# every node's containerd reaches as localhost:5001), built here rather than
# pulled: go-containerregistry's registry (in memory), the one make
# release-check publishes to (hack/image/localpublish), assembled by
# ./images. It once was distribution's registry, whose storage drivers
# brought the cloud providers' SDKs into every cold build. Writes
# _output/kind/registry.tar, once per pin, and prints the image's tag.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/hack/lib/build.sh"
tag=nodeagent.local/registry:localpublish
out=$root/_output/kind
bin=$out/registry-bin
mkdir -p "$bin"
hash=$(build::hash "$0" "$here/images/main.go" "$root/hack/image/localpublish/main.go" "$root/hack/image/go.mod" "$root/hack/image/go.sum")
if build::current "$out/.registry.stamp" "$hash" "$out/registry.tar"; then
  echo "$tag"
  exit 0
fi
echo "registry-image: building the local registry (hack/image/localpublish)" >&2
(cd "$root/hack/image" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/registry" ./localpublish)
(cd "$here" && go build -trimpath -o "$bin/images" ./images)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tree/tmp"
"$bin/images" --tag "$tag" --output "$out/registry.tar.tmp" --tree "$work/tree" \
  --file /bin/registry="$bin/registry" --entrypoint /bin/registry,--address=:5000
mv "$out/registry.tar.tmp" "$out/registry.tar"
echo "$hash" >"$out/.registry.stamp"
echo "$tag"
