#!/usr/bin/env bash
# The version of this checkout, for binaries, images, the chart and the
# release: `git describe` from the last vX.Y.Z tag (v1.2.3 on the tag,
# v1.2.3-4-gabc1234 four commits after it), or v0.0.0-gabc1234 before the
# first tag; -dirty when the tree has changes. Every form is a semantic
# version, which Helm requires of a chart's version, and a valid image tag.
set -euo pipefail
if ! git rev-parse --verify --quiet HEAD >/dev/null 2>&1; then
  echo v0.0.0-dev
elif described=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
  echo "$described"
else
  dirty=""
  [[ -z "$(git status --porcelain --untracked-files=no)" ]] || dirty=-dirty
  echo "v0.0.0-g$(git rev-parse --short HEAD)$dirty"
fi
