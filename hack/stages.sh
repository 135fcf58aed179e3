#!/usr/bin/env bash
# `make test`, stage by stage: runs `$MAKE <stage>` for each stage given,
# in order, stopping at the first that fails, and prints each stage's time
# and the total at the end (also written to _output/test-timings.txt), so
# that a change can see what it costs the suite.
#
#   hack/stages.sh make controlplane bg:kind-prep refkubelet verify unit ... wait e2e-kind
#
# A stage written bg:NAME starts in the background at the lowest CPU priority
# (nice 19) and goes on while the next stages run: work that waits on the
# network, or that can use the cores the foreground leaves idle (the e2e
# tests mostly wait). Its output goes to _output/stage-NAME.log. The stage
# `wait` waits for every background stage, prints its output, and fails if
# one failed; its line in the table is how long the foreground waited, and
# each background stage's own line says how long it ran. A run that stops
# early stops its background stages too.
set -uo pipefail
cd "$(dirname "$0")/.."

make_cmd=$1
shift
timings=_output/test-timings.txt
mkdir -p _output
: >"$timings"
total_start=$(date +%s)
declare -A bg_pid bg_start

stop_background() {
  local name
  for name in "${!bg_pid[@]}"; do
    kill -- -"${bg_pid[$name]}" 2>/dev/null && echo "=== make test: stopped the background stage $name"
  done
}
trap stop_background EXIT

report() {
  local code=$1
  printf '%-22s %6ss\n' total "$(($(date +%s) - total_start))" >>"$timings"
  echo "=== make test: stage times$([[ $code == 0 ]] || echo " (stopped at a failure, exit $code)")"
  cat "$timings"
}

# wait_background waits for every background stage; it fails if one did.
wait_background() {
  local name code failed=0
  for name in "${!bg_pid[@]}"; do
    wait "${bg_pid[$name]}"
    code=$?
    ended=$(cat "_output/stage-$name.end" 2>/dev/null || date +%s)
    printf '%-22s %6ss\n' "$name (background)" "$((ended - bg_start[$name]))" >>"$timings"
    echo "=== make test: the background stage $name (exit $code), _output/stage-$name.log:"
    cat "_output/stage-$name.log"
    unset "bg_pid[$name]"
    [[ $code == 0 ]] || failed=$code
  done
  return "$failed"
}

for stage in "$@"; do
  if [[ $stage == bg:* ]]; then
    name=${stage#bg:}
    echo "=== make test: $name, in the background (_output/stage-$name.log)"
    bg_start[$name]=$(date +%s)
    rm -f "_output/stage-$name.end"
    # The stage writes when it ended, so that its line says how long it
    # ran, not how long until the wait.
    setsid nice -n 19 bash -c '"$1" --no-print-directory "$2"; code=$?; date +%s >"_output/stage-$2.end"; exit $code' \
      stage "$make_cmd" "$name" >"_output/stage-$name.log" 2>&1 &
    bg_pid[$name]=$!
    continue
  fi
  echo "=== make test: $stage"
  start=$(date +%s)
  if [[ $stage == wait ]]; then
    wait_background
  else
    $make_cmd --no-print-directory "$stage"
  fi
  code=$?
  printf '%-22s %6ss\n' "$stage" "$(($(date +%s) - start))" >>"$timings"
  if [[ $code != 0 ]]; then
    report "$code"
    exit "$code"
  fi
done
wait_background || { code=$?; report "$code"; exit "$code"; }
report 0
