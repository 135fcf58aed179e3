#!/usr/bin/env bash
# `make verify` for the reference kubelets' module: go vet and staticcheck
# over both of its builds, v1.37 (go.mod) and v1.28 (v1.28.mod with the
# refkubelet_v1_28 tag). Usage:
#
#   hack/refkubelet/check.sh STATICCHECK_BINARY   # make verify-refkubelet
#   hack/refkubelet/check.sh                      # make vet-refkubelet: go vet alone
#
# go vet reads the compiled kubelet's export data; staticcheck analyses the
# kubelet's whole dependency graph from source for the module's few files,
# the costliest of make test's checks cold, which make test leaves to make
# verify.
#
# -trimpath, as build.sh builds, lets both tools reuse the packages that
# make refkubelet compiled. staticcheck cannot take -modfile, so the v1.28
# build is checked in a copy of the sources with v1.28.mod as its go.mod.
set -euo pipefail

staticcheck=${1:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
go vet -trimpath .
go vet -trimpath -modfile=v1.28.mod -tags refkubelet_v1_28 .
[[ -n "$staticcheck" ]] || exit 0
GOFLAGS=-trimpath "$staticcheck" .
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp ./*.go "$copy/"
cp v1.28.mod "$copy/go.mod"
cp v1.28.sum "$copy/go.sum"
(cd "$copy" && GOFLAGS=-trimpath "$staticcheck" -tags refkubelet_v1_28 .)
