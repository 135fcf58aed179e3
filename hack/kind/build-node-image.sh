#!/usr/bin/env bash
# Builds a kind node image without any image registry, for machines that
# reach only the Go module proxy and Debian's packages. Usage:
#
#   hack/kind/build-node-image.sh [--no-import] [OUTPUT_DIR]    (default _output/kind)
#
# With --no-import it stops at node-rootfs.tar, which needs no Docker engine:
# make test builds it in the background while the e2e tests run
# (hack/kind/prepare.sh), and the kind stage only imports it. Two builds at
# once take turns (a lock in OUTPUT_DIR); the second finds the first's work.
#
# It prints the image's name on standard output, everything else (progress,
# the builds' own output) on standard error. What it builds, once, cached
# under OUTPUT_DIR (a stamp records a hash of every input):
#
#   bin/      kubelet, kubeadm, kubectl, kube-scheduler and kube-proxy from
#             this folder's module (the same k8s.io/kubernetes as
#             hack/controlplane, whose etcd, kube-apiserver and
#             kube-controller-manager are reused), CoreDNS from
#             hack/kind/coredns, crictl from hack/kind/crictl, and our pause
#             and capdrop-runc;
#   images/   the images kubeadm runs (registry.k8s.io/kube-apiserver, ...,
#             etcd, coredns, pause, with the tags kubeadm v1.37.2 asks for),
#             assembled by ./images from those binaries;
#   debian-bookworm.tar   a debootstrap of Debian bookworm with systemd,
#             containerd, runc, iptables, conntrack, jq and the CNI plugins;
#   node-rootfs.tar       that root file system laid out as kind's base image
#             (kind's own files, read from the pinned kind module), with the
#             binaries, the images and a unit that imports them at boot.
#
# The node image (nodeagent.local/kind-node:<version>) is `docker import`ed
# from node-rootfs.tar, so a machine whose Docker storage was wiped gets it
# back in seconds. On a fresh two-core machine it takes the "image" time of
# docs/kind.md's table; about 8 minutes where `make controlplane` has
# run; seconds once built.
set -euo pipefail
# Standard output is for the image's name alone.
exec 3>&1 1>&2

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/hack/lib/build.sh"
import=1
if [[ "${1:-}" == --no-import ]]; then
  import=""
  shift
fi
out=${1:-"$root/_output/kind"}
mkdir -p "$out/bin" "$out/images"
out=$(cd "$out" && pwd)
exec 9>"$out/.build.lock"
flock 9

kube_version=$(cd "$root/hack/controlplane" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
kind_version=$(cd "$here" && go list -m -f '{{.Version}}' sigs.k8s.io/kind)
node_image="nodeagent.local/kind-node:$kube_version"
debian_suite=bookworm
debian_mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What kind's base image installs, on Debian's containerd and runc; jq is
# needed by kind's containerd hook.
debian_packages=systemd,systemd-sysv,dbus,containerd,runc,iptables,nftables,conntrack,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,jq,procps,containernetworking-plugins,socat,ebtables

# kind's base image runs systemd as PID 1 through kind's entrypoint (docker
# import cannot set its STOPSIGNAL; kind removes nodes with SIGKILL anyway).
import_changes=(--change 'ENV container=docker'
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]')

stage() { echo "build-node-image: $*"; }
elapsed() { echo "$(( $(date +%s) - $1 ))s"; }

inputs() {
  cat "$here/build-node-image.sh" "$here/go.mod" "$here/go.sum" "$here/coredns/go.mod" "$here/coredns/go.sum" "$here/coredns/main.go" \
    "$here/crictl/go.mod" "$here/crictl/go.sum" \
    "$root/hack/controlplane/go.mod" "$root/hack/controlplane/go.sum" "$root/hack/lib/build.sh"
  find "$here/node" "$here/images" "$here/pause" "$here/capdrop-runc" -type f | sort | xargs cat
  echo "$debian_packages $debian_suite"
  go version
}
want=$(inputs | sha256sum | cut -d' ' -f1)
stamp="$out/.node-image.stamp"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -f "$out/node-rootfs.tar" ]]; then
  if [[ -n "$import" ]] && ! docker image inspect "$node_image" >/dev/null 2>&1; then
    stage "importing $node_image from $out/node-rootfs.tar"
    docker import "${import_changes[@]}" "$out/node-rootfs.tar" "$node_image" >/dev/null
  fi
  echo "$node_image" >&3
  exit 0
