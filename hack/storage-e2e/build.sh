#!/usr/bin/env bash
# Builds what `make e2e-kind` needs to run Kubernetes' external storage e2e
# suite against configmaps.nodeagent.io, into an output directory (default
# _output/storage-e2e):
#
#   storage-e2e.test  this module's test binary: the suite's framework and
#                     k8s.io/kubernetes/test/e2e/storage/external alone, not
#                     the whole e2e.test (which links every e2e package of
#                     Kubernetes and takes several times as long to build),
#                     from the k8s.io/kubernetes the kind nodes run;
#   busybox.tar       the image the suite's pods run
#                     (registry.k8s.io/e2e-test-images/busybox at the tag the
#                     pinned suite asks for), assembled by hack/kind/images
#                     from Debian's statically linked busybox, so that a
#                     machine that reaches no image registry can run the suite.
#
# Each is rebuilt only when what pins it changed (a stamp beside it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/hack/lib/build.sh"
out=${1:-"$root/_output/storage-e2e"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$here"

want=$(build::hash go.mod go.sum ./*.go build.sh)
if ! build::current "$out/.suite.stamp" "$want" "$out/storage-e2e.test"; then
  echo "storage-e2e: building the storage e2e suite of $(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
  start=$(date +%s)
  go test -c -trimpath -o "$out/storage-e2e.test.tmp" .
  mv "$out/storage-e2e.test.tmp" "$out/storage-e2e.test"
  echo "$want" >"$out/.suite.stamp"
  echo "storage-e2e: suite built in $(( $(date +%s) - start ))s"
fi

# The tag the suite's pods ask for, read from the pinned suite.
manifest="$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)/test/utils/image/manifest.go"
busybox_version=$(sed -n 's/.*configs\[BusyBox\] = Config{[^,]*, "busybox", "\([^"]*\)"}.*/\1/p' "$manifest")
[[ -n "$busybox_version" ]] || { echo "storage-e2e: no busybox tag in $manifest" >&2; exit 1; }
busybox_tag=registry.k8s.io/e2e-test-images/busybox:$busybox_version
want=$(build::hash build.sh "$root/hack/kind/images/main.go"; echo "$busybox_tag")
if build::current "$out/.busybox.stamp" "$want" "$out/busybox.tar"; then
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "storage-e2e: assembling $busybox_tag from Debian's busybox-static"
# apt-get download needs no root and installs nothing.
(cd "$work" && apt-get download busybox-static >"$work/apt.log" 2>&1) || {
  echo "storage-e2e: apt-get download busybox-static failed (the image the suite's pods run is built from it):" >&2
  tail -5 "$work/apt.log" >&2
  exit 1
}
dpkg-deb -x "$work"/busybox-static_*.deb "$work/deb"
tree=$work/tree
mkdir -p "$tree/bin" "$tree/tmp" "$tree/etc"
cp "$work/deb/bin/busybox" "$tree/bin/busybox"
# Every applet as a link, where busybox's own --install would put it.
for applet in $("$tree/bin/busybox" --list-full); do
  [[ "$applet" == bin/busybox ]] && continue
  mkdir -p "$tree/$(dirname "$applet")"
  ln -sf /bin/busybox "$tree/$applet"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$tree/etc/passwd"
echo 'root:x:0:' >"$tree/etc/group"
(cd "$root/hack/kind" && go build -trimpath -o "$work/images" ./images)
"$work/images" --tag "$busybox_tag" --output "$out/busybox.tar" --tree "$tree" --entrypoint /bin/sh
echo "$want" >"$out/.busybox.stamp"
