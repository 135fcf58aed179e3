#!/usr/bin/env bash
# package-chart.sh HELM REPOSITORY VERSION OUT_DIR: deploy/helm/nodeagent
# packaged into OUT_DIR as a release's chart: version VERSION without the v,
# appVersion VERSION (the image tag it defaults to), and image.repository
# REPOSITORY, so that a chart pushed to a registry runs the image pushed
# beside it. The checkout's chart is copied, never edited.
set -euo pipefail
helm=$1 repository=$2 version=$3 out=$4
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$here/deploy/helm/nodeagent" "$work/"
default='  repository: ghcr.io/nodeagent-io/nodeagent'
grep -qx "$default" "$work/nodeagent/values.yaml" || {
  echo "package-chart.sh: values.yaml has no line '$default' to set the repository on" >&2
  exit 1
}
# sed without -i, whose argument GNU and BSD sed read differently.
sed "s|^$default\$|  repository: $repository|" "$work/nodeagent/values.yaml" >"$work/values.yaml"
mv "$work/values.yaml" "$work/nodeagent/values.yaml"
mkdir -p "$out"
"$helm" package "$work/nodeagent" --version "${version#v}" --app-version "$version" -d "$out"
