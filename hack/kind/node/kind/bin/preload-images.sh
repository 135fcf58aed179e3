#!/bin/sh
# Imports the images under /kind/images into containerd's k8s.io namespace,
# where the kubelet finds them, so that no node ever pulls from a registry.
# nodeagent's offline node image runs it once per boot, before the kubelet.
set -eu
for image in /kind/images/*.tar; do
  [ -e "$image" ] || continue
  ctr --namespace=k8s.io images import --all-platforms --digests --snapshotter=overlayfs "$image" >/dev/null
done
