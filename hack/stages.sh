#!/usr/bin/env bash
# `make test`, stage by stage: runs `$MAKE <stage>` for each stage given,
# in order, stopping at the first that fails, and prints each stage's time
# and the total at the end (also written to _output/test-timings.txt), so
# that a change can see what it costs the suite.
#
#   hack/stages.sh make controlplane bg:kind-prep refkubelet bg:helm,deploy-check e2e wait:kind-prep e2e-kind wait
#
# A stage written bg:A,B,... is a background chain: `$MAKE A`, then
# `$MAKE B`, and so on until one fails, at the lowest CPU priority (nice 19),
# while the next stages run. It is for work that waits on the network, and
# for builds and checks that can take the cores the tests leave idle (the
# e2e and kind tests mostly wait on clocks); the foreground keeps the cores
# it wants, so a timed test beside a background build still gets its CPU.
# Stages of one chain run one after another because they build on each
# other or would compile the same packages at once.
#
# Each background stage's output goes to _output/stage-NAME.log and is
# printed, with its time, at the first foreground stage boundary after it
# ended; a background stage that failed stops the run there. The stage
# `wait:NAME` waits for the background stage NAME (one the next stage
# needs, such as the kind node image), and `wait` for every chain; their
# lines in the table are how long the foreground waited. A run that stops
# early stops its background chains too.
#
# Where the CPU goes: each stage's CPU seconds (user and system, of the
# processes it waited for; not the kind nodes', which are Docker's) are
# written to _output/test-cpu.txt in the same format, so that a change
# that adds work shows it even where it runs beside a wait. The most memory
# in use during the run and the disk its caches and outputs hold at the end
# go to _output/test-resources.json (hack/resources.sh).
set -uo pipefail
cd "$(dirname "$0")/.."

