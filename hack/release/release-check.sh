#!/usr/bin/env bash
# release-check.sh TAG: make release-check. A release made and published as
# docs/install.md says, on this machine, then checked as a user gets it:
#
#   1. a throwaway clone of this checkout (its uncommitted changes to
#      tracked files included, through git stash create; untracked files
#      are not) tagged TAG there, as a maintainer tags a release; this
#      checkout's tags are untouched;
#   2. a stand-in for GitHub's release assets and for the registry
#      (hack/image/localpublish), on a free local port;
#   3. make release in the clone, its krew manifest pointing at (2); the
#      release's tests (test/release) on _output/release;
#   4. published: the assets install.md uploads copied to (2), then make
#      push to (2)'s registry, as install.md pushes the image and chart;
#   5. make release-check-published on (2): the same tests on what a user
#      downloads.
#
# The Makefile passes BIN (its tools), RELEASE_GOOS, RELEASE_GOARCH (the
# image's platforms are linux on each) and the test's environment through
# its own variables.
set -euo pipefail
tag=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
clone=$root/_output/release-check
cd "$root"

rm -rf "$clone"
commit=$(git stash create)
commit=${commit:-$(git rev-parse HEAD)}
git clone -q --shared . "$clone"
git -C "$clone" checkout -q --detach "$commit"
git -C "$clone" tag "$tag"

assets=$clone/_output/published-site
mkdir -p "$assets"
(cd hack/image && go build -o "$clone/_output/localpublish" ./localpublish)
"$clone/_output/localpublish" --dir "$assets" --address-file "$clone/_output/localpublish.address" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -s "$clone/_output/localpublish.address" ]] && break; sleep 0.1; done
address=$(cat "$clone/_output/localpublish.address")
# localhost, which make push and helm speak plain HTTP to.
registry=localhost:${address##*:}
url=http://$registry/releases/download/$tag
archs=${RELEASE_GOARCH:-amd64 arm64}
platforms=$(for arch in $archs; do printf 'linux/%s ' "$arch"; done)
platforms=${platforms% }

make -C "$clone" release BIN="$BIN" IMAGE_PLATFORMS="$platforms" RELEASE_GOOS="$RELEASE_GOOS" RELEASE_GOARCH="$archs" RELEASE_URL="$url"
echo "release-check: the release's tests on $clone/_output/release"
NODEAGENT_RELEASE_DIR=$clone/_output/release NODEAGENT_RELEASE_VERSION=$tag NODEAGENT_RELEASE_URL=$url NODEAGENT_RELEASE_GOOS="$RELEASE_GOOS" \
  NODEAGENT_RELEASE_GOARCH="$archs" go test -tags release -count=1 ./test/release/

echo "release-check: publishing $tag to $registry as docs/install.md says"
mkdir -p "$assets/releases/download/$tag"
cp "$clone/_output/release/nodeagent_${tag}_"* "$clone/_output/release/checksums.txt" "$clone/_output/release/nodeagent.yaml" \
  "$assets/releases/download/$tag/"
make -C "$clone" push BIN="$BIN" REGISTRY="$registry" IMAGE_PLATFORMS="$platforms" >/dev/null
make release-check-published VERSION="$tag" RELEASE_GOARCH="$archs" RELEASE_URL="$url" RELEASE_REGISTRY="$registry" PUBLISHED="$clone/_output/published"