fi

total=$(date +%s)
ldflags=$(build::kube_ldflags "$kube_version")

# Debian's packages first: it waits on the network, while make test's
# refkubelet stage compiles the kubelet v1.37 whose packages the node's
# kubelet then finds compiled.
start=$(date +%s)
debian="$out/debian-$debian_suite.tar"
debian_stamp="$out/.debian.stamp"
debian_want=$(echo "$debian_packages $debian_suite $debian_mirror" | sha256sum | cut -d' ' -f1)
if [[ ! -f "$debian" || ! -f "$debian_stamp" || "$(cat "$debian_stamp")" != "$debian_want" ]]; then
  if ! command -v debootstrap >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    stage "installing Debian's debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap >"$out/apt-debootstrap.log" 2>&1 || true
  fi
  command -v debootstrap >/dev/null || {
    echo "build-node-image: debootstrap is missing; install it (apt-get install debootstrap) and run again" >&2
    exit 1
  }
  stage "debootstrap $debian_suite from $debian_mirror (a few minutes)"
  tmp=$(mktemp -d "$out/debootstrap.XXXX")
  trap 'rm -rf "$tmp"' EXIT
  debootstrap --variant=minbase --include="$debian_packages" "$debian_suite" "$tmp" "$debian_mirror" >"$out/debootstrap.log" 2>&1 || {
    echo "build-node-image: debootstrap failed; the end of $out/debootstrap.log:" >&2
    tail -20 "$out/debootstrap.log" >&2
    exit 1
  }
  rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*
  tar -C "$tmp" --numeric-owner -cf "$debian.tmp" .
  mv "$debian.tmp" "$debian"
  rm -rf "$tmp"
  trap - EXIT
  echo "$debian_want" >"$debian_stamp"
  stage "debootstrap done in $(elapsed "$start")"
fi

start=$(date +%s)
stage "building etcd, kube-apiserver and kube-controller-manager (make controlplane)"
"$root/hack/controlplane/build.sh" "$root/_output/bin"
stage "building kubelet, kubeadm, kubectl, kube-scheduler, kube-proxy $kube_version and kind $kind_version (about 10 minutes the first time)"
# From the control plane's module, with its flags (cgo as the host has it,
# as its kube-apiserver, which the node runs too, is built): the packages
# they share with it and with the reference kubelet v1.37 (hack/refkubelet,
# the same module versions) are compiled once for all three.
for cmd in kubelet kubeadm kubectl kube-scheduler kube-proxy; do
  (cd "$root/hack/controlplane" && go build -trimpath -ldflags "$ldflags" -o "$out/bin/$cmd" "k8s.io/kubernetes/cmd/$cmd")