# cpu_ms sets cpu_ms to the CPU milliseconds of this shell's children that
# have ended so far (bash's `times`, read without a subshell, whose own
# count would start at zero).
cpu_ms() {
  local scratch=_output/.stages-times.$BASHPID line ms=0 part
  times >"$scratch"
  line=$(tail -n 1 "$scratch")
  rm -f "$scratch"
  for part in $line; do
    [[ $part =~ ^([0-9]+)m([0-9]+)[.,]([0-9]{3})s$ ]] || continue
    ms=$((ms + BASH_REMATCH[1] * 60000 + 10#${BASH_REMATCH[2]} * 1000 + 10#${BASH_REMATCH[3]}))
  done
  cpu_ms=$ms
}

# run_stage runs `MAKE NAME` and sets stage_cpu to the CPU seconds it
# used; it returns the stage's exit code.
run_stage() {
  local before code
  cpu_ms
  before=$cpu_ms
  "$1" --no-print-directory "$2"
  code=$?
  cpu_ms
  stage_cpu=$(((cpu_ms - before + 500) / 1000))
  return "$code"
}

# table_line adds a stage's line to a table: its name, then its seconds.
table_line() {
  printf '%-32s %6ss\n' "$2" "$3" >>"$1"
}

# --chain MAKE STAGE...: a background chain's own process (start_chain).
# Each stage writes when it started, and when it ended with its exit code
# and CPU seconds, so that its line says how long it ran, not how long
# until a wait.
if [[ $1 == --chain ]]; then
  make=$2
  shift 2
  for name; do
    date +%s >"_output/stage-$name.start"
    run_stage "$make" "$name" >"_output/stage-$name.log" 2>&1
    code=$?
    echo "$(date +%s) $code $stage_cpu" >"_output/stage-$name.end"
    [[ $code == 0 ]] || exit "$code"
  done
  exit 0
fi

make_cmd=$1
shift
timings=_output/test-timings.txt
cpu=_output/test-cpu.txt
mkdir -p _output
: >"$timings"
: >"$cpu"
total_start=$(date +%s)
# chain_pid[first stage of the chain], chain_of[stage] = first stage of its
# chain, chain_stages[first] = its stages, reported[stage] once printed;
# background lists every background stage in the order the chains were given.
declare -A chain_pid chain_of chain_stages reported
background=()

hack/resources.sh sample _output/.peak-memory &
sampler=$!

stop_background() {
  local first
  kill "$sampler" 2>/dev/null
  for first in "${!chain_pid[@]}"; do
    kill -- -"${chain_pid[$first]}" 2>/dev/null && echo "=== make test: stopped the background chain ${chain_stages[$first]// /, }"
  done
}
trap stop_background EXIT

report() {
  local code=$1
  table_line "$timings" total "$(($(date +%s) - total_start))"
  table_line "$cpu" total "$(awk '{ sub(/s$/, "", $NF); cpu += $NF } END { print cpu + 0 }' "$cpu")"
  kill "$sampler" 2>/dev/null
  hack/resources.sh report _output/.peak-memory _output/test-resources.json || true
  echo "=== make test: stage times$([[ $code == 0 ]] || echo " (stopped at a failure, exit $code)"), and CPU seconds in $cpu; memory and disk in _output/test-resources.json"
  # Each stage's line, and its CPU seconds where it has them.
  awk 'NR == FNR { name = $0; sub(/[ ]+[0-9]+s$/, "", name); cpu[name] = $NF; next }
       { name = $0; sub(/[ ]+[0-9]+s$/, "", name); print $0 (name in cpu ? sprintf(" %7s CPU", cpu[name]) : "") }' "$cpu" "$timings"
}

# start_chain runs the stages given, one after another, in the background.
start_chain() {
  local name
  for name in "$@"; do
    rm -f "_output/stage-$name.start" "_output/stage-$name.end"
    chain_of[$name]=$1
    background+=("$name")
  done
  chain_stages[$1]="$*"
  local list="$*"
  echo "=== make test: ${list// /, }, in the background (_output/stage-NAME.log)"
  setsid nice -n 19 "$0" --chain "$make_cmd" "$@" </dev/null &
  chain_pid[$1]=$!
}

# report_stage prints a background stage that ended, once, and adds its
# line to the table; it returns the stage's exit code.
report_stage() {
  local name=$1 ended code seconds started
  read -r ended code seconds <"_output/stage-$name.end"
  [[ -n "${reported[$name]:-}" ]] && return "$code"
  reported[$name]=1
  started=$(cat "_output/stage-$name.start")
  table_line "$timings" "$name (background)" "$((ended - started))"
  table_line "$cpu" "$name (background)" "$seconds"
  echo "=== make test: the background stage $name (exit $code, $((ended - started))s), _output/stage-$name.log:"
  cat "_output/stage-$name.log"
  return "$code"
}

# report_ended prints every background stage that has ended since the last
# call; it fails if one of them failed.
report_ended() {
  local name failed=0
  for name in "${background[@]}"; do
    [[ -f "_output/stage-$name.end" ]] || continue
    report_stage "$name" || failed=$?
  done
  return "$failed"
}

# forget_chain drops a chain that has exited from the chains to stop.
forget_chain() {
  wait "${chain_pid[$1]}" 2>/dev/null
  unset "chain_pid[$1]"
}

# wait_stage waits until the background stage NAME has ended; it fails if
# NAME failed, or never ran because a stage before it in its chain failed.
wait_stage() {
  local name=$1 first=${chain_of[$1]:-}
  if [[ -z "$first" ]]; then
    echo "make test: wait:$name: no background stage $name was started before it"
    return 2
  fi
  while [[ ! -f "_output/stage-$name.end" ]] && kill -0 "${chain_pid[$first]}" 2>/dev/null; do
    sleep 1
  done
  report_ended
  local code=$?
  if [[ ! -f "_output/stage-$name.end" ]]; then
    echo "make test: the background stage $name did not run: a stage before it in its chain failed"
    [[ $code != 0 ]] || code=1
  fi
  return "$code"
}

# wait_all waits for every background chain; it fails if a stage failed.
wait_all() {
  local first
  for first in "${!chain_pid[@]}"; do
    forget_chain "$first"
  done
  report_ended
}

for stage in "$@"; do
  if [[ $stage == bg:* ]]; then
    IFS=, read -r -a chain <<<"${stage#bg:}"
    start_chain "${chain[@]}"
    continue
  fi
  echo "=== make test: $stage"
  start=$(date +%s)
  case $stage in
  wait) wait_all ;;
  wait:*) wait_stage "${stage#wait:}" ;;
  *) run_stage "$make_cmd" "$stage" ;;
  esac
  code=$?
  table_line "$timings" "$stage" "$(($(date +%s) - start))"
  # A wait's line is the foreground's waiting; it has no CPU of its own.
  [[ $stage == wait* ]] || table_line "$cpu" "$stage" "$stage_cpu"
  if [[ $code == 0 ]]; then
    report_ended
    code=$?
  fi
  if [[ $code != 0 ]]; then
    report "$code"
    exit "$code"
  fi
done
wait_all || { code=$?; report "$code"; exit "$code"; }
report 0
