#!/usr/bin/env bash
# install-commands.sh REGISTRY VERSION CHART_VERSION PLATFORMS DIGEST OUTPUT [SHOWN]:
# after make push, a kustomization for each deployable part of deploy/ that
# runs exactly the image pushed (OUTPUT/deploy/<part>/kustomization.yaml:
# this checkout's overlay, the image by tag and digest), and the commands
# that install what was pushed, printed. Every command printed works from
# the checkout's root as it is; docs/deploy.md quotes this output for an
# example registry (make docs), and make e2e-kind runs the README's, which
# are these. SHOWN is how the commands name OUTPUT (default: its path from
# the checkout's root), for docs/deploy.md's quote, written elsewhere.
set -euo pipefail
registry=$1 version=$2 chart_version=$3 platforms=$4 digest=$5 output=$6 shown=${7:-}
root=$(cd "$(dirname "$0")/../.." && pwd -P)

# relative TARGET BASE: the path of TARGET from the directory BASE, both
# absolute and resolved; GNU realpath's --relative-to, which macOS lacks.
relative() {
  local target=$1 base=$2 up="" rest
  while [[ "$base" != / && "$target" != "$base" && "$target" != "$base"/* ]]; do
    base=$(dirname "$base") up+="../"
  done
  if [[ "$target" == "$base" ]]; then rest=""; elif [[ "$base" == / ]]; then rest=${target#/}; else rest=${target#"$base"/}; fi
  rest="$up$rest"
  rest=${rest%/}
  echo "${rest:-.}"
}

parts=(overlays/before overlays/after overlays/watch overlays/csi overlays/csi-webhook overlays/csi-secrets analyze-serve)
for part in "${parts[@]}"; do
  dir="$output/deploy/${part#overlays/}"
  mkdir -p "$dir"
  resource=$(relative "$root/deploy/$part" "$(cd "$dir" && pwd -P)")
  cat >"$dir/kustomization.yaml" <<YAML
# Written by make push: deploy/$part of this checkout, running the image it
# pushed. kubectl apply -k ${shown:-$output}/deploy/${part#overlays/}
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $resource
images:
- name: ghcr.io/nodeagent-io/nodeagent
  newName: $registry/nodeagent
  newTag: $version
  digest: $digest
YAML
done

plain_http=""
case "$registry" in localhost:* | 127.0.0.1:*) plain_http=" --plain-http" ;; esac
relative_output=${shown:-$(relative "$(cd "$output" && pwd -P)" "$root")}
cat <<MSG

Pushed $registry/nodeagent:$version ($platforms) and oci://$registry/charts/nodeagent $chart_version.
Install them with Helm, from the registry or from the chart's copy in $relative_output/chart, into a namespace
labelled for the agents' hostPath volumes (the chart refuses one that --create-namespace would make):

  kubectl create namespace nodeagent
  kubectl label namespace nodeagent pod-security.kubernetes.io/enforce=privileged
  helm install nodeagent oci://$registry/charts/nodeagent --version $chart_version$plain_http -n nodeagent --set mode=after
  helm install nodeagent $relative_output/chart/nodeagent-$chart_version.tgz -n nodeagent --set mode=after

or with kubectl, from the kustomizations written in $relative_output/deploy (before, after, watch, csi, csi-webhook, csi-secrets, analyze-serve):

  kubectl apply -k $relative_output/deploy/after
MSG
