#!/usr/bin/env bash
# registry-image.sh: the image of a local registry for the kind cluster, the
# way kind documents one (a registry container on the kind network, which
# every node's containerd reaches as localhost:5001), built here rather than
# pulled: distribution's registry from the module proxy, assembled by
# ./images with its configuration. Writes _output/kind/registry.tar, once
# per pin, and prints the image's tag.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/hack/lib/build.sh"
version=v3.1.2
tag=nodeagent.local/registry:$version
out=$root/_output/kind
bin=$out/registry-bin
mkdir -p "$bin"
hash=$(build::hash "$0" "$here/images/main.go")
if build::current "$out/.registry.stamp" "$hash" "$out/registry.tar"; then
  echo "$tag"
  exit 0
fi
echo "registry-image: building distribution's registry $version (a minute or two the first time)" >&2
CGO_ENABLED=0 GOBIN=$bin go install -trimpath -ldflags "-s -w" "github.com/distribution/distribution/v3/cmd/registry@$version"
(cd "$here" && go build -trimpath -o "$bin/images" ./images)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tree/etc/distribution" "$work/tree/var/lib/registry"
cat >"$work/tree/etc/distribution/config.yml" <<'YAML'
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: /var/lib/registry
http:
  addr: :5000
YAML
"$bin/images" --tag "$tag" --output "$out/registry.tar.tmp" --tree "$work/tree" \
  --file /bin/registry="$bin/registry" --entrypoint /bin/registry,serve,/etc/distribution/config.yml
mv "$out/registry.tar.tmp" "$out/registry.tar"
echo "$hash" >"$out/.registry.stamp"
echo "$tag"