done
(
  cd "$here"
  CGO_ENABLED=0 go build -trimpath -o "$out/bin/pause" ./pause
  CGO_ENABLED=0 go build -trimpath -o "$out/bin/capdrop-runc" ./capdrop-runc
  go build -trimpath -o "$out/bin/images" ./images
)
build::kind "$root/_output/bin"
stage "building CoreDNS and crictl"
# CoreDNS with the plugins of kubeadm's Corefile alone (coredns/main.go).
(cd "$here/coredns" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/bin/coredns" .)
crictl_version=$(cd "$here/crictl" && go list -m -f '{{.Version}}' sigs.k8s.io/cri-tools)
(cd "$here/crictl" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$crictl_version" \
  -o "$out/bin/crictl" sigs.k8s.io/cri-tools/cmd/crictl)
stage "binaries built in $(elapsed "$start")"


start=$(date +%s)
stage "assembling the images kubeadm runs"
# library_tree ROOT BINARY DIR copies into DIR the shared libraries that
# BINARY (a path inside ROOT; ROOT empty for this machine) loads, from ROOT,
# and links /lib, /lib64, /bin and /sbin to usr/ as merged-/usr Debian does.
# A binary linked against the C library takes its libraries with it.
library_tree() {
  local in=() lib dir link
  [[ -z "$1" ]] || in=(chroot "$1")
  mkdir -p "$3"
  for lib in $("${in[@]}" ldd "$2" 2>/dev/null | grep -o '/[^ ]*' || true); do
    dir=$("${in[@]}" readlink -f "$(dirname "$lib")")
    mkdir -p "$3$dir"
    cp -L "$1$dir/$(basename "$lib")" "$3$dir/"
  done
  for link in lib lib64 bin sbin; do
    [[ -d "$3/usr/$link" && ! -e "$3/$link" ]] && ln -s "usr/$link" "$3/$link"
  done
  return 0
}
work=$(mktemp -d "$out/assemble.XXXX")
trap 'rm -rf "$work"' EXIT
image() { # NAME TAG BINARY DEST [ENTRYPOINT]
  local tree="$work/tree-$1"
  library_tree "" "$3" "$tree"
  [[ -n "$(ls -A "$tree")" ]] || tree=""
  "$out/bin/images" --tag "$2" --output "$out/images/$1.tar" ${tree:+--tree "$tree"} --file "$4=$3" ${5:+--entrypoint "$5"}
}
registry=registry.k8s.io
# The tags kubeadm asks for, read from the pinned kubeadm's constants.
consts="$(cd "$here" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/cmd/kubeadm/app/constants/constants.go"
etcd_tag=$(grep -o 'DefaultEtcdVersion = "[^"]*"' "$consts" | cut -d'"' -f2)
coredns_tag=$(grep -o 'CoreDNSVersion = "[^"]*"' "$consts" | cut -d'"' -f2)
pause_tag=$(grep -o 'PauseVersion = "[^"]*"' "$consts" | cut -d'"' -f2)
image kube-apiserver "$registry/kube-apiserver:$kube_version" "$root/_output/bin/kube-apiserver" /usr/local/bin/kube-apiserver
image kube-controller-manager "$registry/kube-controller-manager:$kube_version" "$root/_output/bin/kube-controller-manager" /usr/local/bin/kube-controller-manager
image kube-scheduler "$registry/kube-scheduler:$kube_version" "$out/bin/kube-scheduler" /usr/local/bin/kube-scheduler
image etcd "$registry/etcd:$etcd_tag" "$root/_output/bin/etcd" /usr/local/bin/etcd
image coredns "$registry/coredns/coredns:$coredns_tag" "$out/bin/coredns" /coredns /coredns
image pause "$registry/pause:$pause_tag" "$out/bin/pause" /pause /pause
# The pause that `nodeagent compare --daemonset` runs by default, which kind's
# published images also carry.
image pause-3.10 "$registry/pause:3.10" "$out/bin/pause" /pause /pause

# kube-proxy runs iptables-restore and conntrack: its image carries them from
# the Debian root file system, with their libraries and xtables modules.
mkdir -p "$work/debian" "$work/tree-kube-proxy/usr/sbin"
tar -C "$work/debian" -xf "$debian"
proxy_tree="$work/tree-kube-proxy"
mkdir -p "$proxy_tree/usr/lib/x86_64-linux-gnu"
cp -a "$work/debian/usr/lib/x86_64-linux-gnu/xtables" "$proxy_tree/usr/lib/x86_64-linux-gnu/"
# The modules are loaded at run time, so the tools' ldd does not list what
# they link: libxt_statistic needs libm, and without it every iptables-restore
# of kube-proxy fails once a Service has two endpoints (kube-dns has), leaving
# the node with no Service rules at all.
for module in "$work/debian"/usr/lib/x86_64-linux-gnu/xtables/*.so; do
  library_tree "$work/debian" "/usr/lib/x86_64-linux-gnu/xtables/${module##*/}" "$proxy_tree"
done
for tool in xtables-nft-multi conntrack; do
  cp "$work/debian/usr/sbin/$tool" "$proxy_tree/usr/sbin/"
  library_tree "$work/debian" "/usr/sbin/$tool" "$proxy_tree"
done
for link in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -s xtables-nft-multi "$proxy_tree/usr/sbin/$link"
done
mkdir -p "$proxy_tree/run" "$proxy_tree/tmp"
"$out/bin/images" --tag "$registry/kube-proxy:$kube_version" --output "$out/images/kube-proxy.tar" \
  --tree "$proxy_tree" --file "/usr/local/bin/kube-proxy=$out/bin/kube-proxy"
stage "images assembled in $(elapsed "$start")"

start=$(date +%s)
stage "laying out the node's root file system as kind's base image $kind_version"
rootfs="$work/debian"
kind_src=$(cd "$here" && go list -m -f '{{.Dir}}' sigs.k8s.io/kind)/images/base/files
# kind's files, as kind's base image Dockerfile copies them.
install -m 0755 "$kind_src"/usr/local/bin/* "$rootfs/usr/local/bin/"
mkdir -p "$rootfs/kind/bin" "$rootfs/LICENSES" "$rootfs/etc/systemd/system/kubelet.service.d" "$rootfs/etc/kubernetes/manifests"
cp -r "$kind_src/kind/." "$rootfs/kind/"
chmod 0755 "$rootfs/kind" "$rootfs/kind/bin" "$rootfs"/kind/bin/*
cp "$kind_src"/LICENSES/* "$rootfs/LICENSES/"
cp "$kind_src"/etc/crictl.yaml "$rootfs/etc/"
cp "$kind_src"/etc/containerd/* "$rootfs/etc/containerd/"
cp "$kind_src"/etc/default/* "$rootfs/etc/default/"
cp "$kind_src"/etc/sysctl.d/* "$rootfs/etc/sysctl.d/"
cp "$kind_src"/etc/systemd/system/*.service "$kind_src"/etc/systemd/system/*.slice "$rootfs/etc/systemd/system/"
cp "$kind_src"/etc/systemd/system/kubelet.service.d/* "$rootfs/etc/systemd/system/kubelet.service.d/"
# Ours: the image preload and the default StorageClass.
cp -r "$here/node/." "$rootfs/"
# Debian's containerd in the place kind's unit runs it from; the CNI plugins
# where containerd looks for them.
ln -sf /usr/bin/containerd "$rootfs/usr/local/bin/containerd"
rm -rf "$rootfs/opt/cni/bin" && mkdir -p "$rootfs/opt/cni" && ln -s /usr/lib/cni "$rootfs/opt/cni/bin"
install -m 0755 "$out"/bin/{kubelet,kubeadm,kubectl} "$rootfs/usr/bin/"
install -m 0755 "$out/bin/crictl" "$rootfs/usr/local/bin/crictl"
install -m 0755 "$out/bin/capdrop-runc" "$rootfs/usr/local/bin/capdrop-runc"
mkdir -p "$rootfs/kind/images" && cp "$out"/images/*.tar "$rootfs/kind/images/"
echo "$kube_version" >"$rootfs/kind/version"
# containerd: the pause image kubeadm names; runc through capdrop-runc, which
# changes nothing where the capability bounding set is full and lets
# privileged pods (kube-proxy) start where it is not; and pods' oom_score_adj
# kept at or above containerd's own, which an unprivileged-enough node cannot
# lower (without it every sandbox fails to start there).
sed -i \
  -e "s|sandbox_image = .*|sandbox_image = \"$registry/pause:$pause_tag\"|" \
  -e 's|restrict_oom_score_adj = false|restrict_oom_score_adj = true|' \
  -e 's|^\(\s*\)SystemdCgroup = true|&\n\1BinaryName = "/usr/local/bin/capdrop-runc"|' \
  "$rootfs/etc/containerd/config.toml"
chroot "$rootfs" ctr oci spec \
  | chroot "$rootfs" jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | chroot "$rootfs" jq 'del(.process.rlimits)' >"$rootfs/etc/containerd/cri-base.json"
# systemd in a container, as kind's base image sets it up.
find "$rootfs/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
rm -f "$rootfs"/lib/systemd/system/multi-user.target.wants/* "$rootfs"/etc/systemd/system/*.wants/* \
  "$rootfs"/lib/systemd/system/local-fs.target.wants/* "$rootfs"/lib/systemd/system/sockets.target.wants/*udev* \
  "$rootfs"/lib/systemd/system/sockets.target.wants/*initctl* "$rootfs"/lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >>"$rootfs/etc/systemd/journald.conf"
chroot "$rootfs" systemctl enable kubelet.service containerd.service undo-mount-hacks.service preload-images.service >/dev/null 2>&1
chroot "$rootfs" systemctl mask systemd-binfmt.service >/dev/null 2>&1
rm -rf "$rootfs"/dev/* "$rootfs"/proc/* "$rootfs"/sys/* "$rootfs"/run/* "$rootfs"/tmp/*
tar -C "$rootfs" --numeric-owner -cf "$out/node-rootfs.tar.tmp" .
mv "$out/node-rootfs.tar.tmp" "$out/node-rootfs.tar"
echo "$want" >"$stamp"
stage "root file system laid out in $(elapsed "$start")"

if [[ -n "$import" ]]; then
  docker import "${import_changes[@]}" "$out/node-rootfs.tar" "$node_image" >/dev/null
fi
stage "built $node_image in $(elapsed "$total")"
echo "$node_image" >&3
