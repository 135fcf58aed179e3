#!/usr/bin/env bash
# `make test`, stage by stage: runs `$MAKE <stage>` for each stage given,
# in order, stopping at the first that fails, and prints each stage's time
# and the total at the end (also written to _output/test-timings.txt), so
# that a change can see what it costs the suite.
#
#   hack/stages.sh make controlplane refkubelet verify unit ...
set -uo pipefail
cd "$(dirname "$0")/.."

make_cmd=$1
shift
timings=_output/test-timings.txt
mkdir -p _output
: >"$timings"
total_start=$(date +%s)

report() {
  local code=$1
  printf '%-22s %6ss\n' total "$(($(date +%s) - total_start))" >>"$timings"
  echo "=== make test: stage times$([[ $code == 0 ]] || echo " (stopped at a failure, exit $code)")"
  cat "$timings"
}

for stage in "$@"; do
  echo "=== make test: $stage"
  start=$(date +%s)
  $make_cmd --no-print-directory "$stage"
  code=$?
  printf '%-22s %6ss\n' "$stage" "$(($(date +%s) - start))" >>"$timings"
  if [[ $code != 0 ]]; then
    report "$code"
    exit "$code"
  fi
done
report 0
