#!/usr/bin/env bash
# install-commands.sh REGISTRY VERSION CHART_VERSION COMMIT: after make
# push, the README's install commands for exactly what it pushed (the
# kustomize base at the release's tag, or at the commit between releases).
set -euo pipefail
registry=$1 version=$2 chart_version=$3 commit=$4
ref=$commit
[[ ! "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || ref=$version
plain_http=""
case "$registry" in localhost:* | 127.0.0.1:*) plain_http=" --plain-http" ;; esac
cat <<MSG

Pushed $registry/nodeagent:$version (linux/amd64, linux/arm64) and oci://$registry/charts/nodeagent $chart_version.
Install it with Helm:

  helm install nodeagent oci://$registry/charts/nodeagent --version $chart_version$plain_http -n nodeagent --create-namespace --set mode=after

or with kustomize, in a directory of your own:

  mkdir nodeagent && cat > nodeagent/kustomization.yaml <<YAML
  resources:
  - https://github.com/nodeagent-io/nodeagent//deploy/overlays/after?ref=$ref
  images:
  - name: ghcr.io/nodeagent-io/nodeagent
    newName: $registry/nodeagent
    newTag: $version
  YAML
  kubectl apply -k nodeagent
MSG
