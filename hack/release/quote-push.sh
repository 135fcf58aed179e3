#!/usr/bin/env bash
# quote-push.sh [--check] FILE: writes into FILE, between the lines
# "<!-- make push prints -->" and "<!-- /make push prints -->", what make
# push prints for an example push (hack/release/install-commands.sh, the
# registry registry.example/team, a build between releases), so that the
# docs quote what it prints and not a copy by hand. make docs writes it;
# with --check (make verify) it fails where FILE differs.
set -euo pipefail
check=""
if [[ "${1:-}" == --check ]]; then check=1; shift; fi
file=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo '```text'
  echo '$ make push REGISTRY=registry.example/team'
  echo '...'
  "$here/install-commands.sh" registry.example/team v0.0.0-gabc1234 0.0.0-gabc1234 "linux/amd64 linux/arm64" \
    sha256:0000000000000000000000000000000000000000000000000000000000000000 "$work" _output | sed '1{/^$/d}'
  echo '```'
} >"$work/quote"
awk -v quote="$work/quote" '
  /^<!-- \/make push prints -->$/ { skipping = 0 }
  !skipping { print }
  /^<!-- make push prints -->$/ { while ((getline line < quote) > 0) print line; skipping = 1; found = 1 }
  END { if (!found) exit 3 }
' "$file" >"$work/new" || { echo "quote-push.sh: $file has no line <!-- make push prints -->" >&2; exit 1; }
if [[ -n "$check" ]]; then
  diff -u "$file" "$work/new" || { echo "quote-push.sh: $file does not quote what make push prints; run make docs" >&2; exit 1; }
else
  cp "$work/new" "$file"
fi
