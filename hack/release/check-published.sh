#!/usr/bin/env bash
# check-published.sh VERSION RELEASE_URL REGISTRY HELM OUT: downloads what
# release VERSION published, as a user gets it, into OUT, laid out as make
# release lays out _output/release, for the release's tests (make
# release-check-published runs them on it): the archives and SBOMs that
# checksums.txt names and the krew manifest nodeagent.yaml, from
# RELEASE_URL; the chart from oci://REGISTRY/charts; the image index from
# REGISTRY/nodeagent, as an OCI layout.
set -euo pipefail
version=$1 url=$2 registry=$3 helm=$4 out=$5
here=$(cd "$(dirname "$0")" && pwd)
command -v curl >/dev/null || { echo "check-published.sh: curl is missing; install it (apt-get install curl) and run again" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
fetch() { curl -fsSL --retry 3 -o "$out/$1" "$url/$1" || { echo "check-published.sh: $url/$1 cannot be downloaded" >&2; exit 1; }; }
fetch checksums.txt
fetch nodeagent.yaml
for asset in $(awk '{print $2}' "$out/checksums.txt"); do
  fetch "$asset"
done
plain_http=()
case "$registry" in localhost:* | 127.0.0.1:*) plain_http=(--plain-http) ;; esac
"$helm" pull "oci://$registry/charts/nodeagent" --version "${version#v}" -d "$out" "${plain_http[@]}"
(cd "$here/../image" && go run . --pull "$registry/nodeagent:$version" --oci-layout "$out/image" --version "$version")
echo "Downloaded release $version from $url and $registry into $out"
